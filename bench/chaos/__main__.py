"""`python -m bench.chaos`: the command is bench/chaos/run.py's main."""

import sys

from bench.chaos.run import main

sys.exit(main())

"""`python -m bench.scheduler`: the command is bench/scheduler/run.py's main."""

import sys

from bench.scheduler.run import main

sys.exit(main())

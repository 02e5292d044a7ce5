"""`python -m bench.profiles`: the command is bench/profiles/run.py's main."""

import sys

from bench.profiles.run import main

sys.exit(main())

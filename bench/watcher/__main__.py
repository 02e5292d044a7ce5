"""`python -m bench.watcher`: the command is bench/watcher/run.py's main."""

import sys

from bench.watcher.run import main

sys.exit(main())

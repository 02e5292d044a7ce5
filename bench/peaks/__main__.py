import sys

from bench.peaks.run import main

sys.exit(main())

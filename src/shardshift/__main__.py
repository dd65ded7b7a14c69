import sys

from shardshift.cli import main

sys.exit(main())

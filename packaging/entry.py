"""PyInstaller entry point for the frozen `dsh-search` executable."""

import sys

from dsh_search.__main__ import main

sys.exit(main())

"""PyInstaller entry point for the frozen `dsh-search` executable.

Before anything else the daemon holds the directory its launcher unpacked it into, and arranges to end
with the launcher (daemon/dsh_search/extraction.py); only then are the daemon's modules imported.
"""

import sys

from dsh_search import extraction

held = extraction.hold()

from dsh_search.__main__ import main  # noqa: E402

status = main()
if held is not None:
    held.exiting(status)  # the server's own handling of signals has ended with it
sys.exit(status)

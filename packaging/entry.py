"""PyInstaller entry point for the frozen `dsh-search` executable.

Before anything else the daemon pins the executable file its modules are read from, holds the directory
its launcher unpacked it into, and arranges to end with the launcher (daemon/dsh_search/extraction.py);
only then are the daemon's modules imported. The
cyclic garbage collector is off while they are: importing makes objects by the hundred thousand and
hardly a cycle worth collecting, and each collection went through them all (~4 % of a cold start's
instructions). The server turns it back on before it serves (memory.tune_collector).
"""

import gc

gc.disable()

import sys  # noqa: E402

from dsh_search import extraction  # noqa: E402

extraction.pin_archive()  # imports from here on read the file this process runs from, not its path
held = extraction.hold()

from dsh_search.__main__ import main  # noqa: E402

status = main()
if held is not None:
    held.exiting(status)  # the server's own handling of signals has ended with it
sys.exit(status)

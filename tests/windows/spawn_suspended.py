"""Start a child as the daemon starts ripgrep, then wait to be killed before its job is made (run under wine).

    python spawn_suspended.py DAEMON_DIR CHILD...    prints the child's Windows pid, then sleeps

The child is created with the daemon's own `osdep.spawn_options()` (suspended, its job not yet made):
the instant between `Popen` and `Tree.adopt` in which a daemon may be killed. The test kills this process
there and looks for the child.
"""

from __future__ import annotations

import subprocess
import sys
import time


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    from dsh_search import osdep

    child = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, **osdep.spawn_options())
    print(child.pid, flush=True)
    time.sleep(120)


if __name__ == "__main__":
    main()

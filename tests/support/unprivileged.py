"""Running the daemon (and so ripgrep) unprivileged, in a scratch tree it can reach."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# root reads every file whatever its mode, so a test that needs ripgrep to meet a file or directory it
# cannot open runs the daemon (and so ripgrep) as this unprivileged user when the tests run as root.
NOBODY = 65534


def unprivileged_popen() -> dict[str, Any]:
    """Popen arguments that drop root's privileges (nothing to drop when the tests are not root)."""
    if os.geteuid() != 0:
        return {}
    return {"user": NOBODY, "group": NOBODY, "extra_groups": []}


@contextmanager
def unprivileged_tree() -> Iterator[Path]:
    """A scratch directory the unprivileged daemon can reach and write (pytest's tmp_path is 0700 and
    owned by whoever runs the tests). Modes are restored before removal, so 000 entries go too."""
    root = Path(tempfile.mkdtemp(prefix="dsh-unpriv-", dir="/tmp"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(root, NOBODY, NOBODY)
    try:
        yield root
    finally:
        for dirpath, dirnames, _ in os.walk(root):
            for name in dirnames:
                path = os.path.join(dirpath, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o700)  # top-down: before os.walk descends into it
        shutil.rmtree(root, ignore_errors=True)

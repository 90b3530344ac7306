"""Running the daemon (and so ripgrep) unprivileged, in a scratch tree it can reach."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.trees import remove_tree

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
        remove_tree(root)


_COPIES: dict[Path, Path] = {}


def reachable_by_nobody(binary: Path) -> Path:
    """`binary` itself when the unprivileged user can run it, else a copy that it can, made once per
    session (with the executable's `-rg` sidecar beside it, where the daemon looks for it). A checkout
    under a 0700 home or a `mktemp -d` directory is out of that user's reach, and so is what it built."""
    if os.geteuid() != 0 or _runnable_by_others(binary):
        return binary
    if binary not in _COPIES:
        home = Path(tempfile.mkdtemp(prefix="dsh-unpriv-bin-", dir="/tmp"))
        home.chmod(0o755)
        for source in (binary, Path(f"{binary}-rg")):
            if source.is_file():
                shutil.copy2(source, home / source.name)
                (home / source.name).chmod(0o755)
        atexit.register(shutil.rmtree, home, True)
        _COPIES[binary] = home / binary.name
    return _COPIES[binary]


def _runnable_by_others(path: Path) -> bool:
    """Whether a user who is neither the owner nor in the group can read and run `path` (a onefile
    executable reads itself) and enter every directory above it."""
    real = path.resolve()
    if real.stat().st_mode & 0o005 != 0o005:
        return False
    return all(parent.stat().st_mode & 0o001 for parent in real.parents)

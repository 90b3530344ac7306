"""Which workspace is indexed, and when: the `index` setting (`auto`, `on`, `off`) made concrete.

The daemon's searches ask the `IndexManager` (the engine's `FileSource`) which files to read. It holds at
most one `Workspace`: the directory searches default to (--workdir, an MCP client's first root, or the
daemon's own directory — never `/`). A search elsewhere walks.

- `off`: never an index.
- `on`: the workspace is indexed as soon as it is known, and searches wait for the first build (within
  their own timeoutMs).
- `auto` (the default): indexed where it pays and where it can be exact — on Linux (inotify), on a local
  filesystem (a network filesystem's remote changes raise no inotify event), once a search's walk of the
  workspace took `AUTO_AFTER_S` or more, or at once when an index of it is on disk from an earlier run.
  Until the index is ready, searches walk.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.ripgrep import Launcher, Limits
from dsh_search.engine.source import GlobListing, GrepFiles

if TYPE_CHECKING:  # the workspace (SQLite, inotify) is imported when one is made: not at every start
    from dsh_search.store.index.workspace import Workspace

log = logging.getLogger("dsh_search.index")

AUTO_AFTER_S = 0.2  # a walk at least this slow makes an index worth its build (auto)
RETRY_AFTER_S = (1.0, 5.0, 30.0, 300.0)  # a failed index is built again after these pauses (then every last)
MODES = ("auto", "on", "off")
OFF, FAILED = "off", "failed"  # workspace states (store/index/workspace.py)

# ripgrep's `--files` walk as grep does it, run in a directory over some roots (none: the directory),
# down to a depth (None: all): (NUL-separated paths as printed, whether ripgrep reported problems —
# unreadable paths, ignore files with bad rules).
ListGrepFiles = Callable[[str, Sequence[bytes], int | None], Awaitable[tuple[bytes, bool]]]


def workspace_key(real_root: str) -> str:
    """The index directory's name for a workspace: its real path's digest, and its name for people."""
    import hashlib

    digest = hashlib.sha256(os.fsencode(real_root)).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(real_root))[:40]
    return f"{digest}-{name or 'root'}"


# Filesystems whose changes may come from elsewhere without an inotify event.
REMOTE_FILESYSTEMS = frozenset(
    ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre", "gpfs", "virtiofs")
)


def filesystem_type(path: str) -> str | None:
    """The type of the filesystem holding `path` (Linux: /proc/self/mountinfo), or None when unknown."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    best: tuple[int, str] | None = None
    for line in lines:
        head, sep, tail = line.partition(" - ")
        fields = head.split()
        if not sep or len(fields) < 5:
            continue
        mount = fields[4].replace("\\040", " ")
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            fstype = tail.split()[0] if tail.split() else ""
            if best is None or len(mount) > best[0]:
                best = (len(mount), fstype)
    return best[1] if best else None


def unsupported_reason(root: str) -> str | None:
    """Why the index cannot promise read-your-writes for this workspace, or None when it can."""
    if not sys.platform.startswith("linux"):
        return f"no inotify on {sys.platform}: the index cannot see writes as they happen"
    fstype = filesystem_type(os.path.realpath(root))
    if fstype is not None and (fstype in REMOTE_FILESYSTEMS or fstype.startswith("fuse.")):
        return f"{root} is on a {fstype} filesystem, whose changes made elsewhere raise no inotify event"
    return None


class IndexManager:
    def __init__(self, *, mode: str, index_dir: str, list_grep_files: ListGrepFiles) -> None:
        assert mode in MODES
        self.mode = mode
        self.index_dir = index_dir
        self._list_grep_files = list_grep_files
        self._workspace: Workspace | None = None  # made when its build starts (SQLite and inotify load then)
        self._home: str | None = None
        self._reason: str | None = None
        self.answered = {"glob": 0, "grep": 0}  # searches the index answered
        self.walked_searches = 0  # searches that walked (no index, not ready, or not sure)
        self._failures = 0  # builds that failed in a row
        self._retry: Any = None  # the timer that builds a failed index again

    # --- which workspace -------------------------------------------------------------------------------------

    def set_home(self, home: str | None) -> None:
        """The directory searches default to now (None or `/`: none to index)."""
        if home == "/":
            home = None
        if home == self._home:
            return
        self._home = home
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None
        self._reason = None
        if home is None or self.mode == "off":
            return
        reason = unsupported_reason(home)
        if reason is not None:
            self._reason = reason
            if self.mode == "auto":
                log.info("workspace index off for %s: %s", home, reason)
                return
            log.warning("workspace index on for %s, as asked, although %s", home, reason)
        if self.mode == "on" or os.path.isdir(os.path.join(self.index_dir, workspace_key(os.path.realpath(home)))):
            self._start(home)

    def _start(self, home: str) -> None:
        from dsh_search.store.index.workspace import Workspace

        if self._workspace is not None:
            self._workspace.close()
        self._workspace = Workspace(
            home,
            index_dir=self.index_dir,
            list_grep_files=self._list_grep_files,
            wait_for_build=self.mode == "on",
            on_failure=self._failed,
        )
        self._workspace.start()

    def _failed(self, ws: Workspace) -> None:
        """A failed index is built afresh after a pause (its directory deleted or corrupted, say): until
        then, searches walk. The pause grows while builds keep failing."""
        import asyncio

        pause = RETRY_AFTER_S[min(self._failures, len(RETRY_AFTER_S) - 1)]
        self._failures += 1
        with contextlib.suppress(RuntimeError):  # no loop: the daemon is going away
            self._retry = asyncio.get_running_loop().call_later(pause, self._rebuild, ws)

    def _rebuild(self, ws: Workspace) -> None:
        self._retry = None
        if self._workspace is ws and self._home is not None:
            log.info("workspace index of %s: building it again after a failure (%s)", self._home, ws.reason)
            self._start(self._home)

    def close(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None

    def status(self) -> dict[str, Any]:
        counts = {"answered": dict(self.answered), "walked": self.walked_searches}
        if self._workspace is not None:
            return {"mode": self.mode, **self._workspace.status(), **counts}
        out: dict[str, Any] = {"state": OFF, "files": 0, "bytes": 0, "mode": self.mode, "root": self._home, **counts}
        if self._reason:
            out["reason"] = self._reason
        elif self._home is None:
            out["reason"] = "no workspace directory to index"
        elif self.mode == "auto":
            out["reason"] = f"waiting for a search that walks for {AUTO_AFTER_S} s or more"
        return out

    # --- the engine's FileSource --------------------------------------------------------------------------------

    def _active(self) -> Workspace | None:
        """The workspace, unless it failed (then searches walk until it is built again)."""
        ws = self._workspace
        if ws is None or ws.state == FAILED:
            return None
        if ws.state == "ready":
            self._failures = 0
        return ws

    async def glob_listing(self, cwd: str, path: str | None, pattern: str, deny: DenyGlobs) -> GlobListing | None:
        ws = self._active()
        listing = None
        if ws is not None:
            try:
                listing = await ws.glob_listing(cwd, path, pattern, deny)
            except Exception as exc:  # corrupt on disk, or a bug: it costs speed, never an answer
                log.exception("workspace index: glob %r in %s failed; walking", pattern, cwd)
                ws.fail(f"glob failed: {exc}")
        self._count("glob", listing is not None)
        return listing

    async def grep_files(
        self, cwd: str, path: str | None, pattern: str, include: str | None, deny: DenyGlobs
    ) -> GrepFiles | None:
        ws = self._active()
        files = None
        if ws is not None:
            try:
                files = await ws.grep_files(cwd, path, pattern, include, deny)
            except Exception as exc:  # corrupt on disk, or a bug: it costs speed, never an answer
                log.exception("workspace index: grep %r in %s failed; walking", pattern, cwd)
                ws.fail(f"grep failed: {exc}")
        self._count("grep", files is not None)
        return files

    def _count(self, tool: str, answered: bool) -> None:
        if answered:
            self.answered[tool] += 1
        else:
            self.walked_searches += 1

    def walked(self, cwd: str, seconds: float) -> None:
        """A search walked from `cwd` for this long: in auto mode, a slow walk of the workspace starts it."""
        home = self._home
        if self._workspace is not None or home is None or self._reason is not None or seconds < AUTO_AFTER_S:
            return
        if self.mode == "auto" and (cwd == home or cwd.startswith(home.rstrip("/") + "/")):
            log.info("workspace index of %s: a walk took %.2f s; building the index", home, seconds)
            self._start(home)


class GrepLister:
    """ripgrep's `--files` walk with grep's rules (ignore files, hidden files skipped), as the index asks
    for it: run where the workspace is, over some of its directories or all of it."""

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher

    async def __call__(self, cwd: str, roots: Sequence[bytes], depth: int | None) -> tuple[bytes, bool]:
        args: list[str | bytes] = ["--files", "--null"]
        if depth is not None:
            args.append(f"--max-depth={depth}")
        if roots:
            args += ["--", *(root or b"." for root in roots)]
        outcome = await self.launcher(args, cwd=cwd)
        problems = (
            outcome.exit_code not in (0, 1)
            or outcome.stdout_overflow
            or outcome.reported_paths > 0
            or outcome.bad_ignore_files > 0
        )
        return outcome.stdout, problems


def grep_lister(rg_path: str, env: dict[str, str], grace_s: float, memory_cap: int | None = None) -> GrepLister:
    """A lister with no cap on ripgrep's output but memory (a listing of a large tree is tens of MB), under
    the memory bound of every ripgrep (rgMemoryMaxBytes)."""
    limits = Limits(stdout_cap=1 << 31, stderr_cap=1 << 16, grace_s=grace_s, memory_cap=memory_cap)
    return GrepLister(Launcher(rg_path, env, limits))

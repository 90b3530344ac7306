"""Which workspace is indexed, and when: the `index` setting (config.INDEX_MODES) made concrete.

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

A failed index is built afresh after a pause (`RETRY_AFTER_S`), which grows while builds keep failing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from dsh_search.config import INDEX_MODES
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index import mounts
from dsh_search.index.lister import GrepLister
from dsh_search.index.sets import workspace_dir
from dsh_search.index.status import FAILED, OFF, READY, Status

if TYPE_CHECKING:  # the workspace (SQLite, inotify) is imported when one is made: not at every start
    from dsh_search.index.workspace import Workspace

log = logging.getLogger("dsh_search.index")

AUTO_AFTER_S = 0.2  # a walk at least this slow makes an index worth its build (auto)
RETRY_AFTER_S = (1.0, 5.0, 30.0, 300.0)  # a failed index is built again after these pauses (then every last)


def unsupported_reason(root: str) -> str | None:
    """Why the index cannot promise read-your-writes for this workspace, or None when it can."""
    if not sys.platform.startswith("linux"):
        return f"no inotify on {sys.platform}: the index cannot see writes as they happen"
    fstype = mounts.filesystem_type(os.path.realpath(root))
    if fstype is not None and mounts.remote(fstype):
        return f"{root} is on a {fstype} filesystem, whose changes made elsewhere raise no inotify event"
    return None


class IndexManager:
    def __init__(self, *, mode: str, index_dir: str, grep_lister: GrepLister, max_bytes: int | None = None) -> None:
        assert mode in INDEX_MODES
        self.mode = mode
        self.index_dir = index_dir
        self.max_bytes = max_bytes  # the cache's bound (indexMaxBytes)
        self._lister = grep_lister
        self._workspace: Workspace | None = None  # made when its build starts (SQLite and inotify load then)
        self._root: str | None = None  # the workspace directory
        self._reason: str | None = None
        self.answered = {"glob": 0, "grep": 0}  # searches the index answered
        self.walked = 0  # searches that walked (no index, not ready, or not sure)
        self._failures = 0  # builds that failed in a row
        self._retry: Any = None  # the timer that builds a failed index again

    # --- which workspace -------------------------------------------------------------------------------

    def set_workspace(self, root: str | None) -> None:
        """The directory searches default to now (None or `/`: none to index)."""
        if root == "/":
            root = None
        if root == self._root:
            return
        self._root = root
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None
        self._reason = None
        if root is None or self.mode == "off":
            return
        reason = unsupported_reason(root)
        if reason is not None:
            self._reason = reason
            if self.mode == "auto":
                log.info("workspace index off for %s: %s", root, reason)
                return
            log.warning("workspace index on for %s, as asked, although %s", root, reason)
        if self.mode == "on" or os.path.isdir(workspace_dir(self.index_dir, os.path.realpath(root))):
            self._start(root)

    def _start(self, root: str) -> None:
        from dsh_search.index.workspace import Workspace

        if self._workspace is not None:
            self._workspace.close()
        self._workspace = Workspace(
            root,
            index_dir=self.index_dir,
            grep_lister=self._lister,
            wait_for_build=self.mode == "on",
            max_bytes=self.max_bytes,
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
        if self._workspace is ws and self._root is not None:
            log.info("workspace index of %s: building it again after a failure (%s)", self._root, ws.reason)
            self._start(self._root)

    def close(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None

    def status(self) -> Status:
        answered, walked = dict(self.answered), self.walked
        if self._workspace is not None:
            return self._workspace.status(self.mode)._replace(answered=answered, walked=walked)
        reason = self._reason
        if reason is None and self._root is None:
            reason = "no workspace directory to index"
        elif reason is None and self.mode == "auto":
            reason = f"waiting for a search that walks for {AUTO_AFTER_S} s or more"
        return Status(state=OFF, mode=self.mode, root=self._root, reason=reason, answered=answered, walked=walked)

    # --- the engine's FileSource -----------------------------------------------------------------------

    def _active(self) -> Workspace | None:
        """The workspace, unless it failed (then searches walk until it is built again)."""
        ws = self._workspace
        if ws is None or ws.state == FAILED:
            return None
        if ws.state == READY:
            self._failures = 0
        return ws

    async def glob(self, cwd: str, path: str | None, pattern: str, deny: DenyGlobs) -> GlobFiles | None:
        ws = self._active()
        files = None
        if ws is not None:
            try:
                files = await ws.glob(cwd, path, pattern, deny)
            except Exception as exc:  # corrupt on disk, or a bug: it costs speed, never an answer
                log.exception("workspace index: glob %r in %s failed; walking", pattern, cwd)
                ws.fail(f"glob failed: {exc}", exc)
        self._count("glob", files is not None)
        return files

    async def grep(
        self, cwd: str, path: str | None, pattern: str, include: str | None, deny: DenyGlobs
    ) -> GrepFiles | None:
        ws = self._active()
        files = None
        if ws is not None:
            try:
                files = await ws.grep(cwd, path, pattern, include, deny)
            except Exception as exc:  # corrupt on disk, or a bug: it costs speed, never an answer
                log.exception("workspace index: grep %r in %s failed; walking", pattern, cwd)
                ws.fail(f"grep failed: {exc}", exc)
        self._count("grep", files is not None)
        return files

    def _count(self, tool: str, answered: bool) -> None:
        if answered:
            self.answered[tool] += 1
        else:
            self.walked += 1

    def note_walk(self, cwd: str, seconds: float) -> None:
        """A search walked from `cwd` for this long: in auto mode, a slow walk of the workspace starts it."""
        root = self._root
        if self._workspace is not None or root is None or self._reason is not None or seconds < AUTO_AFTER_S:
            return
        if self.mode == "auto" and (cwd == root or cwd.startswith(root.rstrip("/") + "/")):
            log.info("workspace index of %s: a walk took %.2f s; building the index", root, seconds)
            self._start(root)

"""Which workspace is indexed, and when: the `index` setting (config.INDEX_MODES) made concrete.

The daemon's searches ask the `IndexManager` (the engine's `FileSource`) which files to read. It indexes
at most one workspace: the directory searches default to (--workdir, an MCP client's first root, or the
daemon's own directory — never `/`). A search elsewhere walks.

- `off`: never an index.
- `on`: the workspace is indexed as soon as it is known, whatever the heuristics say; searches walk until
  it is ready (a search never waits for a build).
- `auto` (the default): indexed where it pays and where it can be exact — on Linux (inotify), on a local
  filesystem (a network filesystem's remote changes raise no inotify event; nor do the edits of an
  overlay's layers, when the workspace is an overlay's mount point), once a search's walk of the
  workspace took `AUTO_AFTER_S` or more, or at once when an index of it is on disk from an earlier run.
  Until the index is ready, searches walk.

One index per workspace per machine (peers.py): the first daemon to index a workspace owns it (a
`Workspace`); any other is a guest that asks the owner — when their views of the files are the same
(view.py), waiting for an answer at most `ask_wait_s` (a small share of a search's timeout) — and takes
the index over when the owner is gone. Every search that walks is counted by its reason (status.Walk:
the planner's, or the manager's own — no index yet, a failed one, an owner that did not answer, an
error inside the index), for `index/status` (`walked_because`) and the debug log. A failed index is
built afresh after a pause (`RETRY_AFTER_S`), which grows while builds keep failing.

The index directory and each workspace's directory in it are this user's alone (private.py): made 0700,
and an existing one another user could read or write is never used — the index is off, `index/status`
says which directory and the fix, and searches walk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any, TypeVar

from dsh_search import osdep, private
from dsh_search.config import INDEX_MODES
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GlobQuery, GrepQuery
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index import mounts
from dsh_search.index.lister import GrepLister
from dsh_search.index.sets import workspace_dir
from dsh_search.index.status import FAILED, OFF, READY, Status, Walk

if TYPE_CHECKING:  # the workspace (SQLite, inotify) and the peers are imported when needed: not at every start
    from dsh_search.index.peers import Answer, Guest, Owner, OwnerLock, Question
    from dsh_search.index.view import View
    from dsh_search.index.workspace import Workspace

F = TypeVar("F", GlobFiles, GrepFiles)

log = logging.getLogger("dsh_search.index")

AUTO_AFTER_S = 0.2  # a walk at least this slow makes an index worth its build (auto)
TAKEOVER_POLL_S = 1.0  # a guest tries to take the index over this often (and at once when the owner goes)
NOTICE = 25  # between info and warning: shown at the default log level (MCP's "notice")
RETRY_AFTER_S = (1.0, 5.0, 30.0, 300.0)  # a failed index is built again after these pauses (then every last)
ASK_SHARE = 0.05  # a guest waits for its owner's answer at most this share of a search's timeout...
ASK_WAIT_S = (0.05, 1.0)  # ...within these bounds
OWN_FOLDER = "dsh-search"  # the folder of the default layout above the index directory, made private too


def ask_wait(timeout_ms: int) -> float:
    """How long a guest waits for its owner's answer before it walks: a small share of the search's budget."""
    low, high = ASK_WAIT_S
    return min(high, max(low, timeout_ms / 1000 * ASK_SHARE))


def unsupported_reason(root: str) -> str | None:
    """Why the index cannot promise read-your-writes for this workspace, or None when it can."""
    reason = osdep.index_unsupported_reason()
    if reason is not None:
        return reason
    unseen = mounts.workspace_unseen(os.path.realpath(root))
    return f"{root} is {unseen}" if unseen is not None else None


class IndexManager:
    def __init__(
        self,
        *,
        mode: str,
        index_dir: str,
        grep_lister: GrepLister,
        max_bytes: int | None = None,
        version: str = "",
        ask_wait_s: float = ASK_WAIT_S[1],
    ) -> None:
        assert mode in INDEX_MODES
        self.mode = mode
        self.index_dir = index_dir
        self.max_bytes = max_bytes  # the cache's bound (indexMaxBytes)
        self.version = version  # owners and guests of one workspace must be of one version
        self.ask_wait_s = ask_wait_s  # a guest's wait for its owner's answer
        self._lister = grep_lister
        self._view_taken: View | None = None
        self._workspace: Workspace | None = None  # when this daemon owns the workspace's index
        self._guest: Guest | None = None  # when another daemon owns it
        self._lock: OwnerLock | None = None
        self._owner: Owner | None = None  # the socket guests ask, while this daemon owns the index
        self._takeover: asyncio.Task[None] | None = None
        self._listening: asyncio.Future[None] | None = None  # the owner's socket being opened (and again)
        self._root: str | None = None  # the workspace directory
        self._reason: str | None = None
        self.answered = {"glob": 0, "grep": 0}  # searches the index answered
        self.walked = 0  # searches that walked (no index, not ready, or not sure)
        self.walked_because: dict[str, int] = {}  # the same, by reason (status.Walk)
        self._failures = 0  # builds that failed in a row
        self._retry: Any = None  # the timer that builds a failed index again
        self._deny: dict[tuple[str, ...], DenyGlobs] = {}  # guests' deny globs, made once each

    # --- which workspace -------------------------------------------------------------------------------

    def set_workspace(self, root: str | None) -> None:
        """The directory searches default to now (None or `/`: none to index)."""
        if root == "/":
            root = None
        if root == self._root:
            return
        self._root = root
        self._stop()
        self._reason = None
        if root is None or self.mode == "off":
            return
        unavailable = osdep.index_unavailable_reason()  # Windows: not even when asked (docs/behaviour.md)
        if unavailable is not None:
            self._reason = unavailable
            log.log(NOTICE if self.mode == "on" else logging.INFO, "workspace index off for %s: %s", root, unavailable)
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
        """Index the workspace: as its owner when no other daemon is, else as a guest of the one that is."""
        from dsh_search.index.peers import OwnerLock

        self._stop()
        directory = workspace_dir(self.index_dir, os.path.realpath(root))
        try:
            self._private(directory)
        except private.Unsafe as exc:
            self._reason = f"{exc}; searches walk the tree"
            log.warning("workspace index of %s: %s", root, self._reason)
            return
        except OSError as exc:
            self._reason = f"its index directory cannot be made: {exc}"
            log.warning("workspace index of %s: %s", root, self._reason)
            return
        lock = OwnerLock(directory)
        if lock.take():
            self._own(root, directory, lock)
        else:
            self._be_guest(root, directory, lock)

    @property
    def _view(self) -> View:
        """What decides the files this daemon's ripgrep reads (taken when first needed: not at start)."""
        if self._view_taken is None:
            from dsh_search.index.view import View

            self._view_taken = View.of_process(self._lister.environment)
        return self._view_taken

    def _private(self, directory: str) -> None:
        """The index directory and the workspace's in it, made (0700) or checked to be this user's alone
        (private.Unsafe otherwise). The index directory is made private when it is readable by others (its
        folders are named after workspaces), and so is the `dsh-search` folder of the default layout above."""
        private.ensure(self.index_dir, "index directory")
        private.tighten(self.index_dir)
        parent = os.path.dirname(os.path.abspath(self.index_dir))
        if os.path.basename(parent) == OWN_FOLDER:
            private.tighten(parent)
        private.ensure(directory, "workspace's index directory")

    def _own(self, root: str, directory: str, lock: OwnerLock) -> None:
        from dsh_search.index.peers import Owner
        from dsh_search.index.workspace import Workspace

        self._lock = lock
        self._workspace = Workspace(
            root,
            index_dir=self.index_dir,
            grep_lister=self._lister,
            max_bytes=self.max_bytes,
            on_failure=self._failed,
        )
        self._workspace.start()
        self._owner = Owner(directory, self.version, self._serve, self._view)
        self._listening = asyncio.ensure_future(self._owner.listen())

    def _be_guest(self, root: str, directory: str, lock: OwnerLock) -> None:
        from dsh_search.index.peers import Guest

        self._lock = lock
        self._guest = Guest(directory, self.version, self._view, self.ask_wait_s)
        log.log(NOTICE, "workspace index of %s: another daemon owns it; this one asks it", root)
        self._takeover = asyncio.ensure_future(self._wait_to_own(root, directory, lock))

    async def _wait_to_own(self, root: str, directory: str, lock: OwnerLock) -> None:
        """A guest takes the index over as soon as its owner is gone (its lock given back)."""
        while True:
            guest = self._guest
            if guest is None:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(guest.lost.wait(), TAKEOVER_POLL_S)
            guest.lost.clear()
            if lock.take():
                log.log(NOTICE, "workspace index of %s: its owner is gone; this daemon takes it over", root)
                guest.close()
                self._guest = None
                self._takeover = None
                self._own(root, directory, lock)
                return

    async def _serve(self, question: Question) -> Answer:
        """A guest's question, answered from this daemon's index."""
        if question.op == "status":
            return await self.status()
        globs = question.deny
        deny = self._deny.get(globs)
        if deny is None:
            deny = self._deny[globs] = DenyGlobs(globs)
        if isinstance(question.query, GlobQuery):
            return await self._glob(question.cwd, question.query, deny)
        assert isinstance(question.query, GrepQuery)
        return await self._grep(question.cwd, question.query, deny)

    def _failed(self, ws: Workspace) -> None:
        """A failed index is built afresh after a pause (its directory deleted or corrupted, say): until
        then, searches walk. The pause grows while builds keep failing."""
        pause = RETRY_AFTER_S[min(self._failures, len(RETRY_AFTER_S) - 1)]
        self._failures += 1
        with contextlib.suppress(RuntimeError):  # no loop: the daemon is going away
            self._retry = asyncio.get_running_loop().call_later(pause, self._rebuild, ws)

    def _rebuild(self, ws: Workspace) -> None:
        self._retry = None
        if self._workspace is ws and self._root is not None and self._lock is not None:
            log.info("workspace index of %s: building it again after a failure (%s)", self._root, ws.reason)
            self._workspace.close()
            self._workspace = None
            self._close_owner()
            self._own(self._root, workspace_dir(self.index_dir, os.path.realpath(self._root)), self._lock)

    def _stop(self) -> None:
        """Stop indexing the workspace: the build where it is, the guests' socket, the ownership."""
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self._takeover is not None:
            self._takeover.cancel()
            self._takeover = None
        self._close_owner()
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None
        if self._guest is not None:
            self._guest.close()
            self._guest = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _close_owner(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
            self._listening = None
        if self._owner is not None:
            self._owner.close()
            self._owner = None

    def close(self) -> None:
        self._stop()

    @property
    def root(self) -> str | None:
        """The workspace it serves: None until the first search (or index/status) names one."""
        return self._root

    async def status(self) -> Status:
        answered, walked, because = dict(self.answered), self.walked, dict(self.walked_because)
        if self._workspace is not None:
            owner = self._owner
            return self._workspace.status(self.mode)._replace(
                answered=answered,
                walked=walked,
                walked_because=because,
                role="owner",
                served=owner.served if owner is not None else 0,
                guests=owner.problem if owner is not None else None,
            )
        if self._guest is not None:
            from dsh_search.index.peers import Question

            guest = self._guest
            theirs = await guest.ask(Question("status"))
            if isinstance(theirs, Status):
                return theirs._replace(
                    mode=self.mode,
                    answered=answered,
                    walked=walked,
                    walked_because=because,
                    role="guest",
                    served=None,
                    guests=None,
                )
            if guest.differs is not None:
                why = (
                    f"another daemon owns the workspace's index, and its view of the files differs from this "
                    f"one's ({guest.differs}): its answers would not be this daemon's walk's, so searches walk"
                )
            else:
                why = guest.note or "another daemon owns the workspace's index and does not answer now"
                if "searches walk" not in why:
                    why += ": searches walk"
            return Status(
                state=OFF,
                mode=self.mode,
                root=self._root,
                reason=why,
                answered=answered,
                walked=walked,
                walked_because=because,
                role="guest",
            )
        reason = self._reason
        if reason is None and self._root is None:
            reason = "no workspace directory to index"
        elif reason is None and self.mode == "auto":
            reason = f"waiting for a search that walks for {AUTO_AFTER_S} s or more"
        return Status(
            state=OFF,
            mode=self.mode,
            root=self._root,
            reason=reason,
            answered=answered,
            walked=walked,
            walked_because=because,
        )

    # --- the engine's FileSource -----------------------------------------------------------------------

    def _active(self) -> Workspace | Walk:
        """The workspace, unless there is none or it failed (then searches walk until it is built again)."""
        ws = self._workspace
        if ws is None:
            return Walk.NO_INDEX
        if ws.state == FAILED:
            return Walk.FAILED
        if ws.state == READY:
            self._failures = 0
        return ws

    async def _glob(self, cwd: str, query: GlobQuery, deny: DenyGlobs) -> GlobFiles | Walk:
        ws = self._active()
        if isinstance(ws, Walk):
            return ws
        try:
            return await ws.glob(cwd, query, deny)
        except Exception as exc:  # corrupt on disk, or a bug: it costs speed, never an answer
            log.exception("workspace index: glob %r in %s failed; walking", query.pattern, cwd)
            ws.fail(f"glob failed: {exc}", exc)
            return Walk.INDEX_ERROR

    async def _grep(
        self, cwd: str, query: GrepQuery, deny: DenyGlobs, *, rules_later: bool = False
    ) -> GrepFiles | Walk:
        """The workspace's answer. `rules_later` (this daemon's own searches): the rule files are checked
        while ripgrep runs (engine/source.py, `GrepFiles.holds`); a guest's answer is checked whole first."""
        ws = self._active()
        if isinstance(ws, Walk):
            return ws
        try:
            return await ws.grep(cwd, query, deny, rules_later=rules_later)
        except Exception as exc:  # corrupt on disk, or a bug: it costs speed, never an answer
            log.exception("workspace index: grep %r in %s failed; walking", query.pattern, cwd)
            ws.fail(f"grep failed: {exc}", exc)
            return Walk.INDEX_ERROR

    async def _ask(self, op: str, cwd: str, query: GlobQuery | GrepQuery, deny: DenyGlobs) -> Answer:
        """The owner's answer to a guest's question; its silence is a reason to walk."""
        from dsh_search.index.peers import Question

        assert self._guest is not None
        answer = await self._guest.ask(Question(op, cwd, query, deny.globs))
        if answer is None:
            return Walk.OWNER_VIEW if self._guest.differs is not None else Walk.OWNER_SILENT
        return answer

    async def glob(self, cwd: str, query: GlobQuery, deny: DenyGlobs) -> GlobFiles | None:
        if self._guest is not None:
            found = await self._ask("glob", cwd, query, deny)
        else:
            found = await self._glob(cwd, query, deny)
        return self._counted("glob", found if isinstance(found, GlobFiles | Walk) else Walk.OWNER_SILENT)

    async def grep(self, cwd: str, query: GrepQuery, deny: DenyGlobs) -> GrepFiles | None:
        if self._guest is not None:
            found = await self._ask("grep", cwd, query, deny)
        else:
            found = await self._grep(cwd, query, deny, rules_later=True)
        return self._counted("grep", found if isinstance(found, GrepFiles | Walk) else Walk.OWNER_SILENT)

    def _counted(self, tool: str, found: F | Walk) -> F | None:
        """The answer for the engine (None: walk), counted, and why a search walks logged."""
        if isinstance(found, Walk):
            self.walked += 1
            self.walked_because[found] = self.walked_because.get(found, 0) + 1
            log.debug("workspace index: a %s walks: %s", tool, found.value)
            return None
        self.answered[tool] += 1
        return found

    def walk_note(self, cwd: str) -> str | None:
        """Why a search from `cwd` walks because of the index's state (building, failed), or None."""
        root, ws = self._root, self._workspace
        if ws is None or root is None or not (cwd == root or cwd.startswith(root.rstrip("/") + "/")):
            return None
        return ws.walk_note()

    def note_walk(self, cwd: str, seconds: float) -> None:
        """A search walked from `cwd` for this long: in auto mode, a slow walk of the workspace starts it."""
        root = self._root
        busy = self._workspace is not None or self._guest is not None
        if busy or root is None or self._reason is not None or seconds < AUTO_AFTER_S:
            return
        if self.mode == "auto" and (cwd == root or cwd.startswith(root.rstrip("/") + "/")):
            log.info("workspace index of %s: a walk took %.2f s; building the index", root, seconds)
            self._start(root)

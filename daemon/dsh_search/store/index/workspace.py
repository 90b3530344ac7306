"""The warm workspace: an index of one workspace directory, kept fresh while the daemon runs, that tells
glob which paths to list and grep which files to read — or says "walk" whenever it cannot be sure.

What it keeps (docs/design.md, "The workspace index"):

- every file glob would list, with its modification time, in glob's order (listing.FileList);
- which files grep's walk reads — ripgrep's own `rg --files`, so ignore files, hidden files and every
  other rule of ripgrep's walk stay ripgrep's — and their text as trigrams (content.Shard, on disk under
  `indexDir`, one set of shard files per daemon: a set is locked by the daemon that writes it);
- inotify watches on every directory (watch.Watcher), drained before each answer.

The promise is the walk's answer, byte for byte. So the index answers only what it knows; for the rest
it says None and the engine walks:

- before the first build is done; after an event queue overflow, until everything has been listed
  again; when an ignore file, a `.git`, a directory or its permissions changed, until ripgrep has listed
  grep's files again (in the background, a fraction of a second on most trees);
- a search from a cwd outside the workspace, or with a root the index cannot spell as ripgrep prints it
  (`..`, a symlink on the way, a file), or whose walk would meet a directory it cannot read;
- a pattern whose literals do not narrow the files (store/index/regex.py), or narrow them to more than
  half of the files under the root (reading the index then costs more than it saves); a glob it does not
  read exactly as ripgrep does;
- a grep whose include glob matches a file glob lists but grep's walk skips (hidden or ignored: ripgrep
  lets an include override those rules) or could name a VCS directory (`*` enters `.git`).

A file changed since it was indexed ("changed") is never served from the index: a search stats it (glob)
or reads it and checks it against the pattern's literals (grep) itself, and the background indexes it
again. Re-indexed files leave old versions behind (content.py says why); once they are most of the
content index, the background builds it again into a new set and swaps it in. Everything here runs on
the event loop; threads do pure work on what they are given and hand the result back.

Memory is kept proportional to what must be answered from: the glob list (~75 bytes a file), grep's
list as ripgrep's own NUL-separated output (read path by path, never as a list of objects), and a page
of index rows at a time when the index is compared with a listing.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from dsh_search.engine.jscompat import utf8_growth
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.source import GlobListing, GrepFiles
from dsh_search.store.index import content
from dsh_search.store.index.content import OPAQUE, TEXT, Shard, Signature, shard_of
from dsh_search.store.index.listing import FileList, Matcher, Snapshot, Unsupported, entry_key, split_key, whitelist
from dsh_search.store.index.manager import ListGrepFiles, workspace_key
from dsh_search.store.index.regex import NONE, Query, required
from dsh_search.store.index.watch import DIRECTORY, GONE, NEW, OVERFLOW, Event, Watcher, WatchLimit

log = logging.getLogger("dsh_search.index")

OFF, BUILDING, READY, FAILED = "off", "building", "ready", "failed"
VCS_NAMES = frozenset((b".git", b".svn", b".hg", b".bzr", b".jj", b".sl"))
RULE_FILES = frozenset((b".gitignore", b".ignore", b".rgignore"))

MAX_CANDIDATE_SHARE = 0.5  # more candidates than this share of the files under the root: walk instead
# A pattern whose rarest required trigram is in more than this share of all grep's files walks before any
# candidate is looked up: the lookup would cost more than the walk saves, and an unselective pattern
# must cost no more than a walk (issue: `static` within 5 % of the index off).
MAX_ESTIMATE_SHARE = 0.15  # (document counts; see Workspace._selective)
MAX_ARGV_BYTES = 512 << 10  # files named on ripgrep's command line, in bytes
MAX_CHANGED_READ = 4000  # changed files a search reads itself; past it, it walks (the writer catches up)
MAX_WALKED_DIRS = 16  # directories walked for files that hold a NUL; past it, walk everything
OVERLAY_COMPACT = 20000  # changes in the glob overlay past which a new snapshot is made
MAINTAIN_AFTER_S = 0.2  # quiet time after events before the background catches up
REINDEX_BATCH = 2000
# Text indexed per transaction in a build: FTS5 keeps a transaction's terms in memory until it commits.
BUILD_BATCH_BYTES = 8 << 20
PROGRESS_EVERY_S = 10.0


class Root(NamedTuple):
    """A search's root as the index spells it."""

    prefix: bytes  # the search's cwd relative to the workspace, with a trailing `/` (b"" at the root)
    under: bytes  # the walked root relative to the cwd, with a trailing `/` (b"": the cwd itself)
    printed: bytes  # what ripgrep puts before a path below the root when it prints it (b"": nothing)


class Workspace:
    """The index of one workspace directory; the engine's `FileSource` (engine/source.py)."""

    def __init__(
        self,
        root: str,
        *,
        index_dir: str,
        list_grep_files: ListGrepFiles,
        wait_for_build: bool = False,
        shards: int = 2,
        on_failure: Callable[[Workspace], None] | None = None,
    ) -> None:
        self.root = root
        self.root_b = os.fsencode(root)
        self.real_root = os.path.realpath(root)
        self.dir = os.path.join(index_dir, workspace_key(self.real_root))
        self._list_grep_files = list_grep_files
        self._wait_for_build = wait_for_build
        self._on_failure = on_failure  # told once, when the index fails
        self._shard_count = max(1, shards)
        self.state = OFF
        self.reason: str | None = None
        self._ready = asyncio.Event()
        self._files: FileList | None = None
        self._shards: list[Shard] = []
        self._watcher: Watcher | None = None
        self._grep_dirs: set[bytes] = set()  # directories grep's walk enters (b"": the workspace)
        self._changed: dict[bytes, int] = {}  # paths changed since indexed → event generation
        self._stated: dict[bytes, int] = {}  # changed paths whose glob entry is current → generation
        self._unknown: set[bytes] = set()  # new files: whether grep's walk reads them is not known yet
        self._grep_new: set[bytes] = set()  # files grep reads that the content index has no row for
        self._unreadable: set[bytes] = set()  # directories the walk could not read
        # Files glob lists and grep's walk skips (hidden or ignored), which an include glob can bring back
        # (see _include_within); None: not known (being listed again), so a grep with an include walks.
        self._skipped: set[bytes] | None = None
        self._skipped_blob: bytes | None = None  # the same, NUL-separated, for a Matcher; None: make again
        self._skipped_later: set[bytes] = set()  # found skipped while `_skipped` is being made again
        self._probes: tuple[int, bytes] | None = None  # (watches then, the VCS names under them), see above
        self._grep_doubt = False  # grep's file list is in doubt (rules changed, ripgrep reported problems)
        self._glob_doubt = False  # every file is in doubt (events were lost)
        self._generation = 0
        self._maintaining: asyncio.Task[None] | None = None
        self._maintain_handle: asyncio.TimerHandle | None = None
        self._build_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading_events = False
        self._threads = ThreadPoolExecutor(max_workers=self._shard_count, thread_name_prefix="index")
        self._lock_fd: int | None = None
        self._lock_fd_old: int | None = None  # the set a content rebuild replaces, until it does
        self._live_share = 1.0  # of the content index's documents, the share that are not garbage
        self._progress: list[int] = []  # files each shard has read so far in the first build
        self._searching = 0  # greps reading the shards now (a rebuild closes the old set after them)
        self._no_searches = asyncio.Event()
        self._no_searches.set()
        self._frequencies: dict[str, int] = {}  # trigram → documents holding it (planning only; refreshed)
        self.stats: dict[str, Any] = {"files": 0, "grepFiles": 0, "bytes": 0}

    # --- life ------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Begin the first build in the background (once)."""
        if self._build_task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self.state = BUILDING
        self._build_task = asyncio.ensure_future(self._build())

    def close(self) -> None:
        for task in (self._build_task, self._maintaining):
            if task is not None:
                task.cancel()
        if self._maintain_handle is not None:
            self._maintain_handle.cancel()
        self._events(False)
        if self._watcher is not None:
            self._watcher.close()
        self._threads.shutdown(wait=False, cancel_futures=True)
        for shard in self._shards:
            with contextlib.suppress(Exception):
                shard.close()
        for fd in (self._lock_fd, self._lock_fd_old):
            if fd is not None:
                os.close(fd)
        self._lock_fd = self._lock_fd_old = None

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "state": self.state,
            "files": self.stats["files"],
            "bytes": self.stats["bytes"],
            "grepFiles": self.stats["grepFiles"],
            "root": self.root,
            "dir": self.dir,
            "changed": len(self._changed),
        }
        if self.state == BUILDING:
            out["indexed"] = sum(self._progress)
        for key in ("builtInMs", "indexBytes", "watches", "rescans", "rebuilds"):
            if key in self.stats:
                out[key] = self.stats[key]
        if self.reason:
            out["reason"] = self.reason
        return out

    def fail(self, reason: str) -> None:
        """Stop answering (searches walk); the manager builds a fresh index after a pause."""
        if self.state == FAILED:
            return
        self.state = FAILED
        self.reason = reason
        self._ready.set()
        self._events(False)
        log.warning("workspace index of %s: %s; searches walk the tree", self.root, reason)
        if self._on_failure is not None:
            self._on_failure(self)

    async def _usable(self) -> bool:
        if self.state == BUILDING and self._wait_for_build:
            await self._ready.wait()
        if self.state != READY:
            return False
        if not all(shard.intact() for shard in self._shards):
            self.fail("its files were deleted or replaced")  # built again after a pause
            return False
        self._drain()
        return self.state == READY

    def _events(self, on: bool) -> None:
        """Read inotify whenever it has something (on), or leave events queued in the kernel (off: while a
        walk adds watches on a thread)."""
        if self._loop is None or self._watcher is None or on == self._reading_events:
            return
        if on:
            self._loop.add_reader(self._watcher.fileno(), self._drain)
        else:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._watcher.fileno())
        self._reading_events = on

    # --- the first build -----------------------------------------------------------------------------------

    async def _build(self) -> None:
        started = time.monotonic()
        try:
            os.makedirs(self.dir, mode=0o700, exist_ok=True)
            self._watcher = Watcher(self.root_b)
            walked = await asyncio.to_thread(_walk, self.root_b, self._watcher, b"")
            unreadable = walked.unreadable
            # The snapshot takes the walk's list over (and empties it) before grep's list is made: the two
            # are never in memory at full size together.
            files = await asyncio.to_thread(_file_list, walked.files)
            del walked
            listed, problems = await self._list_grep_files(self.root, [], None)
            grep_count, grep_dirs = await asyncio.to_thread(_listing_facts, listed)
            self.stats["grepFiles"] = grep_count
            self._shards = await asyncio.to_thread(self._open_shards)
            count = len(self._shards)
            progress = self._progress = [0] * count
            jobs = [
                asyncio.wrap_future(self._threads.submit(_index_shard, shard, self.root_b, listed, i, count, progress))
                for i, shard in enumerate(self._shards)
            ]
            reporter = asyncio.ensure_future(self._report_progress(grep_count))
            try:
                totals = await asyncio.gather(*jobs)
            finally:
                reporter.cancel()
            del listed
            self._live_share = await asyncio.to_thread(_live_share, self._shards)
            skipped = await asyncio.to_thread(_skipped_files, self._shards, files, set())
        except asyncio.CancelledError:
            raise
        except WatchLimit as exc:
            self.fail(f"{exc} (raise fs.inotify.max_user_watches to index this workspace)")
            return
        except Exception as exc:
            log.debug("workspace index build failed", exc_info=True)
            self.fail(f"the build failed: {exc}")
            return
        self._files = files
        self._grep_dirs = grep_dirs
        self._unreadable = unreadable
        self._set_skipped(skipped)
        self._grep_doubt = problems
        for _, unsettled in totals:  # changed while read: a search reads them itself until re-indexed
            for path in unsettled:
                self._mark_changed(path)
        self.stats = {
            "files": len(files),
            "grepFiles": grep_count,
            "bytes": sum(total for total, _ in totals),
            "builtInMs": round((time.monotonic() - started) * 1000),
            "indexBytes": _disk_bytes(self.dir),
            "watches": len(self._watcher),
        }
        self.state = READY
        self._ready.set()
        self._events(True)
        log.info(
            "workspace index of %s ready: %d files, %d read by grep, %d bytes of text, in %.1f s",
            self.root,
            self.stats["files"],
            self.stats["grepFiles"],
            self.stats["bytes"],
            self.stats["builtInMs"] / 1000,
        )
        self._drain()

    async def _report_progress(self, total: int) -> None:
        """A log line every PROGRESS_EVERY_S while the first build reads files (`index/status` has the
        same figure as `indexed` at any time)."""
        while True:
            await asyncio.sleep(PROGRESS_EVERY_S)
            log.info("workspace index of %s: %d of %d files read", self.root, sum(self._progress), total)

    def _open_shards(self, fresh: bool = False) -> list[Shard]:
        """This daemon's shard files: the newest set no other daemon holds (unless `fresh`), else a new
        set. A set is held with a lock on its `lock` file for as long as the daemon uses it, so two
        daemons never write one."""
        sets = sorted(
            (e for e in os.scandir(self.dir) if e.is_dir(follow_symlinks=False) and e.name.startswith("set-")),
            key=lambda e: e.stat().st_mtime,
            reverse=True,
        )
        for entry in [*([] if fresh else sets), None]:
            directory = entry.path if entry is not None else os.path.join(self.dir, f"set-{os.urandom(4).hex()}")
            os.makedirs(directory, mode=0o700, exist_ok=True)
            fd = os.open(os.path.join(directory, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            try:
                shards = self._shards_in(directory)
            except Exception as exc:  # corrupt, or another schema: this set starts afresh
                log.info("workspace index set %s unusable (%s); rebuilding it", directory, exc)
                for name in os.listdir(directory):
                    if name != "lock":
                        with contextlib.suppress(OSError):
                            os.unlink(os.path.join(directory, name))
                shards = self._shards_in(directory)
            os.utime(directory)
            if self._lock_fd is not None:  # the set used so far (a rebuild replaces it)
                os.close(self._lock_fd)
            self._lock_fd = fd
            return shards
        raise AssertionError("a new set is always free")

    def _shards_in(self, directory: str) -> list[Shard]:
        return [Shard(os.path.join(directory, f"content-{i}.sqlite"), writable=True) for i in range(self._shard_count)]

    # --- events ----------------------------------------------------------------------------------------------

    def _mark_changed(self, path: bytes) -> None:
        self._generation += 1
        self._changed[path] = self._generation

    def _drain(self) -> None:
        """Apply every event queued so far (before each answer, and whenever events arrive)."""
        if not self._reading_events or self._watcher is None:
            return
        try:
            events = self._watcher.drain()
        except OSError as exc:
            self.fail(f"reading file events failed: {exc}")
            return
        if events:
            for event in events:
                self._apply(event)
            self._schedule()

    def _apply(self, event: Event) -> None:
        path, kind, is_dir = event
        if kind == OVERFLOW:  # events were lost: everything is in doubt until listed again
            self._glob_doubt = self._grep_doubt = True
            return
        parts = path.split(b"/")
        if any(part in VCS_NAMES for part in parts):
            if parts[-1] in VCS_NAMES or (b".git" in parts and parts[-1] in (b"info", b"exclude")):
                self._grep_doubt = True  # a repository came or went, or its exclude file changed
            return
        if parts[-1] in RULE_FILES:
            self._grep_doubt = True
        if kind == GONE:
            self._gone(path, is_dir)
        elif kind == DIRECTORY:
            self._arrived(path)
        else:
            self._mark_changed(path)
            if kind == NEW:
                self._unknown.add(path)

    def _forget_file(self, path: bytes) -> None:
        assert self._files is not None
        self._mark_changed(path)
        if self._skipped is not None and path in self._skipped:
            self._skipped.discard(path)
            self._skipped_blob = None
        self._files.apply(path, None)
        self._stated[path] = self._changed[path]
        self._unknown.discard(path)

    def _gone(self, path: bytes, is_dir: bool) -> None:
        if not is_dir:
            self._forget_file(path)
            return
        assert self._watcher is not None
        self._watcher.forget(path)
        prefix = path + b"/"
        for child in self._files_under(prefix):
            self._forget_file(child)
        self._grep_dirs = {d for d in self._grep_dirs if d != path and not d.startswith(prefix)}
        self._unreadable = {d for d in self._unreadable if d != path and not d.startswith(prefix)}

    def _arrived(self, path: bytes) -> None:
        """A directory arrived (created, moved in) or its permissions changed: watch and list it again.
        Whether grep's walk enters it, ripgrep says when grep's files are listed again."""
        assert self._files is not None and self._watcher is not None
        try:
            walked = _walk(self.root_b, self._watcher, path)
        except WatchLimit as exc:
            self.fail(f"{exc} (raise fs.inotify.max_user_watches to index this workspace)")
            return
        entries = [split_key(key) for key in walked.files]
        present = {p for _mtime, p in entries}
        for child in self._files_under(path + b"/"):
            if child not in present:
                self._forget_file(child)
        for mtime, child in entries:
            self._mark_changed(child)
            self._files.apply(child, mtime)
            self._stated[child] = self._changed[child]
            self._unknown.add(child)
        self._unreadable = {d for d in self._unreadable if d != path and not d.startswith(path + b"/")}
        self._unreadable |= walked.unreadable
        self._grep_doubt = True

    def _files_under(self, prefix: bytes) -> list[bytes]:
        assert self._files is not None
        found = self._files.matching(Matcher(b"", prefix, b".*"))
        known = set(found)
        return found + [p for p in self._unknown if p.startswith(prefix) and p not in known]

    # --- catching up in the background -----------------------------------------------------------------

    def _schedule(self) -> None:
        if self._loop is None or self._maintain_handle is not None or self.state != READY:
            return
        self._maintain_handle = self._loop.call_later(MAINTAIN_AFTER_S, self._start_maintenance)

    def _start_maintenance(self) -> None:
        self._maintain_handle = None
        if self._maintaining is not None and not self._maintaining.done():
            self._schedule()
            return
        self._maintaining = asyncio.ensure_future(self._maintain())

    async def _maintain(self) -> None:
        """List everything again after lost events; list grep's files again when in doubt; index changed
        files again; compact the glob list."""
        try:
            if self._glob_doubt:
                await self._rescan()
            if self._grep_doubt or self._unknown:
                await self._relist_grep()
            self._refresh_stats()  # glob's entries current first: a path leaves `changed` only when both are
            await self._reindex_changed()
            await self._compact()
            if not self._changed and await asyncio.to_thread(_garbage_heavy, self._shards):
                await self._rebuild_content()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("workspace index maintenance failed", exc_info=True)
            self.fail(f"keeping the index fresh failed: {exc}")
        finally:
            if self.state == READY and (self._changed or self._grep_doubt or self._glob_doubt or self._unknown):
                self._schedule()

    async def _rescan(self) -> None:
        """After lost events: list and stat every file again, and take every indexed file whose signature
        changed as changed."""
        assert self._watcher is not None
        log.info("workspace index of %s: file events were lost; listing everything again", self.root)
        self.stats["rescans"] = self.stats.get("rescans", 0) + 1
        self._events(False)  # the walk adds watches on a thread; events wait in the kernel
        try:
            self._watcher.drain()  # what is queued predates the walk: the walk sees its result
            walked = await asyncio.to_thread(_walk, self.root_b, self._watcher, b"")
            unreadable = walked.unreadable
            files = await asyncio.to_thread(_file_list, walked.files)
            del walked
            stale = await asyncio.to_thread(_stale, self._shards, self.root_b)
        finally:
            self._events(True)
        self._files = files
        self._stated.clear()
        self._changed.clear()
        for path in stale:
            self._mark_changed(path)
        self._unreadable = unreadable
        self._unknown.clear()
        self._glob_doubt = False
        self._grep_doubt = True
        self.stats["files"] = len(files)
        self._drain()

    async def _relist_grep(self) -> None:
        """ripgrep lists grep's files again: new files join, others leave (the content index forgets them)."""
        generation = self._generation
        listed, problems = await self._list_grep_files(self.root, [], None)
        count = len(self._shards)
        jobs = [
            asyncio.wrap_future(self._threads.submit(_relist_shard, shard, listed, i, count))
            for i, shard in enumerate(self._shards)
        ]
        new = [path for part in await asyncio.gather(*jobs) for path in part]
        self._set_skipped(None)  # grep with an include walks until they are listed again, below
        unknown = list(self._unknown)
        grep_count, grep_dirs = await asyncio.to_thread(_listing_facts, listed)
        members = await asyncio.to_thread(_members, listed, unknown)
        del listed
        self._grep_new = set(new)
        for path in new:
            self._changed.setdefault(path, generation)
        self._grep_dirs = grep_dirs
        self.stats["grepFiles"] = grep_count
        if self._generation == generation:  # nothing happened while ripgrep listed
            self._grep_doubt = problems
            self._unknown.clear()
        else:  # what happened meanwhile is judged next time
            self._unknown -= members
            self._grep_doubt = True
        assert self._files is not None
        # Files not in the content index are skipped unless grep reads them (new ones). One that is still
        # unknown counts as skipped until it is settled; one deleted meanwhile may stay. Both only make a
        # grep with an include walk.
        frozen = FileList(self._files.snapshot)  # read on a thread: a copy of the changes, not the live ones
        frozen.overlay = dict(self._files.overlay)
        self._set_skipped(await asyncio.to_thread(_skipped_files, self._shards, frozen, set(self._grep_new)))

    async def _reindex_changed(self) -> None:
        if not self._changed:
            return
        batch = dict(list(self._changed.items())[:REINDEX_BATCH])
        members = self._grep_new & set(batch)
        done = await asyncio.to_thread(_reindex, self._shards, self.root_b, list(batch), members)
        self._frequencies.clear()  # plans may pick other trigrams now (their results never depend on it)
        self._live_share = await asyncio.to_thread(_live_share, self._shards)
        for path in done:
            generation = batch[path]
            if self._changed.get(path) == generation and self._stated.get(path) == generation:
                del self._changed[path]
                self._grep_new.discard(path)

    async def _rebuild_content(self) -> None:
        """The content index again, from scratch, in a new set of shards, once most of its documents are
        garbage (old versions of re-indexed files: a contentless FTS5 table cannot delete them, and they
        slow lookups and inflate document counts). Searches use the old set meanwhile; files that change
        meanwhile are read by searches and re-indexed into the new set once it serves (maintenance does
        not run while this does: this is maintenance)."""
        log.info("workspace index of %s: rebuilding its content index (most documents are old versions)", self.root)
        generation = self._generation
        listed, problems = await self._list_grep_files(self.root, [], None)
        old = self._shards
        old_dir = os.path.dirname(old[0].path) if old else None
        self._lock_fd_old, self._lock_fd = self._lock_fd, None
        try:
            shards = await asyncio.to_thread(self._open_shards, True)
        except BaseException:
            self._lock_fd = self._lock_fd_old
            raise
        count = len(shards)
        try:
            totals = await asyncio.gather(
                *(
                    asyncio.wrap_future(self._threads.submit(_index_shard, shard, self.root_b, listed, i, count))
                    for i, shard in enumerate(shards)
                )
            )
        except BaseException:
            for shard in shards:
                with contextlib.suppress(Exception):
                    shard.close()
            if self._lock_fd is not None:
                os.close(self._lock_fd)
            self._lock_fd = self._lock_fd_old
            raise
        self._shards = shards
        await self._no_searches.wait()  # searches that started with the old set finish with it
        if self._lock_fd_old is not None:
            os.close(self._lock_fd_old)
        self._lock_fd_old = None
        for shard in old:
            with contextlib.suppress(Exception):
                shard.close()
        if old_dir is not None:
            await asyncio.to_thread(_remove_set, old_dir)
        self._frequencies.clear()
        for _, unsettled in totals:
            for path in unsettled:
                self._mark_changed(path)
        if self._generation != generation or problems:
            self._grep_doubt = True  # what happened meanwhile: ripgrep lists grep's files again
        self.stats["bytes"] = sum(total for total, _ in totals)
        self.stats["indexBytes"] = await asyncio.to_thread(_disk_bytes, self.dir)
        self.stats["rebuilds"] = self.stats.get("rebuilds", 0) + 1
        self._live_share = await asyncio.to_thread(_live_share, self._shards)

    async def _compact(self) -> None:
        files = self._files
        if files is None or len(files.overlay) < OVERLAY_COMPACT:
            return
        before = dict(files.overlay)
        compacted = await asyncio.to_thread(files.compacted)
        current = self._files
        assert current is not None
        for path, change in current.overlay.items():
            if before.get(path) is not change:  # changed again while compacting
                compacted.overlay[path] = change
        self._files = compacted

    def walked(self, cwd: str, seconds: float) -> None:
        """A search walked (the FileSource protocol): nothing to learn here; the manager decides builds."""

    # --- where a search runs -----------------------------------------------------------------------------

    def _outside(self, cwd: str) -> bool:
        """Whether a search's cwd is plainly not in the workspace (`_root` judges the rest)."""
        base = self.root.rstrip("/")
        return cwd not in (self.root, base) and not cwd.startswith(base + "/")

    def _root(self, cwd: str, path: str | None) -> Root | None:
        """The search's root as the index spells it, or None when it cannot promise ripgrep's spelling."""
        if "\0" in cwd or (path is not None and "\0" in path):
            return None  # no file has such a name: ripgrep says what it says
        base = self.root.rstrip("/")
        if cwd in (self.root, base):
            cwd_rel = ""
        elif cwd.startswith(base + "/"):
            cwd_rel = cwd[len(base) + 1 :]
            if os.path.normpath(cwd_rel) != cwd_rel or cwd_rel.startswith(".."):
                return None
        else:
            return None
        if os.path.realpath(cwd) != os.path.join(self.real_root, cwd_rel).rstrip("/"):
            return None  # a symlink on the way: ripgrep would print names the index does not have
        prefix = os.fsencode(cwd_rel) + b"/" if cwd_rel else b""
        if path is None:
            return Root(prefix, b"", b"")
        if "//" in path:
            return None
        if path.startswith("/"):
            stripped = path.rstrip("/") or "/"
            cwd_base = cwd.rstrip("/")
            if stripped == cwd_base:
                rel = ""
            elif stripped.startswith(cwd_base + "/"):
                rel = stripped[len(cwd_base) + 1 :]
            else:
                return None
        else:
            stripped = path[2:] if path.startswith("./") else path
            rel = "" if stripped in ("", ".") else stripped.rstrip("/")
        if rel and (os.path.normpath(rel) != rel or rel.startswith("..")):
            return None
        target = os.path.join(cwd, rel) if rel else cwd
        if os.path.realpath(target) != os.path.join(self.real_root, cwd_rel, rel).rstrip("/"):
            return None
        try:
            if not stat.S_ISDIR(os.stat(target).st_mode):
                return None  # a file named as the root: ripgrep lists it whatever the glob says
        except OSError:
            return None
        printed = os.fsencode(path.rstrip("/") or path) + b"/"
        return Root(prefix, os.fsencode(rel) + b"/" if rel else b"", printed)

    def _readable(self, under: bytes) -> bool:
        """No directory the walk from `under` (workspace-relative, b"" or ending in `/`) enters was
        unreadable (ripgrep would report it)."""
        return not any(d.startswith(under) or d == under.rstrip(b"/") for d in self._unreadable)

    # --- glob ----------------------------------------------------------------------------------------------

    async def glob_listing(self, cwd: str, path: str | None, pattern: str, deny: DenyGlobs) -> GlobListing | None:
        if "\0" in pattern:
            return None  # no argument can carry a NUL: ripgrep fails to start, as a walk would
        if self._outside(cwd):
            return None  # never waits for a build it cannot use
        if not await self._usable() or self._glob_doubt:
            return None
        root = self._root(cwd, path)
        if root is None or not self._readable(root.prefix + root.under):
            return None
        try:
            regex = whitelist(pattern)
        except Unsupported:
            return None
        self._refresh_stats()
        assert self._files is not None
        found = self._files.matching(Matcher(root.prefix, root.under, regex))
        return _listing(found, root, deny)

    def _refresh_stats(self) -> None:
        """Give every changed path's glob entry its current modification time (or drop it when gone)."""
        files = self._files
        assert files is not None
        for path, generation in [(p, g) for p, g in self._changed.items() if self._stated.get(p) != g]:
            try:
                st = os.stat(os.path.join(self.root_b, path), follow_symlinks=False)
            except OSError:
                files.apply(path, None)
            else:
                files.apply(path, st.st_mtime_ns if stat.S_ISREG(st.st_mode) else None)
            self._stated[path] = generation

    # --- grep ----------------------------------------------------------------------------------------------

    async def grep_files(
        self, cwd: str, path: str | None, pattern: str, include: str | None, deny: DenyGlobs
    ) -> GrepFiles | None:
        self._searching += 1
        self._no_searches.clear()
        try:
            return await self._grep_files_now(cwd, path, pattern, include, deny)
        finally:
            self._searching -= 1
            if not self._searching:
                self._no_searches.set()

    async def _grep_files_now(
        self, cwd: str, path: str | None, pattern: str, include: str | None, deny: DenyGlobs
    ) -> GrepFiles | None:
        if "\0" in pattern or (include is not None and "\0" in include):
            return None  # no argument can carry a NUL: ripgrep fails to start, as a walk would
        if self._outside(cwd):
            return None  # never waits for a build it cannot use
        query = required(pattern)
        expression = content.match_expression(query)
        if expression is None and query is not NONE:
            return None  # the pattern's literals narrow nothing: walk, without waiting for a build
        if not await self._usable() or self._glob_doubt or self._grep_doubt:
            return None
        root = self._root(cwd, path)
        if root is None:
            return None
        under = root.prefix + root.under
        if under.rstrip(b"/") not in self._grep_dirs:
            return None  # hidden, ignored, or holding nothing grep reads: ripgrep's walk decides
        if not self._readable(under) or not await self._settle_unknown(under):
            return None
        include_regex = None
        if include is not None:
            try:
                include_glob = whitelist(include)
            except Unsupported:
                return None
            if not await self._include_within(root, include_glob):
                return None  # it brings back a file grep's walk skips without it
            include_regex = Matcher(root.prefix, b"", include_glob)
        changed = [p for p in self._changed if p.startswith(under)]
        if len(changed) > MAX_CHANGED_READ:
            return None
        low, high = content.prefix_range(under)
        shards = self._shards
        grep_files = int(self.stats["grepFiles"])
        planned = await asyncio.to_thread(_plan, shards, query, self._frequencies)
        if planned is None or not await self._selective(planned, MAX_ESTIMATE_SHARE * grep_files):
            return None  # the pattern's rarest text is in too many files: a walk costs less
        parts = await asyncio.gather(
            *(asyncio.to_thread(_query, shard, planned, low, high, changed, under == b"") for shard in shards)
        )
        total = grep_files if under == b"" else sum(part[0] for part in parts)
        found = [hit for part in parts for hit in part[1]]
        members = set().union(*(part[2] for part in parts))
        members |= {p for p in changed if p in self._grep_new}
        chosen = {p: kind for p, kind in found if p not in self._changed}
        for p, kind in await asyncio.to_thread(_read_changed, self.root_b, [p for p in changed if p in members], query):
            chosen[p] = kind
        if total and len(chosen) > MAX_CANDIDATE_SHARE * total:
            return None
        files = _grep_files(root, chosen, include_regex, deny)
        if files is not None and not files.named and not files.walked:
            # No candidate. ripgrep's walk fails when it searches no file at all ("No files were
            # searched", exit 2) and finds nothing otherwise: say which, or walk to let it say.
            extra = [p for p in self._grep_new if p.startswith(under)]
            assert self._files is not None
            gone = {p for p, change in self._files.overlay.items() if change.mtime is None}
            searched = await asyncio.to_thread(_any_searched, shards, low, high, extra, gone, root, include_regex, deny)
            if not searched:
                return None
        return files

    async def _selective(self, planned: content.Plan, limit: float) -> bool:
        """Whether at most `limit` files can match, by document counts. Those count old versions of
        re-indexed files too, which pile up on the text that is edited most: a count up to twice the
        limit, with old versions in the index, is checked by counting the current documents that match."""
        if planned.estimate <= limit:
            return True
        if self._live_share >= 1.0 or planned.estimate > 2 * limit or planned.expression is None:
            return False
        expression = planned.expression
        counts = await asyncio.gather(*(asyncio.to_thread(shard.live_count, expression) for shard in self._shards))
        return sum(counts) <= limit

    async def _settle_unknown(self, under: bytes) -> bool:
        """Whether grep's walk reads each new file under `under` is settled by ripgrep itself, for files in
        directories the walk enters (their siblings' rules are known); False when a new directory is
        among them (then the background lists grep's files again)."""
        unknown = [p for p in self._unknown if p.startswith(under)]
        if not unknown:
            return True
        directories = sorted({p.rpartition(b"/")[0] for p in unknown})
        if any(d not in self._grep_dirs for d in directories):
            return False
        generation = self._generation
        listed, problems = await self._list_grep_files(self.root, directories, 1)
        if problems:
            return False
        members = {p[2:] if p.startswith(b"./") else p for p in listed.split(b"\0") if p}
        for path in unknown:
            if self._changed.get(path, 0) > generation:
                continue  # changed again meanwhile: still unknown
            self._unknown.discard(path)
            if path in members:
                self._grep_new.add(path)
                if self._skipped is not None and path in self._skipped:
                    self._skipped.discard(path)
                    self._skipped_blob = None
            elif self._skipped is None:
                self._skipped_later.add(path)
            else:
                self._skipped.add(path)
                self._skipped_blob = None
        return not any(p.startswith(under) for p in self._unknown)

    def _set_skipped(self, skipped: set[bytes] | None) -> None:
        """The skipped files made again (with those found meanwhile), or None while they are made."""
        self._skipped = None if skipped is None else skipped | self._skipped_later
        self._skipped_later = set()
        self._skipped_blob = None

    async def _include_within(self, root: Root, include: bytes) -> bool:
        """Whether every file the include glob lets grep's walk search under the search root is one that
        walk reads anyway. ripgrep lets an include override its hidden-file and ignore rules: a hidden or
        ignored file the glob matches is searched, and so is what it matches inside a VCS directory
        whose name it matches (`*` enters `.git`). The index holds neither, so a grep whose include
        reaches one walks. Files glob lists but grep skips are known (`_skipped`); VCS directories are
        not listed, so any name a VCS directory could have below a watched directory counts."""
        if self._skipped is None:
            return False
        if self._skipped_blob is None:  # joined here, on the loop's thread, which changes the set
            self._skipped_blob = b"\0" + b"\0".join(self._skipped) + b"\0" if self._skipped else b""
        assert self._watcher is not None
        if self._probes is None or self._probes[0] != self._watcher.changes:
            probes = [d + b"/" + name if d else name for d in self._watcher.directories() for name in VCS_NAMES]
            self._probes = (self._watcher.changes, b"\0" + b"\0".join(probes) + b"\0")
        reach = Matcher(root.prefix, root.under, include)
        blobs = [blob for blob in (self._skipped_blob, self._probes[1]) if blob]
        return not await asyncio.to_thread(lambda: any(reach.select(blob) for blob in blobs))


# --- answers ------------------------------------------------------------------------------------------------


def _listing(found: list[bytes], root: Root, deny: DenyGlobs) -> GlobListing:
    """What ripgrep would print for these files (workspace-relative, in order), for glob. Whole-list
    operations where a path needs no work of its own: most listings are the paths as they are."""
    cut = len(root.prefix)
    if cut:
        found = [path[cut:] for path in found]  # relative to the search's cwd
    if deny:
        found = [path for path in found if not deny.denies(os.fsdecode(path))]
    printed = found
    if root.printed:
        keep = len(root.under)
        head = root.printed
        printed = [head + path[keep:] for path in found]
    joined = b"\0".join(printed)  # no name holds a NUL
    size = len(joined) + 1 if printed else 0
    growth = 0 if joined.isascii() else utf8_growth(joined)
    paths = joined.decode("utf-8", "replace").split("\0") if printed else []
    return GlobListing(paths, size, growth)


def _searched(path: bytes, root: Root, include: Any, deny: DenyGlobs) -> bool:
    """Whether grep's walk would search this file of its list (the include and deny globs)."""
    if include is not None and not include.matches(path):
        return False
    return not (deny and deny.denies(os.fsdecode(path[len(root.prefix) :])))


def _any_searched(
    shards: list[Shard],
    low: bytes,
    high: bytes | None,
    extra: list[bytes],
    gone: set[bytes],
    root: Root,
    include: Any,
    deny: DenyGlobs,
) -> bool:
    """Whether grep's walk from the root would search at least one file."""
    if any(_searched(p, root, include, deny) for p in extra if p not in gone):
        return True
    return any(_searched(p, root, include, deny) for shard in shards for p in shard.paths(low, high) if p not in gone)


def _grep_files(root: Root, chosen: dict[bytes, int], include: Any, deny: DenyGlobs) -> GrepFiles | None:
    """The chosen files as ripgrep must be given them: text files by name, the others walked to."""
    named: list[bytes] = []
    walked: dict[bytes, list[bytes]] = {}
    argv_bytes = 0
    cut = len(root.prefix)
    keep = cut + len(root.under)
    check = include is not None or bool(deny)
    for path in sorted(chosen):
        if check and not _searched(path, root, include, deny):
            continue
        rel = path[cut:]
        printed = root.printed + path[keep:] if root.printed else rel
        argv_bytes += len(printed) + 1
        if argv_bytes > MAX_ARGV_BYTES:
            return None
        if chosen[path] == TEXT:
            named.append(printed)
            continue
        # A NUL in it (or no telling): ripgrep must find it by walking, from its directory.
        if not rel.isascii() or b"/" not in printed:
            return None  # a top-level file with no root to walk from, or a name a glob cannot carry
        walked.setdefault(printed.rpartition(b"/")[0], []).append(rel)
    if len(walked) > MAX_WALKED_DIRS:
        return None
    return GrepFiles(named, list(walked.items()))


# --- work done on threads (pure: inputs in, results out) -------------------------------------------------------


class Walked(NamedTuple):
    files: list[bytes]  # listing.entry_key(mtime, path relative to the workspace) of each file
    unreadable: set[bytes]  # directories that could not be listed


def _walk(root: bytes, watcher: Watcher, start: bytes) -> Walked:
    """Watch and list every directory from `start` down (relative to root), as glob sees the tree:
    regular files (no symlinks, no devices), hidden and ignored ones included, VCS directories left out
    (a repository's `.git` and `.git/info` are watched, for its `exclude` file)."""
    files: list[bytes] = []
    unreadable: set[bytes] = set()
    todo = [start]
    while todo:
        directory = todo.pop()
        if not watcher.watch(directory):
            continue  # gone already: its own event follows
        absolute = os.path.join(root, directory) if directory else root
        try:
            with os.scandir(absolute) as listing:
                entries = list(listing)
        except OSError:
            unreadable.add(directory)
            continue
        for entry in entries:
            name = entry.name
            rel = directory + b"/" + name if directory else name
            try:
                if name in VCS_NAMES:
                    if name == b".git" and entry.is_dir(follow_symlinks=False):
                        watcher.watch(rel)
                        if os.path.isdir(os.path.join(entry.path, b"info")):
                            watcher.watch(rel + b"/info")
                    continue
                if entry.is_dir(follow_symlinks=False):
                    todo.append(rel)
                elif entry.is_file(follow_symlinks=False):
                    files.append(entry_key(entry.stat(follow_symlinks=False).st_mtime_ns, rel))
            except OSError:
                continue  # vanished while listed
    return Walked(files, unreadable)


def _skipped_files(shards: list[Shard], files: FileList, known: set[bytes]) -> set[bytes]:
    """The files glob lists that the content index has no row for and that are not `known` (grep's walk
    skips them: hidden or ignored). Each path is asked of its own shard, in chunks."""
    skipped: set[bytes] = set()
    count = len(shards)
    pending: list[list[bytes]] = [[] for _ in shards]

    def ask(i: int) -> None:
        chunk, pending[i] = pending[i], []
        present = shards[i].present(chunk)
        skipped.update(p for p in chunk if p not in present)

    for path in files.paths():
        if path in known:
            continue
        i = shard_of(path, count)
        pending[i].append(path)
        if len(pending[i]) >= 4096:
            ask(i)
    for i in range(count):
        ask(i)
    return skipped


def _file_list(keys: list[bytes]) -> FileList:
    """The glob list from a walk's entry keys (which the snapshot takes over and empties: the walk's list
    and the snapshot are never in memory at full size together)."""
    return FileList(Snapshot(keys))


def _parents(paths: Iterable[bytes]) -> set[bytes]:
    """Every directory above the given paths, and b"" (the workspace)."""
    out = {b""}
    for path in paths:
        directory = path.rpartition(b"/")[0]
        while directory not in out:
            out.add(directory)
            directory = directory.rpartition(b"/")[0]
    return out


class _Opened:
    """One file opened to be read for the index: its signature when opened, its bytes chunk by chunk,
    and whether it is still that version once read (else what was read may be a mix of two)."""

    def __init__(self, root: bytes, path: bytes) -> None:
        self.fd = -1
        self.sig: Signature | None = None  # None: not a regular file that could be opened
        self.failed = False
        try:
            self.fd = os.open(os.path.join(root, path), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
            st = os.fstat(self.fd)
        except OSError:
            return
        if stat.S_ISREG(st.st_mode):
            self.sig = Signature.of(st)

    def __enter__(self) -> _Opened:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)

    def chunks(self) -> Iterator[bytes]:
        try:
            while chunk := os.read(self.fd, content.CHUNK_BYTES):
                yield chunk
        except OSError:
            self.failed = True

    def intact(self) -> bool:
        """Whether everything was read, of the version opened."""
        if self.failed or self.sig is None:
            return False
        try:
            return Signature.of(os.fstat(self.fd)) == self.sig
        except OSError:
            return False


def _index_file(batch: content.Batch, root: bytes, path: bytes) -> tuple[int, bool]:
    """Index the current version of one file grep reads. Returns (its text's size, whether it was read
    cleanly). A file that cannot be read, or changed while read, is written OPAQUE — every search hands it
    to ripgrep — until its next event has it read again."""
    with _Opened(root, path) as opened:
        if opened.sig is None:
            batch.opaque(path, _lstat_signature(root, path))
            return 0, False
        size = batch.put(path, opened.sig, content.Text(opened.chunks()))
        if not opened.intact():
            batch.opaque(path, opened.sig)
            return 0, False
    batch.checkpoint()
    return size, True


def _lstat_signature(root: bytes, path: bytes) -> Signature:
    try:
        return Signature.of(os.stat(os.path.join(root, path), follow_symlinks=False))
    except OSError:
        return Signature(-1, 0, 0, 0)  # matches no file's


def _index_shard(
    shard: Shard, root: bytes, listed: bytes, index: int, count: int, progress: list[int] | None = None
) -> tuple[int, list[bytes]]:
    """Bring one shard up to date with the files grep reads (`listed`, ripgrep's NUL-separated list): keep
    what is indexed at its current signature, index the rest, forget what grep no longer reads. Returns
    (bytes of text the shard now covers, files that could not be read cleanly). Memory: this shard's
    paths and a page of its rows, whatever the size of the index."""
    mine = sorted(p for p in _listed_paths(listed) if shard_of(p, count) == index)
    total = 0
    unsettled: list[bytes] = []
    with shard.batch(commit_bytes=BUILD_BATCH_BYTES) as batch:
        indexed = batch.indexed()
        for path in mine:
            if progress is not None:
                progress[index] += 1  # read by the event loop for index/status (one writer per slot)
            for gone in indexed.before(path):
                batch.remove(gone)
            old = indexed.take(path)
            if old is not None and _lstat_signature(root, path) == old:
                total += old.size
                continue
            size, clean = _index_file(batch, root, path)
            total += size
            if not clean:
                unsettled.append(path)
        for gone in indexed.before(None):
            batch.remove(gone)
    return total, unsettled


def _relist_shard(shard: Shard, listed: bytes, index: int, count: int) -> list[bytes]:
    """Forget the files of one shard that grep no longer reads; returns the ones it reads that are not
    indexed yet (in path order)."""
    mine = sorted(p for p in _listed_paths(listed) if shard_of(p, count) == index)
    new: list[bytes] = []
    with shard.batch() as batch:
        indexed = batch.indexed()
        for path in mine:
            for gone in indexed.before(path):
                batch.remove(gone)
            if indexed.take(path) is None:
                new.append(path)
        for gone in indexed.before(None):
            batch.remove(gone)
    return new


def _stale(shards: list[Shard], root: bytes) -> list[bytes]:
    """Indexed files whose current signature is not the indexed one (or that are gone)."""
    out = []
    for shard in shards:
        for path, sig in shard.signatures():
            if _lstat_signature(root, path) != sig:
                out.append(path)
    return out


_PATH = re.compile(rb"[^\0]+")


def _listed_paths(listed: bytes) -> Iterator[bytes]:
    """The paths of a NUL-separated listing one at a time (a list of them all would cost ~70 bytes a file)."""
    for match in _PATH.finditer(listed):
        yield match.group()


def _listing_facts(listed: bytes) -> tuple[int, set[bytes]]:
    """How many paths a listing holds, and every directory above them (b"": the workspace)."""
    count = 0

    def counted() -> Iterator[bytes]:
        nonlocal count
        for path in _listed_paths(listed):
            count += 1
            yield path

    parents = _parents(counted())
    return count, parents


def _members(listed: bytes, paths: list[bytes]) -> set[bytes]:
    """Which of `paths` a NUL-separated listing holds."""
    wanted = set(paths)
    return {p for p in _listed_paths(listed) if p in wanted} if wanted else set()


def _remove(shards: list[Shard], paths: list[bytes]) -> None:
    count = len(shards)
    for i, shard in enumerate(shards):
        mine = [p for p in paths if shard_of(p, count) == i]
        if mine:
            shard.remove_many(mine)


def _reindex(shards: list[Shard], root: bytes, paths: list[bytes], new_members: set[bytes]) -> list[bytes]:
    """Index the current version of each path grep reads (an indexed one, or a new member); forget the
    ones that are gone. Returns the paths now settled in the index (or not grep's at all)."""
    count = len(shards)
    present = set().union(*(s.present(paths) for s in shards)) | new_members
    done: list[bytes] = []
    per_shard: list[list[bytes]] = [[] for _ in shards]
    for path in paths:
        if path in present:
            per_shard[shard_of(path, count)].append(path)
        else:
            done.append(path)  # not a file grep reads: nothing to index
    for shard, mine in zip(shards, per_shard, strict=True):
        if not mine:
            continue
        with shard.batch() as batch:
            for path in mine:
                if not os.path.lexists(os.path.join(root, path)):
                    batch.remove(path)
                    done.append(path)
                    continue
                _size, clean = _index_file(batch, root, path)
                if clean:
                    done.append(path)
    return done


def _plan(shards: list[Shard], query: Query, frequencies: dict[str, int]) -> content.Plan | None:
    """The lookup for `query`, its literals' rarest trigrams chosen by their document counts (cached in
    `frequencies` across calls); None when the pattern constrains nothing."""

    def frequency(gram: str) -> int:
        count = frequencies.get(gram)
        if count is None:
            if len(frequencies) > 200_000:
                frequencies.clear()
            count = frequencies[gram] = sum(shard.doc_frequency(gram) for shard in shards)
        return count

    if query is NONE:
        return content.Plan(None, 0)
    planned = content.plan(query, frequency)
    return planned if planned.expression is not None else None


def _query(
    shard: Shard, planned: content.Plan, low: bytes, high: bytes | None, changed: list[bytes], whole: bool
) -> tuple[int, list[tuple[bytes, int]], set[bytes]]:
    """One shard's part: (files grep reads under the range — not counted for the whole workspace, which
    the caller knows —, the indexed candidates there, which changed paths grep reads)."""
    members = shard.present(changed) if changed else set()
    total = 0 if whole else shard.count(low, high)
    found = shard.candidates(planned, low, high) if planned.expression is not None else []
    return total, found, members


MAX_JUDGED_CHARS = 16 << 20  # a changed file with more text than this is a candidate unread


def _read_changed(root: bytes, paths: list[bytes], query: Query) -> list[tuple[bytes, int]]:
    """Changed files grep reads, as candidates: each read now and judged by the pattern's literals. A
    file that cannot be judged (unreadable, changing as it is read, too large) is a candidate that
    ripgrep finds by walking, so it reads the file as its walk would."""
    out = []
    for path in paths:
        with _Opened(root, path) as opened:
            if opened.sig is None:
                if os.path.isfile(os.path.join(root, path)):
                    out.append((path, OPAQUE))
                continue
            text = content.Text(opened.chunks())
            whole = content.joined(text, MAX_JUDGED_CHARS)
            if whole is None or text.kind == OPAQUE or not opened.intact():
                out.append((path, OPAQUE))
            elif query.holds(whole):
                out.append((path, text.kind))
    return out


GARBAGE_REBUILD_MIN = 20_000  # garbage documents below which a content index is never rebuilt


def _garbage_heavy(shards: list[Shard]) -> bool:
    """Whether most of the content index's documents are garbage (and there is enough of it to matter)."""
    garbage = sum(shard.garbage() for shard in shards)
    return garbage >= GARBAGE_REBUILD_MIN and garbage * 2 > sum(shard.documents() for shard in shards)


def _live_share(shards: list[Shard]) -> float:
    documents = sum(shard.documents() for shard in shards)
    return 1.0 if not documents else (documents - sum(shard.garbage() for shard in shards)) / documents


def _remove_set(directory: str) -> None:
    """Delete a set of shard files this daemon no longer uses (its lock released)."""
    for name in os.listdir(directory):
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))
    with contextlib.suppress(OSError):
        os.rmdir(directory)


def _disk_bytes(directory: str) -> int:
    total = 0
    for base, _dirs, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(base, name)).st_size
    return total

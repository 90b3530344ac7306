"""The warm workspace: one workspace directory's index, kept fresh while the daemon runs — the engine's
`FileSource` (engine/source.py), which tells glob which paths to list and grep which files to read, or
says None (walk) whenever it cannot be sure.

Its life:

1. **The first build** (`start`): watch and walk the tree for glob (walk.py), ask ripgrep for grep's list
   (lister.py), merge that list into the content index on disk (builder.py, into a shard set of its own:
   sets.py). Until it is done, searches walk.
2. **Every answer** first drains every event inotify has queued (watch.py) into the bookkeeping
   (freshness.py): a file written before a request is seen by that request. Then glob answers from
   glob's list in memory; grep from the planner (planner.py), which looks up candidates and reads the
   changed files itself. The answers are spelled as ripgrep prints them (answers.py).
3. **In the background**, a moment after events stop (`MAINTAIN_AFTER_S`): everything listed again after
   lost events, grep's list asked again when in doubt, changed files indexed again, glob's list
   compacted, and the content index rebuilt into a fresh set once most of it is old versions of files.

Any exception inside the index fails it (`fail`): searches walk, and the manager builds it afresh after
a pause. Everything here runs on the event loop; the builder's threads do pure work on what they are
given and hand the result back, which is applied here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index import answers, builder, lister
from dsh_search.index.builder import Builder
from dsh_search.index.freshness import Freshness
from dsh_search.index.globlist import GlobList, Matcher, Unsupported, glob_regex
from dsh_search.index.lister import GrepLister
from dsh_search.index.planner import Planner, analyse
from dsh_search.index.sets import ShardSet, disk_bytes, workspace_dir
from dsh_search.index.status import BUILDING, FAILED, OFF, READY, Status
from dsh_search.index.walk import walk
from dsh_search.index.watch import Watcher, WatchLimit

log = logging.getLogger("dsh_search.index")

OVERLAY_COMPACT = 20000  # changes in glob's overlay past which a new snapshot is made
MAINTAIN_AFTER_S = 0.2  # quiet time after events before the background catches up
REINDEX_BATCH = 2000  # changed files indexed again in one step
PROGRESS_EVERY_S = 10.0  # a log line this often while the first build reads files


@dataclass
class _Counts:
    """What `status` reports of the index's size and history."""

    files: int = 0
    grep_files: int = 0
    bytes: int = 0
    built_in_ms: int | None = None
    index_bytes: int | None = None
    watches: int | None = None
    rescans: int | None = None
    rebuilds: int | None = None


class Workspace:
    """The index of one workspace directory."""

    def __init__(
        self,
        root: str,
        *,
        index_dir: str,
        grep_lister: GrepLister,
        wait_for_build: bool = False,
        shards: int = 2,
        on_failure: Callable[[Workspace], None] | None = None,
    ) -> None:
        self.root = root
        self.root_b = os.fsencode(root)
        self.real_root = os.path.realpath(root)
        self.dir = workspace_dir(index_dir, self.real_root)
        self._lister = grep_lister
        self._wait_for_build = wait_for_build
        self._on_failure = on_failure  # told once, when the index fails
        self._shard_count = max(1, shards)
        self.state = OFF
        self.reason: str | None = None
        self._ready = asyncio.Event()
        self._watcher: Watcher | None = None
        self._fresh: Freshness | None = None  # made by the first build
        self._set: ShardSet | None = None
        self._builder = Builder(self.root_b, self._shard_count)
        self._planner = Planner()
        self._live_share = 1.0  # of the content index's documents, the share that are not garbage
        self._progress: list[int] = []  # files each shard has read so far in the first build
        self._searching = 0  # greps reading the shards now (a rebuild closes the old set after them)
        self._no_searches = asyncio.Event()
        self._no_searches.set()
        self._maintaining: asyncio.Task[None] | None = None
        self._maintain_handle: asyncio.TimerHandle | None = None
        self._build_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading_events = False
        self.counts = _Counts()

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
        self._builder.close()
        if self._set is not None:
            self._set.close()

    def status(self, mode: str) -> Status:
        counts = self.counts
        return Status(
            state=self.state,
            mode=mode,
            root=self.root,
            files=counts.files,
            bytes=counts.bytes,
            grep_files=counts.grep_files,
            dir=self.dir,
            changed=len(self._fresh.changed) if self._fresh is not None else 0,
            indexed=sum(self._progress) if self.state == BUILDING else None,
            built_in_ms=counts.built_in_ms,
            index_bytes=counts.index_bytes,
            watches=counts.watches,
            rescans=counts.rescans,
            rebuilds=counts.rebuilds,
            reason=self.reason,
        )

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

    async def _usable(self) -> Freshness | None:
        """The bookkeeping, drained, when the index may answer at all now; None when it may not."""
        if self.state == BUILDING and self._wait_for_build:
            await self._ready.wait()
        if self.state != READY or self._set is None:
            return None
        if not self._set.intact():
            self.fail("its files were deleted or replaced")  # built again after a pause
            return None
        self._drain()
        return self._fresh if self.state == READY else None

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

    def _drain(self) -> None:
        """Apply every event queued so far (before each answer, and whenever events arrive)."""
        fresh = self._fresh
        if not self._reading_events or self._watcher is None or fresh is None:
            return
        try:
            events = self._watcher.drain()
        except OSError as exc:
            self.fail(f"reading file events failed: {exc}")
            return
        if not events:
            return
        try:
            for event in events:
                fresh.apply(event)
        except WatchLimit as exc:
            self.fail(f"{exc} (raise fs.inotify.max_user_watches to index this workspace)")
            return
        self._schedule()

    # --- the first build -------------------------------------------------------------------------------

    async def _build(self) -> None:
        started = time.monotonic()
        try:
            os.makedirs(self.dir, mode=0o700, exist_ok=True)
            watcher = self._watcher = Watcher(self.root_b)
            walked = await asyncio.to_thread(walk, self.root_b, watcher, b"")
            unreadable = walked.unreadable
            # The snapshot takes the walk's list over (and empties it) before grep's list is made: the two
            # are never in memory at full size together.
            files = await asyncio.to_thread(GlobList.from_keys, walked.files)
            del walked
            listed, problems = await self._lister(self.root, [], None)
            grep_count, grep_dirs = await asyncio.to_thread(lister.facts, listed)
            self.counts.grep_files = grep_count
            shard_set = self._set = await asyncio.to_thread(ShardSet.open, self.dir, self._shard_count)
            reporter = asyncio.ensure_future(self._report_progress(grep_count))
            try:
                text_bytes, unsettled = await self._builder.index(shard_set.shards, listed, self._progress)
            finally:
                reporter.cancel()
            del listed
            self._live_share = await asyncio.to_thread(builder.live_share, shard_set.shards)
            skipped = await asyncio.to_thread(builder.skipped_files, shard_set.shards, files, set())
        except asyncio.CancelledError:
            raise
        except WatchLimit as exc:
            self.fail(f"{exc} (raise fs.inotify.max_user_watches to index this workspace)")
            return
        except Exception as exc:
            log.debug("workspace index build failed", exc_info=True)
            self.fail(f"the build failed: {exc}")
            return
        fresh = self._fresh = Freshness(self.root_b, watcher, files, grep_dirs, unreadable)
        fresh.skipped.reset(skipped)
        fresh.grep_doubt = problems
        for path in unsettled:  # changed while read: a search reads them itself until re-indexed
            fresh.mark_changed(path)
        self.counts = _Counts(
            files=len(files),
            grep_files=grep_count,
            bytes=text_bytes,
            built_in_ms=round((time.monotonic() - started) * 1000),
            index_bytes=disk_bytes(self.dir),
            watches=len(watcher),
        )
        self.state = READY
        self._ready.set()
        self._events(True)
        log.info(
            "workspace index of %s ready: %d files, %d read by grep, %d bytes of text, in %.1f s",
            self.root,
            self.counts.files,
            self.counts.grep_files,
            self.counts.bytes,
            (self.counts.built_in_ms or 0) / 1000,
        )
        self._drain()

    async def _report_progress(self, total: int) -> None:
        """A log line every PROGRESS_EVERY_S while the first build reads files (`index/status` has the
        same figure as `indexed` at any time)."""
        while True:
            await asyncio.sleep(PROGRESS_EVERY_S)
            log.info("workspace index of %s: %d of %d files read", self.root, sum(self._progress), total)

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
        files again; compact glob's list; rebuild the content index when most of it is garbage."""
        fresh, shard_set = self._fresh, self._set
        assert fresh is not None and shard_set is not None
        try:
            if fresh.glob_doubt:
                await self._rescan(fresh, shard_set)
            if fresh.grep_doubt or fresh.unknown:
                await self._relist(fresh, shard_set)
            fresh.refresh_stats()  # glob's entries current first: a path leaves `changed` only when both are
            await self._reindex_changed(fresh, shard_set)
            await self._compact(fresh)
            if not fresh.changed and await asyncio.to_thread(builder.garbage_heavy, shard_set.shards):
                await self._rebuild_content(fresh, shard_set)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("workspace index maintenance failed", exc_info=True)
            self.fail(f"keeping the index fresh failed: {exc}")
        finally:
            if self.state == READY and fresh.pending():
                self._schedule()

    async def _rescan(self, fresh: Freshness, shard_set: ShardSet) -> None:
        """After lost events: list and stat every file again, and take every indexed file whose signature
        changed as changed."""
        watcher = fresh.watcher
        log.info("workspace index of %s: file events were lost; listing everything again", self.root)
        self.counts.rescans = (self.counts.rescans or 0) + 1
        self._events(False)  # the walk adds watches on a thread; events wait in the kernel
        try:
            watcher.drain()  # what is queued predates the walk: the walk sees its result
            walked = await asyncio.to_thread(walk, self.root_b, watcher, b"")
            unreadable = walked.unreadable
            files = await asyncio.to_thread(GlobList.from_keys, walked.files)
            del walked
            stale = await asyncio.to_thread(builder.stale, shard_set.shards, self.root_b)
        finally:
            self._events(True)
        fresh.rescanned(files, unreadable, stale)
        self.counts.files = len(files)
        self._drain()

    async def _relist(self, fresh: Freshness, shard_set: ShardSet) -> None:
        """ripgrep lists grep's files again: new files join, others leave (the content index forgets them)."""
        generation = fresh.generation
        listed, problems = await self._lister(self.root, [], None)
        new = await self._builder.relist(shard_set.shards, listed)
        fresh.skipped.reset(None)  # grep with an include walks until they are listed again, below
        unknown = list(fresh.unknown)
        grep_count, grep_dirs = await asyncio.to_thread(lister.facts, listed)
        members = await asyncio.to_thread(lister.members, listed, unknown)
        del listed
        fresh.relisted(generation, new, grep_dirs, members, problems)
        self.counts.grep_files = grep_count
        # Files not in the content index are skipped unless grep reads them (new ones). One that is still
        # unknown counts as skipped until it is settled; one deleted meanwhile may stay. Both only make a
        # grep with an include walk.
        frozen = fresh.files.frozen()  # read on a thread: a copy of the changes, not the live ones
        skipped = await asyncio.to_thread(builder.skipped_files, shard_set.shards, frozen, set(fresh.grep_new))
        fresh.skipped.reset(skipped)

    async def _reindex_changed(self, fresh: Freshness, shard_set: ShardSet) -> None:
        if not fresh.changed:
            return
        batch = dict(list(fresh.changed.items())[:REINDEX_BATCH])
        members = fresh.grep_new & set(batch)
        done = await asyncio.to_thread(builder.reindex, shard_set.shards, self.root_b, list(batch), members)
        self._planner.forget()
        self._live_share = await asyncio.to_thread(builder.live_share, shard_set.shards)
        fresh.reindexed(batch, done)

    async def _rebuild_content(self, fresh: Freshness, old: ShardSet) -> None:
        """The content index again, from scratch, in a new set of shards, once most of its documents are
        garbage (old versions of re-indexed files: a contentless FTS5 table cannot delete them, and they
        slow lookups and inflate document counts). Searches use the old set meanwhile; files that change
        meanwhile are read by searches and re-indexed into the new set once it serves (maintenance does
        not run while this does: this is maintenance)."""
        log.info("workspace index of %s: rebuilding its content index (most documents are old versions)", self.root)
        generation = fresh.generation
        listed, problems = await self._lister(self.root, [], None)
        new = await asyncio.to_thread(ShardSet.open, self.dir, self._shard_count, fresh=True)
        try:
            text_bytes, unsettled = await self._builder.index(new.shards, listed)
        except BaseException:
            new.close()
            raise
        self._set = new
        await self._no_searches.wait()  # searches that started with the old set finish with it
        await asyncio.to_thread(old.remove)
        self._planner.forget()
        for path in unsettled:
            fresh.mark_changed(path)
        if fresh.generation != generation or problems:
            fresh.grep_doubt = True  # what happened meanwhile: ripgrep lists grep's files again
        self.counts.bytes = text_bytes
        self.counts.index_bytes = await asyncio.to_thread(disk_bytes, self.dir)
        self.counts.rebuilds = (self.counts.rebuilds or 0) + 1
        self._live_share = await asyncio.to_thread(builder.live_share, new.shards)

    async def _compact(self, fresh: Freshness) -> None:
        files = fresh.files
        if len(files.overlay) < OVERLAY_COMPACT:
            return
        before = dict(files.overlay)
        compacted = await asyncio.to_thread(files.compacted)
        for path, change in fresh.files.overlay.items():
            if before.get(path) is not change:  # changed again while compacting
                compacted.overlay[path] = change
        fresh.files = compacted

    # --- the engine's FileSource -----------------------------------------------------------------------

    async def glob(self, cwd: str, path: str | None, pattern: str, deny: DenyGlobs) -> GlobFiles | None:
        if "\0" in pattern:
            return None  # no argument can carry a NUL: ripgrep fails to start, as a walk would
        if not answers.inside(self.root, cwd):
            return None  # never waits for a build it cannot use
        fresh = await self._usable()
        if fresh is None or fresh.glob_doubt:
            return None
        root = answers.search_root(self.root, self.real_root, cwd, path)
        if root is None or not fresh.readable(root.start):
            return None
        try:
            regex = glob_regex(pattern)
        except Unsupported:
            return None
        fresh.refresh_stats()
        found = fresh.files.matching(Matcher(root.prefix, root.under, regex))
        return answers.glob_files(found, root, deny)

    async def grep(
        self, cwd: str, path: str | None, pattern: str, include: str | None, deny: DenyGlobs
    ) -> GrepFiles | None:
        if not answers.inside(self.root, cwd):
            return None  # never waits for a build it cannot use
        grep = analyse(pattern, include)
        if grep is None:
            return None
        fresh = await self._usable()
        if fresh is None or fresh.glob_doubt or fresh.grep_doubt or self._set is None:
            return None
        root = answers.search_root(self.root, self.real_root, cwd, path)
        if root is None:
            return None
        under = root.start
        if under.rstrip(b"/") not in fresh.grep_dirs:
            return None  # hidden, ignored, or holding nothing grep reads: ripgrep's walk decides
        if not fresh.readable(under) or not await fresh.settle(under, self._lister, self.root):
            return None
        if grep.include is not None and await fresh.include_reaches_skipped(root.prefix, root.under, grep.include):
            return None  # it brings back a file grep's walk skips without it
        shards = self._set.shards
        self._searching += 1
        self._no_searches.clear()
        try:
            return await self._planner.choose(shards, self._live_share, fresh, root, grep, deny, self.counts.grep_files)
        finally:
            self._searching -= 1
            if not self._searching:
                self._no_searches.set()

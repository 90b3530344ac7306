"""The warm workspace: one workspace directory's index, kept fresh while the daemon runs — the engine's
`FileSource` (engine/source.py), which tells glob which paths to list and grep which files to read, or
says None (walk) whenever it cannot be sure.

Its life:

1. **The first build** (`start`): watch and walk the tree for glob (walk.py), note the mounts under it
   (mounts.py) and the rule files no watch covers (rules.py), ask ripgrep for grep's list (lister.py),
   merge that list into the content index on disk (builder.py, into a shard set of its own that it can
   trust: sets.py). Until it is done, searches walk.
2. **Every answer** is the planner's (planner.py: every gate, each "no" a named reason). When it asks
   (`usable`), the workspace checks that the index's files are as this daemon left them, that the root
   is still the directory watched and whether the mount table changed, then drains every event inotify
   has queued (watch.py) into the bookkeeping (freshness.py): a file written before a request is seen
   by that request. A search that reaches a part in doubt walks. Glob answers from glob's list in
   memory; grep from the shards (`reading`), with the changed files and those with other names or views
   (hard links, single-file mounts) read by the planner itself. The answers are spelled as ripgrep
   prints them (answers.py). A directory an event asks to read again (created, moved in, mounted on) is
   walked on a thread, never on the event loop: the answer waits for that walk at most
   `WALK_AGAIN_WAIT_S`, then walks the tree itself.
3. **In the background**, a moment after events stop (`MAINTAIN_AFTER_S`): everything listed again when
   it is all in doubt, grep's list asked again when it is, changed files indexed again, glob's list
   compacted, and the content index rebuilt into a fresh set once most of it is old versions of files.

An exception inside the index fails it (`fail`): searches walk, and the manager builds it afresh after
a pause; when the fault is the storage's (a shard corrupt, truncated, tampered with, the disk full), its
set is set aside and never used again. Nothing raised while events are read escapes: it puts everything
in doubt until it is all listed again. Everything here runs on the event loop; the builder's threads do
pure work on what they are given and hand the result back, which is applied here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GlobQuery, GrepQuery
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index import builder, lister, sets
from dsh_search.index import mounts as mount_table
from dsh_search.index.builder import Builder, Stopped
from dsh_search.index.freshness import Freshness
from dsh_search.index.globlist import GlobList
from dsh_search.index.lister import GrepLister
from dsh_search.index.planner import Planner
from dsh_search.index.rules import RuleFiles
from dsh_search.index.sets import ShardSet, disk_bytes, workspace_dir
from dsh_search.index.shards import Shard, storage_fault
from dsh_search.index.status import BUILDING, DOUBTS_LISTED, FAILED, OFF, READY, Status, Walk
from dsh_search.index.walk import WalkStopped, walk
from dsh_search.index.watch import Watcher, WatchLimit

log = logging.getLogger("dsh_search.index")
NOTICE = 25  # between info and warning: shown at the default log level (MCP's "notice")

OVERLAY_COMPACT = 20000  # changes in glob's overlay past which a new snapshot is made
MAINTAIN_AFTER_S = 0.2  # quiet time after events before the background catches up
REINDEX_BATCH = 2000  # changed files indexed again in one step
PROGRESS_EVERY_S = 10.0  # a log line this often while the first build reads files
WALK_AGAIN_WAIT_S = 0.5  # an answer waits this long at most for the walk of directories read again


@dataclass
class _Counts:
    """What `status` reports of the index's size and history."""

    grep_files: int = 0
    bytes: int = 0
    built_in_ms: int | None = None
    index_bytes: int | None = None
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
        shards: int = 2,
        max_bytes: int | None = None,
        on_failure: Callable[[Workspace], None] | None = None,
    ) -> None:
        self.root = root
        self.root_b = os.fsencode(root)
        self.real_root = os.path.realpath(root)
        self.index_dir = index_dir
        self.dir = workspace_dir(index_dir, self.real_root)
        self._lister = grep_lister
        self._max_bytes = max_bytes  # the cache's bound (indexMaxBytes); None: unbounded
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
        self._progress: list[int] = []  # files each shard has read so far in the first build
        self._searching = 0  # greps reading the shards now (a rebuild closes the old set after them)
        self._no_searches = asyncio.Event()
        self._no_searches.set()
        self._maintaining: asyncio.Task[None] | None = None
        self._maintain_handle: asyncio.TimerHandle | None = None
        self._build_task: asyncio.Task[None] | None = None
        self._walking: asyncio.Task[None] | None = None  # the walk of directories read again (unwalked)
        self._walks = asyncio.Lock()  # one walk adds watches at a time (events are not read meanwhile)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading_events = False
        self.counts = _Counts()
        self.evicted: list[sets.Evicted] = []

    # --- life ------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Begin the first build in the background (once)."""
        if self._build_task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self.state = BUILDING
        self._build_task = asyncio.ensure_future(self._build())

    def close(self) -> None:
        for task in (self._build_task, self._maintaining, self._walking):
            if task is not None:
                task.cancel()
        if self._maintain_handle is not None:
            self._maintain_handle.cancel()
        self._events(False)
        if self._watcher is not None:
            self._watcher.close()
        if self._fresh is not None:
            self._fresh.close()
        self._builder.close()
        if self._set is not None:
            self._set.close()

    def status(self, mode: str) -> Status:
        counts, fresh = self.counts, self._fresh
        doubts = fresh.doubt_list() if fresh is not None else []
        return Status(
            state=self.state,
            mode=mode,
            root=self.root,
            files=len(fresh.files) if fresh is not None else 0,
            bytes=counts.bytes,
            grep_files=counts.grep_files,
            dir=self.dir,
            changed=len(fresh.changed) if fresh is not None else 0,
            indexed=sum(self._progress) if self.state == BUILDING else None,
            built_in_ms=counts.built_in_ms,
            index_bytes=counts.index_bytes,
            watches=len(self._watcher) if self._watcher is not None and fresh is not None else None,
            rescans=counts.rescans,
            rebuilds=counts.rebuilds,
            reason=self.reason,
            in_doubt=[(os.fsdecode(p), r, tools) for p, r, tools in doubts[:DOUBTS_LISTED]] or None,
            in_doubt_count=len(doubts) or None,
            evicted=[(e.directory, e.bytes) for e in self.evicted] or None,
        )

    def fail(self, reason: str, fault: BaseException | None = None, *, set_at_fault: bool = False) -> None:
        """Stop answering (searches walk); the manager builds a fresh index after a pause. A fault of the
        storage (or one of the set's, `set_at_fault`) sets the shard set aside: it is never used again."""
        if self.state == FAILED:
            return
        self.state = FAILED
        self.reason = reason
        self._ready.set()
        self._events(False)
        log.warning("workspace index of %s: %s; searches walk the tree", self.root, reason)
        if (set_at_fault or (fault is not None and storage_fault(fault))) and self._set is not None:
            shard_set, self._set = self._set, None
            with contextlib.suppress(Exception):
                shard_set.discard()
        if self._on_failure is not None:
            self._on_failure(self)

    async def usable(self, tool: str, *, rules: bool = True) -> Freshness | Walk:
        """The bookkeeping, checked and drained, when the index may answer a search of `tool` ("glob" or
        "grep") at all now; else why not (the planner's gate 3). `rules=False`: grep's rule files are left
        for the caller to check (`Freshness.rules_hold`) while ripgrep runs with the answer."""
        fresh, shard_set = self._fresh, self._set
        if self.state != READY or shard_set is None or fresh is None:
            return Walk.FAILED if self.state == FAILED else Walk.BUILDING
        if not shard_set.intact():
            self.fail("its files were changed, replaced or deleted by another process", set_at_fault=True)
            return Walk.FAILED
        try:
            fresh.check()
            if tool == "grep" and rules:
                fresh.check_rules()
        except Exception as exc:  # a bug or an OS error must cost speed, never an answer
            log.debug("workspace index check failed", exc_info=True)
            fresh.doubt_everything(f"checking the workspace failed: {exc}")
        self._drain()
        if fresh.unwalked and not await self._walked_again(fresh):
            return Walk.IN_DOUBT  # directories read again are still being walked (inDoubt says so)
        if self.state != READY:
            return Walk.FAILED
        if not self._reading_events:
            return Walk.IN_DOUBT  # a walk adds watches on a thread: events are not read meanwhile
        if fresh.pending():
            self._schedule()
        return fresh

    def rules_hold(self, fresh: Freshness) -> bool:
        """The rule files' check of a grep answer given with `usable("grep", rules=False)`, made while
        ripgrep reads its files: whether grep's list still holds (if not, it is listed again soon)."""
        held = fresh.rules_hold()
        if fresh.pending():
            self._schedule()
        return held

    async def _walked_again(self, fresh: Freshness, wait_s: float | None = WALK_AGAIN_WAIT_S) -> bool:
        """Walk the directories read again (`fresh.unwalked`), on a thread, and wait for it at most `wait_s`
        (None: until it is done); whether it is done."""
        task = self._walking
        if task is None or task.done():
            task = self._walking = asyncio.ensure_future(self._walk_again(fresh))
        try:
            await asyncio.wait_for(asyncio.shield(task), wait_s)
        except TimeoutError:
            return False
        return not fresh.unwalked

    async def _walk_again(self, fresh: Freshness) -> None:
        """Events wait in the kernel while a thread adds watches (as in a rescan); whatever they report
        meanwhile is applied once the walk is."""
        try:
            while fresh.unwalked and self.state == READY and self._fresh is fresh:
                async with self._walks:
                    paths = sorted(fresh.unwalked)
                    walked = []
                    self._events(False)
                    try:
                        for path in paths:
                            walked.append(
                                (
                                    path,
                                    await asyncio.to_thread(walk, self.root_b, fresh.watcher, path, self._builder.stop),
                                )
                            )
                    finally:
                        self._events(True)
                    for path, result in walked:
                        fresh.walked_again(path, result)
                self._drain()
        except (asyncio.CancelledError, Stopped, WalkStopped):
            raise asyncio.CancelledError from None
        except Exception as exc:
            log.debug("walking directories again failed", exc_info=True)
            self.fail(f"reading directories again failed: {exc}", exc)

    @contextlib.contextmanager
    def reading(self) -> Iterator[tuple[list[Shard], int] | None]:
        """The current shards and the number of files grep reads, for as long as a search reads them: a
        rebuild of the content index closes the old set only after the searches that use it."""
        if self._set is None:
            yield None
            return
        self._searching += 1
        self._no_searches.clear()
        try:
            yield self._set.shards, self.counts.grep_files
        finally:
            self._searching -= 1
            if not self._searching:
                self._no_searches.set()

    @property
    def lister(self) -> GrepLister:
        return self._lister

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
        """Apply every event queued so far (before each answer, and whenever events arrive). Nothing raised
        here leaves it: an error puts everything in doubt until it is all listed again."""
        fresh = self._fresh
        if not self._reading_events or self._watcher is None or fresh is None:
            return
        try:
            events = self._watcher.drain()
            if not events:
                return
            fresh.apply(events)
        except Exception as exc:
            log.warning(
                "workspace index of %s: reading file events failed (%s); listing everything again", self.root, exc
            )
            log.debug("reading file events failed", exc_info=True)
            fresh.doubt_everything(f"reading file events failed: {exc}")
        self._schedule()

    # --- the first build -------------------------------------------------------------------------------

    async def _build(self) -> None:
        started = time.monotonic()
        log.log(NOTICE, "workspace index of %s: building it (searches walk the tree until it is ready)", self.root)
        try:
            os.makedirs(self.dir, mode=0o700, exist_ok=True)
            sets.touch_used(self.dir)
            watcher = self._watcher = Watcher(self.root_b)
            mount_watch = mount_table.MountWatch()
            mount_watch.changed()  # armed before the table is read: a change from now on is seen
            table = mount_table.read()
            mounts = mount_table.under(self.real_root, table) if table is not None else None
            walked = await asyncio.to_thread(walk, self.root_b, watcher, b"", self._builder.stop)
            rules = RuleFiles(self.real_root, self._lister.environment)
            rules.add_inside(walked.rules)  # their state as ripgrep is about to read them
            # The snapshot takes the walk's list over (and empties it) before grep's list is made: the two
            # are never in memory at full size together.
            files = await asyncio.to_thread(GlobList.from_keys, walked.files)
            listing = await self._lister(self.root, [], None)
            grep_count, grep_dirs = await asyncio.to_thread(lister.facts, listing.paths)
            self.counts.grep_files = grep_count
            shard_set = self._set = await asyncio.to_thread(ShardSet.open, self.dir, self._shard_count)
            reporter = asyncio.ensure_future(self._report_progress(grep_count))
            try:
                text_bytes, unsettled = await self._builder.index(shard_set.shards, listing.paths, self._progress)
            finally:
                reporter.cancel()
            skipped = await asyncio.to_thread(builder.skipped_files, shard_set.shards, files, set(), self._builder.stop)
        except (asyncio.CancelledError, Stopped, WalkStopped):
            self._paused()
            raise asyncio.CancelledError from None
        except WatchLimit as exc:
            self.fail(str(exc))
            return
        except Exception as exc:
            log.debug("workspace index build failed", exc_info=True)
            self.fail(f"the build failed: {exc}", exc)
            return
        fresh = self._fresh = Freshness(
            self.root_b, self.real_root, watcher, walked, files, grep_dirs, rules, mounts, mount_watch
        )
        fresh.relisted(fresh.generation, [], grep_dirs, set(), listing)
        fresh.skipped.reset(skipped)
        for path in unsettled:  # changed while read: a search reads them itself until re-indexed
            fresh.mark_changed(path)
        del walked, listing
        self.counts = _Counts(
            grep_files=grep_count,
            bytes=text_bytes,
            built_in_ms=round((time.monotonic() - started) * 1000),
            index_bytes=disk_bytes(self.dir),
        )
        self.state = READY
        self._ready.set()
        self._events(True)
        log.log(
            NOTICE,
            "workspace index of %s ready: %d files, %d read by grep, %d bytes of text, in %.1f s",
            self.root,
            len(files),
            self.counts.grep_files,
            self.counts.bytes,
            (self.counts.built_in_ms or 0) / 1000,
        )
        self._drain()
        if fresh.pending():
            self._schedule()
        if self._max_bytes is not None:
            evicted = await asyncio.to_thread(sets.evict, self.index_dir, self._max_bytes, self.dir)
            self.evicted += evicted

    def _paused(self) -> None:
        """The build stopped because the daemon is going away: said once, with how far it got."""
        if self.state == BUILDING:
            log.log(
                NOTICE,
                "workspace index of %s: build paused at %d of %d files read (the next daemon goes on from there)",
                self.root,
                sum(self._progress),
                self.counts.grep_files,
            )

    def walk_note(self) -> str | None:
        """Why searches walk now because of the index's own state, for progress and logs; None when the
        index is ready (a search that walks then does so for its own reasons)."""
        if self.state == BUILDING:
            if not self._progress:
                return "the workspace index is building: listing the tree"
            return f"the workspace index is building: {sum(self._progress)} of {self.counts.grep_files} files read"
        if self.state == FAILED:
            return f"the workspace index failed ({self.reason}); it is built again after a pause"
        return None

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
        """List everything again when it is all in doubt; list grep's files again when they are; index
        changed files again; compact glob's list; rebuild the content index when most of it is garbage."""
        fresh, shard_set = self._fresh, self._set
        if fresh is None or shard_set is None or self.state != READY:
            return
        try:
            if fresh.glob_doubt is not None and fresh.root_identity is not None:
                await self._rescan(fresh, shard_set)
            if fresh.unwalked:
                await self._walked_again(fresh, None)
            if fresh.grep_stale or fresh.unknown:
                await self._relist(fresh, shard_set)
            fresh.refresh_stats()  # glob's entries current first: a path leaves `changed` only when both are
            await self._reindex_changed(fresh, shard_set)
            await self._compact(fresh)
            if not fresh.changed and await asyncio.to_thread(builder.garbage_heavy, shard_set.shards):
                await self._rebuild_content(fresh, shard_set)
        except (asyncio.CancelledError, Stopped, WalkStopped):
            raise asyncio.CancelledError from None
        except Exception as exc:
            log.debug("workspace index maintenance failed", exc_info=True)
            self.fail(f"keeping the index fresh failed: {exc}", exc)
        finally:
            if self.state == READY and fresh.pending():
                self._schedule()

    async def _rescan(self, fresh: Freshness, shard_set: ShardSet) -> None:
        """When everything is in doubt: watch and list everything again, and take every indexed file whose
        signature changed as changed."""
        watcher = fresh.watcher
        log.info("workspace index of %s: %s; listing everything again", self.root, fresh.glob_doubt)
        self.counts.rescans = (self.counts.rescans or 0) + 1
        async with self._walks:
            self._events(False)  # the walk adds watches on a thread; events wait in the kernel
            try:
                watcher.drain()  # what is queued predates the walk: the walk sees its result
                watcher.forget(b"")  # every watch again, on the directories as they are now
                walked = await asyncio.to_thread(walk, self.root_b, watcher, b"", self._builder.stop)
                files = await asyncio.to_thread(GlobList.from_keys, walked.files)
                stale = await asyncio.to_thread(builder.stale, shard_set.shards, self.root_b, self._builder.stop)
            finally:
                self._events(True)
            fresh.rescanned(walked, files, stale)
        self._drain()

    async def _relist(self, fresh: Freshness, shard_set: ShardSet) -> None:
        """ripgrep lists grep's files again: new files join, others leave (the content index forgets them)."""
        generation = fresh.generation
        fresh.rules.refresh()  # the rules as ripgrep is about to read them
        fresh.grep_stale = False  # what changes from now on asks for another listing
        listing = await self._lister(self.root, [], None)
        new = await self._builder.relist(shard_set.shards, listing.paths)
        fresh.skipped.reset(None)  # grep with an include walks until they are listed again, below
        unknown = list(fresh.unknown)
        grep_count, grep_dirs = await asyncio.to_thread(lister.facts, listing.paths)
        members = await asyncio.to_thread(lister.members, listing.paths, unknown)
        fresh.relisted(generation, new, grep_dirs, members, listing)
        self.counts.grep_files = grep_count
        del listing
        # Files not in the content index are skipped unless grep reads them (new ones). One that is still
        # unknown counts as skipped until it is settled; one deleted meanwhile may stay. Both only make a
        # grep with an include walk.
        frozen = fresh.files.frozen()  # read on a thread: a copy of the changes, not the live ones
        skipped = await asyncio.to_thread(
            builder.skipped_files, shard_set.shards, frozen, set(fresh.grep_new), self._builder.stop
        )
        fresh.skipped.reset(skipped)

    async def _reindex_changed(self, fresh: Freshness, shard_set: ShardSet) -> None:
        if not fresh.changed:
            return
        batch = dict(list(fresh.changed.items())[:REINDEX_BATCH])
        members = fresh.grep_new & set(batch)
        unknown = fresh.unknown & set(batch)  # whether grep reads them is not settled: taken as not, for now
        done = await asyncio.to_thread(
            builder.reindex, shard_set.shards, self.root_b, list(batch), members, self._builder.stop
        )
        self._planner.forget()
        fresh.reindexed(batch, done, members, unknown)
        self.counts.grep_files = await asyncio.to_thread(builder.grep_files, shard_set.shards, list(fresh.grep_new))

    async def _rebuild_content(self, fresh: Freshness, old: ShardSet) -> None:
        """The content index again, from scratch, in a new set of shards, once most of its documents are
        garbage (old versions of re-indexed files that no merge of segments has dropped yet: they slow
        lookups and inflate document counts). Searches use the old set meanwhile; files that change
        meanwhile are read by searches and re-indexed into the new set once it serves (maintenance does
        not run while this does: this is maintenance)."""
        log.info("workspace index of %s: rebuilding its content index (most documents are old versions)", self.root)
        generation = fresh.generation
        listing = await self._lister(self.root, [], None)
        new = await asyncio.to_thread(ShardSet.open, self.dir, self._shard_count, fresh=True)
        try:
            text_bytes, unsettled = await self._builder.index(new.shards, listing.paths)
        except BaseException:
            new.remove()
            raise
        self._set = new
        await self._no_searches.wait()  # searches that started with the old set finish with it
        await asyncio.to_thread(old.remove)
        self._planner.forget()
        for path in unsettled:
            fresh.mark_changed(path)
        if fresh.generation != generation or not listing.clean:
            fresh.doubt_grep("files changed while the content index was rebuilt")
        self.counts.bytes = text_bytes
        self.counts.index_bytes = await asyncio.to_thread(disk_bytes, self.dir)
        self.counts.rebuilds = (self.counts.rebuilds or 0) + 1

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

    # --- the engine's FileSource (the planner decides) --------------------------------------------------

    async def glob(self, cwd: str, query: GlobQuery, deny: DenyGlobs) -> GlobFiles | Walk:
        return await self._planner.glob(self, cwd, query, deny)

    async def grep(self, cwd: str, query: GrepQuery, deny: DenyGlobs, *, rules_later: bool = False) -> GrepFiles | Walk:
        return await self._planner.grep(self, cwd, query, deny, rules_later=rules_later)

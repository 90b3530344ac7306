"""The builder: the content index made from grep's list, and brought up to date with it.

Every step is a merge of two sorted sequences, as codesearch's `merge.go` is: grep's list (ripgrep's own
`--files`, one shard's paths in path order) against the files a shard has indexed (`Indexed`, a page of
rows at a time). A path on both sides whose signature is unchanged is kept; one only in the list is read
and indexed; one only in the shard is forgotten. So a daemon that starts on an index left by an earlier
one reads only what changed since, and memory is one shard's paths and a page of rows, whatever the
size of the tree.

A file is indexed as one version: opened, read, and checked still that version at the end
(reading.Opened). One that cannot be read cleanly is written OPAQUE — every search hands it to ripgrep —
and reported "unsettled", so the workspace reads it itself until its next event has it indexed again.
A version read while it was racily clean is recorded with a signature no file has (files.smudged): the
events of a write in the same timestamp tick reach this daemon, but not the next one, which therefore
reads the file again in its merge instead of trusting equal times.

Rules of this module: work on threads, pure in the sense that matters here — inputs in, results out;
it writes shards and reads the tree, but changes no state of the workspace (the event loop applies what
it returns). `Builder` runs the steps on the workspace's shard threads. Every loop looks at a `stop`
event between files: a daemon that is going away stops its build where it is (what was committed stays
and is trusted, so the next daemon merges on from there) instead of holding its host until it ends.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from dsh_search.index.files import Content, shard_of
from dsh_search.index.globlist import GlobList
from dsh_search.index.lister import paths_of
from dsh_search.index.reading import Opened, signature_of
from dsh_search.index.shards import Batch, Shard

T = TypeVar("T")

# Content indexed per transaction in a build (at most: a transaction also ends when its postings in memory
# reach shards.MEMORY_BUDGET). Each commit is a segment, and what was committed survives a stopped build.
BUILD_BATCH_BYTES = 256 << 20
GARBAGE_REBUILD_MIN = 20_000  # garbage documents below which a content index is never rebuilt

# (bytes of text the shard now covers, files that could not be read cleanly)
Indexing = tuple[int, list[bytes]]


class Stopped(Exception):
    """The daemon is going away: the work stopped where it was."""


def check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise Stopped


class Builder:
    """The builder's steps for one workspace, each shard's part on a thread of its own."""

    def __init__(self, root: bytes, threads: int) -> None:
        self.root = root
        self.stop = threading.Event()  # set when the workspace closes: every step stops at its next file
        self._threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="index")

    def close(self) -> None:
        self.stop.set()
        self._threads.shutdown(wait=False, cancel_futures=True)

    async def _each(self, shards: list[Shard], work: Callable[[Shard, int, int], T]) -> list[T]:
        count = len(shards)
        jobs: list[Awaitable[T]] = [
            asyncio.wrap_future(self._threads.submit(work, shard, i, count)) for i, shard in enumerate(shards)
        ]
        return list(await asyncio.gather(*jobs))

    async def index(self, shards: list[Shard], listed: bytes, progress: list[int] | None = None) -> Indexing:
        """Bring every shard up to date with grep's list (see `index_shard`): the text covered in all and
        the files not read cleanly."""
        if progress is not None:
            progress[:] = [0] * len(shards)
        stop = self.stop
        parts = await self._each(
            shards, lambda shard, i, n: index_shard(shard, self.root, listed, i, n, progress, stop)
        )
        return sum(total for total, _ in parts), [path for _, unsettled in parts for path in unsettled]

    async def relist(self, shards: list[Shard], listed: bytes) -> list[bytes]:
        """Forget the files grep no longer reads; the ones it reads that are not indexed yet."""
        parts = await self._each(shards, lambda shard, i, n: relist_shard(shard, listed, i, n, self.stop))
        return [path for part in parts for path in part]


def index_file(batch: Batch, root: bytes, path: bytes) -> tuple[int, bool]:
    """Index the current version of one file grep reads. Returns (its text's size, whether it was read
    cleanly). A file that cannot be read, or changed while read, is written OPAQUE until its next event
    has it read again."""
    with Opened(root, path) as opened:
        if opened.sig is None:
            batch.opaque(path, signature_of(root, path))
            return 0, False
        size = batch.put(path, opened.recorded(), Content(opened.chunks()))
        if not opened.intact():
            batch.opaque(path, opened.recorded())
            return 0, False
    batch.checkpoint()
    return size, True


def index_shard(
    shard: Shard,
    root: bytes,
    listed: bytes,
    index: int,
    count: int,
    progress: list[int] | None = None,
    stop: threading.Event | None = None,
) -> Indexing:
    """Bring one shard up to date with the files grep reads (`listed`, ripgrep's NUL-separated list): keep
    what is indexed at its current signature, index the rest, forget what grep no longer reads."""
    mine = sorted(p for p in paths_of(listed) if shard_of(p, count) == index)
    total = 0
    unsettled: list[bytes] = []
    with shard.batch(commit_bytes=BUILD_BATCH_BYTES) as batch:
        indexed = batch.indexed()
        for path in mine:
            check(stop)
            if progress is not None:
                progress[index] += 1  # read by the event loop for index/status (one writer per slot)
            for gone in indexed.before(path):
                batch.remove(gone)
            old = indexed.take(path)
            if old is not None and signature_of(root, path) == old:
                total += old.size
                continue
            size, clean = index_file(batch, root, path)
            total += size
            if not clean:
                unsettled.append(path)
        for gone in indexed.before(None):
            batch.remove(gone)
    return total, unsettled


def relist_shard(
    shard: Shard, listed: bytes, index: int, count: int, stop: threading.Event | None = None
) -> list[bytes]:
    """Forget the files of one shard that grep no longer reads; returns the ones it reads that are not
    indexed yet (in path order)."""
    mine = sorted(p for p in paths_of(listed) if shard_of(p, count) == index)
    new: list[bytes] = []
    with shard.batch() as batch:
        indexed = batch.indexed()
        for path in mine:
            check(stop)
            for gone in indexed.before(path):
                batch.remove(gone)
            if indexed.take(path) is None:
                new.append(path)
        for gone in indexed.before(None):
            batch.remove(gone)
    return new


def reindex(
    shards: list[Shard], root: bytes, paths: list[bytes], new_members: set[bytes], stop: threading.Event | None = None
) -> list[bytes]:
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
                check(stop)
                if not os.path.lexists(os.path.join(root, path)):
                    batch.remove(path)
                    done.append(path)
                    continue
                _size, clean = index_file(batch, root, path)
                if clean:
                    done.append(path)
    return done


def stale(shards: list[Shard], root: bytes, stop: threading.Event | None = None) -> list[bytes]:
    """Indexed files whose current signature is not the indexed one (or that are gone)."""
    out = []
    for shard in shards:
        for path, sig in shard.signatures():
            check(stop)
            if signature_of(root, path) != sig:
                out.append(path)
    return out


def skipped_files(
    shards: list[Shard], files: GlobList, known: set[bytes], stop: threading.Event | None = None
) -> set[bytes]:
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
        check(stop)
        i = shard_of(path, count)
        pending[i].append(path)
        if len(pending[i]) >= 4096:
            ask(i)
    for i in range(count):
        ask(i)
    return skipped


def grep_files(shards: list[Shard], pending: list[bytes]) -> int:
    """How many files grep reads: those the content index holds, and those pending that it does not yet."""
    present = set().union(*(shard.present(pending) for shard in shards)) if pending else set()
    return sum(shard.count(b"", None) for shard in shards) + len(set(pending) - present)


def garbage_heavy(shards: list[Shard]) -> bool:
    """Whether most of the content index's documents are garbage (and there is enough of it to matter)."""
    garbage = sum(shard.garbage() for shard in shards)
    return garbage >= GARBAGE_REBUILD_MIN and garbage * 2 > sum(shard.documents() for shard in shards)

"""A search's collaborators, and the tally a progress reporter reads.

Everything a search needs from outside comes in a `Searcher`: how to launch ripgrep (a `Launch`, which
tests replace with a fake that replays recorded output), the worker pools, the spill store, the deny
globs, the `FileSource` that may choose the files ripgrep reads. Nothing here is a module-level
singleton: the daemon's wiring makes one `Searcher`, a test makes its own.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from dsh_search.config import Config
from dsh_search.engine import ripgrep
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.source import FileSource
from dsh_search.engine.spill import Spill

Sink = Callable[[bytes], None]


class Launch(Protocol):
    """Runs `rg --no-config <args>` in `cwd` (ripgrep.Launcher; a fake in unit tests)."""

    def __call__(
        self,
        args: Sequence[str | bytes],
        *,
        cwd: str | bytes,
        stdin_data: bytes | None = None,
        sink: Sink | None = None,
        on_overflow: Callable[[], None] | None = None,
    ) -> Awaitable[ripgrep.Outcome]: ...


class Workers(NamedTuple):
    """The threads that work on ripgrep's output while it still runs: one each, as the work is GIL-bound
    Python (grep's parsing, glob's stat calls) and ripgrep wants the other cores."""

    parse: Executor
    stat: Executor

    @classmethod
    def start(cls) -> Workers:
        return cls(
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="grep-parse"),
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="glob-stat"),
        )


def walk_threads() -> int:
    """ripgrep's walk gets all CPUs but one; that one stats the files it lists (glob). At most 12,
    ripgrep's own default ceiling, which its memory bound (rgMemoryMaxBytes) is sized for."""
    try:
        cpus = len(os.sched_getaffinity(0))  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):  # no sched_getaffinity (macOS)
        cpus = os.cpu_count() or 1
    return min(12, max(1, cpus - 1))


@dataclass(eq=False, repr=False)
class Searcher:
    """A search's collaborators, made once by the daemon's wiring (or by a test)."""

    config: Config
    launch: Launch
    spill: Spill
    deny_globs: DenyGlobs
    workers: Workers
    walk_threads: int = 1
    source: FileSource | None = None  # chooses the files ripgrep reads (the workspace index); None: it walks
    slots: asyncio.Semaphore = field(init=False)  # at most maxConcurrentSearches rg runs at once

    def __post_init__(self) -> None:
        self.slots = asyncio.Semaphore(self.config.max_concurrent_searches)


# --- progress -----------------------------------------------------------------------------------------


class Tally:
    """How far a running search has got, for whoever reports progress (read from the event loop, written
    by ripgrep's reading thread: plain integers, so a read is never torn, at worst a chunk behind)."""

    def __init__(self) -> None:
        self.searching = False  # ripgrep has started (the search no longer waits for a slot)
        self.items = 0  # what the tool counts: files listed (glob), matching lines (grep)
        self.files = 0  # grep: the files holding them
        self.note: str | None = None  # why the search walks, when the file source said (an index building)

    def counting(self, sink: Sink, items: bytes, files: bytes | None = None) -> Sink:
        """`sink`, counting `items` and `files` needles in each chunk on its way through."""
        item_count = StreamCounter(items)
        file_count = StreamCounter(files) if files is not None else None

        def counted(chunk: bytes) -> None:
            self.items += item_count.feed(chunk)
            if file_count is not None:
                self.files += file_count.feed(chunk)
            sink(chunk)

        return counted

    def counting_blocks(self, sink: Sink) -> Sink:
        """`sink`, counting ripgrep's standard output (engine/rgstd.py) on its way through: a file per NUL
        after its name, a match per line (its newlines, less the blank line before each next file)."""
        newlines = StreamCounter(b"\n")
        nuls = StreamCounter(b"\0")

        def counted(chunk: bytes) -> None:
            files = nuls.feed(chunk)
            self.files += files
            self.items += newlines.feed(chunk) - files
            sink(chunk)

        return counted


class StreamCounter:
    """Occurrences of a needle in a stream of chunks, those that straddle two chunks included."""

    def __init__(self, needle: bytes) -> None:
        self._needle = needle
        self._keep = len(needle) - 1
        self._tail = b""

    def feed(self, chunk: bytes) -> int:
        found = chunk.count(self._needle)
        if self._keep:
            # Shorter than the needle on both sides, so every hit here straddles the boundary.
            found += (self._tail + chunk[: self._keep]).count(self._needle)
            self._tail = (self._tail + chunk)[-self._keep :] if len(chunk) < self._keep else chunk[-self._keep :]
        return found

"""Giving memory back: the C allocator's knobs, where the platform has them.

A long-running daemon frees as much as it allocates, yet glibc's malloc keeps freed memory in its
arenas (one per thread that allocated, up to 8 per CPU) instead of returning it to the system, so the
resident size creeps up under steady load although no object is leaked (measured: Python's traced
allocations flat at 15 MB while the RSS grew by 80 MB over 10,000 requests). Two calls bound that:
capping the arenas at two, and malloc_trim, which hands free pages back. The request table calls
`on_idle` whenever the daemon has answered everything, and the scrollback store calls `release` after
it drops sessions; either way the trim runs at most once a second. On other C libraries (macOS, musl) both
are no-ops: their allocators give memory back on their own or have no such calls.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from typing import Any

from dsh_search import osdep

_M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)

# The cyclic garbage collector runs every 700 new container objects by default. A large search makes
# hundreds of thousands of short-lived ones (a parsed record, a match's fields), none in a cycle, so the
# collector ran hundreds of times per grep and took a third of its parse time. Running it every 50,000
# instead bounds what cycles can pile up between runs to a few megabytes.
GC_THRESHOLDS = (50_000, 20, 20)


def tune_collector() -> None:
    """Collect garbage cycles less often, and leave the objects of start-up out of every collection. The
    frozen executable's entry point turns the collector off while the daemon's modules are imported;
    it is on from here."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()


_RELEASE_EVERY_S = 1.0
_QUIET_S = 0.25  # how long the daemon stays idle before it trims


class Allocator:
    def __init__(self) -> None:
        self._libc: Any = None  # glibc through ctypes, loaded on first use: ctypes costs ms at start-up
        self._loaded = False
        self._last_release = time.monotonic()  # the first trim waits a second
        self._scheduled = False
        self._quiet: asyncio.TimerHandle | None = None  # the trim after a quiet spell, when one is due
        self.is_idle: Callable[[], bool] = lambda: True  # whether the daemon still has nothing to answer

    def tune(self) -> None:
        """Cap malloc's arenas now, before the daemon starts its threads (each thread that meets a busy
        arena would otherwise get one of its own, and keep its memory: nine arenas of ~2 MB each were
        seen under load when the cap came later). ctypes is already loaded by then in the frozen
        executable (PyInstaller's bootstrap imports it), so this costs a dlopen of the running program."""
        self._glibc()

    def _glibc(self) -> Any:
        if not self._loaded:
            self._loaded = True
            self._libc = osdep.glibc()  # malloc's arenas capped at two; None off glibc
        return self._libc

    def release(self) -> None:
        """Return free heap pages to the system: now, or — when the last time was less than a second
        ago — once that second is up (a host closing a thousand sessions costs one trim, not 1,000)."""
        self._release()

    def on_idle(self) -> None:
        """The daemon has answered everything it was asked: a good moment to tidy up, once it has stayed
        so for `_QUIET_S`. A trim takes milliseconds on the event loop, and a host that sends its next
        request at once (a benchmark, a batch of searches) would wait for it; one that pauses does not."""
        if self._quiet is not None:
            self._quiet.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._quiet = loop.call_later(_QUIET_S, self._after_quiet)

    def _after_quiet(self) -> None:
        self._quiet = None
        if not self.is_idle():
            return  # busy again: its next idle moment arms another
        wait = self._last_release + _RELEASE_EVERY_S - time.monotonic()
        if wait > 0:  # at most once a second: look again when that second is up
            self._quiet = asyncio.get_running_loop().call_later(wait, self._after_quiet)
        else:
            self._trim()

    def _release(self) -> None:
        wait = self._last_release + _RELEASE_EVERY_S - time.monotonic()
        if wait <= 0:
            self._trim()
        elif not self._scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._scheduled = True
            loop.call_later(wait, self._trim)

    def _trim(self) -> None:
        self._scheduled = False
        self._last_release = time.monotonic()
        libc = self._glibc()
        if libc:
            libc.malloc_trim(0)

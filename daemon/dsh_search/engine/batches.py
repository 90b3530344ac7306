"""Cut ripgrep's streaming stdout into batches of whole records and process them on a worker thread.

Parsing (grep) or stat-ing (glob) a batch while ripgrep is still searching overlaps the Python work
with the search, instead of starting it once rg has exited. Batches are at least `min_bytes` long, so
a stream of small writes does not become thousands of tiny jobs, and at most about `max_bytes` (unless
one record is longer), so that what a batch's work builds stays in the CPU's caches: parsing grep's
output in 1 MiB batches took twice as long as in 64 KiB ones. Once handed to the worker, a batch's
bytes are not kept: what is remembered of it is its result (or its failure and its decoded growth).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Generic, TypeVar

from dsh_search.engine.jscompat import utf8_growth

T = TypeVar("T")

INLINE_MAX = 8 << 10  # bytes of a final batch worked on by the caller rather than the worker (default)


class _Failed(Exception):
    """A batch whose work raised `cause`; `growth` is the batch's decoded growth, measured then."""

    def __init__(self, cause: BaseException, growth: int) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.growth = growth


class Batches(Generic[T]):
    def __init__(
        self,
        separator: bytes,
        work: Callable[[bytes], T],
        pool: Executor,
        *,
        growth: Callable[[T], int],
        min_bytes: int = 1 << 16,
        max_bytes: int = 1 << 17,
        inline_max: int = INLINE_MAX,
    ) -> None:
        assert len(separator) == 1 and separator.isascii()  # see decoded_growth
        self._sep = separator
        self._work = work
        self._growth = growth
        self._pool = pool
        self._min = min_bytes
        self._max = max(min_bytes, max_bytes)
        self._inline_max = inline_max
        self._buf = bytearray()
        self._futures: list[Future[T]] = []
        self._seen: dict[bytes, bool] = {}  # needle → seen in the stream so far (see `watch`)
        self._tail = b""  # the stream's last bytes, for needles split across chunks
        self._cancelled = False

    def watch(self, needle: bytes) -> None:
        """Remember from now on whether `needle` passes by in the stream (`saw`)."""
        self._seen.setdefault(needle, False)

    def saw(self, needle: bytes) -> bool:
        return self._seen.get(needle, False)

    def feed(self, chunk: bytes) -> None:
        if self._cancelled:
            return
        if self._seen:
            window = self._tail + chunk
            for needle, seen in self._seen.items():
                if not seen and needle in window:
                    self._seen[needle] = True
            self._tail = window[-max(map(len, self._seen)) :]
        buf = self._buf
        buf += chunk
        start = 0
        while len(buf) - start >= self._min:
            found = self._next(buf, start)
            if found is None:
                break
            blob, start = found
            self._submit(blob)
        if start:
            del buf[:start]

    def _next(self, buf: bytearray, start: int) -> tuple[bytes, int] | None:
        """The next batch of `buf[start:]` and where the one after starts, or None: not enough yet. Cut at
        the last separator in reach, or past it when one record is longer."""
        cut = buf.rfind(self._sep, start, start + self._max)
        if cut < 0:  # no separator in reach: one long record, up to its end
            cut = buf.find(self._sep, start + self._max)
            if cut < 0:
                return None
        return bytes(buf[start:cut]), cut + 1

    def _rest(self, rest: bytes) -> bytes:
        """The last batch, from what is buffered when the stream ends."""
        return rest[: -len(self._sep)] if rest.endswith(self._sep) else rest

    def _submit(self, blob: bytes) -> None:
        if blob and not self._cancelled:
            self._futures.append(self._pool.submit(self._run, blob))

    def cancel(self) -> None:
        """Stop working: the output will not be used (it passed the raw-output cap, or the search failed
        or was cancelled). Batches not yet started are dropped and later input is ignored, so the
        worker is free at once rather than parsing what nobody reads — while it parses, the answer waits
        for the GIL. Safe from any thread."""
        self._cancelled = True
        self._buf.clear()
        for future in list(self._futures):
            future.cancel()  # a batch being worked on finishes; the rest never start

    def _run(self, blob: bytes) -> T:
        try:
            return self._work(blob)
        except Exception as exc:
            raise _Failed(exc, utf8_growth(blob)) from exc

    def flush(self) -> None:
        """Submit what is buffered (called once the stream has ended). A small rest is worked on here and
        now: a hand-off to the worker and back costs more than a few hundred paths or records (glob of
        15 files: ~0.15 ms of a 2 ms call), and so little work holds up the caller's thread for well
        under a millisecond."""
        blob = self._rest(bytes(self._buf))
        self._buf.clear()
        if blob and len(blob) <= self._inline_max:
            done: Future[T] = Future()
            try:
                done.set_result(self._run(blob))
            except _Failed as failed:
                done.set_exception(failed)
            self._futures.append(done)
        else:
            self._submit(blob)

    def any_data(self) -> bool:
        return bool(self._futures) or any(self._buf)

    async def finish(self) -> None:
        """Submit what is buffered and wait until every batch is done (or has raised)."""
        self.flush()
        pending = [asyncio.wrap_future(f) for f in self._futures if not f.done()]
        if pending:
            await asyncio.wait(pending)
        for waited in pending:
            waited.exception()  # retrieved: `results` re-raises it from the original future instead

    def decoded_growth(self) -> int:
        """How many bytes the stream gains when decoded as UTF-8 with replacements (`utf8_growth`), once
        `finish` has returned. Each batch's work reports its own growth as a by-product of decoding it (so
        valid UTF-8 costs nothing more); a batch whose work raised was measured when it did. Batches are
        cut at an ASCII separator, which ends any invalid sequence, so their sum is the whole stream's."""
        total = 0
        for future in self._futures:
            failure = future.exception()
            total += failure.growth if isinstance(failure, _Failed) else self._growth(future.result())
        return total

    async def results(self) -> list[T]:
        """Every batch's result, in stream order; a batch that raised re-raises its error here."""
        await self.finish()
        out = []
        for future in self._futures:
            failure = future.exception()
            if isinstance(failure, _Failed):
                raise failure.cause
            out.append(future.result())
        return out

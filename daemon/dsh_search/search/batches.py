"""Cut ripgrep's streaming stdout into batches of whole records and process them on a worker thread.

Parsing (grep) or stat-ing (glob) a batch while ripgrep is still searching overlaps the Python work
with the search, instead of starting it once rg has exited. Batches are at least `min_bytes` long, so
a stream of small writes does not become thousands of tiny jobs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

from dsh_search.search.jscompat import utf8_growth

T = TypeVar("T")


class Batches(Generic[T]):
    def __init__(
        self,
        separator: bytes,
        work: Callable[[bytes], T],
        pool: ThreadPoolExecutor,
        *,
        growth: Callable[[T], int],
        min_bytes: int = 1 << 16,
    ) -> None:
        assert len(separator) == 1 and separator.isascii()  # see decoded_growth
        self._sep = separator
        self._work = work
        self._growth = growth
        self._pool = pool
        self._min = min_bytes
        self._buf = bytearray()
        self._futures: list[Future[T]] = []
        self._submitted: list[bytes] = []

    def feed(self, chunk: bytes) -> None:
        buf = self._buf
        buf += chunk
        if len(buf) < self._min:
            return
        cut = buf.rfind(self._sep)
        if cut < 0:
            return
        blob = bytes(buf[:cut])
        del buf[: cut + 1]
        self._submit(blob)

    def _submit(self, blob: bytes) -> None:
        if blob:
            self._submitted.append(blob)
            self._futures.append(self._pool.submit(self._work, blob))

    def flush(self) -> None:
        """Submit what is buffered (called once the stream has ended)."""
        blob = bytes(self._buf)
        self._buf.clear()
        if blob.endswith(self._sep):
            blob = blob[: -len(self._sep)]
        self._submit(blob)

    def any_data(self) -> bool:
        return bool(self._futures) or any(self._buf)

    def contains(self, needle: bytes) -> bool:
        """Whether the stream so far holds needle within one record (cheap: a byte search)."""
        return needle in self._buf or any(needle in blob for blob in self._submitted)

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
        valid UTF-8 costs nothing more); a batch whose work raised is measured here. Batches are cut at an
        ASCII separator, which ends any invalid sequence, so their sum is the growth of the whole stream."""
        total = 0
        for blob, future in zip(self._submitted, self._futures, strict=True):
            failed = future.exception() is not None
            total += utf8_growth(blob) if failed else self._growth(future.result())
        return total

    async def results(self) -> list[T]:
        """Every batch's result, in stream order; a batch that raised re-raises here."""
        await self.finish()
        return [f.result() for f in self._futures]

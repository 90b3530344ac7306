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

T = TypeVar("T")


class Batches(Generic[T]):
    def __init__(
        self,
        separator: bytes,
        work: Callable[[bytes], T],
        pool: ThreadPoolExecutor,
        *,
        min_bytes: int = 1 << 16,
    ) -> None:
        self._sep = separator
        self._work = work
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

    async def results(self) -> list[T]:
        """Every batch's result, in stream order; a batch that raised re-raises here."""
        self.flush()
        pending = [asyncio.wrap_future(f) for f in self._futures if not f.done()]
        if pending:
            await asyncio.wait(pending)
        return [f.result() for f in self._futures]

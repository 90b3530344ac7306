"""Reading a text file the model asked for (`read`, `spill/read`) without blocking or ballooning.

A path checked a moment ago may be something else by the time it is opened: swapped for a FIFO (an
open for reading waits for a writer, for ever), a device, or a sparse file of a gibibyte on one line.
So:

- `open_regular` opens without blocking (`O_NONBLOCK`, so a FIFO's open returns at once; `O_NOCTTY`;
  `O_NOFOLLOW` when the caller resolved the path itself) and judges the **opened descriptor** by
  `fstat`, not the path: anything but a regular file is closed again and refused (`NotRegular`). The
  flag is then cleared, so reads of the regular file behave as usual.
- `page` reads lines with a bound: a shown line keeps at most `keep` bytes (enough to show it cut),
  a page stops at `page_bytes`, the rest of the file is only counted, a chunk at a time, and a sparse
  file's holes (which read as NULs, so hold no line break) are skipped with `SEEK_DATA`, not read.
  Memory is bounded by the page; time by the file's data, never its apparent size.
- `detached` runs such a read on a daemon thread of its own, not on the event loop's executor: a read
  that blocks anyway (a hung network filesystem) holds neither a shared worker nor the daemon's exit,
  which never waits for it.

Rules of this module: open, fstat, read and seek only; what a line means is the caller's.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
import threading
from collections.abc import Callable
from typing import NamedTuple, TypeVar

from dsh_search import osdep

CHUNK = 1 << 20
PAGE_MAX_BYTES = 8 << 20  # a page of `read` or `spill/read` stops at about this much text; the rest is a next page
_NEWLINE = b"\n"
_SEEK_DATA: int | None = getattr(os, "SEEK_DATA", None)  # where the platform can say where data is

T = TypeVar("T")


class NotRegular(Exception):
    """The path leads to a directory, a FIFO, a device or a socket, seen on the opened descriptor."""

    def __init__(self, mode: int) -> None:
        super().__init__("not a regular file")
        self.directory = stat.S_ISDIR(mode)


def open_regular(path: str, *, follow: bool = True) -> int:
    """A descriptor of the regular file at `path`, opened without blocking and checked by `fstat`
    (`NotRegular` otherwise; `OSError` when it cannot be opened). Without `follow`, a symbolic link in
    the last component is refused (`OSError` ELOOP)."""
    flags = os.O_RDONLY | osdep.O_CLOEXEC | osdep.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(mode)
        osdep.blocking(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Page(NamedTuple):
    lines: list[bytes]  # the lines shown (without their b"\n"), each cut to `keep` bytes when given
    newlines: int  # b"\n" bytes in the whole file
    ends_open: bool  # bytes follow the file's last b"\n" (or it has none): its last line has no line break
    empty: bool  # the file has no byte at all


def page(
    fd: int,
    first: int,
    count: int,
    *,
    keep: int | None = None,
    page_bytes: int = PAGE_MAX_BYTES,
    final_empty_line: bool = False,
) -> Page:
    """Lines `first`..`first + count - 1` (1-based, split at b"\\n") of the open file, and how many line
    breaks it holds in all. Each shown line keeps at most `keep` bytes (None: all of it); the page stops
    once its lines hold `page_bytes`, after at least one line. With `final_empty_line`, what follows the
    last line break is a line even when empty (`"a\\n".split("\\n")`); without, a final line break ends
    the last line (`wc -l`). Reads from the start, a chunk at a time, jumping over holes where it only
    counts."""
    lines: list[bytes] = []
    current = bytearray()  # the shown line being gathered
    last = first + count - 1  # the last line to show (lowered when the page is full)
    number = 1  # the line the next byte belongs to
    newlines = 0
    held = 0  # bytes of the page so far
    position = 0
    last_byte = b""  # the file's last byte, as far as read (b"\\0" for a final hole)

    def showing() -> bool:
        return first <= number <= last

    while True:
        if _SEEK_DATA is not None and (not showing() or (keep is not None and len(current) >= keep)):
            # Only looking for line breaks: a hole holds none, so it is skipped, not read.
            try:
                position = os.lseek(fd, position, _SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # no data from here on
                    if os.fstat(fd).st_size > position:
                        last_byte = b"\0"  # the file ends in a hole: it ends without a line break
                    break
                # no SEEK_DATA here: read everything
        chunk = osdep.pread(fd, CHUNK, position)
        if not chunk:
            break
        position += len(chunk)
        last_byte = chunk[-1:]
        start = 0
        while start < len(chunk):
            if not showing():
                found = chunk.count(_NEWLINE, start)
                if number > last or number + found < first:  # no shown line starts in the rest of this chunk
                    newlines += found
                    number += found
                    break
                start = chunk.index(_NEWLINE, start) + 1
                newlines += 1
                number += 1
                continue
            end = chunk.find(_NEWLINE, start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if keep is None:
                current += piece
            elif len(current) < keep:
                current += piece[: keep - len(current)]
            if end < 0:
                break
            lines.append(bytes(current))
            held += len(current) + 1
            current.clear()
            newlines += 1
            number += 1
            start = end + 1
            if held >= page_bytes:
                last = min(last, number - 1)  # the page is full: the rest is only counted
    empty = not last_byte
    ends_open = not empty and last_byte != _NEWLINE
    if showing() and (ends_open or (final_empty_line and not empty)):
        lines.append(bytes(current))  # the last line, which no line break ends
    return Page(lines, newlines, ends_open, empty)


async def detached(function: Callable[..., T], *args: object) -> T:
    """`function(*args)` on a daemon thread of its own; its result (or exception) once it ends. Cancelled,
    the caller goes on at once and the thread's result is dropped when it comes."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            result = function(*args)
        except BaseException as exc:  # handed to the caller
            with contextlib.suppress(RuntimeError):  # the loop is closed: the daemon is gone
                loop.call_soon_threadsafe(settle, None, exc)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=run, name="file-read", daemon=True).start()
    return await future

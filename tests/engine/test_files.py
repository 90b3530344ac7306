"""Reading a file the model asked for without blocking or ballooning (dsh_search.engine.files): the open
descriptor judged (no FIFO, device or directory), and pages of lines read with a bound that are exactly
the lines a plain split gives — holes of sparse files included."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_search.engine import files
from tests.support.examples import examples


def _reference(data: bytes, first: int, count: int, keep: int | None, final_empty_line: bool) -> files.Page:
    lines = data.split(b"\n")
    ends_open = bool(data) and not data.endswith(b"\n")
    if not data:
        lines = []
    elif not ends_open and not final_empty_line:
        lines = lines[:-1]
    shown = lines[first - 1 : first - 1 + count]
    if keep is not None:
        shown = [line[:keep] for line in shown]
    return files.Page(shown, data.count(b"\n"), ends_open, not data)


pieces = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.sampled_from([b"\n", b"\n\n", b"\r\n", b"x" * 70]),
        st.integers(1, 3 * files.CHUNK).map(lambda n: ("hole", n)),
    ),
    max_size=8,
)


@settings(max_examples=examples(150), deadline=None)
@given(
    pieces=pieces,
    first=st.integers(1, 12),
    count=st.integers(1, 12),
    keep=st.one_of(st.none(), st.integers(1, 80)),
    final_empty_line=st.booleans(),
)
def test_a_page_is_the_lines_a_split_gives(
    tmp_path_factory: pytest.TempPathFactory,
    pieces: list[bytes | tuple[str, int]],
    first: int,
    count: int,
    keep: int | None,
    final_empty_line: bool,
) -> None:
    path = tmp_path_factory.mktemp("page") / "f"
    with open(path, "wb") as f:
        for piece in pieces:
            if isinstance(piece, tuple):  # a hole: reads as NULs, skipped where only counted
                f.truncate(f.tell() + piece[1])
                f.seek(0, os.SEEK_END)
            else:
                f.write(piece)
    data = path.read_bytes()
    fd = files.open_regular(str(path))
    try:
        got = files.page(fd, first, count, keep=keep, final_empty_line=final_empty_line)
    finally:
        os.close(fd)
    assert got == _reference(data, first, count, keep, final_empty_line)


def test_a_page_stops_at_its_byte_bound_after_one_line_at_least(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"".join(b"%d %s\n" % (i, b"y" * 100) for i in range(100)))
    fd = files.open_regular(str(path))
    try:
        page = files.page(fd, 1, 100, page_bytes=1000)
        assert len(page.lines) == 10 and page.newlines == 100  # the rest only counted
        assert len(files.page(fd, 1, 100, page_bytes=1).lines) == 1
    finally:
        os.close(fd)


def test_only_a_regular_file_is_opened_and_a_fifo_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "file").write_text("x\n")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    for path, directory in ((fifo, False), ("/dev/null", False), (tmp_path, True)):
        with pytest.raises(files.NotRegular) as refused:
            files.open_regular(str(path))  # a FIFO's open returns at once: no writer is waited for
        assert refused.value.directory is directory
    fd = files.open_regular(str(tmp_path / "link"))
    assert os.get_blocking(fd)  # O_NONBLOCK cleared again: reads of the file behave as usual
    os.close(fd)
    with pytest.raises(OSError):
        files.open_regular(str(tmp_path / "link"), follow=False)


def test_a_detached_call_neither_holds_a_worker_nor_outlives_its_cancellation() -> None:
    release = threading.Event()

    async def scenario() -> None:
        assert await files.detached(lambda a, b: a + b, 2, 3) == 5
        with pytest.raises(ZeroDivisionError):
            await files.detached(lambda: 1 / 0)
        blocked = asyncio.ensure_future(files.detached(release.wait))
        await asyncio.sleep(0.05)
        blocked.cancel()  # the caller goes on; the thread is a daemon thread the exit does not wait for
        with pytest.raises(asyncio.CancelledError):
            await blocked
        threads = [t for t in threading.enumerate() if t.name == "file-read"]
        assert threads and all(t.daemon for t in threads)

    asyncio.run(scenario())
    release.set()

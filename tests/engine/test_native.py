"""The engine's native stat (dsh_search.engine.native): the library against the pure-Python path, which is
the reference — the same numbers for files, directories, links (followed or not), FIFOs, missing and
unreachable names, relative to a directory or absolute."""

from __future__ import annotations

import importlib
import os
from array import array
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_search.engine import native


@pytest.fixture(scope="module")
def pure() -> Iterator[object]:
    """native.py loaded a second time without its library."""
    os.environ["DSH_SEARCH_PURE_NATIVE"] = "1"
    try:
        spec = importlib.util.find_spec("dsh_search.engine.native")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        del os.environ["DSH_SEARCH_PURE_NATIVE"]
    assert not module.native()
    yield module


def test_the_native_library_is_built_and_loaded() -> None:
    # scripts/lib.sh builds it for every test run; without it every stat is Python's (slower, the same).
    assert native.native()


def tree(root: Path) -> list[bytes]:
    (root / "dir").mkdir()
    (root / "dir" / "file.txt").write_text("hello")
    (root / "empty").write_bytes(b"")
    (root / "link").symlink_to("dir/file.txt")
    (root / "dangling").symlink_to("nowhere")
    (root / "dirlink").symlink_to("dir")
    os.mkfifo(root / "fifo")
    (root / "caf\xe9".encode("latin-1").decode("utf-8", "surrogateescape")).write_text("x")
    return [
        b"dir",
        b"dir/file.txt",
        b"empty",
        b"link",
        b"dangling",
        b"dirlink",
        b"fifo",
        b"caf\xe9",
        b"missing",
        b"dir/file.txt/below",  # ENOTDIR
        b"",  # ENOENT
    ]


@pytest.mark.parametrize("follow", [True, False])
def test_the_library_and_python_give_the_same_numbers(pure: object, tmp_path: Path, follow: bool) -> None:
    names = tree(tmp_path)
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        got = native.stat_many(names, dirfd=fd, follow=follow)
        assert got == pure.stat_many(names, dirfd=fd, follow=follow)  # type: ignore[attr-defined]
        absolute = [os.fsencode(tmp_path) + b"/" + name for name in names[:-1]]
        assert native.stat_many(absolute, follow=follow) == pure.stat_many(absolute, follow=follow)  # type: ignore[attr-defined]
        joined = native.stat_joined(b"".join(n + b"\0" for n in names[:-1]), len(names) - 1, dirfd=fd, follow=follow)
        assert joined == got[: native.FIELDS * (len(names) - 1)]
    finally:
        os.close(fd)
    fields = {name: got[i * native.FIELDS : (i + 1) * native.FIELDS] for i, name in enumerate(names)}
    st = os.stat(tmp_path / "dir" / "file.txt")
    assert list(fields[b"dir/file.txt"]) == [st.st_dev, st.st_ino, 0o100000, 5, st.st_mtime_ns, st.st_ctime_ns]
    assert list(fields[b"dir"])[2:] == [0o040000, -1, 0, 0]  # a directory: its identity alone
    assert fields[b"missing"][0] < 0 and fields[b"missing"][native.TYPE] == 0
    assert fields[b"fifo"][native.TYPE] == 0o010000
    assert fields[b"link"][native.TYPE] == (0o100000 if follow else 0o120000)


def test_a_name_with_a_nul_is_no_file(pure: object) -> None:
    got = native.stat_many([b"a\0b", b"/"])
    assert got == pure.stat_many([b"a\0b", b"/"])  # type: ignore[attr-defined]
    assert got[native.TYPE] == 0
    assert native.stat_many([]) == array("q")

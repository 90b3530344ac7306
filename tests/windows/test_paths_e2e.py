"""What the model sees on Windows, word for word, and the rule above it: every path the model is shown is
accepted back by glob's and grep's `path`, by `read`, and (a spill locator) by `spill/read`
(docs/behaviour.md, "Windows").

The frozen dsh-search.exe runs under wine; answers are read raw (no host view of paths). Wine's drive Z:
is the host's root, so the tree the tests write at /tmp/x is Z:\\tmp\\x to the daemon.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import Daemon, MakeDaemon, error_of, text_of
from tests.windows.conftest import HERE, winpath

DEEP = ["d" * 50] * 6  # a directory chain: the file's absolute path is longer than MAX_PATH (260)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    for name, data in {
        "src/a.txt": b"needle\n",
        "src/util/B.txt": b"x needle\n",
        "crlf.txt": b"needle end\r\nsecond needle\r\n",
        "Case.txt": b"needle upper\n",
        "case.txt": b"needle lower\n",
        "/".join([*DEEP, "deep.txt"]): b"deep needle\n",
    }.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "o.txt").write_bytes(b"needle outside\n")
    return root


def start_raw(start: MakeDaemon, root: Path, *extra: str) -> Daemon:
    return start("--workdir", str(root), "--index", "off", *extra, raw=True)


def comes_back(d: Daemon, shown: str, text: bytes) -> None:
    """A path the model was shown is accepted back: grep's and glob's `path`, and `read`."""
    grep = d.call("grep", {"pattern": "needle", "path": shown})
    assert text_of(grep) == f"Found 1 match\n\n{shown}\nLine 1: {text.decode().rstrip()}", grep
    glob = d.call("glob", {"pattern": "*", "path": shown})
    assert text_of(glob) == shown, glob
    read = d.result("read", {"path": shown})
    assert read["text"] == "     1\t" + text.decode().rstrip(), read


def test_display_paths_are_ripgreps_and_come_back(start: MakeDaemon, tree: Path) -> None:
    d = start_raw(start, tree)
    shown = d.result("glob", {"pattern": "*.txt"})["meta"]["paths"]
    deep = "\\".join([*DEEP, "deep.txt"])
    assert sorted(shown) == sorted(["src\\a.txt", "src\\util\\B.txt", "crlf.txt", "Case.txt", "case.txt", deep])
    for path in ("src\\a.txt", "src\\util\\B.txt", deep):
        comes_back(d, path, (tree / path.replace("\\", "/")).read_bytes())
    # A path given with `/` is passed to ripgrep as written, which joins what it finds with `\`.
    assert text_of(d.call("glob", {"pattern": "*.txt", "path": "src/util"})) == "src/util\\B.txt"
    comes_back(d, "src/util\\B.txt", b"x needle\n")


def test_an_absolute_path_inside_the_workdir_is_shown_relative(start: MakeDaemon, tree: Path) -> None:
    """However it is spelled: drive letter in either case, `/` separators, no drive (the current one)."""
    d = start_raw(start, tree)
    src = str(tree / "src")
    backslashed = src.replace("/", "\\")
    for absolute in ("Z:" + backslashed, "z:" + backslashed, "Z:" + src + "/", backslashed):
        assert text_of(d.call("glob", {"pattern": "*.txt", "path": absolute})) in (
            "src\\a.txt\nsrc\\util\\B.txt",
            "src\\util\\B.txt\nsrc\\a.txt",
        ), absolute


def test_case_only_differences_of_the_workdir_still_count_as_inside(start: MakeDaemon, tree: Path) -> None:
    """Node's path.win32.relative compares names regardless of case and keeps the rest as given."""
    d = start_raw(start, tree)
    upper = winpath(tree / "src").upper()  # Z:\TMP\...\W\SRC: the same directory on a case-insensitive system
    shown = text_of(d.call("glob", {"pattern": "*.txt", "path": upper})).split("\n")
    assert sorted(shown) == ["SRC\\a.txt", "SRC\\util\\B.txt"]
    comes_back(d, "SRC\\a.txt", b"needle\n")


def test_paths_outside_the_workdir_stay_absolute_and_come_back(start: MakeDaemon, tree: Path) -> None:
    d = start_raw(start, tree)
    outside = winpath(tree.parent / "outside")
    assert text_of(d.call("glob", {"pattern": "*.txt", "path": outside})) == outside + "\\o.txt"
    comes_back(d, outside + "\\o.txt", b"needle outside\n")


def test_extended_length_paths_are_shown_as_given_and_come_back(start: MakeDaemon, tree: Path) -> None:
    """`\\\\?\\` paths (the form that lifts MAX_PATH): ripgrep prints them as given, as upstream shows them.
    (A `\\\\server\\share` UNC path has the same syntax; wine has no network shares to test it on.)"""
    d = start_raw(start, tree)
    prefix = "\\\\?\\" + winpath(tree / "src")
    assert text_of(d.call("glob", {"pattern": "a.txt", "path": prefix})) == prefix + "\\a.txt"
    comes_back(d, prefix + "\\a.txt", b"needle\n")


def test_paths_longer_than_max_path(start: MakeDaemon, tree: Path) -> None:
    d = start_raw(start, tree)
    absolute = winpath(tree.joinpath(*DEEP, "deep.txt"))
    relative = "\\".join([*DEEP, "deep.txt"])
    assert len(absolute) > 260
    assert text_of(d.call("glob", {"pattern": "*", "path": absolute})) == relative  # inside: shown relative
    comes_back(d, relative, b"deep needle\n")
    assert text_of(d.call("grep", {"pattern": "deep"})) == f"Found 1 match\n\n{relative}\nLine 1: deep needle"
    outside = start_raw(start, tree / "src")  # the same file from another workdir: shown absolute, and back
    assert text_of(outside.call("glob", {"pattern": "deep.txt", "path": absolute})) == absolute
    comes_back(outside, absolute, b"deep needle\n")


def test_names_that_differ_only_in_case(start: MakeDaemon, tree: Path) -> None:
    """NTFS keeps one of them; wine's host file system keeps both, and ripgrep lists both: each shown
    name comes back (a case-insensitive lookup finds a file of that name)."""
    d = start_raw(start, tree)
    text = text_of(d.call("grep", {"pattern": "needle (upper|lower)"}))
    assert text == "Found 2 matches\n\nCase.txt\nLine 1: needle upper\n\ncase.txt\nLine 1: needle lower"
    assert "Found 1 match" in text_of(d.call("grep", {"pattern": "needle", "path": "Case.txt"}))


def test_reserved_names(start: MakeDaemon, tree: Path) -> None:
    """A file named CON (made here from the host; Windows itself makes one only through `\\\\?\\`) is no file
    to Windows by that name: `CON` is the console device. glob leaves it out (its modification time cannot
    be read, as for a file gone since ripgrep listed it); grep's ripgrep cannot open it and reports it
    unreadable, so the other results are kept and the footer counts it; named alone, the search fails as
    upstream's does."""
    (tree / "CON").write_bytes(b"needle\n")
    d = start_raw(start, tree)
    assert "CON" not in text_of(d.call("glob", {"pattern": "*"})).split("\n")
    text = text_of(d.call("grep", {"pattern": "needle", "path": "src"}))
    assert text.startswith("Found 2 matches")
    whole = text_of(d.call("grep", {"pattern": "needle lower"}))
    assert whole == "Found 1 match\n\ncase.txt\nLine 1: needle lower\n\n(1 path could not be read)"
    code, kind, message = error_of(d.call("grep", {"pattern": "needle", "path": "CON"}))
    assert (code, kind) == (1002, "SEARCH_FAILED") and message.startswith("Error: grep search failed (exit 2): rg: CON")


def test_a_file_locked_by_another_process(start: MakeDaemon, tree: Path) -> None:
    locked = tree / "src" / "a.txt"
    python = os.environ["DSH_WIN_PYTHON"]
    holder = subprocess.Popen(
        ["wine", python, winpath(HERE / "hold_locked.py"), winpath(locked)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        d = start_raw(start, tree)
        text = text_of(d.call("grep", {"pattern": "x needle|needle end"}))
        assert text == (
            "Found 2 matches\n\ncrlf.txt\nLine 1: needle end\n\nsrc\\util\\B.txt\nLine 1: x needle\n\n"
            "(1 path could not be read)"
        )
        assert "src\\a.txt" in text_of(d.call("glob", {"pattern": "*.txt"})).split("\n")  # listing needs no open
        code, kind, message = error_of(d.call("grep", {"pattern": "needle", "path": "src\\a.txt"}))
        assert (code, kind) == (1002, "SEARCH_FAILED") and "os error 32" in message
    finally:
        holder.communicate("", timeout=30)


def test_crlf_lines(start: MakeDaemon, tree: Path) -> None:
    """As ripgrep without --crlf (upstream passes none): `$` matches before `\\n` only, so not at the end of
    a CRLF line; the line shown loses its `\\r\\n`."""
    d = start_raw(start, tree)
    assert text_of(d.call("grep", {"pattern": "end$"})) == "No matches found"
    assert text_of(d.call("grep", {"pattern": "end\\r$"})) == "Found 1 match\n\ncrlf.txt\nLine 1: needle end"
    assert text_of(d.call("grep", {"pattern": "needle", "path": "crlf.txt"})) == (
        "Found 2 matches\n\ncrlf.txt\nLine 1: needle end\nLine 2: second needle"
    )


def test_a_spill_locator_comes_back(start: MakeDaemon, tree: Path, spill_root: Path) -> None:
    d = start_raw(start, tree, "--grep-max-matches", "1")
    result: dict[str, Any] = d.result("grep", {"pattern": "needle"})
    locator = result["spill"]["locator"]
    assert locator.startswith(winpath(spill_root) + "\\session-") and locator.endswith("-grep-results.txt")
    assert f"(Full grep result stored at: {locator}. " in result["text"]
    page = d.result("spill/read", {"locator": locator, "limit": 1})
    assert page["text"] == "Found 7 matches" and page["nextOffset"] == 2
    assert d.result("read", {"path": locator, "limit": 1})["text"].startswith("     1\tFound 7 matches\n\n(Showing")
    grep = text_of(d.call("grep", {"pattern": "^Found", "path": locator}))
    assert grep == f"Found 1 match\n\n{locator}\nLine 1: Found 7 matches"


def test_grep_orders_files_by_the_bytes_of_windows_display_paths(start: MakeDaemon, tmp_path: Path) -> None:
    root = tmp_path / "w"
    for name in ("d1/x.txt", "d10/y.txt", "d1a.txt", "D2/z.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"needle\n")
    d = start_raw(start, root)
    files = [f["path"] for f in d.result("grep", {"pattern": "needle"})["meta"]["files"]]
    assert files == sorted(files, key=str.encode) == ["D2\\z.txt", "d10\\y.txt", "d1\\x.txt", "d1a.txt"]


def test_a_rejected_pattern_quotes_ripgrep_raw(start: MakeDaemon, tree: Path) -> None:
    d = start_raw(start, tree)
    code, kind, message = error_of(d.call("grep", {"pattern": "a\nb"}))
    assert (code, kind) == (1001, "SEARCH_INVALID_PATTERN")
    assert message.startswith('Error: grep pattern rejected by ripgrep: rg: the literal "\\n" is not allowed')

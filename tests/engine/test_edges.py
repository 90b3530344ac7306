"""Word for word at the edges: behaviour where the upstream tools' JavaScript and a naive Python port part.

Each case was found by differential testing against upstream and is pinned here with upstream's exact
text. The end-to-end counterparts (real ripgrep, the frozen executable) are in tests/engine/test_edges_e2e.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from dsh_search.engine import glob as glob_mod
from dsh_search.engine.failures import INVALID_ARGS, SEARCH_FAILED, SEARCH_RAW_OUTPUT_OVERFLOW, ToolError
from dsh_search.engine.grep import json_parse, page
from dsh_search.engine.jscompat import JS_WHITESPACE, js_trim, utf8_growth
from dsh_search.engine.paths import same_directory
from dsh_search.engine.request import GlobQuery, GrepQuery, check_glob, check_grep
from dsh_search.engine.ripgrep import Outcome, StderrTally
from dsh_search.engine.run import classify, problems_suffix
from dsh_search.engine.scope import Where, locate
from dsh_search.methods import tools
from dsh_search.methods.context import Context
from dsh_search.methods.roots import scope
from tests.support.fakes import FakeLaunch, FakeSpill, make_app, outcome, run_glob, run_grep


def resolve(app: Context, cwd: str | None = None, path: str | None = None) -> Where:
    """Where a search with this cwd and path runs, as the tools ask the engine."""
    return locate(app.searcher, scope(app), cwd, path)


# --- trimming: JavaScript's String.prototype.trim, not str.strip ----------------------------------------


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to ask JavaScript itself")
def test_js_whitespace_is_what_node_trims() -> None:
    script = (
        "const out = [];"
        "for (let c = 0; c <= 0x10ffff; c++) {"
        "  if (c >= 0xd800 && c <= 0xdfff) continue;"
        "  const s = String.fromCodePoint(c);"
        "  if (('a' + s).trim() === 'a' && (s + 'a').trim() === 'a') out.push(c);"
        "}"
        "console.log(JSON.stringify(out));"
    )
    done = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(done.stdout) == sorted(ord(c) for c in JS_WHITESPACE)


def test_python_and_javascript_whitespace_differ_where_it_matters() -> None:
    python_only = "\x1c\x1d\x1e\x1f\x85"
    assert all(not c.strip() for c in python_only)  # str.strip removes them...
    assert js_trim(python_only) == python_only  # ...JavaScript keeps them
    assert "\ufeff".strip() == "\ufeff" and js_trim("\ufeff") == ""
    assert js_trim(" \t\u3000x\u2028\u00a0 ") == "x"


_TAIL = b")\n    ^\nerror: unclosed group\n"


@pytest.mark.parametrize(
    ("lead", "shown"),
    [
        ("\x1f\x1f\x1f\x1fabc", "\x1f\x1f\x1f\x1fabc"),  # kept: not JavaScript whitespace
        ("\x85abc", "\x85abc"),  # NEL: kept by JavaScript
        ("\ufeffabc", "abc"),  # BOM: trimmed by JavaScript
        ("\u2028abc", "abc"),
    ],
)
def test_stderr_excerpt_is_trimmed_as_javascript_trims(lead: str, shown: str) -> None:
    # The tail a small stderrMaxBytes keeps of rg's "regex parse error" for the pattern "(" + lead.
    tail = lead.encode() + _TAIL
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(2, tail, lossy=True), 100, lambda _: False)
    assert err.value.kind == SEARCH_FAILED
    assert err.value.text == (
        f"Error: grep search failed (exit 2): {shown})\n    ^\nerror: unclosed group [stderr truncated]"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (GlobQuery("\ufeff"), "pattern must be a non-empty string"),
        (GlobQuery("*", "\u3000\ufeff"), "path must be a non-empty string when given"),
        (GrepQuery("x", "\u2029"), "path must be a non-empty string when given"),
        (GrepQuery("x", include="\ufeff "), "include must be a non-empty glob when given"),
    ],
)
def test_blank_means_blank_to_javascript(args: GlobQuery | GrepQuery, message: str) -> None:
    with pytest.raises(ToolError) as err:
        if isinstance(args, GlobQuery):
            check_glob(args)
        else:
            check_grep(args, 250)
    assert (err.value.kind, err.value.message) == (INVALID_ARGS, message)


@pytest.mark.parametrize("blank_to_python", ["\x1f", "\x1c\x1d", "\x85", " \x1e "])
def test_not_blank_to_javascript(blank_to_python: str) -> None:
    check_glob(GlobQuery(blank_to_python))
    check_glob(GlobQuery("*", blank_to_python))
    check_grep(GrepQuery("x", blank_to_python, blank_to_python), 250)


def test_no_model_facing_strip_left() -> None:
    """Every trim on a model-facing path goes through js_trim (config and transport code may strip)."""
    import inspect

    from dsh_search.engine import request
    from dsh_search.engine import run as search

    for module in (glob_mod, request, page, json_parse, search, sys.modules["dsh_search.engine.presentation"]):
        assert ".strip()" not in inspect.getsource(module), module.__name__


# --- an empty excerpt is no excerpt, truncation marker included ---------------------------------------------


@pytest.mark.parametrize("tail", [b"\n", b" \n\t", b"\xe2\x80\xa8\n"])  # what a 1-3 byte stderr cap keeps
def test_empty_excerpt_has_no_marker(tail: bytes) -> None:
    for tool in ("grep", "glob"):
        with pytest.raises(ToolError) as err:
            classify(tool, outcome(2, tail, lossy=True), 100, lambda _: False)
        assert err.value.kind == SEARCH_FAILED
        assert err.value.text == f"Error: {tool} search failed (exit 2)"


def test_marker_only_follows_an_excerpt() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(2, b"\x1f\n", lossy=True), 100, lambda _: False)
    assert err.value.text == "Error: grep search failed (exit 2): \x1f [stderr truncated]"


# --- sessionId "" is a session id; only an absent one is "default" ---------------------------------------------


@pytest.mark.parametrize(("params", "session"), [({"sessionId": ""}, ""), ({}, "default"), ({"sessionId": "s"}, "s")])
def test_empty_session_id_is_not_the_default(params: dict[str, str], session: str) -> None:
    spill = FakeSpill()
    run_glob(make_app(spill, globMaxResults=1), ["a", "b"], **params)
    run_grep(make_app(spill, grepMaxMatches=1), [("a", 1, "x"), ("a", 2, "y")], **params)
    assert [save[0] for save in spill.saves] == [session, session]


# --- cwd: the directory the kernel finds, not a lexical normalisation -------------------------------------------


def _link_tree(root: Path) -> Path:
    """w/a/o.txt, w/x/p.txt, the directory w/a/b and the symlink w/x/link -> ../a/b."""
    w = root / "w"
    (w / "a" / "b").mkdir(parents=True)
    (w / "x").mkdir()
    (w / "a" / "o.txt").write_text("needle a\n")
    (w / "x" / "p.txt").write_text("needle x\n")
    (w / "x" / "link").symlink_to("../a/b")
    return w


def test_cwd_dotdot_after_a_symlink_is_resolved_by_the_filesystem(tmp_path: Path) -> None:
    w = _link_tree(tmp_path)
    app = make_app(workdir=str(tmp_path))
    where = resolve(app, "w/x/link/..")
    assert where.cwd == str(w / "a")  # where `cd w/x/link/..` goes; normpath would say w/x
    assert same_directory(str(tmp_path / "w/x/link/.."), where.cwd)
    assert resolve(app, str(w / "x" / "link" / ".." / ".")).cwd == str(w / "a")
    assert resolve(app, "w/x/link/../b").cwd == str(w / "a" / "b")
    # Without `..` the host's spelling is kept (display paths are relative to it, as upstream's).
    assert resolve(app, "w/x/link/./").cwd == str(w / "x" / "link")
    assert resolve(app, "w//x/.").cwd == str(w / "x")


def test_confinement_looks_at_the_directory_the_kernel_finds(tmp_path: Path) -> None:
    w = _link_tree(tmp_path)
    inside_a = make_app(workdir=str(tmp_path), allowedRoots=[str(w / "a")])
    assert resolve(inside_a, "w/x/link/..").cwd == str(w / "a")
    inside_x = make_app(workdir=str(tmp_path), allowedRoots=[str(w / "x")])
    with pytest.raises(ToolError) as err:
        resolve(inside_x, "w/x/link/..")
    assert (err.value.kind, err.value.message) == (INVALID_ARGS, "path is outside the allowed roots")


@pytest.mark.parametrize(
    "cwd",
    [
        "w/x/p.txt/..",  # a file is no directory to go up from: ENOTDIR
        "w/missing/..",  # ENOENT
        "w/x/p.txt",
        "w/x/dangling/..",
    ],
)
def test_a_name_the_kernel_cannot_follow_could_not_start(tmp_path: Path, cwd: str) -> None:
    _link_tree(tmp_path)
    (tmp_path / "w" / "x" / "dangling").symlink_to("nowhere")
    launch = FakeLaunch()
    app = make_app(launch=launch, workdir=str(tmp_path))
    where = resolve(app, cwd)
    assert not same_directory(os.path.join(str(tmp_path), cwd), where.cwd)
    with pytest.raises(ToolError) as err:
        asyncio.run(tools.run_grep(app, {"pattern": "needle", "cwd": cwd}, None))
    assert (err.value.kind, err.value.text) == (
        SEARCH_FAILED,
        "Error: grep could not start its search command (ripgrep launch failed)",
    )
    assert launch.calls == []  # never a search elsewhere


# --- the raw-output cap, judged on the decoded size as upstream judges it ----------------------------------------


@pytest.mark.parametrize(
    ("data", "growth"),
    [
        (b"plain.txt\0", 0),
        ("日本語\n".encode(), 0),
        (b"\xff\xff\xff\xff.txt\0", 8),  # four U+FFFD of 3 bytes each for four bytes
        (b"\xe6\x97", 1),  # a code point cut short: one U+FFFD for two bytes
        (b"\xf0\x80\x80", 6),  # not a valid prefix: three replacements
        (b"\xed\xa0\x80", 6),  # an encoded surrogate: three replacements
    ],
)
def test_utf8_growth(data: bytes, growth: int) -> None:
    assert utf8_growth(data) == growth


def test_batches_add_up_to_the_whole_stream() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from dsh_search.engine.batches import Batches

    stream = b"".join(bytes([0xFF] * (i % 5)) + b"\xe6\x97\xa5name\0" for i in range(5000))
    with ThreadPoolExecutor(max_workers=1) as pool:
        batches = Batches(b"\0", lambda blob: blob, pool, growth=utf8_growth, min_bytes=100)
        for i in range(0, len(stream), 77):  # chunks cut anywhere, even inside a sequence
            batches.feed(stream[i : i + 77])
        asyncio.run(batches.finish())
    assert batches.decoded_growth() == utf8_growth(stream) > 0


def test_cancelled_batches_are_dropped_and_later_input_ignored() -> None:
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from dsh_search.engine.batches import Batches

    gate = threading.Event()
    worked: list[bytes] = []

    def work(blob: bytes) -> bytes:
        gate.wait(5)
        worked.append(blob)
        return blob

    with ThreadPoolExecutor(max_workers=1) as pool:
        batches = Batches(b"\n", work, pool, growth=len, min_bytes=4, max_bytes=8)
        batches.feed(b"aaaa\nbbbb\ncccc\ndd")  # three batches: the first is being worked on, two wait
        batches.cancel()
        batches.feed(b"dd\neeee\n")
        gate.set()
    assert worked == [b"aaaa"]
    assert [f.cancelled() for f in batches._futures] == [False, True, True]


def _app(tmp_path: Path, stdout: bytes, **config: Any) -> Context:
    """An app whose ripgrep writes `stdout` and exits 0."""
    return make_app(launch=FakeLaunch(stdout, outcome(0)), workdir=str(tmp_path), **config)


def test_glob_raw_cap_counts_the_decoded_bytes(tmp_path: Path) -> None:
    # One file named b"\xff\xff\xff\xff.txt": 9 raw bytes (with its separator), 17 once decoded.
    listing = b"\xff\xff\xff\xff.txt\0"
    with pytest.raises(ToolError) as err:
        asyncio.run(tools.run_glob(_app(tmp_path, listing, rawOutputMaxBytes=10), {"pattern": "*"}, None))
    assert (err.value.kind, err.value.text) == (
        SEARCH_RAW_OUTPUT_OVERFLOW,
        "Error: glob produced 17 bytes of raw output, over the 10-byte cap; narrow pattern, path, or include and retry",
    )
    (tmp_path / os.fsdecode(b"\xff\xff\xff\xff.txt")).write_text("")
    app = _app(tmp_path, listing, rawOutputMaxBytes=17)  # exactly the cap is fine
    assert asyncio.run(tools.run_glob(app, {"pattern": "*"}, None)).text == "\ufffd\ufffd\ufffd\ufffd.txt"


def test_grep_raw_cap_counts_the_decoded_bytes_before_parsing(tmp_path: Path) -> None:
    # ripgrep's --json is valid UTF-8, so this cannot happen with it; were it not, upstream would judge
    # the decoded size before parsing, and so do we.
    record = b'{"type":"match","data":{"path":{"text":"a"},"line_number":1,"lines":{"text":"\xff\xff"}}}\n'
    app = _app(tmp_path, record, rawOutputMaxBytes=len(record) + 3)
    with pytest.raises(ToolError) as err:
        asyncio.run(tools.run_grep(app, {"pattern": "x"}, None))
    assert (err.value.kind, err.value.message) == (
        SEARCH_RAW_OUTPUT_OVERFLOW,
        f"grep produced {len(record) + 4} bytes of raw output, over the {len(record) + 3}-byte cap; "
        "narrow pattern, path, or include and retry",
    )


def test_grep_parses_a_line_as_upstream_decodes_it(tmp_path: Path) -> None:
    record = b'{"type":"match","data":{"path":{"text":"a"},"line_number":1,"lines":{"text":"\xff\xff"}}}\n'
    app = _app(tmp_path, record, rawOutputMaxBytes=len(record) + 4)
    assert asyncio.run(tools.run_grep(app, {"pattern": "x"}, None)).text == "Found 1 match\n\na\nLine 1: \ufffd\ufffd"


def test_a_batch_that_fails_to_parse_still_counts(tmp_path: Path) -> None:
    garbage = b"not json \xff\xff\n"  # upstream checks the decoded size first, then fails to parse
    for cap, kind in ((len(garbage) + 3, SEARCH_RAW_OUTPUT_OVERFLOW), (len(garbage) + 4, SEARCH_FAILED)):
        with pytest.raises(ToolError) as err:
            asyncio.run(tools.run_grep(_app(tmp_path, garbage, rawOutputMaxBytes=cap), {"pattern": "x"}, None))
        assert err.value.kind == kind


# --- exit 2 with results: every path ripgrep reported, not just those in the stderr tail ------------------------

_DENIED = b"rg: %s: Permission denied (os error 13)\n"
_BAD_RULES = (
    b"rg: /w/.ignore: line 1: error parsing glob '{a,': unclosed alternate group; missing '}' (maybe escape '{' "
    b"with '[{]'?)\n/w/.ignore: line 3: error parsing glob '[': unclosed character class; missing ']'\n"
)


@pytest.mark.parametrize("step", [1, 2, 7, 64, 1 << 20])
def test_stderr_tally_across_chunks(step: int) -> None:
    stderr = b"".join(_DENIED % f"dir/f{i}.txt".encode() for i in range(50)) + _BAD_RULES + _DENIED % b"last"
    tally = StderrTally()
    for i in range(0, len(stderr), step):
        tally.feed(stderr[i : i + step])
    tally.finish()
    assert (tally.paths, tally.ignore_files) == (51, 1)


def test_stderr_tally_counts_a_last_line_without_newline_and_long_lines() -> None:
    tally = StderrTally(max_line=16)
    tally.feed(b"rg: " + b"x" * 100 + b": Permission denied\nrg: y: Permission")
    tally.finish()
    assert tally.paths == 2


@pytest.mark.parametrize(
    "stderr",
    [
        b"memory allocation of 67108864 bytes failed\nstack backtrace:\n",
        # Two threads failing at once interleave the message's pieces (seen under a 256 MiB bound):
        b"memory allocation of memory allocation of 67108864 bytes failed\nskipping backtrace printing\n",
        b"memory allocation of memory allocation of 6710886467108864 bytes failed\n bytes failed\n",
    ],
)
def test_stderr_tally_recognises_an_allocation_failure_however_threads_interleave_it(stderr: bytes) -> None:
    tally = StderrTally()
    tally.feed(stderr)
    tally.finish()
    assert tally.allocation_failed and tally.paths == 0


def test_a_path_that_reads_like_an_allocation_failure_is_a_path() -> None:
    tally = StderrTally()
    tally.feed(b"rg: memory allocation of 1 bytes failed.txt: Permission denied (os error 13)\n")
    tally.finish()
    assert (tally.paths, tally.allocation_failed) == (1, False)


def test_unreadable_count_is_independent_of_the_stderr_cap() -> None:
    # The runner counted 2 reports; a 40-byte stderr cap kept only the end of the last one.
    tail = b"b.txt: Permission denied (os error 13)\n"
    out = Outcome(2, None, b"", False, tail, True, reported_paths=2)
    assert classify("grep", out, 100, lambda _: True).unreadable == 2


@pytest.mark.parametrize(
    ("paths", "ignore_files", "suffix"),
    [
        (2, 0, "\n\n(2 paths could not be read)"),
        (1, 0, "\n\n(1 path could not be read)"),
        (0, 1, "\n\n(1 ignore file has rules ripgrep could not parse; those rules were not applied)"),
        (
            3,
            2,
            "\n\n(3 paths could not be read)\n\n"
            "(2 ignore files have rules ripgrep could not parse; those rules were not applied)",
        ),
        (0, 0, "\n\n(1 path could not be read)"),  # exit 2 and nothing recognised: something went unread
    ],
)
def test_exit_2_paragraphs(paths: int, ignore_files: int, suffix: str) -> None:
    out = Outcome(2, None, b"", False, b"", False, reported_paths=paths, bad_ignore_files=ignore_files)
    assert problems_suffix(classify("grep", out, 100, lambda _: True)) == suffix


def test_a_file_cut_across_batches_is_joined_as_if_it_came_whole() -> None:
    """Pieces that follow on keep their formatted sections (joined, not formatted again); pieces out of
    line order are put in order. Either way the result is the one of the whole stream parsed at once."""
    from tests.support.fakes import match_record

    records = [match_record("a.c", n, f"line {n}\r\n" if n % 2 else f"line {n}\n") for n in range(1, 10)]
    records += [match_record("b.c", 4, "x" * 3000 + "\n"), match_record("b.c", 7, "tail")]

    def parse(batch: list[bytes]) -> list[page.Section]:
        return json_parse.sections(json_parse.parse_batch(b"\n".join(batch), "/w", 2000).files, 2000)

    whole = page.ordered([parse(records)])
    for cuts in ([3, 6, 10], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [9]):
        bounds = [0, *cuts, len(records)]
        parts = [parse(records[a:b]) for a, b in pairwise(bounds)]
        assert page.ordered(parts) == whole
        assert page.ordered(parts[::-1]) == whole  # out of line order: put in order again
    assert whole[0].text == "a.c\n" + "\n".join(f"Line {n}: line {n}" for n in range(1, 10))

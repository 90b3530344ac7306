"""grep's reading of ripgrep's standard output (engine/grep/standard_parse.py) against its reading of
ripgrep's --json, on output the real ripgrep wrote for generated trees.

The trees hold what makes the two printers differ or the reading hard: Unicode and control characters,
quotes and backslashes (escaped by --json), CRLF, a lone CR, a last line without a newline (the standard
printer adds one), a lone CR ending a file, lines over the preview cap, lines and file names that are not
UTF-8, names with spaces, colons, digits only or a newline, files with a NUL (abandoned at it, with or
without matches before it), UTF-16 and UTF-8 byte-order marks, empty files, many small files and a few
with many matches. Patterns include empty matches, anchors, case folding, alternation, and a byte
pattern that matches inside a character. (A NUL that follows matches is placed after ripgrep's first
64 KiB buffer and lines are kept short: ripgrep's buffer grows with a long line and stays grown for the
next file its thread searches, so whether a file's matches before a NUL are printed depends on the order
its threads take the files — that is ripgrep's own output changing from run to run, with --json too.)

Three things must hold on every tree, pattern and root, with the output cut into batches of random sizes
(so blocks are continued across batches):
- the sections read from the standard output are the sections read from --json (or the reading says it
  is unsure, and only where the tree holds something that makes it so);
- the bounds of --json's size contain the size of a real --json run of the same search;
- the engine's answer, page, meta, spill artifact or error, is the --json reading's answer, at the default
  caps, a small line cap, and raw-output caps on either side of --json's size and inside the bounds.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_search import config as config_mod
from dsh_search.engine.failures import ToolError
from dsh_search.engine.grep import argv as grep_argv
from dsh_search.engine.grep import grep, json_parse, page, standard
from dsh_search.engine.grep import standard_parse as rgstd
from dsh_search.engine.grep.standard import BlockBatches
from dsh_search.engine.jscompat import utf8_growth
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GrepQuery
from dsh_search.engine.ripgrep import Launcher, child_environment
from dsh_search.engine.scope import Scope
from dsh_search.engine.searcher import Searcher, Workers
from dsh_search.engine.spill import SpillRef
from dsh_search.wiring import rg_limits
from tests.support.examples import examples
from tests.support.fakes import Inline

EXAMPLES = examples(60, "DSH_GREP_STD_EXAMPLES")
CAP = 2000

_WORDS = [
    "static",
    "STATIC",
    "x",
    "é",
    "😀",
    "\t",
    '"q"',
    "\\",
    "\x1b[0m",
    "\x01",
    "\x7f",
    "\u2028",
    "\ufeff",
    "ab",
    " ",
    "Line 3: ",
    ": ",
]
_ENDINGS = ["\n", "\n", "\n", "\r\n", "\r\r\n"]


@st.composite
def files(draw: st.DrawFn) -> dict[bytes, bytes]:
    """A few files: name → content."""
    out: dict[bytes, bytes] = {}
    for i in range(draw(st.integers(1, 7))):
        lines = []
        for _ in range(draw(st.sampled_from([0, 1, 2, 5, 30, 300]))):
            words = draw(st.lists(st.sampled_from(_WORDS), max_size=8))
            line = " ".join(words)
            if draw(st.integers(0, 40)) == 0:
                line += "static " + "y" * draw(st.integers(1990, 2100))
            elif draw(st.integers(0, 40)) == 0:  # fewer characters than the cap, more bytes
                line += "static " + draw(st.sampled_from(["é", "😀", "é😀"])) * draw(st.integers(330, 1000))
            lines.append(line + draw(st.sampled_from(_ENDINGS)))
        data = "".join(lines).encode()
        shape = draw(st.integers(0, 24))
        if shape == 0:
            data += b"static \xff\xfe not utf-8\n"
        elif shape == 1:
            data = data.rstrip(b"\n")  # no final newline
        elif shape == 2:
            data = data.rstrip(b"\n") + b"\nstatic lone\r"  # a lone CR ends the file
        elif shape == 3:  # a NUL after matches, in a later buffer (64 KiB) than theirs
            data = b"static\n" * 3 + b"a line between\n" * 6000 + b"\0 static after\n"
        elif shape == 4:
            data = b"\0static\n"  # a NUL before any match
        elif shape == 5:
            data = b"\xff\xfe" + "static x\r\nmore static\r".encode("utf-16-le")  # UTF-16, lone CR at its end
        elif shape == 6:
            data = b"\xef\xbb\xbfstatic with a BOM\n" + data
        name = draw(
            st.sampled_from(
                [
                    f"d{i % 3}/f{i}.c",
                    f"f{i} with space.c",
                    f"c{i}:1: x.c",
                    f"{i}",
                    f"{i}: x.c",
                    f"d{i % 2}/n\xe9{i}",
                    f"-dash{i}",
                ]
            )
        )
        raw = name.encode("latin-1") if "\xe9" in name else name.encode()
        if draw(st.integers(0, 30)) == 0:
            raw = f"new\nline{i}".encode()
        out[raw] = data
    return out


PATTERNS = [
    "static",
    "x*",
    "$",
    "^",
    "(?i)static",
    "static|é",
    r"\s+",
    r"\(",
    "a?",
    "(?-u:\\xff)",
    "Line",
    "😀",
    "ab",
    "WARNING",
    "d0",
    "3",
]


def write(root: Path, tree: dict[bytes, bytes]) -> None:
    for raw, data in tree.items():
        path = os.path.join(os.fsencode(root), raw)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def rg(rg_path: str, root: Path, argv: list[str]) -> tuple[bytes, float]:
    started = time.monotonic()
    done = subprocess.run(
        [rg_path, "--no-config", *argv], cwd=root, stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    return done.stdout, time.monotonic() - started


def read_std(
    stdout: bytes, root: Path, pattern: str, rnd: random.Random
) -> tuple[list[page.Section], rgstd.Sizes, rgstd.Stats | None]:
    """The standard output (of a search for `pattern` in `root`) through grep's batches, cut at random
    sizes and read in random chunks."""
    sizes = rnd.choice([(32, 64), (200, 700), (1 << 12, 1 << 13), (1 << 16, 1 << 17)])
    account = standard.Account(1 << 40, False, rgstd.literal_of(pattern))
    batches = BlockBatches(
        lambda blob: standard.parse_batch(blob, str(root), CAP, account),
        Inline(),
        min_bytes=sizes[0],
        max_bytes=sizes[1],
    )
    at = 0
    while at < len(stdout):
        step = rnd.randint(1, 1 << 14)
        batches.feed(stdout[at : at + step])
        at += step
    parts = asyncio.run(batches.results())  # raises Unsure
    return page.ordered(parts), account.sizes, batches.stats


def read_json(stdout: bytes, root: Path) -> list[page.Section]:
    parsed = json_parse.parse_batch(stdout, str(root), CAP)
    return page.ordered([json_parse.sections(parsed.files, CAP)])


def unsure_here(tree: dict[bytes, bytes], path: str | None) -> bool:
    """Whether the tree holds something the standard output's reading may rightly be unsure of."""
    named = path is not None and os.path.isfile(path)
    return any(
        b"\n" in name  # a name with a newline
        or data.endswith(b"\r")  # a lone CR may end the file
        or data.startswith((b"\xff\xfe", b"\xfe\xff"))  # UTF-16
        or re.match(rb"[0-9]+(: |\Z)", name)  # a warning after its lines could be a line
        or (named and b"\0" in data)  # a named binary file: "binary file matches"
        for name, data in tree.items()
    )


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files(), st.sampled_from(PATTERNS), st.sampled_from([None, ".", "d0", "first file"]), st.randoms())
def test_the_standard_output_reads_as_json_does(
    rg_path: str, tree: dict[bytes, bytes], pattern: str, where: str | None, rnd: random.Random
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        write(root, tree)
        path = os.fsdecode(next(iter(tree))) if where == "first file" else where
        if path is not None and not os.path.exists(root / path):
            path = None
        tail = [f"--regexp={pattern}", *(["--", path] if path else [])]
        std, _ = rg(rg_path, root, [*grep_argv.STANDARD, *tail])
        json_out, seconds = rg(rg_path, root, ["--json", *tail])
        try:
            got, sizes, stats = read_std(std, root, pattern, rnd)
        except rgstd.Unsure:
            assert unsure_here(tree, None if path is None else str(root / path)), std[:300]
            return
        assert got == read_json(json_out, root)
        if stats is not None:  # ripgrep searched (a pattern it rejects leaves both outputs empty)
            literal = rgstd.literal_of(pattern)
            if literal is not None:  # each submatch an occurrence: the count is ripgrep's own
                assert sizes.submatches == stats.matches
            bound = rgstd.json_size(
                sizes, stats, seconds=seconds, submatch_bytes=rgstd.may_match_bytes(pattern), literal=literal
            )
            assert bound.lower <= len(json_out) <= bound.upper, (bound, len(json_out))
            # The summary, --json's last line, within the bounds a measuring run puts on it.
            summary = json_out[json_out.rstrip(b"\n").rfind(b"\n") + 1 :]
            records = len(json_out) - len(summary)
            for walked in (True, False):
                around = rgstd.summary_size(stats, records, seconds=seconds, walked=walked)
                assert around.lower <= len(summary) <= around.upper, (around, summary)
        else:
            assert json_out == b""


class _Spill:
    root = "/spill"

    def __init__(self) -> None:
        self.saved: list[str] = []

    def save_text(self, session_id: str, suggested_name: str, content: Any) -> SpillRef:
        text = content if isinstance(content, str) else "".join(content)
        self.saved.append(text)
        return SpillRef(f"/spill/{suggested_name}", len(text.encode()), "hint")


def answer(rg_path: str, root: Path, params: dict[str, Any], std: bool, **overrides: Any) -> Any:
    """The engine's grep in `root` (the real ripgrep), reading the standard output or --json."""
    config = config_mod.build({"sampleOverCapGlobResults": True, "index": "off", **overrides})
    spill = _Spill()

    async def run() -> Any:
        searcher = Searcher(
            config=config,
            launch=Launcher(rg_path, child_environment(os.environ, frozen=False), rg_limits(config)),
            spill=spill,
            deny_globs=DenyGlobs(()),
            workers=Workers.start(),
        )
        try:
            result = await grep(searcher, GrepQuery(**params), Scope(str(root)))
        except ToolError as err:
            return ("error", err.kind, err.message)
        return ("result", result.text, result.meta, spill.saved)

    reads = standard.reads_standard_output
    standard.reads_standard_output = (lambda _config: True) if std else (lambda _config: False)  # type: ignore[assignment]
    try:
        return asyncio.run(run())
    finally:
        standard.reads_standard_output = reads  # type: ignore[assignment]


@settings(max_examples=max(3, EXAMPLES // 3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files(), st.sampled_from(PATTERNS), st.sampled_from([None, "d0"]))
def test_the_engine_answers_as_with_json(
    rg_path: str, tree: dict[bytes, bytes], pattern: str, where: str | None
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        write(root, tree)
        params: dict[str, Any] = {"pattern": pattern}
        if where is not None and (root / where).is_dir():
            params["path"] = where
        json_size = len(
            rg(rg_path, root, ["--json", f"--regexp={pattern}", *(["--", where] if "path" in params else [])])[0]
        )
        # --json's own size moves from run to run with its timings; caps this far from it are decided alike.
        margin = 32 * (len(tree) + 4)
        caps: list[dict[str, Any]] = [{}, {"grepMaxLineBytes": 7, "grepMaxMatches": 3}]
        if json_size > margin:
            caps += [{"rawOutputMaxBytes": json_size - margin}, {"rawOutputMaxBytes": json_size + margin}]
        for overrides in caps:
            assert answer(rg_path, root, params, True, **overrides) == answer(rg_path, root, params, False, **overrides)


def test_a_search_reads_the_standard_output_unless_it_must_not(
    rg_path: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The fallback is not what every search does: a plain tree is read from the standard output, and
    each thing that makes the reading unsure sends that search to --json, with the same answer."""
    (tmp_path / "a.c").write_bytes(b'static int x;\nstatic\tint "y";\n' * 50)
    (tmp_path / "crlf.c").write_bytes(b"static a\r\nb\r\n")
    caplog.set_level("DEBUG", logger="dsh_search.search")
    plain = answer(rg_path, tmp_path, {"pattern": "static"}, True)
    assert plain == answer(rg_path, tmp_path, {"pattern": "static"}, False)
    assert not [r for r in caplog.records if "instead of its standard output" in r.message]
    cases = {
        "lone.c": b"x\nstatic lone\r",  # a last line ending in a lone CR
        "bin.c": b"static\n\0",  # named, with a NUL: the standard printer says "binary file matches"
        "new\nline.c": b"static\n",  # a name with a newline
    }
    for name, data in cases.items():
        case = tmp_path / "case"
        case.mkdir()
        (case / name).write_bytes(data)
        params = {"pattern": "static", "path": name} if name == "bin.c" else {"pattern": "static"}
        caplog.clear()
        assert answer(rg_path, case, params, True) == answer(rg_path, case, params, False)
        assert [r for r in caplog.records if "instead of its standard output" in r.message], name
        for child in case.iterdir():
            child.unlink()
        case.rmdir()


@pytest.mark.parametrize("name", ["0", "12", "f.c"])
def test_a_named_binary_files_message_is_never_read_as_a_line(rg_path: str, tmp_path: Path, name: str) -> None:
    """ripgrep's message for a named file holding a NUL (`<name>: binary file matches …`) reads as line 0 (or
    12) of that file when its name is digits: the reading is unsure of it, and the search asks --json, which
    prints the file's lines (found by the property test above, with a file named `0`)."""
    write(tmp_path, {name.encode(): b"static\nstatic\n" + b"x\n" * 45000 + b"\0 static after\n"})
    std, _ = rg(rg_path, tmp_path, [*grep_argv.STANDARD, "--regexp=static", "--", name])
    assert b"binary file matches" in std and b"2: static" in std  # past the first buffer: lines, then the message
    with pytest.raises(rgstd.Unsure):
        read_std(std, tmp_path, "static", random.Random(0))


def test_a_search_whose_json_size_straddles_the_cap_is_measured_not_read_again(
    rg_path: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Where --json's size lies between the standard output's bounds of it, ripgrep runs again with --json
    over the files with matches and its bytes are counted: the answer on either side of the cap is the
    --json reading's, and the search never reads --json's records (docs/performance.md)."""
    for i in range(60):  # many files: the bounds' per-file slack makes a wide band
        (tmp_path / f"d{i % 4}" / f"f{i}.c").parent.mkdir(exist_ok=True)
        (tmp_path / f"d{i % 4}" / f"f{i}.c").write_text("static int x;\n" * (i % 7 + 1) + "int y;\n" * 40)
    (tmp_path / "nothing.c").write_text("no match here\n")
    json_out, seconds = rg(rg_path, tmp_path, ["--json", "--regexp=static"])
    std, _ = rg(rg_path, tmp_path, [*grep_argv.STANDARD, "--regexp=static"])
    _, sizes, stats = read_std(std, tmp_path, "static", random.Random(0))
    assert stats is not None
    bound = rgstd.json_size(sizes, stats, seconds=seconds, submatch_bytes=False, literal=b"static")
    margin = 32 * 8  # the timings of --json's end and summary records move from run to run
    assert bound.lower + margin < len(json_out) < bound.upper - margin, (bound, len(json_out))
    caplog.set_level("DEBUG", logger="dsh_search.search")
    for cap in (len(json_out) + margin, len(json_out) - margin, bound.upper - 1, bound.lower + 1):
        caplog.clear()
        params = {"pattern": "static"}
        got = answer(rg_path, tmp_path, params, True, rawOutputMaxBytes=cap)
        assert got == answer(rg_path, tmp_path, params, False, rawOutputMaxBytes=cap), cap
        assert got[0] == ("result" if cap > len(json_out) else "error"), (cap, got[:2])
        assert not [r for r in caplog.records if "instead of its standard output" in r.message], cap


def test_a_measuring_run_that_disagrees_with_the_first_is_not_trusted(
    rg_path: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the measuring run finds other matches than the first run did (a file written between the
    two), or more names than the command line takes, --json decides, and the answer is still its own."""
    for i in range(40):
        (tmp_path / f"f{i}.c").write_text("static int x;\n" * 3 + "int y;\n" * 30)
    size = len(rg(rg_path, tmp_path, ["--json", "--regexp=static"])[0])
    params = {"pattern": "static"}
    caplog.set_level("DEBUG", logger="dsh_search.search")
    # More names than the command line takes: measured nowhere.
    monkeypatch.setattr(standard, "NAMES_BUDGET", 10)
    assert answer(rg_path, tmp_path, params, True, rawOutputMaxBytes=size + 300)[0] == "result"
    assert [r for r in caplog.records if "within a few bytes" in r.message]
    monkeypatch.setattr(standard, "NAMES_BUDGET", 1 << 20)
    # A file grows a match between the two runs: the counted statistics disagree with the first run's.
    real = standard.StandardRun.measure

    async def changed_between(self: standard.StandardRun, *a: Any, **k: Any) -> bool:
        with open(tmp_path / "f0.c", "a") as f:
            f.write("static again\n")
        return await real(self, *a, **k)

    monkeypatch.setattr(standard.StandardRun, "measure", changed_between)
    caplog.clear()
    got = answer(rg_path, tmp_path, params, True, rawOutputMaxBytes=size + 300)
    assert got[0] == "result" and "static again" in "".join(got[3]) + got[1]
    assert [r for r in caplog.records if "within a few bytes" in r.message]


def test_a_search_that_met_a_binary_file_is_not_measured(
    rg_path: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file whose search a NUL stopped after matches is searched whole when named on the command line
    (its `end` record's counters differ, even with no match past the NUL): such a search inside the band
    is decided by the whole --json run, as before."""
    for i in range(60):
        (tmp_path / f"f{i}.c").write_text("static int x;\n" * (i % 7 + 1) + "int y;\n" * 40)
    (tmp_path / "bin.c").write_bytes(b"static\n" * 3 + b"a line between\n" * 6000 + b"\0 nothing after\n")
    json_out, _ = rg(rg_path, tmp_path, ["--json", "--regexp=static"])
    named, _ = rg(rg_path, tmp_path, ["--json", "--no-ignore", "--regexp=static", "--", "bin.c"])
    assert b'"bytes_searched":90' in named and b"binary_offset" in json_out  # the whole file, named
    caplog.set_level("DEBUG", logger="dsh_search.search")
    for cap in (len(json_out) + 256, len(json_out) - 256):
        caplog.clear()
        params = {"pattern": "static"}
        got = answer(rg_path, tmp_path, params, True, rawOutputMaxBytes=cap)
        assert got == answer(rg_path, tmp_path, params, False, rawOutputMaxBytes=cap), cap
        assert [r for r in caplog.records if "instead of its standard output" in r.message], cap


@pytest.mark.parametrize("cut", [1, 3, 7, 64, 1000])
def test_json_count_counts_bytes_growth_and_the_summary_in_any_chunks(cut: int) -> None:
    timing = {"human": "0.001s", "nanos": 1, "secs": 0}
    data = {"elapsed_total": timing, "stats": {"matches": 2}}
    summary = b'{"data":{"elapsed_total":{"human":"0.001s","nanos":1,"secs":0},"stats":{"matches":2}},'
    summary += b'"type":"summary"}\n'
    body = b'{"type":"match","data":{"lines":{"text":"caf\xc3\xa9 \xff bad"}}}\n' * 5 + b'{"type":"end"}\n'
    stream = body + summary
    count = standard.JsonCount()
    for at in range(0, len(stream), cut):
        count.feed(stream[at : at + cut])
    assert count.bytes == len(stream)
    assert count.growth == utf8_growth(stream) == 5 * 2  # each lone \xff: 1 byte read, 3 written
    assert count.summary() == (data, len(summary))


def test_json_count_without_a_summary_or_past_the_longest_line_tells_nothing() -> None:
    count = standard.JsonCount()
    count.feed(b'{"type":"match"}\n{"type":"match"}\n')
    assert count.summary() is None
    long = standard.JsonCount()
    long.feed(b"x" * (standard.JsonCount.LONGEST + 1))
    long.feed(b'\n{"data":{},"type":"summary"}\n')
    assert not long.whole and long.summary() is None and long.bytes == standard.JsonCount.LONGEST + 2 + 29

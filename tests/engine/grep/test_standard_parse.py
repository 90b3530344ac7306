"""engine/grep/standard_parse.py, the reading of ripgrep's standard output, on streams written here: the grammar's
corners one by one, and generated streams cut into batches at every size, which must read as the whole
stream does (tests/engine/test_grep_std_rg.py holds the reading to ripgrep's own output and to --json).
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_search import texts
from dsh_search.engine.grep import json_parse, page, standard
from dsh_search.engine.grep import standard_parse as rgstd
from dsh_search.engine.grep.standard import BlockBatches
from tests.support.examples import examples
from tests.support.fakes import Inline

EXAMPLES = examples(300, "DSH_RGSTD_EXAMPLES")
EXACT = ("exact", "lines", "files", "submatches")  # the sizes' fields known exactly (the rest are bounds)
STATS = (
    b"\n\n{k} matches\n{n} matched lines\n{f} files contained matches\n{f} files searched\n"
    b"100 bytes printed\n1000 bytes searched\n0.000100 seconds spent searching\n0.001000 seconds total\n"
)


def stats(files: int, lines: int, matches: int | None = None) -> bytes:
    return (
        STATS.replace(b"{k}", str(lines if matches is None else matches).encode())
        .replace(b"{n}", str(lines).encode())
        .replace(b"{f}", str(files).encode())
    )


def printed(blocks: list[tuple[bytes, list[tuple[int, bytes]]]], warnings: dict[int, int] | None = None) -> bytes:
    """What ripgrep's printer writes for `blocks`, (name, [(line number, line without its newline)]),
    each block with a binary warning when `warnings` maps its index to an offset; then its statistics."""
    out = []
    for i, (name, lines) in enumerate(blocks):
        body = b"".join(b"%d: %s\n" % (n, line) for n, line in lines)
        if warnings and i in warnings:
            body += name + b': WARNING: stopped searching binary file after match (found "\\0" byte around '
            body += b"offset %d)\n" % warnings[i]
        out.append(name + b"\0" + body)
    total = sum(len(lines) for _, lines in blocks)
    return b"\n".join(out) + stats(len(blocks), total)


def read(stream: bytes, min_bytes: int = 1 << 16, max_bytes: int = 1 << 17, step: int = 1 << 20) -> tuple[Any, ...]:
    """The stream through grep's batches, each parsed as grep parses it (less grep's look at a file whose
    last line was printed with `\r\n`): (the sections, their --json size parts, the statistics)."""
    account = standard.Account(1 << 40, False, None)

    def parse(blob: bytes) -> list[page.Section]:
        batch = rgstd.parse(blob, 2000)
        account.add(batch.sizes, batch.paths)
        found = zip(batch.paths, batch.lines, batch.texts, strict=True)
        return page.in_stream_order(list(map(page.Section._make, found)))

    batches = BlockBatches(parse, Inline(), min_bytes=min_bytes, max_bytes=max_bytes)
    for at in range(0, len(stream), step):
        batches.feed(stream[at : at + step])
    parts = asyncio.run(batches.results())
    return page.ordered(parts), account.sizes, batches.stats


def test_a_block_is_a_section() -> None:
    stream = printed([(b"src/a.c", [(3, b"static int x;"), (9, b'\tstatic\t"y";')]), (b"b.c", [(1, b"static")])])
    sections, sizes, found = read(stream)
    assert sections == [
        page.Section("b.c", 1, "b.c\nLine 1: static"),
        page.Section("src/a.c", 2, 'src/a.c\nLine 3: static int x;\nLine 9: \tstatic\t"y";'),
    ]
    assert (sizes.files, sizes.lines) == (2, 3)
    assert found == rgstd.Stats(matches=3, matched_lines=3, files_with_matches=2, searches=2, bytes_searched=1000)


def test_crlf_is_a_terminator_and_a_lone_cr_inside_a_line_stays() -> None:
    stream = printed([(b"a.c", [(1, b"one\r"), (2, b"two\rx\r"), (3, b"three\r\r")])])
    sections, _, _ = read(stream)
    assert sections[0].text == "a.c\nLine 1: one\nLine 2: two\rx\nLine 3: three\r"


def test_a_line_that_is_not_utf8_is_replaced() -> None:
    stream = printed([(b"n\xe9.c", [(1, b"caf\xe9"), (2, b"ok")])])
    sections, sizes, _ = read(stream)
    assert sections[0].path == "n\ufffd.c"
    assert sections[0].text == f"n\ufffd.c\nLine 1: {texts.LINE_NOT_UTF8}\nLine 2: ok"
    assert sizes.not_utf8


def test_long_lines_are_previewed_on_a_character_boundary() -> None:
    stream = printed([(b"a.c", [(1, "é".encode() * 1001), (2, b"short")])])
    sections, _, _ = read(stream)
    assert sections[0].text == "a.c\nLine 1: " + "é" * 1000 + texts.LINE_TRUNCATED_SUFFIX + "\nLine 2: short"


def test_a_binary_warning_ends_a_block_and_is_not_a_line() -> None:
    stream = printed([(b"bin.c", [(1, b"static")]), (b"5x.c", [(2, b"x")])], warnings={0: 70022, 1: 9})
    sections, sizes, _ = read(stream)
    assert [s.text for s in sections] == ["5x.c\nLine 2: x", "bin.c\nLine 1: static"]
    assert sizes.lines == 2


def test_a_warning_alone_in_the_next_batch_ends_the_block_before() -> None:
    """A name that starts with a digit lets a long block be cut before its warning: the next batch is
    the block's header and the warning, nothing more, and reads as nothing but the end record's offset."""
    for name in (b"9z.c", b"8.c", b"9 \xe9.c", b"5 with\tTab"):
        lines = [(n, b"static %d" % n) for n in range(1, 60)]
        stream = printed([(b"a.c", [(1, b"x")]), (name, lines)], warnings={1: 123456})
        whole = read(stream)
        cut_at = stream.index(name + b": WARNING")
        start = stream.index(name + b"\0")
        assert rgstd.cut(stream, start, cut_at + 1, inside=False) == (cut_at, cut_at, True)
        for size in range(1, 120):
            cut = read(stream, min_bytes=size, max_bytes=2 * size)
            assert (cut[0], cut[2]) == (whole[0], whole[2]), (name, size)
            assert [getattr(cut[1], f) for f in EXACT] == [getattr(whole[1], f) for f in EXACT], (name, size)
        assert sorted(s.matches for s in whole[0]) == [1, 59] and whole[1].lines == 60


def test_a_continued_piece_of_only_a_warning_is_no_section() -> None:
    warning = b'9z.c: WARNING: stopped searching binary file after match (found "\\0" byte around offset 70022)\n'
    for name, offset in ((b"9z.c", b"70022"), (b"9z\xff.c", b"7"), (b"9\r.c", b"123456789")):
        text = warning.replace(b"9z.c", name).replace(b"70022", offset)
        batch = rgstd.parse(b"\0" + name + b"\0" + text, 2000)
        assert (batch.paths, batch.lines, batch.texts, batch.ends_in_cr) == ([], [], [], []), name
        sizes = batch.sizes  # the end record's offset, where `null` was counted; nothing else exact
        assert (sizes.exact, sizes.lines, sizes.files, sizes.submatches) == (len(offset) - len("null"), 0, 0, 0), name
    with pytest.raises(rgstd.Unsure):  # a block that starts here has lines before its warning
        rgstd.parse(b"9z.c\0" + warning, 2000)
    with pytest.raises(rgstd.Unsure):  # the same, read block by block (not UTF-8)
        rgstd.parse(b"9z\xff.c\0" + warning.replace(b"9z.c", b"9z\xff.c"), 2000)


def test_the_line_cap_counts_bytes_however_the_batch_is_read() -> None:
    """`é` is 2 bytes and `😀` 4: lines of fewer characters than the cap but more bytes are previewed, in
    a batch read whole (UTF-8) and in one read block by block (a CR, a byte that is not UTF-8)."""
    for char, count in (("é", 1001), ("😀", 501), ("é😀", 334)):
        long_line = (char * count).encode()
        assert len(char * count) <= 2000 < len(long_line)
        shown = "Line 2: " + preview_of(char * count)
        for other in (b"plain", b"crlf\r", b"caf\xe9"):
            stream = printed([(b"a.c", [(1, other), (2, long_line)]), (b"b.c", [(5, b"x")])])
            sections, _, _ = read(stream)
            assert sections[0].text.split("\n")[2] == shown, (char, other)


def test_a_name_starting_with_a_digit_that_is_not_ascii_is_no_line_number() -> None:
    """`²` and `٣` are digits to str.isdigit, never a line number: a warning after such a file's lines
    is still a warning."""
    for name in ("٣.c", "².c"):
        stream = printed([(name.encode(), [(1, b"x")]), (b"a.c", [(2, b"y")])], warnings={0: 5})
        sections, sizes, _ = read(stream)
        assert sorted(s.text for s in sections) == sorted([f"{name}\nLine 1: x", "a.c\nLine 2: y"])
        assert sizes.lines == 2


def preview_of(line: str) -> str:
    data = line.encode()
    return data[:2000].decode("utf-8", "ignore") + texts.LINE_TRUNCATED_SUFFIX


@pytest.mark.parametrize(
    "stream",
    [
        printed([(b"12", [(12, b"static")])], warnings={0: 3}),  # `12: WARNING…` could be line 12 of the file `12`
        printed([(b"12", [(1, b"x"), (12, b"static")])], warnings={0: 3}),
        printed([(b"a.c", [(1, b"x")]), (b"3: b", [(1, b"x")])], warnings={1: 3}),  # `3: b: WARNING…` is line 3's form
        printed([(b"3: b\xe9", [(1, b"x")])], warnings={0: 3}),  # the same, read block by block
        b'a.c: binary file matches (found "\\0" byte around offset 0)\n' + stats(1, 1),  # a named binary file
        printed([(b"new\nline.c", [(1, b"static")])]),  # a name with a newline
        printed([(b"new\n\nline.c", [(1, b"static")])]),
        printed([(b"\nlead.c", [(1, b"static")])]),
        b'{"type":"match","data":{}}\n',  # not this printer at all
        printed([(b"a.c", [(1, b"static")])])[:-30],  # cut short: no statistics
    ],
)
def test_what_the_reading_cannot_tell_is_unsure(stream: bytes) -> None:
    with pytest.raises(rgstd.Unsure):
        read(stream)


def test_statistics_come_after_one_blank_line_or_two() -> None:
    one = printed([(b"a.c", [(1, b"x")])])
    two = one.replace(b"\n\n1 matches", b"\n\n\n1 matches")
    assert rgstd.split_stats(one)[0] == rgstd.split_stats(two)[0] == b"a.c\x001: x\n"
    assert rgstd.split_stats(b"\n0 matches" + one.split(b"1 matches", 1)[1])[0] == b""


def test_a_last_line_printed_with_crlf_is_flagged() -> None:
    batch = rgstd.parse(b"a.c\x001: x\r\n2: y\r\n", 2000)
    assert batch.ends_in_cr == [(0, b"a.c")]
    assert rgstd.last_line(batch.paths[0], batch.texts[0]) == 2
    assert rgstd.parse(b"a.c\x001: x\r\n2: y\n", 2000).ends_in_cr == []


def test_the_cut_keeps_blocks_whole_or_continues_them() -> None:
    stream = b"a.c\x001: x\n2: y\n\nb.c\x003: z\n"
    assert rgstd.cut(stream, 0, len(stream), inside=False) == (14, 15, False)  # after a.c's block
    long_block = b"a.c\x00" + b"".join(b"%d: line\n" % n for n in range(1, 100))
    end, resume, continues = rgstd.cut(long_block, 0, 300, inside=False) or (0, 0, False)
    assert continues and end == resume and long_block[end - 1 : end] == b"\n" and long_block[end : end + 1].isdigit()
    assert rgstd.cut(b"\n1 matches\n2 matched", 0, 20, inside=False) is None  # never inside the statistics
    assert rgstd.header_before(long_block, 0, end, None) == b"a.c\x00"


def test_an_identifier_patterns_submatches_are_counted_outside_names() -> None:
    stream = printed([(b"static/a.c", [(1, b"static static"), (2, b"x static")])])
    batch = rgstd.parse(rgstd.split_stats(stream)[0], 2000, b"static")
    assert batch.sizes.submatches == 3
    assert rgstd.literal_of("static") == b"static" and rgstd.literal_of("st.tic") is None
    assert rgstd.literal_of("123") is None and rgstd.literal_of("a1") == b"a1"


def test_a_pattern_that_may_split_characters_is_known() -> None:
    assert rgstd.may_match_bytes("(?-u:\\xff)") and rgstd.may_match_bytes("(?i-u)x")
    assert not rgstd.may_match_bytes("(?i)x") and not rgstd.may_match_bytes("a-u")


_NAMES = st.sampled_from(
    [b"a.c", b"dir/b.c", b"c 1:2.c", b"d\xe9.c", b"9z.c", b"x" * 300, b"7 q.c", b"b", b"8\xe9", "٣.c".encode()]
)
_LINES = st.lists(
    st.one_of(
        st.binary(max_size=40).filter(lambda b: b"\n" not in b and b"\0" not in b),
        st.sampled_from([b"static", b'\tstatic "q" \\', b"x\r", "é😀".encode() * 300, "é😀".encode() * 340]),
    ),
    min_size=1,
    max_size=30,
)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    names = draw(st.lists(_NAMES, min_size=1, max_size=6, unique=True))
    blocks = []
    for name in names:
        lines = draw(_LINES)
        number = draw(st.integers(0, 100_000))
        numbered = []
        for line in lines:  # ripgrep prints a file's lines in order
            number += draw(st.integers(1, 3))
            numbered.append((number, line))
        blocks.append((name, numbered))
    warnings = {i: 1000 + i for i in range(len(blocks)) if draw(st.integers(0, 5)) == 0}
    return printed(blocks, warnings)


@settings(max_examples=EXAMPLES, deadline=None)
@given(streams(), st.integers(1, 400), st.integers(1, 4096))
def test_any_batch_size_reads_as_the_whole(stream: bytes, size: int, step: int) -> None:
    """Batches of any size, fed in reads of any size: the same sections, sizes and statistics as the
    whole stream read at once (blocks continued across batches included)."""
    whole = read(stream)
    cut = read(stream, min_bytes=size, max_bytes=2 * size, step=step)
    assert cut[0] == whole[0] and cut[2] == whole[2]
    # What is exact is the same however the stream was cut; the bounds (text_upper, …) may be computed
    # by one reading or the other (a batch with bytes that are not UTF-8 is read line by line).
    assert [getattr(cut[1], f) for f in EXACT] == [getattr(whole[1], f) for f in EXACT]


def _value(data: bytes) -> dict[str, str]:
    """A path or line as --json writes it."""
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"bytes": base64.b64encode(data).decode()}


def _record(obj: object) -> bytes:
    # ripgrep's JSON writer: no spaces, UTF-8 as is, `"` `\` and the controls escaped as json.dumps does
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def as_json(blocks: list[tuple[bytes, list[tuple[int, bytes]]]], warnings: dict[int, int]) -> tuple[bytes, int]:
    """What `rg --json` writes for the blocks `printed` writes (one submatch per line: all of it), and
    how much of it the printed output tells exactly (rgstd.Sizes.exact): all but the summary, the
    matches' offsets and submatches, and the end records' timings and counters."""
    timing = {"secs": 0, "nanos": 123456, "human": "0.000123s"}
    out = []
    unknown = 0
    for i, (name, lines) in enumerate(blocks):
        path = _value(name)
        out.append(_record({"type": "begin", "data": {"path": path}}))
        for number, line in lines:
            sub = {"match": _value(line), "start": 0, "end": len(line)}
            data = {"path": path, "lines": _value(line + b"\n"), "line_number": number, "absolute_offset": 77}
            out.append(_record({"type": "match", "data": {**data, "submatches": [sub]}}))
            unknown += len("77") + len(_record(sub)) - 1
        stats = {"elapsed": timing, "searches": 1, "searches_with_match": 1, "bytes_searched": 1000 // len(blocks)}
        stats |= {"bytes_printed": 4321, "matched_lines": len(lines), "matches": len(lines)}
        end = {"path": path, "binary_offset": warnings.get(i), "stats": stats}
        out.append(_record({"type": "end", "data": end}))
        unknown += len("0123456") + len("0.000123s") + len("4321") + len(str(1000 // len(blocks)))
        unknown += 2 * len(str(len(lines)))
    total = sum(len(lines) for _, lines in blocks)
    counts = {"bytes_printed": 54321, "bytes_searched": 1000, "elapsed": timing, "matched_lines": total}
    counts |= {"matches": total, "searches": len(blocks), "searches_with_match": len(blocks)}
    summary = {"data": {"elapsed_total": {"human": "0.000234s", "nanos": 234567, "secs": 0}, "stats": counts}}
    exact = sum(map(len, out)) - unknown
    out.append(_record({**summary, "type": "summary"}))
    return b"".join(out), exact


@st.composite
def searches(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, int], bool]:
    """One search's output, printed (`printed`) and as --json (`as_json`), and whether the reading may
    be unsure of it (a warning that could be a line: its file's name starts as a line does)."""
    names = draw(st.lists(st.one_of(_NAMES, st.just(b"3: q.c")), min_size=1, max_size=6, unique=True))
    blocks = []
    for name in names:
        number = draw(st.integers(0, 100_000))
        numbered = []
        for line in draw(_LINES):
            number += draw(st.integers(1, 3))
            numbered.append((number, line))
        blocks.append((name, numbered))
    warnings = {i: draw(st.integers(0, 10**9)) for i in range(len(blocks)) if draw(st.integers(0, 5)) == 0}
    unsure = any(names[i] == b"3: q.c" for i in warnings)
    return printed(blocks, warnings), as_json(blocks, warnings), unsure


@settings(max_examples=EXAMPLES, deadline=None)
@given(searches(), st.integers(1, 400), st.integers(1, 4096))
def test_a_search_reads_as_its_json_does(search: tuple[bytes, tuple[bytes, int], bool], size: int, step: int) -> None:
    """The printed output, cut anywhere, gives the sections grep's --json reading gives for the same
    matches as --json, the exact part of --json's size, and bounds of it that hold it."""
    std, (json_out, exact), may_be_unsure = search
    try:
        sections, sizes, found = read(std, min_bytes=size, max_bytes=2 * size, step=step)
    except rgstd.Unsure:
        assert may_be_unsure, std[:300]
        return
    parsed = json_parse.parse_batch(json_out, "/w", 2000)
    assert sections == page.ordered([json_parse.sections(parsed.files, 2000)])
    assert sizes.exact == exact
    bound = rgstd.json_size(sizes, found, seconds=0.001, submatch_bytes=False)
    assert bound.lower <= len(json_out) <= bound.upper, (bound, len(json_out))

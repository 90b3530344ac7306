"""grep's parser against the previous release's (tests/support/grep_reference.py), over generated
`rg --json` streams.

The streams are laid out as ripgrep writes them — per file a `begin`, its matches in line order, an
`end`; a `summary` last — with the text ripgrep can put in them: any Unicode (escaped as ripgrep's JSON
writer or as `json.dumps` with ASCII escapes, surrogate pairs included), CRLF and missing terminators,
lines far over the preview cap, names and lines that are not UTF-8 (base64 `bytes` fields). Some are
then damaged the ways the strict parser knows: a line that is not JSON or not UTF-8, a blank line, a
match without a field, a float or boolean line number, two records on one line, an unknown record type.
Each stream is cut into batches at random record boundaries, so files are split across batches.

Whatever the stream, each batch must parse to the files, sections and decoded growth (or the error) of
the strict parser, which applies upstream's checks record by record; to the previous release's result
wherever that agreed with the strict parser; and the whole to the same page and spill artifact.
"""

from __future__ import annotations

import base64
import json
from itertools import pairwise
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_search import texts
from dsh_search.engine.failures import ToolError
from dsh_search.engine.grep import json_parse
from dsh_search.engine.grep import page as grep_page
from dsh_search.engine.spill import SpillRef
from tests.support import grep_reference
from tests.support.examples import examples

EXAMPLES = examples(80, "DSH_GREP_PARSE_EXAMPLES")  # ~10 s (--json is the fallback now); run 5000 after a change
CWD = "/w"
CAP = 2000  # grepMaxLineBytes' default

_CHARS = st.one_of(
    st.characters(codec="utf-8", exclude_characters="\n"),
    st.sampled_from(list('\r\t\x00\x1b"\\/\u2028\u2029\ufeff\ufffd\U0001f600é')),
)
_LINE = st.one_of(
    st.text(_CHARS, max_size=40),
    st.text(st.sampled_from("ab\t é"), min_size=480, max_size=700),  # x4 is over the cap: previewed
    st.text(st.sampled_from("xyz "), min_size=2001, max_size=2600),  # over the cap in bytes
)
_ENDING = st.sampled_from(["\n", "\n", "\n", "\r\n", "", "\r"])
_NAME = st.text(st.characters(codec="utf-8", exclude_characters="\x00/\n"), min_size=1, max_size=12)


def _text_or_bytes(text: str, not_utf8: bool) -> dict[str, str]:
    if not_utf8:
        return {"bytes": base64.b64encode(text.encode() + b"\xff").decode()}
    return {"text": text}


@st.composite
def streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """ripgrep's records for a few files with matches."""
    records: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 6))):
        parts = draw(st.lists(_NAME, min_size=1, max_size=3))
        name = draw(st.sampled_from(["", "./", "/abs/", "/w/"])) + "/".join(parts)
        path = _text_or_bytes(name, draw(st.integers(0, 15)) == 0)
        records.append({"type": "begin", "data": {"path": path}})
        number = 0
        for _ in range(draw(st.integers(1, 12))):
            number += draw(st.integers(1, 70_000 if draw(st.integers(0, 20)) == 0 else 40))
            text = draw(_LINE) + draw(_ENDING)
            lines = _text_or_bytes(text, draw(st.integers(0, 25)) == 0)
            data = {
                "path": path,
                "lines": lines,
                "line_number": number,
                "absolute_offset": number * 40,
                "submatches": [{"match": {"text": text[:3]}, "start": 0, "end": min(3, len(text))}],
            }
            records.append({"type": "match", "data": data})
            if draw(st.integers(0, 30)) == 0:
                records.append({"type": "context", "data": {**data, "submatches": []}})
        records.append({"type": "end", "data": {"path": path, "binary_offset": None, "stats": {"matches": 1}}})
    records.append({"data": {"elapsed_total": {"human": "0.1s"}, "stats": {"matches": 1}}, "type": "summary"})
    return records


_DAMAGE = [
    lambda line: line[: len(line) // 2],  # cut short: not JSON
    lambda line: line + b"\xff",  # not UTF-8 after the record
    lambda line: line.replace(b'"line_number":', b'"line_number":1.0,"x":', 1),  # a float (then a dup key)
    lambda line: line.replace(b'"line_number":', b'"line_number":true,"x":', 1),
    lambda line: line.replace(b'"lines":', b'"lynes":', 1),  # a match without its line
    lambda line: line + b" " + line,  # two records on one line
    lambda line: b"",  # a blank line
    lambda line: b"   ",  # a line of spaces
    lambda line: line.replace(b'"type":"', b'"type":"x', 1),  # an unknown record type
    lambda line: b"[1,2]",  # not an object
    lambda line: line.replace(b'{"text":"', b'{"text":"\xc3\x28', 1),  # invalid UTF-8 in a string
]


@st.composite
def encoded(draw: st.DrawFn) -> tuple[list[bytes], list[int]]:
    """A stream's lines (some maybe damaged) and where it is cut into batches."""
    records = draw(streams())
    ascii_only = draw(st.booleans())  # json.dumps escapes non-ASCII, astral characters as surrogate pairs
    lines = [json.dumps(r, separators=(",", ":")).encode() if ascii_only else orjson.dumps(r) for r in records]
    for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 3)) == 0 else 0):
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = draw(st.sampled_from(_DAMAGE))(lines[at])
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(lines) - 1)), max_size=4))))
    return lines, [0, *cuts, len(lines)]


def _parse(parser: Any, batch: bytes) -> Any:
    try:
        return parser(batch, CWD, CAP)
    except ToolError as exc:
        return ("error", exc.kind, str(exc))


def _match(path: str, number: int) -> bytes:
    data = {
        "path": {"text": path},
        "lines": {"text": "x\n"},
        "line_number": number,
        "absolute_offset": 0,
        "submatches": [],
    }
    return json.dumps({"type": "match", "data": data}, separators=(",", ":")).encode()


def test_two_spellings_of_one_displayed_path_are_one_file_in_stream_order() -> None:
    """`x` and `<cwd>/x` display alike: the strict parser makes them one file, lines in stream order
    (found by the property test below)."""
    batch = b"\n".join([_match("x", 5), _match(f"{CWD}/x", 2), _match("y", 1)])
    assert json_parse.parse_batch(batch, CWD, CAP) == grep_reference.parse_batch_strictly(batch, CWD, CAP)
    assert [(f.path, f.numbers) for f in json_parse.parse_batch(batch, CWD, CAP).files] == [("x", [5, 2]), ("y", [1])]


@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(encoded())
def test_the_parser_agrees_with_the_previous_one(stream: tuple[list[bytes], list[int]]) -> None:
    lines, bounds = stream
    batches = [b"\n".join(lines[a:b]) for a, b in pairwise(bounds)]
    new = [_parse(json_parse.parse_batch, b) for b in batches]
    old = [_parse(grep_reference.parse_batch, b) for b in batches]
    strict = [_parse(grep_reference.parse_batch_strictly, b) for b in batches]
    assert new == strict
    # The previous fast path never looked past a match's line number (a regex cut the rest), so it let
    # through a line damaged there, which upstream refuses: where it did, the strict parser is right.
    assert [n for n, o, s in zip(new, old, strict, strict=True) if o == s] == [
        o for o, s in zip(old, strict, strict=True) if o == s
    ]
    if any(isinstance(p, tuple) for p in new):
        return
    files = grep_page.ordered([json_parse.sections(p.files, CAP) for p in new])
    reference = grep_page.ordered([json_parse.sections(p.files, CAP) for p in old])
    total = sum(f.matches for f in files)
    assert "".join(grep_page.spill_pieces(texts.grep_found(total), files)) == "".join(
        grep_page.spill_pieces(texts.grep_found(total), reference)
    )
    spill = SpillRef("/spill/x", 1, "hint")
    for limit in (1, 3, 250):
        page = grep_page.render(files, max_matches=limit, spill=spill)
        assert page == grep_page.render(reference, max_matches=limit, spill=spill)


@pytest.mark.parametrize("trailing", [b"", b"\n", b"\n\n"])
def test_a_batch_may_end_with_newlines(trailing: bytes) -> None:
    from tests.support.fakes import match_record

    batch = b"\n".join([match_record("a.c", 1, "x\n"), match_record("a.c", 2, "y\n")]) + trailing
    assert json_parse.parse_batch(batch, CWD, CAP) == grep_reference.parse_batch(batch, CWD, CAP)
    assert json_parse.parse_batch(batch, CWD, CAP).files[0].section == "a.c\nLine 1: x\nLine 2: y"


def test_line_numbers_past_the_prefix_table_are_formatted_too() -> None:
    from tests.support.fakes import match_record

    numbers = [1, 65_535, 65_536, 10**12]
    batch = b"\n".join(match_record("a.c", n, f"l{n}\n") for n in numbers)
    assert json_parse.parse_batch(batch, CWD, CAP).files[0].section == "a.c\n" + "\n".join(
        f"Line {n}: l{n}" for n in numbers
    )

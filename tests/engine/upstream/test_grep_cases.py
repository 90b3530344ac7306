"""grep's results: parsing ripgrep's JSON, rendering, validation, the cap and the spill (docs/behaviour.md,
"Grep")."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from dsh_search.engine.failures import INVALID_ARGS, SEARCH_FAILED, ToolError
from dsh_search.engine.grep import argv as grep_argv
from dsh_search.engine.request import GrepQuery, check_grep
from tests.support.fakes import NO_DENY, FakeSpill, make_app, match_record, parsed, render_matches, run_grep
from tests.support.upstream import case


@case("T77")
def test_grep_parses_json_records_and_groups_matches_by_file() -> None:
    stdout = b"\n".join(
        [
            b'{"type":"begin","data":{"path":{"text":"a.ts"}}}',
            match_record("a.ts", 3, "const x = 1\n"),
            match_record("a.ts", 9, "const y = 2\n"),
            b'{"type":"end","data":{"path":{"text":"a.ts"}}}',
            match_record("b.ts", 1, "const z = 3"),
            b'{"type":"summary","data":{}}',
        ]
    )
    matches = parsed(stdout, "/sessions/s1")
    assert matches == [("a.ts", 3, "const x = 1"), ("a.ts", 9, "const y = 2"), ("b.ts", 1, "const z = 3")]
    page = render_matches(matches)
    assert page.text == "Found 3 matches\n\na.ts\nLine 3: const x = 1\nLine 9: const y = 2\n\nb.ts\nLine 1: const z = 3"


@case("T78")
def test_grep_says_one_match_in_the_singular() -> None:
    page = render_matches([("a.ts", 1, "hit")])
    assert page.text == "Found 1 match\n\na.ts\nLine 1: hit"


@case("T79")
def test_grep_shows_an_absolute_match_path_inside_cwd_relative() -> None:
    matches = parsed(match_record("/sessions/s1/deep/a.ts", 2, "hit\n"), "/sessions/s1")
    page = render_matches(matches)
    assert "deep/a.ts\nLine 2: hit" in page.text


@case("T80")
def test_grep_cuts_a_long_line_on_a_utf8_boundary() -> None:
    page = render_matches([("a.ts", 1, "aéaéaéaé")], max_line_bytes=7)
    assert "Line 1: aéaéa (line truncated)" in page.text


@case("T81")
def test_grep_marks_a_line_that_is_not_utf8() -> None:
    record = orjson.dumps(
        {"type": "match", "data": {"path": {"text": "a.ts"}, "line_number": 4, "lines": {"bytes": "AAECww=="}}}
    )
    page = render_matches(parsed(record, "/w"))
    assert "Line 4: (line is not valid UTF-8)" in page.text


@case("T82")
def test_grep_strips_crlf_but_keeps_a_bare_cr() -> None:
    assert parsed(match_record("a", 1, "windows line\r\n"), "/w")[0][2] == "windows line"
    assert parsed(match_record("a", 1, "bare cr\r"), "/w")[0][2] == "bare cr\r"


@case("T83")
def test_grep_over_the_cap_shows_the_head_and_spills_the_full_result() -> None:
    spill = FakeSpill()
    app = make_app(spill, grepMaxMatches=2)
    result = run_grep(app, [("a.ts", 1, "one"), ("a.ts", 2, "two"), ("b.ts", 3, "three")], sessionId="s")
    assert result["text"] == (
        "Found 2 of 3 matches\n\na.ts\nLine 1: one\nLine 2: two\n\n(Full grep result stored at: "
        "/spill/grep-results.txt. Use the fake retrieval hint.)"
    )
    assert spill.saves == [
        ("s", "grep-results.txt", "Found 3 matches\n\na.ts\nLine 1: one\nLine 2: two\n\nb.ts\nLine 3: three")
    ]


@case("T86")
def test_grep_result_that_cannot_be_saved_is_not_an_error() -> None:
    result = run_grep(make_app(FakeSpill(fail=True), grepMaxMatches=1), [("a.ts", 1, "one"), ("a.ts", 2, "two")])
    assert result["text"] == (
        "Found 1 of 2 matches\n\na.ts\nLine 1: one\n\n(The complete result could not be saved; narrow pattern, "
        "path, or include to see more.)"
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"pattern": ""}, "pattern must be a non-empty string"),
        ({"pattern": "x", "path": "  "}, "path must be a non-empty string when given"),
        ({"pattern": "x", "include": "  "}, "include must be a non-empty glob when given"),
        (
            {"pattern": "x", "include": "!*.ts"},
            'include must be a positive glob filter; negated patterns ("!…") are not supported',
        ),
        (
            {"pattern": "x", "include": "*.ts,*.js"},
            "include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
        ),
        (
            {"pattern": "x", "include": "a},b"},
            "include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
        ),
        (
            {"pattern": "x", "include": "[,]"},
            "include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
        ),
    ],
    ids=[
        "T87-blank-pattern",
        "T87-blank-path",
        "T87-blank-include",
        "T87-negated-include",
        "T87-comma-list",
        "T87-comma-after-brace",
        "T87-comma-in-class",
    ],
)
def test_grep_rejects_blank_negated_or_comma_separated_arguments(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolError) as err:
        check_grep(GrepQuery(**params), 250)
    assert err.value.kind == INVALID_ARGS and err.value.message == message


@case("T88")
def test_grep_accepts_a_blank_pattern_and_includes_as_written() -> None:
    for pattern, include in (("  ", "*.{ts,tsx}"), ("x", "{a,b"), ("x", " !x")):
        query = check_grep(GrepQuery(pattern, include=include), 250)  # accepted, and searched as written
        argv = grep_argv.search(query, grep_argv.JSON, NO_DENY)
        assert argv[:3] == ["--json", f"--regexp={pattern}", f"--glob={include}"]


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        (b"not json at all", "a line is not JSON"),
        (b"42", "a record is not an object"),
        (b'{"type":"match"}', "a match record has no data"),
        (
            b'{"type":"match","data":{"path":{},"line_number":1,"lines":{"text":"x"}}}',
            "a match record has no path text",
        ),
        (
            b'{"type":"match","data":{"path":"a.ts","line_number":1,"lines":{"text":"x"}}}',
            "a match record has no path text",
        ),
        (b'{"type":"match","data":{"path":{"text":"a"},"lines":{"text":"x"}}}', "a match record has no line number"),
        (b'{"type":"match","data":{"path":{"text":"a"},"line_number":1}}', "a match record has no line content"),
        (
            b'{"type":"match","data":{"path":{"text":"a"},"line_number":1,"lines":{}}}',
            "a match record has neither line text nor bytes",
        ),
    ],
    ids=["T89", "T90", "T91", "T92", "T93", "T94", "T95", "T96"],
)
def test_malformed_ripgrep_json_fails_the_search(line: bytes, detail: str) -> None:
    with pytest.raises(ToolError) as err:
        parsed(line, "/w")
    assert err.value.kind == SEARCH_FAILED
    assert err.value.message == f"grep received malformed ripgrep --json output ({detail})"


def test_grep_skips_records_that_are_arrays() -> None:
    assert parsed(b"[1,2]\n" + match_record("a", 1, "x"), "/w") == [("a", 1, "x")]


@case("fix")
def test_grep_keeps_a_match_in_a_file_whose_name_is_not_utf8() -> None:
    raw_name = b"caf\xe9.txt"
    record = orjson.dumps(
        {
            "type": "match",
            "data": {
                "path": {"bytes": base64.b64encode(raw_name).decode()},
                "line_number": 1,
                "lines": {"text": "hit\n"},
            },
        }
    )
    assert parsed(record, "/w") == [("caf\ufffd.txt", 1, "hit")]

"""How ripgrep's exit status, stderr, signals and output size become results or errors (docs/behaviour.md,
"Failures")."""

from __future__ import annotations

import json

import pytest

from dsh_search import texts
from dsh_search.engine.failures import (
    INVALID_ARGS,
    KIND_NAMES,
    SEARCH_ABORTED,
    SEARCH_FAILED,
    SEARCH_INVALID_PATTERN,
    SEARCH_RAW_OUTPUT_OVERFLOW,
    ToolError,
)
from dsh_search.engine.run import classify
from dsh_search.methods.errors import KIND_CODES, KINDS, error_code, error_data
from tests.support.fakes import make_app, outcome, run_glob, run_grep
from tests.support.upstream import case


@case("T40")
def test_exit_1_is_an_empty_result_not_an_error() -> None:
    assert classify("glob", outcome(1), 100, lambda _: False).no_matches
    assert run_glob(make_app(), [])["text"] == "No files found"
    assert run_grep(make_app(), [])["text"] == "No matches found"


@case("T41")
def test_a_regex_parse_error_is_an_invalid_pattern() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(2, b"rg: regex parse error:\n    (\nerror: unclosed group"), 100, lambda _: False)
    assert err.value.kind == SEARCH_INVALID_PATTERN and "regex parse error" in err.value.text
    assert err.value.message == "grep pattern rejected by ripgrep: rg: regex parse error:\n    (\nerror: unclosed group"


@case("T42")
def test_a_glob_parse_error_is_an_invalid_pattern() -> None:
    with pytest.raises(ToolError) as err:
        classify("glob", outcome(2, b"rg: error parsing glob '[': unclosed character class"), 100, lambda _: False)
    assert err.value.kind == SEARCH_INVALID_PATTERN


@case("T43")
def test_an_io_error_is_search_failed() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(2, b"rg: missing.dir: IO error: no such file or directory"), 100, lambda _: False)
    assert err.value.kind == SEARCH_FAILED and "IO error" in err.value.text
    assert err.value.message == "grep search failed (exit 2): rg: missing.dir: IO error: no such file or directory"


@case("T44")
def test_another_exit_status_with_no_stderr_is_search_failed() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(3), 100, lambda _: False)
    assert err.value.kind == SEARCH_FAILED and err.value.message == "grep search failed (exit 3)"


@case("T45")
def test_stderr_cut_at_its_cap_is_marked_truncated() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(2, b"tail of diagnostics", lossy=True), 100, lambda _: False)
    assert "tail of diagnostics [stderr truncated]" in err.value.text


@case("T46", "T47")
def test_a_killed_search_names_the_signal_or_says_unknown() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(None, sig=9), 100, lambda _: False)
    assert err.value.kind == SEARCH_FAILED and err.value.message == "grep search command was killed by signal SIGKILL"
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(None, sig=None), 100, lambda _: False)
    assert "killed by signal (unknown)" in err.value.text


@pytest.mark.parametrize("code", [0, 1, None], ids=["T48-T49-T50-exit-0", "T48-T49-T50-exit-1", "T48-T49-T50-killed"])
def test_output_over_the_raw_cap_is_an_overflow_whatever_the_exit(code: int | None) -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(code, sig=15 if code is None else None, overflow=True), 16, lambda _: False)
    assert err.value.kind == SEARCH_RAW_OUTPUT_OVERFLOW
    assert err.value.message == (
        "grep produced more raw output than the subprocess seam retained within the 16-byte cap; "
        "narrow pattern, path, or include and retry"
    )


@case("fix")
def test_a_newline_in_the_pattern_is_an_invalid_pattern() -> None:
    stderr = b'rg: the literal "\\n" is not allowed in a regex\n\nConsider enabling multiline mode'
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(2, stderr), 100, lambda _: False)
    assert err.value.kind == SEARCH_INVALID_PATTERN


@case("fix")
def test_exit_2_with_results_keeps_them_and_counts_the_unreadable() -> None:
    stderr = b"rg: a/no.txt: Permission denied (os error 13)\nrg: b/x: Permission denied (os error 13)\n"
    result = classify("grep", outcome(2, stderr, stdout=b"{...}"), 100, lambda _: True)
    assert result.unreadable == 2 and not result.no_matches


def test_every_tool_error_maps_to_its_code() -> None:
    assert [kind.name for kind in KINDS] == list(KIND_NAMES)  # every kind the engine has, once, in order
    assert KIND_CODES == {
        INVALID_ARGS: -32602,
        SEARCH_INVALID_PATTERN: 1001,
        SEARCH_FAILED: 1002,
        SEARCH_RAW_OUTPUT_OVERFLOW: 1003,
        SEARCH_ABORTED: 1004,
    }
    err = ToolError(SEARCH_ABORTED, texts.timed_out("glob", 30000))
    assert error_data(err) == {"code": "SEARCH_ABORTED", "text": "Error: glob timed out after 30000ms"}
    assert error_code(err) == 1004
    assert json.dumps(error_data(err))

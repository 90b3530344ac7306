"""Word for word at the edges, end to end: the frozen daemon and its real ripgrep where upstream's
JavaScript and a naive port part ways. Each test is the reproduction of a divergence that random
differential testing found, asserting upstream's exact text (or, for the fixes the daemon makes on
purpose, its documented text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.support import MakeDaemon, error_of

# --- trimming the stderr excerpt as JavaScript trims -------------------------------------------------------


@pytest.mark.parametrize(
    ("lead", "cap", "shown"),
    [
        ("\x1f\x1f\x1f\x1f", 37, "\x1f\x1f\x1f\x1f"),  # not whitespace to JavaScript: kept
        ("\u0085", 35, "\u0085"),  # NEL: kept
        ("\ufeff", 36, ""),  # BOM: trimmed
    ],
)
def test_stderr_excerpt_trimmed_as_javascript(
    start: MakeDaemon, tmp_path: Path, lead: str, cap: int, shown: str
) -> None:
    # rg's stderr is "rg: regex parse error:\n    (?:(<lead>abc)\n    ^\nerror: unclosed group\n"; the cap
    # keeps a tail that starts with <lead>.
    d = start("--stderr-max-bytes", str(cap))
    code, data_code, text = error_of(d.call("grep", {"pattern": f"({lead}abc", "cwd": str(tmp_path)}))
    assert (code, data_code) == (1002, "SEARCH_FAILED")
    assert text == f"Error: grep search failed (exit 2): {shown}abc)\n    ^\nerror: unclosed group [stderr truncated]"


# --- an empty excerpt is no excerpt ----------------------------------------------------------------------


def test_empty_stderr_tail_has_no_marker(start: MakeDaemon, tmp_path: Path) -> None:
    # With a 1-byte stderr cap only rg's final newline is kept: trimmed, nothing is left, and upstream
    # then shows neither ": " nor " [stderr truncated]".
    d = start("--stderr-max-bytes", "1")
    assert error_of(d.call("grep", {"pattern": "(", "cwd": str(tmp_path)})) == (
        1002,
        "SEARCH_FAILED",
        "Error: grep search failed (exit 2)",
    )
    assert error_of(d.call("glob", {"pattern": "*", "path": "missing", "cwd": str(tmp_path)})) == (
        1002,
        "SEARCH_FAILED",
        "Error: glob search failed (exit 2)",
    )

"""Word for word at the edges, end to end: the frozen daemon and its real ripgrep where upstream's
JavaScript and a naive port part ways. Each test is the reproduction of a divergence that random
differential testing found, asserting upstream's exact text (or, for the fixes the daemon makes on
purpose, its documented text)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.e2e.support import MakeDaemon, error_of
from tests.trees import many_files

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


# --- sessionId "" --------------------------------------------------------------------------------------------


def test_empty_session_id_has_its_own_spill_directory(start: MakeDaemon, tmp_path: Path, spill_root: Path) -> None:
    # Upstream's layout: <root>/session-<first 12 hex of sha256(sessionId)>/…, and "" is hashed like any id.
    root = tmp_path / "many"
    many_files(root, {"a": 3})
    d = start("--glob-max-results", "1", "--grep-max-matches", "1")
    empty = spill_root / f"session-{hashlib.sha256(b'').hexdigest()[:12]}"
    default = spill_root / f"session-{hashlib.sha256(b'default').hexdigest()[:12]}"
    assert empty.name == "session-e3b0c44298fc"
    for method, pattern in (("glob", "*"), ("grep", "hit")):
        spill = d.result(method, {"pattern": pattern, "cwd": str(root), "sessionId": ""})["spill"]
        assert Path(spill["locator"]).parent == empty
        call = {"name": method, "arguments": {"pattern": pattern}, "_meta": {"cwd": str(root), "sessionId": ""}}
        assert Path(d.result("tools/call", call)["structuredContent"]["spill"]["locator"]).parent == empty
        spill = d.result(method, {"pattern": pattern, "cwd": str(root)})["spill"]  # absent: "default"
        assert Path(spill["locator"]).parent == default

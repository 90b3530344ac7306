"""Word for word at the edges, end to end: the frozen daemon and its real ripgrep where upstream's
JavaScript and a naive port part ways. Each test is the reproduction of a divergence that random
differential testing found, asserting upstream's exact text (or, for the fixes the daemon makes on
purpose, its documented text)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tests.support.daemon import MakeDaemon, error_of, text_of
from tests.support.trees import many_files, write
from tests.support.unprivileged import unprivileged_popen, unprivileged_tree

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
        footer = d.result("tools/call", call)["content"][0]["text"]
        assert re.search(rf"stored at: {re.escape(str(empty))}/[0-9a-f]{{12}}-{method}-results\.txt\. ", footer)
        spill = d.result(method, {"pattern": pattern, "cwd": str(root)})["spill"]  # absent: "default"
        assert Path(spill["locator"]).parent == default


# --- cwd: rg runs where the kernel finds the named directory -------------------------------------------------


def _link_tree(root: Path) -> Path:
    """w/a/o.txt ("needle a"), w/x/p.txt ("needle x"), the directory w/a/b, the symlink w/x/link -> ../a/b."""
    w = root / "w"
    (w / "a" / "b").mkdir(parents=True)
    (w / "x").mkdir()
    write(w, "a/o.txt", "needle a\n", 10)
    write(w, "x/p.txt", "needle x\n", 20)
    (w / "x" / "link").symlink_to("../a/b")
    return w


def test_cwd_dotdot_after_a_symlink(start: MakeDaemon, tmp_path: Path) -> None:
    # `cd w/x/link/..` lands in w/a (the kernel follows the link, then goes up); upstream's rg runs there.
    w = _link_tree(tmp_path)
    d = start("--workdir", str(tmp_path))
    cwd = "w/x/link/.."
    assert text_of(d.call("grep", {"pattern": "needle", "cwd": cwd})) == "Found 1 match\n\no.txt\nLine 1: needle a"
    assert text_of(d.call("glob", {"pattern": "*", "cwd": cwd})) == "o.txt"
    # Display paths are relative to the directory rg ran in: relative output as rg printed it, absolute
    # output inside that directory made relative, outside it kept absolute.
    assert text_of(d.call("grep", {"pattern": "needle", "path": "../x", "cwd": cwd})) == (
        "Found 1 match\n\n../x/p.txt\nLine 1: needle x"
    )
    assert text_of(d.call("glob", {"pattern": "*", "path": str(w / "a"), "cwd": cwd})) == "o.txt"
    assert text_of(d.call("glob", {"pattern": "*", "path": str(w / "x"), "cwd": cwd})) == f"{w}/x/p.txt"
    # An absolute cwd, and the daemon's own --workdir, resolve the same way.
    assert text_of(d.call("glob", {"pattern": "*", "cwd": f"{w}/x/link/.."})) == "o.txt"
    d2 = start("--workdir", f"{w}/x/link/..")
    assert text_of(d2.call("glob", {"pattern": "*"})) == "o.txt"


def test_cwd_confinement_agrees_with_the_directory_searched(start: MakeDaemon, tmp_path: Path) -> None:
    w = _link_tree(tmp_path)
    allowed_a = start("--workdir", str(tmp_path), "--allowed-root", str(w / "a"))
    assert text_of(allowed_a.call("glob", {"pattern": "*", "cwd": "w/x/link/.."})) == "o.txt"
    allowed_x = start("--workdir", str(tmp_path), "--allowed-root", str(w / "x"))
    assert error_of(allowed_x.call("grep", {"pattern": "needle", "cwd": "w/x/link/.."})) == (
        -32602,
        "INVALID_ARGS",
        "Error: path is outside the allowed roots",
    )


def test_cwd_the_kernel_cannot_enter_could_not_start(start: MakeDaemon) -> None:
    # Mode 000 directories stop an unprivileged process only; as root the daemon runs as nobody here.
    with unprivileged_tree() as root:
        w = _link_tree(root)
        (w / "a" / "b").chmod(0)  # `..` out of b needs search permission on b
        d = start("--workdir", str(root), "--spill-dir", str(root / "spill"), **unprivileged_popen())
        for cwd in ("w/x/link/..", "w/a/b", "w/x/link"):
            for method in ("glob", "grep"):
                assert error_of(d.call(method, {"pattern": "needle", "cwd": cwd})) == (
                    1002,
                    "SEARCH_FAILED",
                    f"Error: {method} could not start its search command (ripgrep launch failed)",
                ), cwd
        assert (
            text_of(d.call("grep", {"pattern": "needle", "cwd": "w/x"})) == "Found 1 match\n\np.txt\nLine 1: needle x"
        )


# --- the raw-output cap on the decoded size -------------------------------------------------------------------


def test_glob_raw_cap_on_the_decoded_size(start: MakeDaemon, tmp_path: Path) -> None:
    # rg prints the 8-byte name and its separator (9 bytes); decoded, each 0xff is a 3-byte U+FFFD: 17.
    root = tmp_path / "bytes"
    write(root, b"\xff\xff\xff\xff.txt", "x")
    over = start("--raw-output-max-bytes", "10")
    assert error_of(over.call("glob", {"pattern": "*", "cwd": str(root)})) == (
        1003,
        "SEARCH_RAW_OUTPUT_OVERFLOW",
        "Error: glob produced 17 bytes of raw output, over the 10-byte cap; narrow pattern, path, or include and retry",
    )
    fits = start("--raw-output-max-bytes", "17")
    assert text_of(fits.call("glob", {"pattern": "*", "cwd": str(root)})) == "\ufffd\ufffd\ufffd\ufffd.txt"
    raw_over = start("--raw-output-max-bytes", "8")
    assert error_of(raw_over.call("glob", {"pattern": "*", "cwd": str(root)})) == (
        1003,
        "SEARCH_RAW_OUTPUT_OVERFLOW",
        "Error: glob produced more raw output than the subprocess seam retained within the 8-byte cap; "
        "narrow pattern, path, or include and retry",
    )


# --- exit 2 with results: the count covers every path ripgrep reported --------------------------------------------
# Files of mode 000 are unreadable only to an unprivileged process (root reads them anyway): as root, these
# tests run the daemon, and so ripgrep, as nobody, over a tree nobody can reach.


def test_unreadable_count_ignores_the_stderr_cap(start: MakeDaemon) -> None:
    with unprivileged_tree() as root:
        tree = root / "t"
        for name in ("ok.txt", "a.txt", "b.txt"):
            write(tree, name, "needle\n")
        for name in ("a.txt", "b.txt"):
            (tree / name).chmod(0)
        # 40 bytes hold the end of one of rg's two "Permission denied" lines only.
        d = start("--stderr-max-bytes", "40", "--spill-dir", str(root / "spill"), **unprivileged_popen())
        assert text_of(d.call("grep", {"pattern": "needle", "cwd": str(tree)})) == (
            "Found 1 match\n\nok.txt\nLine 1: needle\n\n(2 paths could not be read)"
        )


def test_unreadable_count_past_the_default_stderr_cap(start: MakeDaemon) -> None:
    with unprivileged_tree() as root:
        tree = root / "many"
        write(tree, "ok.txt", "needle\n")
        for i in range(1500):  # ~110 KB of reports: more than the 64 KiB the tail keeps
            write(tree, f"locked-{i:04d}.txt", "needle\n").chmod(0)
        d = start("--spill-dir", str(root / "spill"), **unprivileged_popen())
        text = text_of(d.call("grep", {"pattern": "needle", "cwd": str(tree)}))
        assert text == "Found 1 match\n\nok.txt\nLine 1: needle\n\n(1500 paths could not be read)"


def test_bad_rules_in_an_ignore_file_are_not_unreadable_paths(start: MakeDaemon, tmp_path: Path) -> None:
    # A rule ripgrep cannot parse in an ignore file above cwd: rg exits 2 and says so, although it read
    # the file and applied its other rules (x.log stays ignored).
    write(tmp_path, "repo/.ignore", "{a,\n*.log\n")
    write(tmp_path, "repo/sub/kept.txt", "needle\n")
    write(tmp_path, "repo/sub/x.log", "needle\n")
    cwd = str(tmp_path / "repo" / "sub")
    d = start()
    assert text_of(d.call("grep", {"pattern": "needle", "cwd": cwd})) == (
        "Found 1 match\n\nkept.txt\nLine 1: needle\n\n"
        "(1 ignore file has rules ripgrep could not parse; those rules were not applied)"
    )
    # Without results, exit 2 is classified as upstream classifies it: its excerpt names the ignore file.
    code, data_code, text = error_of(d.call("grep", {"pattern": "absent", "cwd": cwd}))
    assert (code, data_code) == (1001, "SEARCH_INVALID_PATTERN")
    assert text == (
        f"Error: grep pattern rejected by ripgrep: rg: {tmp_path}/repo/.ignore: line 1: error parsing glob '{{a,': "
        "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"
    )
    # glob reads no ignore files (--no-ignore).
    assert text_of(d.call("glob", {"pattern": "*", "cwd": cwd})) == "kept.txt\nx.log"

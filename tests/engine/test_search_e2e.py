"""glob and grep end to end: the frozen executable, its real sidecar, real trees, both framings.

Covers upstream's integration cases I1–I15 and the fixes (docs/behaviour.md, "Upstream's integration
cases" and "Where we differ from upstream"), every error code, timeouts, cancellation, queueing, the
spill store and hostile inputs.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import MakeDaemon, error_of, text_of
from tests.support.processes import searches_running, wait_until
from tests.support.trees import SLOW_PATTERN, many_files, rich_tree, write, write_slow_corpus

FRAMINGS = ["ndjson", "lsp"]


# --- upstream's integration cases (docs/behaviour.md) ---------------------------------------------------


@pytest.mark.parametrize("framing", FRAMINGS)
def test_i1_to_i5_glob(start: MakeDaemon, fx: Path, framing: str) -> None:
    d = start(framing=framing)
    cwd = str(fx)
    assert text_of(d.call("glob", {"pattern": "**/*.ts", "cwd": cwd})) == (
        "src/alpha.ts\nsrc/beta.ts\n.hidden.ts\nspaced dir/wei'rd name.ts"
    )
    assert text_of(d.call("glob", {"pattern": "*.ts", "path": "src", "cwd": cwd})) == "src/alpha.ts\nsrc/beta.ts"
    assert text_of(d.call("glob", {"pattern": "*.nomatch", "cwd": cwd})) == "No files found"
    assert text_of(d.call("glob", {"pattern": "*", "path": ".git", "cwd": cwd})) == "No files found"
    code, data_code, text = error_of(d.call("glob", {"pattern": "[", "cwd": cwd}))
    assert (code, data_code) == (1001, "SEARCH_INVALID_PATTERN")
    assert text.startswith("Error: glob pattern rejected by ripgrep: rg: error parsing glob '[': unclosed")


@pytest.mark.parametrize("framing", FRAMINGS)
def test_i6_to_i12_grep(start: MakeDaemon, fx: Path, framing: str) -> None:
    d = start(framing=framing)
    cwd = str(fx)
    # Files in path order (a fix: upstream's order depended on ripgrep's threads).
    assert text_of(d.call("grep", {"pattern": "alpha", "cwd": cwd})) == (
        "Found 3 matches\n\nnotes.md\nLine 1: alpha appears here too\n\n"
        "src/alpha.ts\nLine 1: export const alpha = 1\nLine 2: // TODO: refit alpha"
    )
    assert text_of(d.call("grep", {"pattern": "alpha", "path": "notes.md", "cwd": cwd})) == (
        "Found 1 match\n\nnotes.md\nLine 1: alpha appears here too"
    )
    text = text_of(d.call("grep", {"pattern": "alpha", "path": ".", "include": "*.ts", "cwd": cwd}))
    assert "./src/alpha.ts" in text and "notes.md" not in text
    assert text_of(d.call("grep", {"pattern": "$(touch pwned)", "cwd": cwd})) == "No matches found"
    assert not (fx / "pwned").exists()
    assert text_of(d.call("grep", {"pattern": "--flag", "path": "dashes.txt", "cwd": cwd})) == (
        "Found 1 match\n\ndashes.txt\nLine 1: value --flag value"
    )
    assert error_of(d.call("grep", {"pattern": "(unclosed", "cwd": cwd}))[:2] == (1001, "SEARCH_INVALID_PATTERN")
    code, data_code, text = error_of(d.call("grep", {"pattern": "x", "path": "no-such-dir", "cwd": cwd}))
    assert (code, data_code) == (1002, "SEARCH_FAILED")
    assert text.startswith("Error: grep search failed (exit 2): rg: no-such-dir:")


def test_i13_session_cwd(start: MakeDaemon, tmp_path: Path) -> None:
    session = tmp_path / "session"
    write(session, "only-here.ts", "const sessionFile = true\n")
    d = start(cwd=str(tmp_path))
    assert text_of(d.call("glob", {"pattern": "*.ts", "cwd": str(session)})) == "only-here.ts"
    text = text_of(d.call("grep", {"pattern": "sessionFile", "cwd": str(session)}))
    assert "only-here.ts\nLine 1: const sessionFile = true" in text
    # Without cwd the daemon's --workdir (default: its own cwd) is used.
    d2 = start("--workdir", str(session))
    assert text_of(d2.call("glob", {"pattern": "*.ts"})) == "only-here.ts"


def test_i15_missing_cwd_could_not_start(start: MakeDaemon, tmp_path: Path) -> None:
    d = start()
    for method in ("glob", "grep"):
        code, data_code, text = error_of(d.call(method, {"pattern": "x", "cwd": str(tmp_path / "gone")}))
        assert (code, data_code) == (1002, "SEARCH_FAILED")
        assert text == f"Error: {method} could not start its search command (ripgrep launch failed)"


# --- a richer tree: hidden, ignored, quoted, multibyte, non-UTF-8, binary ---------------------------------


@pytest.mark.parametrize("framing", FRAMINGS)
def test_rich_tree(start: MakeDaemon, tmp_path: Path, framing: str) -> None:
    root = rich_tree(tmp_path / "rich")
    d = start(framing=framing)
    cwd = str(root)
    # glob includes hidden and ignored files, excludes VCS metadata, oldest first.
    assert text_of(d.call("glob", {"pattern": "*", "cwd": cwd})).split("\n") == [
        "README.md",
        "src/main.py",
        "src/util/helpers.py",
        ".env.local",
        'docs/a "quoted" name.md',
        "docs/space name.txt",
        "data/latin1.txt",
        "data/blob.bin",
        "repo/.gitignore",
        "repo/kept.txt",
        "repo/ignored.log",
        "repo/build/out.txt",
        "unicode/日本語.txt",
    ]
    # grep follows ripgrep's defaults: no hidden, .gitignore honoured, binary skipped; non-UTF-8 line marked.
    assert text_of(d.call("grep", {"pattern": "needle", "cwd": cwd})) == (
        "Found 8 matches\n\n"
        "README.md\nLine 1: needle in the readme\n\n"
        "data/latin1.txt\nLine 1: (line is not valid UTF-8)\n\n"
        'docs/a "quoted" name.md\nLine 1: needle quoted\n\n'
        "docs/space name.txt\nLine 1: needle spaced\n\n"
        "repo/kept.txt\nLine 1: needle kept\n\n"
        "src/main.py\nLine 1: def needle():\nLine 2:     return 'héllo wörld needle'\n\n"
        "unicode/日本語.txt\nLine 1: needle 日本語"
    )
    # An explicitly named hidden or ignored path is searched.
    assert "Found 1 match" in text_of(d.call("grep", {"pattern": "needle", "path": ".env.local", "cwd": cwd}))
    assert "Found 1 match" in text_of(d.call("grep", {"pattern": "needle", "path": "repo/ignored.log", "cwd": cwd}))
    # Absolute paths inside cwd are shown relative; outside, absolute.
    text = text_of(d.call("glob", {"pattern": "*.py", "path": str(root / "src"), "cwd": cwd}))
    assert text == "src/main.py\nsrc/util/helpers.py"
    text = text_of(d.call("glob", {"pattern": "*.py", "path": str(root / "src"), "cwd": str(root / "docs")}))
    assert text == f"{root}/src/main.py\n{root}/src/util/helpers.py"


@pytest.mark.parametrize("framing", FRAMINGS)
def test_sampling_spill_and_meta(start: MakeDaemon, tmp_path: Path, spill_root: Path, framing: str) -> None:
    root = tmp_path / "many"
    order = many_files(root, {"vendor": 6, "src": 3, "docs": 2})
    d = start("--glob-max-results", "4", "--grep-max-matches", "3", framing=framing)
    result = d.result("glob", {"pattern": "*.txt", "cwd": str(root), "sessionId": "s-1"})
    spill = result["spill"]
    assert spill["bytes"] == len("\n".join(order).encode())
    assert spill["retrievalHint"] == "Use read with offset/limit, or grep this path to search within it."
    assert result["text"] == (
        "vendor/f0000.txt\nvendor/f0001.txt\nsrc/f0000.txt\ndocs/f0000.txt\n\n(Showing 4 of 11 paths, sampled "
        "across 3 of the 3 top-level entries this pattern matched instead of taken in modification-time order. "
        f"Full sorted result stored at: {spill['locator']}. Use read with offset/limit, or grep this path to "
        "search within it.)"
    )
    locator = Path(spill["locator"])
    assert locator.read_text() == "\n".join(order)  # the complete list, mtime order, never the sample
    assert locator.parent.parent == spill_root and locator.name.endswith("-glob-results.txt")
    assert stat.S_IMODE(locator.stat().st_mode) == 0o600 and stat.S_IMODE(spill_root.stat().st_mode) == 0o700
    assert result["meta"] == {
        "shape": "paths",
        "paths": ["vendor/f0000.txt", "vendor/f0001.txt", "src/f0000.txt", "docs/f0000.txt"],
        "truncated": True,
        "total": 11,
    }
    # spill/read pages through the artifact.
    page = d.result("spill/read", {"locator": spill["locator"], "offset": 10, "limit": 5})
    assert page == {
        "text": "docs/f0000.txt\ndocs/f0001.txt",
        "startLine": 10,
        "endLine": 11,
        "totalLines": 11,
        "nextOffset": None,
    }
    # grep over the same tree: capped page, complete artifact in path order.
    result = d.result("grep", {"pattern": "hit", "cwd": str(root), "sessionId": "s-1"})
    assert result["text"].startswith(
        "Found 3 of 11 matches\n\ndocs/f0000.txt\nLine 1: hit\n\ndocs/f0001.txt\nLine 1: hit\n\n"
        "src/f0000.txt\nLine 1: hit\n\n(Full grep result stored at: "
    )
    body = Path(result["spill"]["locator"]).read_text()
    assert body.startswith("Found 11 matches\n\ndocs/f0000.txt\nLine 1: hit\n\n") and body.endswith(
        "vendor/f0005.txt\nLine 1: hit"
    )
    assert result["meta"]["truncated"] is True and result["meta"]["total"] == 11


def test_sampling_off_head(start: MakeDaemon, tmp_path: Path) -> None:
    root = tmp_path / "many"
    many_files(root, {"vendor": 6, "src": 3})
    d = start("--glob-max-results", "3", sampling="false")
    text = text_of(d.call("glob", {"pattern": "*.txt", "cwd": str(root)}))
    assert text.startswith(
        "vendor/f0000.txt\nvendor/f0001.txt\nvendor/f0002.txt\n\n(Showing 3 of 9 paths. Full sorted result stored at: "
    )


def test_meta_is_bounded(start: MakeDaemon, tmp_path: Path) -> None:
    root = tmp_path / "t"
    for i in range(5):
        write(root, f"f{i}.txt", ("x" * 100 + " needle\n") * 3, 100 + i)
    d = start("--search-meta-max-bytes", "300")
    meta = d.result("grep", {"pattern": "needle", "cwd": str(root)})["meta"]
    assert meta["truncated"] is True and meta["total"] == 15 and 1 <= len(meta["files"]) < 5


# --- the fixes -------------------------------------------------------------------------------------------


def test_fix_equal_mtimes_in_path_order(start: MakeDaemon, tmp_path: Path) -> None:
    root = tmp_path / "ties"
    names = ["zeta.txt", "b/beta.txt", "alpha.txt", "a/zz.txt", "m.txt"]
    for name in names:  # created in this order, all with one mtime
        write(root, name, "x", 3000)
    write(root, "old.txt", "x", 10)
    d = start()
    expected = ["old.txt", *sorted(names)]
    for _ in range(3):
        assert text_of(d.call("glob", {"pattern": "*.txt", "cwd": str(root)})).split("\n") == expected


def test_fix_newline_in_file_name_is_one_entry(start: MakeDaemon, tmp_path: Path) -> None:
    root = tmp_path / "nl"
    write(root, "two\nlines.txt", "x", 10)
    write(root, "plain.txt", "x", 20)
    d = start()
    result = d.result("glob", {"pattern": "*.txt", "cwd": str(root)})
    assert result["meta"]["paths"] == ["two\nlines.txt", "plain.txt"] and result["meta"]["total"] == 2


def test_fix_grep_order_is_deterministic(start: MakeDaemon, tmp_path: Path) -> None:
    root = tmp_path / "wide"
    names = [f"d{i % 17}/file{i:03d}.txt" for i in range(300)]
    for i, name in enumerate(names):
        write(root, name, "needle\n", 100 + (i * 7919) % 300)
    d = start("--grep-max-matches", "500")
    texts = {text_of(d.call("grep", {"pattern": "needle", "cwd": str(root)})) for _ in range(4)}
    assert len(texts) == 1
    listed = [line for line in texts.pop().split("\n") if line.endswith(".txt")]
    assert listed == sorted(names)


def test_fix_non_utf8_file_names(start: MakeDaemon, tmp_path: Path) -> None:
    root = tmp_path / "bytes"
    write(root, b"caf\xe9.txt", "needle\n", 10)
    d = start()
    assert (
        text_of(d.call("grep", {"pattern": "needle", "cwd": str(root)}))
        == "Found 1 match\n\ncaf\ufffd.txt\nLine 1: needle"
    )
    assert text_of(d.call("glob", {"pattern": "*.txt", "cwd": str(root)})) == "caf\ufffd.txt"


def _world_readable_tmp() -> Path:
    path = Path(tempfile.mkdtemp(prefix="dsh-unreadable-", dir="/tmp"))
    path.chmod(0o755)
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the daemon as an unprivileged user")
def test_fix_unreadable_paths_keep_the_results(start: MakeDaemon) -> None:
    # Root reads everything, so the daemon runs as `nobody` for this test.
    root = _world_readable_tmp()
    spill = _world_readable_tmp()
    try:
        write(root, "ok.txt", "needle\n", 10)
        write(root, "locked.txt", "needle\n", 20).chmod(0)
        locked_dir = root / "locked-dir"
        write(root, "locked-dir/inner.txt", "needle\n", 30)
        locked_dir.chmod(0)
        for p in (root, spill):
            os.chown(p, 65534, 65534)
        d = start("--spill-dir", str(spill / "s"), user=65534, group=65534, extra_groups=[])
        assert text_of(d.call("grep", {"pattern": "needle", "cwd": str(root)})) == (
            "Found 1 match\n\nok.txt\nLine 1: needle\n\n(2 paths could not be read)"
        )
        assert text_of(d.call("glob", {"pattern": "*.txt", "cwd": str(root)})) == (
            "ok.txt\nlocked.txt\n\n(1 path could not be read)"
        )
        # Nothing readable at all: classified as upstream does.
        code, data_code, text = error_of(d.call("grep", {"pattern": "needle", "path": "locked.txt", "cwd": str(root)}))
        assert (code, data_code) == (1002, "SEARCH_FAILED") and "Permission denied" in text
    finally:
        (root / "locked-dir").chmod(0o755)
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(spill, ignore_errors=True)


def test_fix_newline_pattern_is_invalid_pattern(start: MakeDaemon, fx: Path) -> None:
    d = start()
    code, data_code, text = error_of(d.call("grep", {"pattern": "a\nb", "cwd": str(fx)}))
    assert (code, data_code) == (1001, "SEARCH_INVALID_PATTERN")
    assert text.startswith('Error: grep pattern rejected by ripgrep: rg: the literal "\\n" is not allowed in a regex')


def test_fix_raw_output_overflow_kills_rg_at_once(start: MakeDaemon, tmp_path: Path, exe: Path) -> None:
    corpus = write_slow_corpus(tmp_path / "big", files=2, lines=200_000)
    d = start("--raw-output-max-bytes", "100000")
    code, data_code, text = error_of(d.call("grep", {"pattern": "a", "cwd": str(corpus)}))
    assert (code, data_code) == (1003, "SEARCH_RAW_OUTPUT_OVERFLOW")
    assert text == (
        "Error: grep produced more raw output than the subprocess seam retained within the 100000-byte cap; "
        "narrow pattern, path, or include and retry"
    )
    assert not searches_running(exe, d.proc.pid)  # stopped, not left to finish


# --- argument errors, timeouts, cancellation, queueing --------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params", "text"),
    [
        ("glob", {}, 'Error: invalid arguments: missing required property "pattern"'),
        ("glob", {"pattern": 1}, 'Error: invalid arguments: "pattern" must be a string'),
        (
            "grep",
            {"pattern": 1, "path": 2},
            'Error: invalid arguments: "pattern" must be a string; "path" must be a string',
        ),
        ("glob", {"pattern": "  "}, "Error: pattern must be a non-empty string"),
        ("glob", {"pattern": "*", "path": ""}, "Error: path must be a non-empty string when given"),
        ("grep", {"pattern": ""}, "Error: pattern must be a non-empty string"),
        (
            "grep",
            {"pattern": "x", "include": "!*.ts"},
            'Error: include must be a positive glob filter; negated patterns ("!…") are not supported',
        ),
        (
            "grep",
            {"pattern": "x", "include": "a,b"},
            "Error: include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
        ),
        ("grep", {"pattern": "x", "include": " "}, "Error: include must be a non-empty glob when given"),
        ("grep", {"pattern": "x", "cwd": 5}, 'Error: invalid arguments: "cwd" must be a string'),
        ("grep", ["x"], "Error: invalid arguments: params must be an object"),
        ("spill/read", {"locator": "/etc/passwd"}, "Error: locator is outside the spill store"),
        ("spill/read", {"locator": "x", "offset": 0}, "Error: offset must be a positive integer"),
    ],
)
def test_argument_errors(start: MakeDaemon, method: str, params: Any, text: str) -> None:
    d = start()
    code, data_code, got = error_of(d.call(method, params))
    assert (code, data_code, got) == (-32602, "INVALID_ARGS", text)


def test_timeout_is_search_aborted(start: MakeDaemon, slow_corpus: Path, exe: Path) -> None:
    d = start("--timeout-ms", "400")
    code, data_code, text = error_of(d.call("grep", {"pattern": SLOW_PATTERN, "cwd": str(slow_corpus)}))
    assert (code, data_code, text) == (1004, "SEARCH_ABORTED", "Error: grep timed out after 400ms")
    assert not searches_running(exe, d.proc.pid)
    assert d.result("ping") == {}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_cancel_request(start: MakeDaemon, slow_corpus: Path, exe: Path, framing: str) -> None:
    d = start(framing=framing)
    rid = d.request("grep", {"pattern": SLOW_PATTERN, "cwd": str(slow_corpus)})
    deadline = time.monotonic() + 10
    while not searches_running(exe, d.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert searches_running(exe, d.proc.pid), "rg never started"
    d.notify("$/cancelRequest", {"id": rid})
    code, data_code, text = error_of(d.wait_for(rid))
    assert (code, data_code) == (-32800, "SEARCH_ABORTED")
    assert text == "Error: grep was aborted before completion (tool timeout or caller cancellation)"
    assert not searches_running(exe, d.proc.pid)
    assert d.result("ping") == {}


def test_mcp_cancel_sends_no_response(start: MakeDaemon, slow_corpus: Path, exe: Path) -> None:
    d = start()
    rid = d.request(
        "tools/call", {"name": "grep", "arguments": {"pattern": SLOW_PATTERN}, "_meta": {"cwd": str(slow_corpus)}}
    )
    assert wait_until(lambda: bool(searches_running(exe, d.proc.pid))), "rg never started"
    d.notify("notifications/cancelled", {"requestId": rid, "reason": "user"})
    assert d.result("ping") == {}
    assert d.no_response(0.5)
    assert not searches_running(exe, d.proc.pid)


def test_searches_queue_beyond_the_limit(start: MakeDaemon, slow_corpus: Path, fx: Path, exe: Path) -> None:
    d = start("--max-concurrent-searches", "1")
    slow = d.request("grep", {"pattern": SLOW_PATTERN, "cwd": str(slow_corpus)})
    assert wait_until(lambda: bool(searches_running(exe, d.proc.pid))), "rg never started"
    quick = d.request("grep", {"pattern": "alpha", "cwd": str(fx)})
    assert d.result("ping") == {}  # the daemon itself is not blocked
    assert d.no_response(0.5), "the queued search ran before a slot was free"
    assert len(searches_running(exe, d.proc.pid)) == 1
    d.notify("$/cancelRequest", {"id": slow})
    assert error_of(d.wait_for(slow))[0] == -32800
    assert text_of(d.wait_for(quick)).startswith("Found 3 matches")


def test_tools_call_wraps_results_and_failures(start: MakeDaemon, fx: Path) -> None:
    d = start()
    ok = d.result("tools/call", {"name": "glob", "arguments": {"pattern": "*.md"}, "_meta": {"cwd": str(fx)}})
    assert ok["isError"] is False and ok["content"] == [{"type": "text", "text": "notes.md"}]
    assert ok["structuredContent"] == {"text": "notes.md", "pathCount": 1, "truncated": False}  # SPEC §3
    assert list(ok) == ["content", "structuredContent", "isError"]
    bad = d.result("tools/call", {"name": "grep", "arguments": {"pattern": "(x"}, "_meta": {"cwd": str(fx)}})
    assert bad["isError"] is True and bad["content"][0]["text"].startswith("Error: grep pattern rejected by ripgrep:")
    assert "structuredContent" not in bad and bad["_meta"]["dsh-search/error"]["code"] == "SEARCH_INVALID_PATTERN"
    args = d.result("tools/call", {"name": "grep", "arguments": {}})
    assert (
        args["isError"] is True
        and args["content"][0]["text"] == 'Error: invalid arguments: missing required property "pattern"'
    )
    assert error_of(d.call("tools/call", {"name": "rm"}))[0] == -32602
    tools = d.result("tools/list")["tools"]
    assert [t["name"] for t in tools][:2] == ["glob", "grep"]


# --- spill store -------------------------------------------------------------------------------------------


def test_spill_root_that_is_a_file(start: MakeDaemon, tmp_path: Path, spill_root: Path) -> None:
    root = tmp_path / "many"
    many_files(root, {"a": 3})
    spill_root.write_text("not a directory")
    d = start("--glob-max-results", "2", sampling="false")
    result = d.result("glob", {"pattern": "*", "cwd": str(root)})
    assert result["text"] == (
        "a/f0000.txt\na/f0001.txt\n\n(Showing 2 of 3 paths. The complete result could not be saved; narrow "
        "pattern or path to see more.)"
    )
    assert result["spill"] is None


def test_retention_at_start_and_after_saves(start: MakeDaemon, tmp_path: Path, spill_root: Path) -> None:
    old = spill_root / "session-0123456789ab" / "0123456789ab-glob-results.txt"
    old.parent.mkdir(parents=True)
    old.write_text("stale")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    root = tmp_path / "many"
    many_files(root, {"a": 30})
    d = start("--glob-max-results", "1", "--spill-max-age-seconds", "600", "--spill-max-bytes", "800")
    assert d.result("ping") == {}
    deadline = time.monotonic() + 5
    while old.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not old.exists()
    locators = [d.result("glob", {"pattern": "*", "cwd": str(root)})["spill"]["locator"] for _ in range(3)]
    # Each artifact is 359 bytes: only the two newest fit in 800 bytes.
    assert [os.path.exists(p) for p in locators] == [False, True, True]


def test_spill_read_escapes(start: MakeDaemon, tmp_path: Path, spill_root: Path) -> None:
    root = tmp_path / "many"
    many_files(root, {"a": 3})
    d = start("--glob-max-results", "1")
    locator = d.result("glob", {"pattern": "*", "cwd": str(root)})["spill"]["locator"]
    session = os.path.dirname(locator)
    assert os.path.isabs(session), locator  # the link goes into the spill store, nowhere else
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    os.symlink(outside, os.path.join(session, "0123456789ab-link.txt"))
    for bad in (
        str(outside),
        f"{session}/../../secret.txt",
        os.path.join(session, "0123456789ab-link.txt"),
        os.path.join(session, "0123456789ab-missing.txt"),
        session,
        "relative.txt",
        locator + "\0",
    ):
        code, data_code, _ = error_of(d.call("spill/read", {"locator": bad}))
        assert (code, data_code) == (-32602, "INVALID_ARGS"), bad
    assert d.result("spill/read", {"locator": locator, "limit": 1})["nextOffset"] == 2


# --- hostile inputs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        "$(touch pwned)",
        "`touch pwned`",
        "--flag",
        "-leading-dash",
        "--pre=touch pwned",
        "a\nb",
        "{" * 500 + "a" + "}" * 500,
    ],
)
def test_hostile_patterns_are_inert(start: MakeDaemon, fx: Path, pattern: str) -> None:
    d = start()
    for method in ("glob", "grep"):
        response = d.call(method, {"pattern": pattern, "cwd": str(fx)})
        assert "result" in response or response["error"]["code"] in (1001, 1002), response
    assert not (fx / "pwned").exists()
    assert d.result("ping") == {}


@pytest.mark.parametrize("path", ["-leading-dash", "--files", "$(touch pwned)", "../../..", "a\nb"])
def test_hostile_paths_are_inert(start: MakeDaemon, fx: Path, path: str) -> None:
    deep = fx / "a" / "b" / "c"  # so that ../../.. stays inside the fixture
    deep.mkdir(parents=True)
    d = start()
    for method in ("glob", "grep"):
        response = d.call(method, {"pattern": "x", "path": path, "cwd": str(deep)})
        assert "result" in response or response["error"]["code"] == 1002, response
    assert not (fx / "pwned").exists() and not (deep / "pwned").exists()


def test_nul_bytes_and_huge_patterns(start: MakeDaemon, fx: Path) -> None:
    d = start()
    for params in ({"pattern": "a\0b"}, {"pattern": "x", "path": "a\0b"}, {"pattern": "x" * 1_000_000}):
        for method in ("glob", "grep"):
            code, data_code, text = error_of(d.call(method, {**params, "cwd": str(fx)}))
            assert (code, data_code) == (1002, "SEARCH_FAILED")
            assert text == f"Error: {method} could not start its search command (ripgrep launch failed)"
    assert d.result("ping") == {}


# --- confinement and deny globs (docs/behaviour.md) ------------------------------------------------------------


def test_allowed_roots(start: MakeDaemon, tmp_path: Path, fx: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "x.txt", "alpha\n")
    (fx / "escape").symlink_to(outside)
    d = start("--allowed-root", str(fx))
    assert text_of(d.call("glob", {"pattern": "*.md", "cwd": str(fx)})) == "notes.md"
    for params in ({"cwd": str(outside)}, {"cwd": str(fx), "path": "../outside"}, {"cwd": str(fx), "path": "escape"}):
        code, data_code, text = error_of(d.call("grep", {"pattern": "alpha", **params}))
        assert (code, data_code, text) == (-32602, "INVALID_ARGS", "Error: path is outside the allowed roots")
    # A symlink inside the root that points outside is not followed.
    assert "outside" not in text_of(d.call("grep", {"pattern": "alpha", "cwd": str(fx)}))


def test_deny_globs(start: MakeDaemon, tmp_path: Path) -> None:
    root = tmp_path / "d"
    write(root, "app.py", "token = 1\n", 10)
    write(root, ".env", "token = secret\n", 20)
    write(root, "certs/server.pem", "token pem\n", 30)
    write(root, "nested/.env.prod", "token = prod\n", 40)
    d = start("--deny-glob", ".env*", "--deny-glob", "*.pem")
    assert text_of(d.call("glob", {"pattern": "*", "cwd": str(root)})) == "app.py"
    assert (
        text_of(d.call("grep", {"pattern": "token", "cwd": str(root)})) == "Found 1 match\n\napp.py\nLine 1: token = 1"
    )
    assert text_of(d.call("grep", {"pattern": "token", "path": ".env", "cwd": str(root)})) == "No matches found"
    assert text_of(d.call("glob", {"pattern": "*", "path": "certs/server.pem", "cwd": str(root)})) == "No files found"

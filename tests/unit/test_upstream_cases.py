"""Upstream's own test cases (shared/upstream-behavior.md §8.1, §8.6, §8.7) as input → expected output.

Each case keeps upstream's number (T<n> for §8.1 tools.spec.ts, P<n> for §8.6, E/D/F/R/S for §8.7) and
upstream's exact expected texts. ripgrep's output is faked here (unit level); tests/e2e runs the real
thing, including §8.2's integration cases.

Where we deliberately differ (SPEC "fix" items) the case says so and asserts our behaviour.

Skipped, and why (they test plugin-loader or registry internals that a daemon does not have):
- T2, T3: loading without a subprocess service / disposing the plugin — no plugin registry here.
- T31, T33, T34, T37: JS AbortSignal plumbing and pre-dispatch aborts (ABORTED_BEFORE_DISPATCH) — a
  JSON-RPC request cannot be aborted before it is dispatched; cancellation is tested end to end.
- T38, T39: memoised rg-path resolution and the seam's collected-reader objects — the daemon verifies
  its sidecar once at start (tests/e2e/test_startup.py) and owns its pipes.
- T72, T73, T84, T85: downstream hook replacements and nested Code-mode calls — the registry's hook
  pipeline; every daemon call is a direct call.
- T98, T99, T102, T103: pending-card titles and `presentResult` of the host UI — the daemon returns
  `meta`; cards are drawn by hosts (the read-back check, `view_from_meta`, is covered by P11–P18).
- §8.3 (module load shape), §8.4/§8.5 (npm rg-path and pkg sidecar lookup): Node packaging internals;
  our sidecar lookup is SPEC §1's and is tested in tests/e2e/test_startup.py.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from dsh_search import config as config_mod
from dsh_search import texts
from dsh_search.config import ConfigError
from dsh_search.methods import lifecycle, mcp
from dsh_search.methods.context import Context
from dsh_search.methods.errors import (
    INVALID_ARGS,
    SEARCH_ABORTED,
    SEARCH_FAILED,
    SEARCH_INVALID_PATTERN,
    SEARCH_RAW_OUTPUT_OVERFLOW,
    ToolError,
)
from dsh_search.methods.registry import MethodTable
from dsh_search.search import glob as glob_mod
from dsh_search.search import grep as grep_mod
from dsh_search.search.core import RgResult, classify
from dsh_search.search.paths import DenyGlobs, to_workdir_relative
from dsh_search.search.presentation import glob_meta, grep_meta, view_from_meta
from dsh_search.search.ripgrep import Outcome, StderrTally
from dsh_search.search.sampling import sample_across_top_level
from dsh_search.sidecar import Ripgrep
from dsh_search.store.spill import SpillRef, SpillStore, encode_segment, session_dir
from dsh_search.wiring import METHODS

VCS = [
    "--glob=!**/.git",
    "--glob=!**/.git/**",
    "--glob=!**/.svn",
    "--glob=!**/.svn/**",
    "--glob=!**/.hg",
    "--glob=!**/.hg/**",
    "--glob=!**/.bzr",
    "--glob=!**/.bzr/**",
    "--glob=!**/.jj",
    "--glob=!**/.jj/**",
    "--glob=!**/.sl",
    "--glob=!**/.sl/**",
]
# Upstream's glob argv has `--sort=modified` where ours has `--null` (SPEC §4 fixes: NUL-separated
# output, and the daemon sorts by (mtime, path) itself) and a walk thread count (performance.md).
GLOB_HEAD = ["--files", "--glob={}", "--null", "--no-ignore", "--hidden", f"--threads={glob_mod.WALK_THREADS}"]
NO_DENY = DenyGlobs(())
FAKE_HINT = "Use the fake retrieval hint."


def glob_argv(pattern: str, path: str | None = None) -> list[str]:
    head = [a.format(pattern) for a in GLOB_HEAD]
    return head + VCS + (["--", path] if path is not None else [])


# --- fakes ---------------------------------------------------------------------------------------------


class FakeSpill:
    """A spill store whose locator is `/spill/<name>`, as upstream's fake; can be told to fail."""

    root = "/spill"

    def __init__(self, fail: bool = False) -> None:
        self.saves: list[tuple[str, str, str]] = []
        self.fail = fail

    def save_text(self, session_id: str, name: str, content: str) -> SpillRef:
        if self.fail:
            raise OSError("no space left on device")
        self.saves.append((session_id, name, content))
        return SpillRef(f"/spill/{name}", len(content.encode()), FAKE_HINT)


def make_app(spill: Any = None, **overrides: Any) -> Context:
    values = {"sampleOverCapGlobResults": True, **overrides}
    cfg = config_mod.build(values, environ={"XDG_STATE_HOME": "/nonexistent-state"})
    return Context(
        config=cfg,
        rg=Ripgrep(path="/bin/rg", version="15.2.0", version_text="ripgrep 15.2.0"),
        rg_env={},
        workdir="/sessions/s1",
        version="0.1.0",
        spill=spill or FakeSpill(),  # type: ignore[arg-type]
        deny_globs=DenyGlobs(cfg.deny_globs),
        methods=MethodTable(METHODS),
    )


def run_glob(monkeypatch: pytest.MonkeyPatch, app: Context, paths: list[str], **params: Any) -> dict[str, Any]:
    async def fake_list(*_: Any) -> tuple[list[str], RgResult]:
        return paths, RgResult(b"", no_matches=not paths, unreadable=0)

    monkeypatch.setattr(glob_mod, "_list", fake_list)
    return asyncio.run(glob_mod.glob(app, {"pattern": "*", **params}))


def run_grep(
    monkeypatch: pytest.MonkeyPatch, app: Context, matches: list[tuple[str, int, str]], **params: Any
) -> dict[str, Any]:
    async def fake_search(*_: Any) -> tuple[list[tuple[str, int, str]], RgResult]:
        return matches, RgResult(b"", no_matches=not matches, unreadable=0)

    monkeypatch.setattr(grep_mod, "_search", fake_search)
    return asyncio.run(grep_mod.grep(app, {"pattern": "x", **params}))


def outcome(code: int | None, stderr: bytes = b"", *, sig: int | None = None, **kw: Any) -> Outcome:
    tally = StderrTally()  # what the runner counts while stderr streams past
    tally.feed(stderr)
    tally.finish()
    return Outcome(
        exit_code=code,
        signal=sig,
        stdout=kw.get("stdout", b""),
        stdout_overflow=kw.get("overflow", False),
        stderr=stderr,
        stderr_lossy=kw.get("lossy", False),
        reported_paths=tally.paths,
        bad_ignore_files=tally.ignore_files,
    )


def match_record(path: str, line: int, text: str | None = None, **data: Any) -> bytes:
    record: dict[str, Any] = {
        "type": "match",
        "data": {"path": {"text": path}, "line_number": line, "lines": {"text": text}, **data},
    }
    return orjson.dumps(record)


# --- §8.1 registration ---------------------------------------------------------------------------------


def test_t1_tools_and_guidance() -> None:
    app = make_app()
    names = [t["name"] for t in mcp.definitions(app)]
    assert names[:2] == ["glob", "grep"]
    prompt = lifecycle.instructions(app)
    assert "Use the glob tool" in prompt and "Use the grep tool" in prompt
    assert "sampled across top-level entries" in prompt and "sampled across top-level directories" not in prompt
    glob_tool = mcp.definitions(app)[0]
    assert "sampled across top-level entries" in glob_tool["description"]
    assert glob_tool["annotations"] == {"readOnlyHint": True}
    assert set(glob_tool["inputSchema"]["properties"]) == {"pattern", "path"}  # no host-only fields
    grep_tool = mcp.definitions(app)[1]
    assert set(grep_tool["inputSchema"]["properties"]) == {"pattern", "path", "include"}


def test_t4_t5_timeout_reaches_the_config() -> None:
    assert make_app(timeoutMs=5000).config.timeout_ms == 5000
    assert make_app().config.timeout_ms == 30000


def test_t6_sampling_off_texts() -> None:
    app = make_app(sampleOverCapGlobResults=False)
    prompt = lifecycle.instructions(app)
    assert "a larger one keeps the modification-time-ordered head" in prompt
    assert "sampled across" not in prompt
    description = mcp.definitions(app)[0]["description"]
    assert "a larger result returns the first 100 paths in modification-time order" in description


def test_guidance_and_descriptions_word_for_word() -> None:
    assert texts.glob_guidance(True) == (
        'Use the glob tool — not shell find — to discover files by path pattern. A pattern with no "/" matches '
        'basenames at any depth, so "*" matches every file in the tree rather than its top level. Results are '
        "files only, never directories, and include hidden and ignored files: a result that fits comes back in "
        "modification-time order, while a larger one is sampled across top-level entries, so it spans the tree "
        "instead of one subtree."
    )
    assert texts.glob_description(True, 100) == (
        "Find files whose paths match a glob pattern. Returns matching file paths — never directories — including "
        "hidden and ignored files (VCS metadata directories are excluded). Up to 100 paths come back in "
        "modification-time order; a larger result instead returns 100 paths sampled across top-level entries, "
        "says so, and reports where the complete sorted list was saved. This tool does not enumerate directory "
        "entries."
    )
    assert texts.GREP_GUIDANCE == (
        "Use the grep tool — not shell grep or rg — to search file contents. Use read on a matched file when you "
        "need surrounding context."
    )
    assert texts.grep_description(250) == (
        "Search file contents with a ripgrep regular expression. Returns matching lines with line numbers, grouped "
        "by file. Returns the first 250 matches inline; a capped result reports where the complete match list was "
        "saved. Use read on a matched file for surrounding context."
    )


# --- §8.1 config validation (T7–T15) -----------------------------------------------------------------------


def test_t7_sampling_flag_required() -> None:
    with pytest.raises(ConfigError, match="sampleOverCapGlobResults"):
        config_mod.build({})
    assert config_mod.build({"sampleOverCapGlobResults": False}).glob_max_results == 100


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("globMaxResults", 0),
        ("grepMaxMatches", -1),
        ("grepMaxLineBytes", 1.5),
        ("rawOutputMaxBytes", 0),
        ("graceMs", 0),
        ("stderrMaxBytes", -1),
        ("timeoutMs", -100),
    ],
)
def test_t8_to_t14_positive_integers(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as err:
        config_mod.build({"sampleOverCapGlobResults": True, key: value})
    assert str(err.value) == f"dsh-search: {key} must be a positive integer"


def test_t15_grace_bound() -> None:
    with pytest.raises(ConfigError) as err:
        config_mod.build({"sampleOverCapGlobResults": True, "graceMs": 2147483648})
    assert str(err.value) == "dsh-search: graceMs must be no greater than 2147483647"


# --- §8.1 command construction (T16–T26) -------------------------------------------------------------------


def test_t16_glob_argv() -> None:
    assert glob_mod.build_argv("**/*.ts", None, NO_DENY) == glob_argv("**/*.ts")


def test_t17_glob_argv_with_spaced_path() -> None:
    assert glob_mod.build_argv("*.md", "docs dir", NO_DENY) == glob_argv("*.md", "docs dir")


def test_t18_grep_argv() -> None:
    assert grep_mod.build_argv("foo.*bar", None, None, NO_DENY) == ["--json", "--regexp=foo.*bar"]


def test_t19_grep_argv_with_dash_path_and_include() -> None:
    assert grep_mod.build_argv("x", "-leading-dash", "*.{ts,tsx}", NO_DENY) == [
        "--json",
        "--regexp=x",
        "--glob=*.{ts,tsx}",
        "--",
        "-leading-dash",
    ]


@pytest.mark.parametrize(
    "raw", ["$(rm -rf /)", "`touch pwned`", 'say "hi there"', "it's", "a\nb", "--flag", "*?[a-z]{x,y}"]
)
def test_t20_to_t26_hostile_values_stay_one_inert_element(raw: str) -> None:
    assert grep_mod.build_argv(raw, None, None, NO_DENY) == ["--json", f"--regexp={raw}"]
    assert glob_mod.build_argv(raw, None, NO_DENY)[1] == f"--glob={raw}"


def test_deny_globs_are_appended_before_the_path() -> None:
    deny = DenyGlobs((".env*", "*.pem"))
    assert glob_mod.build_argv("*", "src", deny)[-4:] == ["--glob=!.env*", "--glob=!*.pem", "--", "src"]
    assert grep_mod.build_argv("x", None, "*.ts", deny) == [
        "--json",
        "--regexp=x",
        "--glob=*.ts",
        "--glob=!.env*",
        "--glob=!*.pem",
    ]


# --- §8.1 workdir (T27–T30, T35, T36) ---------------------------------------------------------------------


def test_t27_t28_cwd_resolution() -> None:
    from dsh_search.search.core import resolve

    app = make_app()
    assert resolve(app, {"cwd": "/sessions/other"}).cwd == "/sessions/other"
    assert resolve(app, {}).cwd == "/sessions/s1"  # the daemon's --workdir
    assert resolve(app, {"cwd": "sub"}).cwd == "/sessions/s1/sub"


def test_t29_t30_caps_and_grace_reach_the_runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from dsh_search.search import core, ripgrep

    seen: dict[str, Any] = {}

    async def fake_run(rg_path: str, args: list[str], **kw: Any) -> Outcome:
        seen.update(kw, rg_path=rg_path, args=args)
        return outcome(1)

    monkeypatch.setattr(ripgrep, "run", fake_run)
    app = make_app(rawOutputMaxBytes=1234, graceMs=5000, stderrMaxBytes=4096)
    app.workdir = str(tmp_path)  # rg is launched only in a directory that exists
    result = asyncio.run(grep_mod.grep(app, {"pattern": "needle"}))
    assert result["text"] == "No matches found"
    assert seen["rg_path"] == "/bin/rg" and seen["args"] == ["--json", "--regexp=needle"]
    limits = seen["limits"]
    assert limits.stdout_cap == 1234 and limits.stderr_cap == 4096 and limits.grace_s == 5.0
    assert seen["cwd"] == str(tmp_path)
    app = make_app()
    asyncio.run(core.run_rg(app, "grep", ["x"], core.Where("/w", None), lambda _: False))
    assert seen["limits"].stderr_cap == 65536 and seen["limits"].grace_s == 3.0


def test_t35_t36_launch_failures_are_could_not_start(tmp_path: Path) -> None:
    app = make_app()
    app.rg = Ripgrep(path=str(tmp_path / "missing-rg"), version="15.2.0", version_text="")
    with pytest.raises(ToolError) as err:
        asyncio.run(grep_mod.grep(app, {"pattern": "x", "cwd": str(tmp_path)}))
    assert err.value.code == SEARCH_FAILED and "could not start" in err.value.text
    app.rg = Ripgrep(path="/bin/true", version="", version_text="")
    with pytest.raises(ToolError) as err:
        asyncio.run(grep_mod.grep(app, {"pattern": "a\0b", "cwd": str(tmp_path)}))
    assert err.value.code == SEARCH_FAILED and err.value.message == texts.could_not_start("grep")


# --- §8.1 exit semantics (T40–T47) and raw output (T48–T50) ---------------------------------------------


def test_t40_exit_1_is_an_empty_success(monkeypatch: pytest.MonkeyPatch) -> None:
    assert classify("glob", outcome(1), 100, lambda _: False).no_matches
    assert run_glob(monkeypatch, make_app(), [])["text"] == "No files found"
    assert run_grep(monkeypatch, make_app(), [])["text"] == "No matches found"


def test_t41_regex_parse_error() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(2, b"rg: regex parse error:\n    (\nerror: unclosed group"), 100, lambda _: False)
    assert err.value.code == SEARCH_INVALID_PATTERN and "regex parse error" in err.value.text
    assert err.value.message == "grep pattern rejected by ripgrep: rg: regex parse error:\n    (\nerror: unclosed group"


def test_t42_glob_parse_error() -> None:
    with pytest.raises(ToolError) as err:
        classify("glob", outcome(2, b"rg: error parsing glob '[': unclosed character class"), 100, lambda _: False)
    assert err.value.code == SEARCH_INVALID_PATTERN


def test_t43_io_error_is_search_failed() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(2, b"rg: missing.dir: IO error: no such file or directory"), 100, lambda _: False)
    assert err.value.code == SEARCH_FAILED and "IO error" in err.value.text
    assert err.value.message == "grep search failed (exit 2): rg: missing.dir: IO error: no such file or directory"


def test_t44_other_exit_with_empty_stderr() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(3), 100, lambda _: False)
    assert err.value.code == SEARCH_FAILED and err.value.message == "grep search failed (exit 3)"


def test_t45_lossy_stderr_is_marked() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(2, b"tail of diagnostics", lossy=True), 100, lambda _: False)
    assert "tail of diagnostics [stderr truncated]" in err.value.text


def test_t46_t47_signals() -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(None, sig=9), 100, lambda _: False)
    assert err.value.code == SEARCH_FAILED and err.value.message == "grep search command was killed by signal SIGKILL"
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(None, sig=None), 100, lambda _: False)
    assert "killed by signal (unknown)" in err.value.text


@pytest.mark.parametrize("code", [0, 1, None])
def test_t48_to_t50_raw_output_overflow(code: int | None) -> None:
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(code, sig=15 if code is None else None, overflow=True), 16, lambda _: False)
    assert err.value.code == SEARCH_RAW_OUTPUT_OVERFLOW
    assert err.value.message == (
        "grep produced more raw output than the subprocess seam retained within the 16-byte cap; "
        "narrow pattern, path, or include and retry"
    )


def test_fix_newline_pattern_is_invalid_pattern() -> None:
    stderr = b'rg: the literal "\\n" is not allowed in a regex\n\nConsider enabling multiline mode'
    with pytest.raises(ToolError) as err:
        classify("grep", outcome(2, stderr), 100, lambda _: False)
    assert err.value.code == SEARCH_INVALID_PATTERN


def test_fix_exit_2_with_results_keeps_them() -> None:
    stderr = b"rg: a/no.txt: Permission denied (os error 13)\nrg: b/x: Permission denied (os error 13)\n"
    result = classify("grep", outcome(2, stderr, stdout=b"{...}"), 100, lambda _: True)
    assert result.unreadable == 2 and not result.no_matches


# --- §8.1 sampling (T51–T59) ---------------------------------------------------------------------------


def sample(paths: list[str], cap: int, root: str = ".") -> tuple[list[str], int, int]:
    s = sample_across_top_level(paths, cap, root)
    return s.items, s.shown_groups, s.total_groups


def test_t51() -> None:
    paths = ["v/a", "v/b", "v/c", "v/d", "src/e", "guide/f"]
    assert sample(paths, 3) == (["v/a", "src/e", "guide/f"], 3, 3)
    assert sample(paths, 5) == (["v/a", "v/b", "v/c", "src/e", "guide/f"], 3, 3)


def test_t52() -> None:
    assert sample(["solo/a", "many/b", "many/c", "many/d"], 3) == (["solo/a", "many/b", "many/c"], 2, 2)


def test_t53_large_input_is_linear() -> None:
    paths = [f"group-{i}/only" for i in range(12500)] + [f"late/{i}" for i in range(12500)]
    started = time.perf_counter()
    items, shown, total = sample(paths, len(paths) - 1)
    assert time.perf_counter() - started < 0.5
    assert shown == total == 12501 and len(items) == len(paths) - 1


def test_t54() -> None:
    assert sample(["a/1", "b/1", "c/1", "d/1"], 2) == (["a/1", "b/1"], 2, 4)


def test_t55_absolute_outside_paths() -> None:
    assert sample(["/out/a", "/out/b", "/away/c", "/away/d"], 2) == (["/out/a", "/away/c"], 2, 2)


def test_t56_flat() -> None:
    assert sample(["a.ts", "b.ts", "c.ts"], 2) == (["a.ts", "b.ts"], 2, 3)


def test_t57_explicit_roots() -> None:
    ws = ["workspace/vendor/a", "workspace/vendor/b", "workspace/source/c", "workspace/guides/d"]
    assert sample(ws, 3, "workspace") == (["workspace/vendor/a", "workspace/source/c", "workspace/guides/d"], 3, 3)
    assert sample(["./vendor/a.ts", "./src/b.ts"], 5, ".") == (["./vendor/a.ts", "./src/b.ts"], 2, 2)
    assert sample(["/vendor/a.ts", "/src/b.ts"], 5, "/") == (["/vendor/a.ts", "/src/b.ts"], 2, 2)
    assert sample(["root/a/one", "root/a/two", "root/b/three"], 2, "root")[0] == ["root/a/one", "root/b/three"]
    assert sample(["other/a.ts"], 5, "src")[1:] == (1, 1)
    assert sample(["src"], 5, "src")[1:] == (1, 1)


def test_t58_backslash_is_a_filename_character() -> None:
    assert sample(["old\\one", "old\\two", "src/a"], 2) == (["old\\one", "old\\two"], 2, 3)


def test_t59_many_groups() -> None:
    items, shown, total = sample([f"g{i}/f" for i in range(125_000)], 100)
    assert (len(items), shown, total) == (100, 100, 125_000)


# --- §8.1 glob results (T60–T76) -------------------------------------------------------------------------


def test_t60_display_paths() -> None:
    rel = [to_workdir_relative(p, "/sessions/s1") for p in ("/sessions/s1/src/a.ts", "/elsewhere/b.ts", "rel/c.ts")]
    assert rel == ["src/a.ts", "/elsewhere/b.ts", "rel/c.ts"]


def test_t61_glob_validation() -> None:
    with pytest.raises(ToolError) as err:
        glob_mod.validate({"pattern": "  "})
    assert err.value.code == INVALID_ARGS and err.value.message == "pattern must be a non-empty string"
    with pytest.raises(ToolError) as err:
        glob_mod.validate({"pattern": "*", "path": " "})
    assert err.value.message == "path must be a non-empty string when given"
    assert glob_mod.validate({"pattern": " *.ts "}) == (" *.ts ", None)  # not trimmed


def test_t62_glob_argv_with_path() -> None:
    assert glob_mod.build_argv("*.ts", "sub", NO_DENY)[-2:] == ["--", "sub"]


def test_t63_capped_and_spilled(monkeypatch: pytest.MonkeyPatch) -> None:
    spill = FakeSpill()
    app = make_app(spill, globMaxResults=2)
    result = run_glob(monkeypatch, app, ["a.ts", "b.ts", "c.ts", "d.ts"], sessionId="session-1")
    assert result["text"] == (
        "a.ts\nb.ts\n\n(Showing 2 of 4 paths. Full sorted result stored at: /spill/glob-results.txt. "
        "Use the fake retrieval hint.)"
    )
    assert spill.saves == [("session-1", "glob-results.txt", "a.ts\nb.ts\nc.ts\nd.ts")]
    assert result["spill"] == {"locator": "/spill/glob-results.txt", "bytes": 19, "retrievalHint": FAKE_HINT}


def test_t64_sampled_footer() -> None:
    paths = ["vendor/a.ts", "vendor/b.ts", "vendor/c.ts", "src/d.ts", "guide/e.md", "top.txt"]
    page = glob_mod.render(paths, root=".", max_results=3, sample=True, spill=None)
    assert page.text == (
        "vendor/a.ts\nsrc/d.ts\nguide/e.md\n\n(Showing 3 of 6 paths, sampled across 3 of the 4 top-level entries "
        "this pattern matched instead of taken in modification-time order. Narrow path to inspect a specific "
        "subtree. The complete result could not be saved; narrow pattern or path to see more.)"
    )


def test_t65_sampling_off() -> None:
    paths = ["vendor/a.ts", "vendor/b.ts", "vendor/c.ts", "src/d.ts", "guide/e.md"]
    page = glob_mod.render(paths, root=".", max_results=3, sample=False, spill=None)
    assert page.text == (
        "vendor/a.ts\nvendor/b.ts\nvendor/c.ts\n\n(Showing 3 of 5 paths. The complete result could not be saved; "
        "narrow pattern or path to see more.)"
    )


def test_t66_t67_sampling_under_a_path() -> None:
    paths = ["workspace/vendor/a.ts", "workspace/vendor/b.ts", "workspace/source/c.ts", "workspace/guides/d.md"]
    page = glob_mod.render(paths, root="workspace", max_results=3, sample=True, spill=None)
    assert "workspace/vendor/a.ts\nworkspace/source/c.ts\nworkspace/guides/d.md" in page.text
    assert "sampled across 3 of the 3 top-level entries" in page.text
    root = to_workdir_relative("/w/workspace", "/w")
    shown = [to_workdir_relative("/w/" + p, "/w") for p in paths]
    assert glob_mod.render(shown, root=root, max_results=3, sample=True, spill=None).text == page.text


def test_t68_no_narrowing_hint_when_every_entry_is_shown() -> None:
    paths = ["vendor/a.ts", "vendor/b.ts", "vendor/c.ts", "src/d.ts"]
    assert glob_mod.render(paths, root=".", max_results=3, sample=True, spill=None).text == (
        "vendor/a.ts\nvendor/b.ts\nsrc/d.ts\n\n(Showing 3 of 4 paths, sampled across 2 of the 2 top-level entries "
        "this pattern matched instead of taken in modification-time order. The complete result could not be "
        "saved; narrow pattern or path to see more.)"
    )


def test_t69_fits() -> None:
    assert glob_mod.render(["c.ts", "a.ts", "b.ts"], root=".", max_results=4, sample=True, spill=None).text == (
        "c.ts\na.ts\nb.ts"
    )


def test_t70_flat_uses_plain_footer() -> None:
    assert glob_mod.render(["a.ts", "b.ts", "c.ts"], root=".", max_results=2, sample=True, spill=None).text == (
        "a.ts\nb.ts\n\n(Showing 2 of 3 paths. The complete result could not be saved; narrow pattern or path to "
        "see more.)"
    )


def test_t71_a_result_that_fits_is_not_spilled(monkeypatch: pytest.MonkeyPatch) -> None:
    spill = FakeSpill()
    result = run_glob(monkeypatch, make_app(spill), ["a.ts"])
    assert spill.saves == [] and result["spill"] is None


@pytest.mark.parametrize("fail", [True, False])
def test_t74_to_t76_unsaved_is_not_an_error(monkeypatch: pytest.MonkeyPatch, fail: bool) -> None:
    app = make_app(FakeSpill(fail=fail), globMaxResults=1)
    if not fail:  # a spill root that is a regular file: the real store refuses, the search does not
        app.spill = SpillStore("/dev/null/spill", max_bytes=1 << 20, max_age_s=60, hint="h")
    result = run_glob(monkeypatch, app, ["a.ts", "b.ts"])
    assert result["text"] == (
        "a.ts\n\n(Showing 1 of 2 paths. The complete result could not be saved; narrow pattern or path to see more.)"
    )
    assert result["spill"] is None


def test_default_session_groups_spill(monkeypatch: pytest.MonkeyPatch) -> None:
    spill = FakeSpill()
    run_glob(monkeypatch, make_app(spill, globMaxResults=1), ["a", "b"])
    assert spill.saves[0][0] == "default"


# --- §8.1 grep results (T77–T88) -------------------------------------------------------------------------


def test_t77_parse_and_render() -> None:
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
    matches = grep_mod.parse_matches(stdout, "/sessions/s1")
    assert matches == [("a.ts", 3, "const x = 1"), ("a.ts", 9, "const y = 2"), ("b.ts", 1, "const z = 3")]
    page = grep_mod.render(matches, max_matches=250, max_line_bytes=2000, spill=None)
    assert page.text == "Found 3 matches\n\na.ts\nLine 3: const x = 1\nLine 9: const y = 2\n\nb.ts\nLine 1: const z = 3"


def test_t78_one_match() -> None:
    page = grep_mod.render([("a.ts", 1, "hit")], max_matches=250, max_line_bytes=2000, spill=None)
    assert page.text == "Found 1 match\n\na.ts\nLine 1: hit"


def test_t79_absolute_match_path_inside_cwd() -> None:
    matches = grep_mod.parse_matches(match_record("/sessions/s1/deep/a.ts", 2, "hit\n"), "/sessions/s1")
    page = grep_mod.render(matches, max_matches=250, max_line_bytes=2000, spill=None)
    assert "deep/a.ts\nLine 2: hit" in page.text


def test_t80_line_cap_on_utf8_boundary() -> None:
    page = grep_mod.render([("a.ts", 1, "aéaéaéaé")], max_matches=250, max_line_bytes=7, spill=None)
    assert "Line 1: aéaéa (line truncated)" in page.text


def test_t81_non_utf8_line() -> None:
    record = orjson.dumps(
        {"type": "match", "data": {"path": {"text": "a.ts"}, "line_number": 4, "lines": {"bytes": "AAECww=="}}}
    )
    page = grep_mod.render(grep_mod.parse_matches(record, "/w"), max_matches=250, max_line_bytes=2000, spill=None)
    assert "Line 4: (line is not valid UTF-8)" in page.text


def test_t82_crlf_stripped_once() -> None:
    assert grep_mod.parse_matches(match_record("a", 1, "windows line\r\n"), "/w")[0][2] == "windows line"
    assert grep_mod.parse_matches(match_record("a", 1, "bare cr\r"), "/w")[0][2] == "bare cr\r"


def test_t83_grep_capped_and_spilled(monkeypatch: pytest.MonkeyPatch) -> None:
    spill = FakeSpill()
    app = make_app(spill, grepMaxMatches=2)
    result = run_grep(monkeypatch, app, [("a.ts", 1, "one"), ("a.ts", 2, "two"), ("b.ts", 3, "three")], sessionId="s")
    assert result["text"] == (
        "Found 2 of 3 matches\n\na.ts\nLine 1: one\nLine 2: two\n\n(Full grep result stored at: "
        "/spill/grep-results.txt. Use the fake retrieval hint.)"
    )
    assert spill.saves == [
        ("s", "grep-results.txt", "Found 3 matches\n\na.ts\nLine 1: one\nLine 2: two\n\nb.ts\nLine 3: three")
    ]


def test_t86_grep_unsaved(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_grep(
        monkeypatch, make_app(FakeSpill(fail=True), grepMaxMatches=1), [("a.ts", 1, "one"), ("a.ts", 2, "two")]
    )
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
)
def test_t87_grep_validation(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolError) as err:
        grep_mod.validate(params)
    assert err.value.code == INVALID_ARGS and err.value.message == message


def test_t88_whitespace_pattern_and_accepted_includes() -> None:
    assert grep_mod.validate({"pattern": "  ", "include": "*.{ts,tsx}"}) == ("  ", None, "*.{ts,tsx}")
    assert grep_mod.validate({"pattern": "x", "include": "{a,b"})[2] == "{a,b"
    assert grep_mod.validate({"pattern": "x", "include": " !x"})[2] == " !x"


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
)
def test_t89_to_t96_malformed_json_fails_the_search(line: bytes, detail: str) -> None:
    with pytest.raises(ToolError) as err:
        grep_mod.parse_matches(line, "/w")
    assert err.value.code == SEARCH_FAILED
    assert err.value.message == f"grep received malformed ripgrep --json output ({detail})"


def test_array_lines_are_skipped() -> None:
    assert grep_mod.parse_matches(b"[1,2]\n" + match_record("a", 1, "x"), "/w") == [("a", 1, "x")]


def test_fix_non_utf8_file_name_keeps_the_match() -> None:
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
    assert grep_mod.parse_matches(record, "/w") == [("caf\ufffd.txt", 1, "hit")]


# --- §8.1 presentation (T100, T101, T104) and helpers (T105–T107) ------------------------------------------


def test_t100_grep_meta(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_grep(
        monkeypatch, make_app(grepMaxMatches=2), [("a.ts", 1, "one"), ("a.ts", 2, "two"), ("b.ts", 3, "three")]
    )
    assert result["meta"] == {
        "shape": "matches",
        "files": [{"path": "a.ts", "matches": [{"lineNumber": 1, "line": "one"}, {"lineNumber": 2, "line": "two"}]}],
        "truncated": True,
        "total": 3,
    }
    assert view_from_meta(result["meta"]) == {"card": "search", **result["meta"]}


def test_t101_glob_meta(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_glob(monkeypatch, make_app(globMaxResults=2), ["a.ts", "b.ts", "c.ts"])
    assert result["meta"] == {"shape": "paths", "paths": ["a.ts", "b.ts"], "truncated": True, "total": 3}


def test_t104_malformed_meta() -> None:
    assert view_from_meta({"shape": "matches", "files": "nope", "truncated": False, "total": 0}) is None
    assert view_from_meta(42) is None


def test_t105_to_workdir_relative() -> None:
    assert to_workdir_relative("/w/a/b.ts", "/w") == "a/b.ts"
    assert to_workdir_relative("/w", "/w") == "."
    assert to_workdir_relative("/other/b.ts", "/w") == "/other/b.ts"
    assert to_workdir_relative("/w-sibling/b.ts", "/w") == "/w-sibling/b.ts"
    assert to_workdir_relative("rel/b.ts", "/w") == "rel/b.ts"
    assert to_workdir_relative("/w/../up.ts", "/w") == "/w/../up.ts"


def test_t106_preview_short() -> None:
    assert grep_mod.preview_line("short", 100) == "short"
    assert grep_mod.preview_line("x" * 7, 7) == "x" * 7  # exactly the cap is untouched


def test_t107_format_in_first_seen_order() -> None:
    text = grep_mod.format_matches([("b.ts", 2, "x"), ("b.ts", 5, "z"), ("a.ts", 1, "y")])
    assert text == "b.ts\nLine 2: x\nLine 5: z\n\na.ts\nLine 1: y"


# --- §8.6 presentation.spec.ts ---------------------------------------------------------------------------


def test_p1_p2_grouping_first_seen() -> None:
    meta = grep_meta([("b.ts", 2, "x"), ("a.ts", 1, "y"), ("b.ts", 5, "z")], False, 3, 65536)
    assert meta["files"] == [
        {"path": "b.ts", "matches": [{"lineNumber": 2, "line": "x"}, {"lineNumber": 5, "line": "z"}]},
        {"path": "a.ts", "matches": [{"lineNumber": 1, "line": "y"}]},
    ]
    assert grep_meta([], False, 0, 65536)["files"] == []


def test_p3_p4() -> None:
    assert grep_meta([("a.ts", 1, "x"), ("b.ts", 2, "y")], False, 2, 65536)["truncated"] is False
    meta = grep_meta([("a.ts", 1, "one"), ("a.ts", 2, "two")], True, 3, 65536)
    assert [f["path"] for f in meta["files"]] == ["a.ts"] and meta["truncated"] is True and meta["total"] == 3


def test_p5_line_cap_in_meta(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_grep(monkeypatch, make_app(grepMaxLineBytes=7), [("a.ts", 1, "aéaéaéaé")])
    assert result["meta"]["files"][0]["matches"][0]["line"] == "aéaéa (line truncated)"


def test_p6_p7_meta_byte_cap() -> None:
    page = [(f"f{i}.ts", 1, "x" * 60) for i in range(3)]
    meta = grep_meta(page, False, 3, 260)
    assert meta["truncated"] is True and meta["total"] == 3 and len(meta["files"]) < 3
    assert len(orjson.dumps(meta)) <= 260
    meta = grep_meta([("a.ts", 1, "y" * 500)], False, 1, 50)
    assert len(meta["files"]) == 1 and meta["truncated"] is True


def test_p8_to_p10_glob_meta() -> None:
    assert glob_meta(["a", "b"], False, 2, 65536) == {
        "shape": "paths",
        "paths": ["a", "b"],
        "truncated": False,
        "total": 2,
    }
    assert glob_meta(["a.ts", "b.ts"], True, 3, 65536) == {
        "shape": "paths",
        "paths": ["a.ts", "b.ts"],
        "truncated": True,
        "total": 3,
    }
    meta = glob_meta(["p" * 100 + f"{i}.ts" for i in range(3)], False, 3, 180)
    assert meta["truncated"] is True and meta["total"] == 3 and len(meta["paths"]) < 3
    assert len(orjson.dumps(meta)) <= 180


def test_meta_bound_matches_a_naive_reserialisation() -> None:
    page = [(f"dir/{i}.ts", i, "é" * (i % 37)) for i in range(300)]
    for cap in (100, 500, 2000, 9000):
        meta = grep_meta(page, False, 300, cap)
        files = meta["files"]
        assert len(orjson.dumps(meta)) <= cap or len(files) == 1
        if len(files) < 300:  # one more file would not have fitted
            bigger = {**meta, "files": grep_meta(page, False, 300, 10**9)["files"][: len(files) + 1]}
            assert len(orjson.dumps(bigger)) > cap


def test_p11_to_p13_views() -> None:
    payload = {
        "shape": "matches",
        "files": [{"path": "a", "matches": [{"lineNumber": 1, "line": "x"}]}],
        "truncated": False,
        "total": 1,
    }
    assert view_from_meta(payload) == {"card": "search", **payload}
    paths = {"shape": "paths", "paths": ["a"], "truncated": True, "total": 9}
    assert view_from_meta(paths) == {"card": "search", **paths}
    assert view_from_meta({"shape": "matches", "files": [], "truncated": False, "total": 0}) is not None
    assert view_from_meta({"shape": "paths", "paths": [], "truncated": False, "total": 0}) is not None


@pytest.mark.parametrize("meta", [None, "nope", [], 42])
def test_p14_not_objects(meta: Any) -> None:
    assert view_from_meta(meta) is None


@pytest.mark.parametrize(
    "meta",
    [
        {"shape": "paths", "paths": []},
        {"shape": "paths", "paths": [], "truncated": "no", "total": 0},
        {"shape": "paths", "paths": [], "truncated": False},
        {"shape": "paths", "paths": [], "truncated": False, "total": "0"},
    ],
)
def test_p15_missing_or_mistyped_counts(meta: dict[str, Any]) -> None:
    assert view_from_meta(meta) is None


def test_p16_shape() -> None:
    assert view_from_meta({"shape": "other", "truncated": False, "total": 0}) is None
    assert view_from_meta({"truncated": False, "total": 0}) is None


@pytest.mark.parametrize(
    "files",
    [
        "x",
        [None],
        ["x"],
        [[]],
        [{"path": 1, "matches": []}],
        [{"path": "a", "matches": "x"}],
        [{"path": "a", "matches": [None]}],
        [{"path": "a", "matches": [{"lineNumber": "1", "line": "x"}]}],
        [{"path": "a", "matches": [{"lineNumber": 1, "line": 2}]}],
    ],
)
def test_p17_malformed_files(files: Any) -> None:
    assert view_from_meta({"shape": "matches", "files": files, "truncated": False, "total": 0}) is None


@pytest.mark.parametrize("paths", ["x", [1]])
def test_p18_malformed_paths(paths: Any) -> None:
    assert view_from_meta({"shape": "paths", "paths": paths, "truncated": False, "total": 0}) is None


# --- §8.7 spill-local.spec.ts ------------------------------------------------------------------------------


def test_e1_to_e4_encode_segment() -> None:
    assert encode_segment("web_fetch.txt") == "web_fetch.txt"
    assert encode_segment("a-B_9.z") == "a-B_9.z"
    assert encode_segment("../etc/passwd") == "..~002Fetc~002Fpasswd"
    assert encode_segment("a/b") == "a~002Fb"
    assert encode_segment("~") == "~007E"
    assert encode_segment(".") == "~002E"
    assert encode_segment("..") == "~002E~002E"
    assert encode_segment("") == "~"
    assert encode_segment("😀") == "~D83D~DE00"


def test_d1_session_dir() -> None:
    d = session_dir("/spill", "sess-1")
    assert d == session_dir("/spill", "sess-1") and os.path.dirname(d) == "/spill"
    assert re.fullmatch(r"session-[0-9a-f]{12}", os.path.basename(d))
    assert os.path.basename(d) == "session-" + hashlib.sha256(b"sess-1").hexdigest()[:12]
    assert d != session_dir("/spill", "sess-2")


def store(root: Path, **kw: Any) -> SpillStore:
    return SpillStore(
        str(root),
        max_bytes=kw.get("max_bytes", 1 << 30),
        max_age_s=kw.get("max_age_s", 3600),
        hint=texts.DEFAULT_RETRIEVAL_HINT,
        rescan_every_s=0,  # see every utime a test makes at once
    )


def test_f1_to_f4_saving(tmp_path: Path) -> None:
    s = store(tmp_path / "root")
    ref = s.save_text("sess-1", "r.txt", "héllo")
    path = Path(ref.locator)
    assert path.read_text() == "héllo" and ref.bytes == 6
    assert str(path.parent) == session_dir(str(tmp_path / "root"), "sess-1")
    assert re.fullmatch(r"[0-9a-f]{12}-r\.txt", path.name)
    evil = Path(s.save_text("sess-1", "../../evil", "x").locator)
    assert evil.parent == path.parent and "/.." not in str(evil)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "root").stat().st_mode) == 0o700
    assert path.parent.is_dir() and path.is_file()
    assert s.save_text("sess-1", "r.txt", "again").locator != ref.locator
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp")]  # nothing half-written


def test_s1_to_s3_service(tmp_path: Path) -> None:
    ref = store(tmp_path).save_text("sess-1", "grep-results.txt", "the full body")
    assert os.path.dirname(ref.locator) == session_dir(str(tmp_path), "sess-1")
    assert Path(ref.locator).read_text() == "the full body" and ref.bytes == 13
    assert ref.retrieval_hint == "Use read with offset/limit, or grep this path to search within it."
    assert os.path.isabs(SpillStore(".", max_bytes=1, max_age_s=1, hint="h").root)
    cfg = config_mod.build({"sampleOverCapGlobResults": True}, environ={"XDG_STATE_HOME": "/x"})
    assert cfg.spill_dir == "/x/dsh-search/spill"


def test_s4_root_is_a_file(tmp_path: Path) -> None:
    root = tmp_path / "file"
    root.write_text("not a dir")
    with pytest.raises(OSError):
        store(root).save_text("s", "a.txt", "x")


def test_fix_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = store(tmp_path)
    real_write = os.write

    def failing_write(fd: int, data: Any) -> int:
        if len(data) > 100:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", failing_write)
    with pytest.raises(OSError):
        s.save_text("s", "big.txt", "x" * 1000)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_retention_by_age_then_size(tmp_path: Path) -> None:
    s = store(tmp_path, max_bytes=25, max_age_s=100)
    refs = [s.save_text("s", f"{i}.txt", "x" * 10) for i in range(2)]
    now = time.time()
    os.utime(refs[0].locator, (now - 500, now - 500))  # past the age limit
    os.utime(refs[1].locator, (now - 50, now - 50))
    newest = s.save_text("other", "n.txt", "y" * 10)
    assert not os.path.exists(refs[0].locator) and os.path.exists(refs[1].locator)
    big = s.save_text("s", "big.txt", "z" * 20)  # total over 25: the oldest go first, never the new one
    assert os.path.exists(big.locator)
    assert not os.path.exists(refs[1].locator) and not os.path.exists(newest.locator)


def test_retention_between_scans_uses_the_queue_of_oldest(tmp_path: Path) -> None:
    s = SpillStore(str(tmp_path), max_bytes=35, max_age_s=3600, hint="h", rescan_every_s=3600)
    refs = [s.save_text("s", f"{i}.txt", "x" * 10) for i in range(3)]
    assert all(os.path.exists(r.locator) for r in refs)
    fourth = s.save_text("s", "3.txt", "x" * 10)  # 40 bytes > 35: the oldest goes, without a rescan
    assert not os.path.exists(refs[0].locator) and os.path.exists(fourth.locator)
    os.unlink(refs[1].locator)  # removed behind the store's back: its index entry is just stale
    s.save_text("s", "4.txt", "x" * 10)
    assert os.path.exists(refs[2].locator)
    # Retention at start on an empty store, then saves past the size limit before any rescan is due.
    fresh = SpillStore(str(tmp_path / "fresh"), max_bytes=25, max_age_s=3600, hint="h", rescan_every_s=3600)
    fresh.enforce_retention()
    saved = [fresh.save_text("s", f"{i}.txt", "x" * 10) for i in range(3)]
    assert [os.path.exists(r.locator) for r in saved] == [False, True, True]
    # Saves in progress (.tmp-*) are never counted nor removed.
    tmp = Path(refs[2].locator).parent / ".tmp-0123456789abcdef"
    tmp.write_text("partial")
    assert SpillStore(str(tmp_path), max_bytes=1, max_age_s=1, hint="h").enforce_retention(now=time.time() + 10)
    assert tmp.exists()


def test_spill_read_paging(tmp_path: Path) -> None:
    from dsh_search.store.spill import SpillReadError

    s = store(tmp_path)
    ref = s.save_text("s", "r.txt", "\n".join(f"line {i}" for i in range(1, 6)))
    assert s.read(ref.locator, 1, 2) == {
        "text": "line 1\nline 2",
        "startLine": 1,
        "endLine": 2,
        "totalLines": 5,
        "nextOffset": 3,
    }
    assert s.read(ref.locator, 5, 2000) == {
        "text": "line 5",
        "startLine": 5,
        "endLine": 5,
        "totalLines": 5,
        "nextOffset": None,
    }
    assert s.read(ref.locator, 9, 10) == {"text": "", "startLine": 9, "endLine": 5, "totalLines": 5, "nextOffset": None}
    outside = tmp_path.parent / "outside.txt"
    outside.write_text("secret")
    for bad in (
        str(outside),
        f"{tmp_path}/../outside.txt",
        "relative/path",
        f"{tmp_path}/{os.path.basename(os.path.dirname(ref.locator))}",
    ):
        with pytest.raises(SpillReadError):
            s.read(bad, 1, 10)
    link = Path(os.path.dirname(ref.locator)) / "0123456789ab-link.txt"
    link.symlink_to(outside)
    with pytest.raises(SpillReadError, match="outside the spill store"):
        s.read(str(link), 1, 10)
    with pytest.raises(SpillReadError, match="names no spill artifact"):
        s.read(os.path.dirname(ref.locator) + "/0123456789ab-missing.txt", 1, 10)


def test_every_tool_error_maps_to_its_code() -> None:
    from dsh_search.methods.errors import KIND_CODES

    assert KIND_CODES == {
        INVALID_ARGS: -32602,
        SEARCH_INVALID_PATTERN: 1001,
        SEARCH_FAILED: 1002,
        SEARCH_RAW_OUTPUT_OVERFLOW: 1003,
        SEARCH_ABORTED: 1004,
    }
    err = ToolError(SEARCH_ABORTED, texts.timed_out("glob", 30000))
    assert err.data() == {"code": "SEARCH_ABORTED", "text": "Error: glob timed out after 30000ms"}
    assert json.dumps(err.data())

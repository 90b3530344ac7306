"""Random small trees and calls against the frozen daemon, judged by a model of upstream run on real rg.

Each example builds a tree (file names that are not UTF-8, symlinks, unreadable files and directories),
picks a cwd made of existing names, symlinks, `.` and `..`, and tiny caps, then asks the daemon for a
glob and a grep. The expected answer comes from running ripgrep itself with upstream's exact argv in the
directory the kernel resolves the cwd to, reading its complete output, and applying upstream's rules and
the daemon's documented fixes:

- the search runs where the kernel resolves cwd, and a cwd the kernel cannot enter does not start;
- the raw-output cap: the raw byte count first (rg is stopped early), then upstream's decoded count;
- exit 2 with results keeps them, and counts every path rg reported, whatever stderrMaxBytes kept;
- a failure's stderr excerpt is the retained tail trimmed as JavaScript trims.

As root, the daemon and the reference rg run as nobody, so that mode 000 really is unreadable.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from tests.support.daemon import Daemon, MakeDaemon
from tests.support.trees import write
from tests.support.unprivileged import reachable_by_nobody, unprivileged_popen, unprivileged_tree

VCS = [f"--glob=!**/{name}{tail}" for name in (".git", ".svn", ".hg", ".bzr", ".jj", ".sl") for tail in ("", "/**")]
UPSTREAM_GLOB = ["--files", "--glob=*", "--sort=modified", "--no-ignore", "--hidden", *VCS]
UPSTREAM_GREP = ["--json", "--regexp=needle"]

_JS_WS = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_JS_TRIM = re.compile(f"^[{_JS_WS}]+|[{_JS_WS}]+$")
_UPSTREAM_REJECTION = re.compile("regex parse error|error parsing glob", re.IGNORECASE)

# (rawOutputMaxBytes, stderrMaxBytes): tiny caps, and the defaults.
CAPS = [(20_000_000, cap) for cap in (65536, 1, 2, 8, 40, 120)] + [(9, 1), (17, 40), (40, 8)]
DIRS = ["a", "b", "a/c", "b/c", "b/c/d"]
NAMES = [b"f.txt", b"needle", b"\xff\xff.txt", b"\xe6\x97.txt", "日本.txt".encode(), b"\xed\xa0\x80x", b"z z"]
CWD_PARTS = ["a", "b", "c", "l0", "l1", ".", ".."]


@st.composite
def trees(draw: st.DrawFn) -> dict[str, Any]:
    dirs = draw(st.lists(st.sampled_from(DIRS), unique=True, max_size=4))
    dirs = sorted({"/".join(d.split("/")[:i]) for d in dirs for i in range(1, d.count("/") + 2)})
    places = ["", *dirs]
    files = draw(
        st.lists(
            st.tuples(st.sampled_from(places), st.sampled_from(NAMES), st.booleans(), st.booleans()),
            min_size=1,
            max_size=8,
        )
    )
    links = []
    for i, place in enumerate(draw(st.lists(st.sampled_from(places), max_size=2))):
        # A relative link to a directory of the tree (the usual case), or to nothing, or to itself.
        up = "../" * (place.count("/") + 1 if place else 0)
        links.append((place, f"l{i}", draw(st.sampled_from([*(up + d for d in dirs), "nowhere", f"l{i}"]))))
    locked = draw(st.lists(st.sampled_from(dirs), max_size=1)) if dirs else []
    # A directory of the tree; or one of its links followed by `..`, which the kernel resolves from the
    # link's target; or a detour through anything.
    base = draw(st.sampled_from(places))
    cwd = [p for p in base.split("/") if p]
    detour = draw(st.integers(0, 2))
    here = [name for place, name, _ in links if place == base]
    if detour == 1 and here:
        cwd += [draw(st.sampled_from(here)), ".."]
    elif detour == 2:
        cwd += draw(st.lists(st.sampled_from(CWD_PARTS), max_size=3))
    return {"dirs": dirs, "files": files, "links": links, "locked": locked, "cwd": cwd}


def build(root: Path, tree: dict[str, Any]) -> None:
    root.mkdir()
    for d in tree["dirs"]:
        (root / d).mkdir(parents=True, exist_ok=True)
    for i, (place, name, needle, unreadable) in enumerate(tree["files"]):
        rel = os.path.join(os.fsencode(place), name) if place else name
        path = write(root, rel, "needle\n" if needle else "other\n", 1000 + i)
        if unreadable:
            path.chmod(0)
    for place, name, target in tree["links"]:
        link = root / place / name
        if not os.path.lexists(link):
            link.symlink_to(target)
    for d in tree["locked"]:
        (root / d).chmod(0)


def reference(named: str, argv: list[str], rg: str) -> tuple[int, bytes, bytes] | None:
    """rg with upstream's argv in the directory the kernel resolves `named` to, as the daemon's user;
    None when the kernel will not go there. (chdir in preexec_fn: after the switch of user.)"""
    try:
        done = subprocess.run(
            [str(reachable_by_nobody(Path(rg))), "--no-config", *argv],
            check=False,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            preexec_fn=lambda: os.chdir(named),
            timeout=30,
            **unprivileged_popen(),
        )
    except subprocess.SubprocessError as exc:
        if isinstance(exc, subprocess.TimeoutExpired):
            raise
        return None
    return done.returncode, done.stdout, done.stderr


def js_trim(text: str) -> str:
    return _JS_TRIM.sub("", text)


def expected_excerpt(stderr: bytes, cap: int) -> str:
    tail = stderr[-cap:]
    excerpt = js_trim(tail.decode("utf-8", "replace"))
    return excerpt + " [stderr truncated]" if excerpt and len(stderr) > cap else excerpt


def grep_paths(stdout: bytes) -> set[str]:
    paths = set()
    for line in stdout.split(b"\n"):
        if line:
            record = json.loads(line)
            if record.get("type") == "match":
                path = record["data"]["path"]
                paths.add(
                    path["text"] if "text" in path else base64.b64decode(path["bytes"]).decode("utf-8", "replace")
                )
    return paths


def expect(tool: str, ref: tuple[int, bytes, bytes] | None, caps: tuple[int, int]) -> dict[str, Any]:
    """What the daemon must answer: upstream's rules, with the daemon's documented fixes."""
    if ref is None:
        return {
            "error": "SEARCH_FAILED",
            "text": f"Error: {tool} could not start its search command (ripgrep launch failed)",
        }
    code, stdout, stderr = ref
    raw_cap, stderr_cap = caps
    if len(stdout) > raw_cap:  # fix: rg is stopped the moment it passes the cap, whatever its exit
        return {
            "error": "SEARCH_RAW_OUTPUT_OVERFLOW",
            "text": f"Error: {tool} produced more raw output than the subprocess seam retained within the "
            f"{raw_cap}-byte cap; narrow pattern, path, or include and retry",
        }
    paths = {p for p in stdout.decode("utf-8", "replace").split("\n") if p} if tool == "glob" else grep_paths(stdout)
    reports = [line for line in stderr.split(b"\n") if line.startswith(b"rg: ")]
    if code not in (0, 1) and not (code == 2 and paths):
        excerpt = expected_excerpt(stderr, stderr_cap)
        if _UPSTREAM_REJECTION.search(excerpt):
            return {"error": "SEARCH_INVALID_PATTERN", "text": f"Error: {tool} pattern rejected by ripgrep: {excerpt}"}
        text = f"Error: {tool} search failed (exit {code})" + (f": {excerpt}" if excerpt else "")
        # With several reports, rg's threads decide their order, and so which end up in the tail.
        return {"error": "SEARCH_FAILED", "text": text, "exact": len(reports) <= 1}
    decoded = len(stdout.decode("utf-8", "replace").encode())
    if decoded > raw_cap:
        return {
            "error": "SEARCH_RAW_OUTPUT_OVERFLOW",
            "text": f"Error: {tool} produced {decoded} bytes of raw output, over the {raw_cap}-byte cap; "
            "narrow pattern, path, or include and retry",
        }
    return {"paths": paths, "unreadable": len(reports) if code == 2 else 0}


def shown(tool: str, text: str) -> tuple[set[str], int]:
    """The paths a result shows, and its `(<n> paths could not be read)` count."""
    unreadable = 0
    found = re.search(r"\n\n\((\d+) paths? could not be read\)$", text)
    if found:
        unreadable, text = int(found.group(1)), text[: found.start()]
    if text in ("No files found", "No matches found"):
        return set(), unreadable
    if tool == "glob":
        return set(text.split("\n")), unreadable
    return {section.split("\n", 1)[0] for section in text.split("\n\n")[1:]}, unreadable


def check(tool: str, response: dict[str, Any], want: dict[str, Any]) -> None:
    if "error" in want:
        assert "error" in response, (response, want)
        data = response["error"]["data"]
        assert data["code"] == want["error"], (data, want)
        if want.get("exact", True):
            assert data["text"] == want["text"]
        else:
            assert data["text"].startswith(f"Error: {tool} search failed (exit 2)")
        return
    assert "result" in response, (response, want)
    assert shown(tool, response["result"]["text"]) == (want["paths"], want["unreadable"])


@pytest.fixture
def pool(start: MakeDaemon) -> Iterator[tuple[Path, Any]]:
    """A scratch root the daemons' user can reach, and one daemon per pair of caps, started on demand."""
    with unprivileged_tree() as root:
        daemons: dict[tuple[int, int], Daemon] = {}

        def daemon(caps: tuple[int, int]) -> Daemon:
            if caps not in daemons:
                raw_cap, stderr_cap = caps
                daemons[caps] = start(
                    "--workdir",
                    str(root),
                    "--spill-dir",
                    str(root / "spill"),
                    "--raw-output-max-bytes",
                    str(raw_cap),
                    "--stderr-max-bytes",
                    str(stderr_cap),
                    **unprivileged_popen(),
                )
            return daemons[caps]

        yield root, daemon


_COUNTER = itertools.count()


@pytest.mark.parametrize("caps", CAPS)
@settings(
    max_examples=8,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(tree=trees())
def test_random_trees_and_calls(pool: tuple[Path, Any], exe: Path, caps: tuple[int, int], tree: dict[str, Any]) -> None:
    root, daemon = pool
    # Each example sits three levels below its own directory: a cwd detour climbs at most three `..`, so
    # it never reaches the earlier examples' files (which would push glob past its 100-path cap).
    example = f"ex{next(_COUNTER)}/p/q/r"
    (root / example).parent.mkdir(parents=True)
    build(root / example, tree)
    cwd = "/".join([example, *tree["cwd"]])
    named = os.path.join(str(root), cwd)
    d = daemon(caps)
    rg = f"{exe}-rg"
    for tool, argv in (("glob", UPSTREAM_GLOB), ("grep", UPSTREAM_GREP)):
        want = expect(tool, reference(named, argv, rg), caps)
        kind = want.get("error") or ("unreadable" if want["unreadable"] else "results")
        event(f"{tool}: {'could not start' if 'could not start' in want.get('text', '') else kind}")
        pattern = "*" if tool == "glob" else "needle"
        check(tool, d.call(tool, {"pattern": pattern, "cwd": cwd}), want)


_PATTERN_BODY = st.lists(
    st.sampled_from(list("\t\v\f\r \x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u3000\ufeffab")),
    min_size=4,
    max_size=12,
).map("".join)
# The diagnostic ends with 30 bytes after the echoed pattern: most of these caps keep a tail starting
# inside it; 1 and 2 keep whitespace only.
_REJECTION_CAPS = [(20_000_000, cap) for cap in (34, 36, 37, 38, 40, 65536, 1, 2)]


@pytest.mark.parametrize("caps", _REJECTION_CAPS)
@settings(max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_PATTERN_BODY)
def test_random_rejected_patterns(pool: tuple[Path, Any], exe: Path, body: str, caps: tuple[int, int]) -> None:
    # "(" + body is an unclosed group: rg echoes the pattern in its diagnostic, and a small stderr cap
    # keeps a tail that starts among the edgy characters, or inside one of them.
    root, daemon = pool
    pattern = "(" + body
    ref = reference(str(root), ["--json", f"--regexp={pattern}"], f"{exe}-rg")
    assert ref is not None and ref[0] == 2
    want = expect("grep", ref, caps)
    check("grep", daemon(caps).call("grep", {"pattern": pattern, "cwd": "."}), want)


RAW_CAP = 24
_NAME_BYTES = st.sampled_from([*b"az.-_ ", 0x80, 0xBF, 0xC3, 0xE6, 0x97, 0xA5, 0xED, 0xA0, 0xF0, 0x9F, 0xFF])


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cores=st.lists(st.lists(_NAME_BYTES, min_size=1, max_size=6).map(bytes), min_size=1, max_size=3, unique=True),
    slack=st.integers(0, 8),
)
def test_random_names_against_the_raw_cap(pool: tuple[Path, Any], exe: Path, cores: list[bytes], slack: int) -> None:
    # Names padded so that the listing is a few bytes under the raw cap: whether the decoded listing
    # is over it depends on how many bytes the replacements add.
    root, daemon = pool
    names = [b"n" + core for core in cores]  # never "." or ".."
    pad = RAW_CAP - slack - sum(len(n) + 1 for n in names)
    assume(pad >= 0)
    names[0] += b"p" * pad
    assume(len(set(names)) == len(names))
    example = f"ex{next(_COUNTER)}"
    for i, name in enumerate(names):
        write(root / example, name, "x", 1000 + i)
    want = expect("glob", reference(os.path.join(root, example), UPSTREAM_GLOB, f"{exe}-rg"), (RAW_CAP, 65536))
    event("glob: " + want.get("error", "results"))
    check("glob", daemon((RAW_CAP, 65536)).call("glob", {"pattern": "*", "cwd": example}), want)

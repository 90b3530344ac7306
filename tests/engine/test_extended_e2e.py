"""The extended grep profile end to end (`--grep-profile extended`): each parameter against ripgrep's own
output for the same flags, through the frozen executable and its sidecar, in both framings; and, with the
profile off, nothing of it (docs/behaviour.md, "The extended grep profile").

ripgrep's answer is read here from its own `--json` (or `--files-with-matches`, `--count`), run directly
on the same tree: the daemon must show exactly its lines (matches `Line N: `, context `Line N- `), files
and counts, sorted by path and line. The suite's second pass runs this with the index on.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import Daemon, MakeDaemon, error_of, text_of

TREE = {
    "src/a.c": "int Foo = 1;\nint foo = 2;\n// FOO here\nend\nstart here\nnothing\nfoo at the end\n",
    "src/a_test.c": "foo in a test\nend\nstart\n",
    "src/crlf.c": "foo crlf\r\nbar\r\nfoo again\r\n",
    "src/Upper.h": "FOO_MACRO\nfoo\n",
    "docs/x.md": "a.b( literal\nend\nstart\nfoo\n",
    "lib/many.c": "".join(f"line {i} foo\n" if i % 3 else f"line {i}\n" for i in range(1, 16)),
}
Entry = tuple[str, int, str, str]  # (path, line number, ":" match or "-" context, text)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("extended")
    for name, text in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode())
    return root


def extended(start: MakeDaemon, tree: Path, *extra: str, framing: str = "ndjson") -> Daemon:
    return start("--workdir", str(tree), "--grep-profile", "extended", *extra, framing=framing)


# --- ripgrep's own answer ----------------------------------------------------------------------------------


def rg(exe: Path, tree: Path, *args: str) -> bytes:
    done = subprocess.run(
        [f"{exe}-rg", "--no-config", *args], cwd=tree, capture_output=True, check=False, stdin=subprocess.DEVNULL
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def rg_lines(exe: Path, tree: Path, *args: str) -> list[Entry]:
    """ripgrep's match and context lines (--json), sorted by path and line."""
    out: list[Entry] = []
    for raw in rg(exe, tree, "--json", *args).splitlines():
        record = json.loads(raw)
        if record["type"] not in ("match", "context"):
            continue
        data = record["data"]
        lines = data["lines"]
        text = lines["text"] if "text" in lines else base64.b64decode(lines["bytes"]).decode("utf-8", "replace")
        kind = ":" if record["type"] == "match" else "-"
        for i, line in enumerate(text.removesuffix("\n").split("\n")):
            out.append((data["path"]["text"], data["line_number"] + i, kind, line.removesuffix("\r")))
    return sorted(out, key=lambda e: (e[0], e[1]))


def shown_lines(text: str) -> list[Entry]:
    """The lines a content page shows, as (path, number, kind, text)."""
    out: list[Entry] = []
    for section in text.split("\n\n")[1:]:
        if section.startswith("("):  # the footer
            continue
        path, *lines = section.split("\n")
        for line in lines:
            head, _, rest = line.partition(" ")
            assert head == "Line", line
            number = ""
            while rest[0].isdigit():
                number, rest = number + rest[0], rest[1:]
            assert rest[:2] in (": ", "- "), line
            out.append((path, int(number), rest[0], rest[2:]))
    return out


def grep(d: Daemon, **params: Any) -> str:
    return text_of(d.call("grep", params))


# --- each parameter ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "flags"),
    [
        ({"pattern": "foo", "ignoreCase": True}, ["--ignore-case"]),
        ({"pattern": "foo", "smartCase": True}, ["--smart-case"]),
        ({"pattern": "Foo", "smartCase": True}, ["--smart-case"]),
        ({"pattern": "Foo", "smartCase": True, "ignoreCase": True}, ["--smart-case", "--ignore-case"]),
        ({"pattern": "a.b(", "fixedStrings": True}, ["--fixed-strings"]),
        ({"pattern": "end\\nstart", "multiline": True}, ["--multiline"]),
        ({"pattern": "foo", "exclude": "*_test.c"}, ["--glob=!*_test.c"]),
        ({"pattern": "foo", "exclude": "src"}, ["--glob=!src"]),
        ({"pattern": "foo", "include": "*.c", "exclude": "a*"}, ["--glob=*.c", "--glob=!a*"]),
        ({"pattern": "FOO", "context": 1}, ["--context=1"]),
        ({"pattern": "FOO", "before": 2}, ["--before-context=2"]),
        ({"pattern": "FOO", "after": 1, "context": 3}, ["--before-context=3", "--after-context=1"]),
        ({"pattern": "here", "context": 2, "multiline": True, "ignoreCase": True}, ["-C2", "-U", "-i"]),
    ],
    ids=lambda value: json.dumps(value) if isinstance(value, dict) else "",
)
def test_each_parameter_shows_what_ripgrep_finds(
    start: MakeDaemon, exe: Path, tree: Path, params: dict[str, Any], flags: list[str]
) -> None:
    d = extended(start, tree)
    text = grep(d, **params)
    expected = rg_lines(exe, tree, *flags, f"--regexp={params['pattern']}")
    assert expected, "the case finds something"
    assert shown_lines(text) == expected, text
    matches = len({(p, n) for p, n, kind, _ in expected if kind == ":"}) if not params.get("multiline") else None
    if matches is not None:
        assert text.startswith(f"Found {matches} match"), text


def test_files_and_counts_are_ripgreps(start: MakeDaemon, exe: Path, tree: Path) -> None:
    d = extended(start, tree)
    listed = grep(d, pattern="foo", outputMode="files", ignoreCase=True)
    files = sorted(rg(exe, tree, "--files-with-matches", "--ignore-case", "--regexp=foo").decode().split())
    assert listed == f"Found {len(files)} files\n\n" + "\n".join(files)
    counted = grep(d, pattern="foo", outputMode="count", exclude="*.md")
    counts = dict(
        line.rsplit(":", 1) for line in rg(exe, tree, "--count", "--glob=!*.md", "--regexp=foo").decode().split()
    )
    total = sum(int(n) for n in counts.values())
    assert counted == f"Found {total} matches in {len(counts)} files\n\n" + "\n".join(
        f"{path}: {counts[path]}" for path in sorted(counts)
    )
    result = d.result("grep", {"pattern": "foo", "outputMode": "count"})
    assert result["meta"]["shape"] == "paths" and len(result["meta"]["counts"]) == len(result["meta"]["paths"])
    assert grep(d, pattern="no such thing anywhere", outputMode="files") == "No matches found"


def test_offset_and_limit_page_through_the_complete_result(start: MakeDaemon, exe: Path, tree: Path) -> None:
    d = extended(start, tree, "--grep-max-matches", "4")
    expected = rg_lines(exe, tree, "--regexp=foo")
    total = len(expected)
    first = d.result("grep", {"pattern": "foo"})
    assert first["text"].startswith(f"Found 4 of {total} matches\n\n")  # upstream's page: no offset, no limit
    pages: list[Entry] = []
    offset = 0
    while offset < total:
        text = grep(d, pattern="foo", offset=offset, limit=3)
        shown = shown_lines(text)
        assert text.startswith(f"Found {total} matches; showing {offset + 1}-{offset + len(shown)}\n\n"), text
        if offset + 3 < total:
            assert f"(Next page: offset {offset + 3}. Full grep result stored at: " in text
        pages += shown
        offset += 3
    assert pages == expected
    assert grep(d, pattern="foo", offset=total + 1) == f"Found {total} matches; offset {total + 1} is past the last one"
    artifact = Path(first["spill"]["locator"]).read_text()
    assert shown_lines(artifact) == expected  # the complete result, every match
    files = sorted(rg(exe, tree, "--files-with-matches", "--regexp=foo").decode().split())
    listed = [grep(d, pattern="foo", outputMode="files", offset=i, limit=2) for i in range(0, len(files), 2)]
    assert [line for page in listed for line in page.split("\n\n")[1].split("\n")] == files


def test_a_page_of_matches_keeps_the_context_around_them_only(start: MakeDaemon, exe: Path, tree: Path) -> None:
    d = extended(start, tree)
    everything = rg_lines(exe, tree, "--context=1", "--regexp=foo", "lib/many.c")
    page = shown_lines(grep(d, pattern="foo", path="lib/many.c", context=1, offset=2, limit=2))
    matches = [e for e in everything if e[2] == ":"][2:4]
    assert [e for e in page if e[2] == ":"] == matches
    low, high = matches[0][1] - 1, matches[-1][1] + 1
    assert page == [e for e in everything if low <= e[1] <= high and (e[2] == "-" or e in matches)]


def test_bad_values_are_invalid_arguments(start: MakeDaemon, tree: Path) -> None:
    d = extended(start, tree)
    for params, message in [
        ({"limit": 0}, "limit must be an integer from 1 to 250"),
        ({"limit": 251}, "limit must be an integer from 1 to 250"),
        ({"offset": -1}, "offset must be an integer of at least 0"),
        ({"before": 11}, "before must be an integer from 0 to 10"),
        ({"context": -1}, "context must be an integer from 0 to 10"),
        ({"outputMode": "lines"}, 'outputMode must be one of "content", "files", "count"'),
        ({"exclude": "a,b"}, "exclude must be one glob, not a comma-separated list (use {a,b} alternation instead)"),
        (
            {"exclude": "!x"},
            'exclude must be a plain glob: it already leaves out what it matches ("!…" is not supported)',
        ),
        ({"ignoreCase": "yes"}, 'invalid arguments: "ignoreCase" must be a boolean'),
    ]:
        code, kind, text = error_of(d.call("grep", {"pattern": "foo", **params}))
        assert (code, kind, text) == (-32602, "INVALID_ARGS", f"Error: {message}"), params


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
def test_the_profile_decides_what_a_model_sees(start: MakeDaemon, tree: Path, framing: str) -> None:
    upstream = start("--workdir", str(tree), framing=framing)
    on = extended(start, tree, framing=framing)
    schemas = {
        name: next(t for t in d.result("tools/list")["tools"] if t["name"] == "grep")["inputSchema"]
        for name, d in (("upstream", upstream), ("extended", on))
    }
    assert list(schemas["upstream"]["properties"]) == ["pattern", "path", "include"]
    assert list(schemas["extended"]["properties"]) == [
        *("pattern", "path", "include", "ignoreCase", "smartCase", "fixedStrings", "before", "after", "context"),
        *("outputMode", "multiline", "exclude", "offset", "limit"),
    ]
    assert schemas["extended"]["properties"]["outputMode"]["enum"] == ["content", "files", "count"]
    # With the profile off, the extended parameters are extra keys: ignored, as upstream ignores them.
    plain = upstream.result("grep", {"pattern": "foo"})
    assert upstream.result("grep", {"pattern": "foo", "ignoreCase": True, "outputMode": "count", "limit": 0}) == plain
    assert on.result("initialize")["config"]["grepProfile"] == "extended"

"""The frozen dsh-search.exe's answers equal rg.exe's own, under wine.

For each tree and call, the expected answer comes from running the sidecar dsh-search-rg.exe itself with
upstream's argv in the tree (glob: `--files --glob=<pattern> --sort=modified --no-ignore --hidden` and the
VCS exclusions; grep: `--json --regexp=<pattern>`), reading its complete output and applying upstream's
rendering and the daemon's documented fixes (files in byte order of their display paths, matches by line
number; a match line loses one trailing `\\n` or `\\r\\n`). The trees mix CRLF and LF files, names that
differ only in case, non-ASCII names, ignore files, hidden files and a binary file; every file has its own
modification time, so ripgrep's --sort=modified order is the daemon's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.daemon import MakeDaemon, text_of
from tests.support.locations import sidecar_of
from tests.windows.conftest import run_wine

VCS = [f"--glob=!**/{name}{tail}" for name in (".git", ".svn", ".hg", ".bzr", ".jj", ".sl") for tail in ("", "/**")]
TREES: dict[str, dict[str, bytes]] = {
    "mixed": {
        "src/main.py": b"def needle():\r\n    return 'needle'\r\n",
        "src/util/helpers.py": b"# needle helper\nvalue = 1\n",
        "README.md": b"The needle is here.\nAnd there: needle.\n",
        "docs/été.txt": "needle été\r\n".encode(),
        "Notes.txt": b"needle upper\n",
        "notes.txt": b"needle lower\r\n",
        ".hidden/secret.txt": b"needle hidden\n",
        ".gitignore": b"build/\n*.log\n",
        "build/out.txt": b"needle built\n",
        "app.log": b"needle logged\n",
        "data/blob.bin": b"needle\x00binary\n",
        "data/space name.txt": b"a needle with spaces\n",
    },
    "wide": {f"d{i % 7}/f{i:02d}.txt": b"needle %d\r\n" % i if i % 2 else b"needle %d\n" % i for i in range(40)},
}
CALLS = [
    ("glob", "*"),
    ("glob", "*.txt"),
    ("glob", "**/util/*"),
    ("grep", "needle"),
    ("grep", "[a-z.)]+$"),  # `$` before `\n` only: not at the end of a CRLF line
    ("grep", "[a-z.)]+\\r?$"),
    ("grep", "^needle \\d+$"),
    ("grep", "[Nn]ot"),
]


def make(root: Path, files: dict[str, bytes]) -> Path:
    for i, (name, data) in enumerate(sorted(files.items())):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (1_700_000_000 + i * 10, 1_700_000_000 + i * 10))
    return root


def rg_exe(exe: Path, cwd: Path, args: list[str]) -> bytes:
    done = run_wine([str(sidecar_of(exe)), "--no-config", *args], cwd=cwd, timeout=60)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def expected_glob(exe: Path, cwd: Path, pattern: str) -> str:
    out = rg_exe(exe, cwd, ["--files", f"--glob={pattern}", "--sort=modified", "--no-ignore", "--hidden", *VCS])
    paths = out.decode().splitlines()
    return "\n".join(paths) if paths else "No files found"


def expected_grep(exe: Path, cwd: Path, pattern: str) -> str:
    files: dict[str, list[tuple[int, str]]] = {}
    for line in rg_exe(exe, cwd, ["--json", f"--regexp={pattern}"]).splitlines():
        record = json.loads(line)
        if record["type"] != "match":
            continue
        data = record["data"]
        text = data["lines"]["text"]
        text = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
        files.setdefault(data["path"]["text"], []).append((data["line_number"], text))
    total = sum(map(len, files.values()))
    if not total:
        return "No matches found"
    sections = [
        path + "".join(f"\nLine {n}: {text}" for n, text in sorted(matches))
        for path, matches in sorted(files.items(), key=lambda item: item[0].encode())
    ]
    return f"Found {total} match{'es' if total != 1 else ''}\n\n" + "\n\n".join(sections)


@pytest.mark.parametrize("name", sorted(TREES))
def test_answers_equal_rg_exes_own(start: MakeDaemon, exe: Path, tmp_path: Path, name: str) -> None:
    root = make(tmp_path / name, TREES[name])
    d = start("--workdir", str(root), "--index", "off", raw=True)
    for tool, pattern in CALLS:
        want = (expected_glob if tool == "glob" else expected_grep)(exe, root, pattern)
        assert text_of(d.call(tool, {"pattern": pattern})) == want, (tool, pattern)

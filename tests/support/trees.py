"""Generated file trees for end-to-end tests, with controlled modification times, and corpora that keep
ripgrep busy."""

from __future__ import annotations

import fnmatch
import os
import random
import shutil
import subprocess
from pathlib import Path

BASE_NS = 1_700_000_000 * 10**9

# A regex with no required literal over Unicode word classes: ripgrep has to run its regex engine over
# every line, which takes about a second per 20 MB on one core, and it matches nothing in the slow
# corpus (no word there has 9 letters), so a search lasts without flooding its output cap.
SLOW_PATTERN = r"(?:\w+\W){1,20}?\w{9}\b"


def files_named(root: Path, pattern: str) -> list[Path]:
    """The files under root whose names match the pattern, sorted; a directory that vanishes while this
    walks is skipped. A running daemon removes index sets it no longer trusts, so Path.rglob, which raises
    when a directory disappears under it, is the wrong tool for its index directory."""
    found: list[Path] = []
    for parent, _dirs, names in os.walk(root):
        found.extend(Path(parent) / name for name in fnmatch.filter(names, pattern))
    return sorted(found)


def write(root: Path, rel: str | bytes, content: str | bytes = "", mtime_s: float | None = None) -> Path:
    path = Path(os.fsdecode(os.path.join(os.fsencode(root), os.fsencode(rel))))
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    if mtime_s is not None:
        ns = int(mtime_s * 10**9)
        os.utime(path, ns=(ns, ns))
    return path


def upstream_fixture(root: Path) -> Path:
    """The tree of upstream's integration cases (docs/behaviour.md, "Upstream's integration cases")."""
    write(root, "src/alpha.ts", "export const alpha = 1\n// TODO: refit alpha\n", 2000)
    write(root, "src/beta.ts", "export const beta = 2\n", 2020)
    write(root, "notes.md", "alpha appears here too\n", 2030)
    write(root, ".hidden.ts", "hidden\n", 2040)
    write(root, ".git/config.ts", "vcs\n", 2050)
    write(root, "spaced dir/wei'rd name.ts", "weird\n", 2060)
    write(root, "dashes.txt", "value --flag value\n", 2070)
    return root


def rich_tree(root: Path) -> Path:
    """Hidden files, a git repo with .gitignore, spaced and quoted names, multibyte and non-UTF-8 content,
    a binary file; distinct mtimes in creation order."""
    files: list[tuple[str | bytes, str | bytes]] = [
        ("README.md", "needle in the readme\n"),
        ("src/main.py", "def needle():\n    return 'héllo wörld needle'\n"),
        ("src/util/helpers.py", "# nothing here\n"),
        (".env.local", "SECRET=needle\n"),
        ('docs/a "quoted" name.md', "needle quoted\n"),
        ("docs/space name.txt", "needle spaced\n"),
        ("data/latin1.txt", b"caf\xe9 needle\n"),
        ("data/blob.bin", b"\x00\x01needle\x00\x02"),
        ("repo/.gitignore", "ignored.log\nbuild/\n"),
        ("repo/kept.txt", "needle kept\n"),
        ("repo/ignored.log", "needle ignored\n"),
        ("repo/build/out.txt", "needle built\n"),
        ("unicode/日本語.txt", "needle 日本語\n"),
    ]
    for i, (rel, content) in enumerate(files):
        write(root, rel, content, 1000 + i)
    subprocess.run(["git", "init", "-q", str(root / "repo")], check=True)
    os.utime(root / "repo" / ".git", ns=(BASE_NS, BASE_NS))
    return root


def many_files(root: Path, groups: dict[str, int], content: str = "hit\n") -> list[str]:
    """`groups` maps a top-level directory to a file count; files get increasing mtimes round the groups
    one after another (all of the first group, then the second, ...). Returns paths in mtime order."""
    order: list[str] = []
    t = 5000.0
    for group, count in groups.items():
        for i in range(count):
            rel = f"{group}/f{i:04d}.txt"
            write(root, rel, content, t)
            order.append(rel)
            t += 1
    return order


def write_slow_corpus(root: Path, files: int = 4, lines: int = 400_000) -> Path:
    """Text files that SLOW_PATTERN needs seconds to scan (about 19 MB each)."""
    root.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta", "ηta", "theta"]
    text = "".join(" ".join(rnd.choice(words) for _ in range(8)) + "\n" for _ in range(lines))
    for i in range(files):
        (root / f"slow-{i}.txt").write_text(text)
    return root


def remove_tree(root: Path) -> None:
    """`root` and everything in it, even entries made unreadable (mode 000): directory modes are put back
    first, top-down, before os.walk enters each one."""
    for dirpath, dirnames, _ in os.walk(root):
        for name in dirnames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, 0o700)
    shutil.rmtree(root, ignore_errors=True)


def project_copy(root: Path) -> Path:
    """A real project's names and lines for measurements that depend on them: this repository's own
    sources (daemon, tests, docs, scripts, clients), copied to `root` without caches, venvs or packages."""
    source = Path(__file__).resolve().parents[2]
    skipped = {"__pycache__", "node_modules", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
    for top in ("daemon", "tests", "docs", "scripts", "clients"):
        for path in sorted((source / top).rglob("*")):
            relative = path.relative_to(source)
            if skipped & set(relative.parts) or not path.is_file() or path.is_symlink():
                continue
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return root

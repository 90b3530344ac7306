"""The rules of grep's walk that no watched directory reports a change of, checked by `stat` instead.

ripgrep decides which files grep reads from ignore files (`.gitignore`, `.ignore`, `.rgignore`), a
repository's `.git/info/exclude` and git's global excludes file, and from where repositories are (a
`.git` directory or file). Inside the workspace those live in watched directories, so an edit raises an
event. Some do not:

- the ignore files, `.git` entries and exclude files of the workspace's **parent directories** (ripgrep
  reads parents' ignore files, and a `.git` above the workspace makes its `.gitignore` files count);
- git's **global excludes file** (`core.excludesFile` in `~/.gitconfig` or `$XDG_CONFIG_HOME/git/config`,
  else `$XDG_CONFIG_HOME/git/ignore`), and those config files themselves;
- an ignore file that is a **symbolic link** to a file elsewhere (its target's edits raise no event in
  the workspace), and a `.git` **file** (a worktree's or a submodule's) that points to a git directory
  elsewhere, whose `info/exclude` applies.

`RuleFiles` keeps the signature of each such file (or that it is missing) as it was when ripgrep last
listed grep's files; `changed()`, run before every grep answer, stats them all again — a few dozen
`stat` calls — and says whether any differs. Then grep's list is in doubt until ripgrep lists it again.

Rules of this module: stat only; which paths to watch this way is decided from what the walk found.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping

log = logging.getLogger("dsh_search.index")

RULE_FILES = (".gitignore", ".ignore", ".rgignore")
_EXCLUDES = re.compile(rb'(?im)^\s*excludesfile\s*=\s*"?\s*(\S+?)\s*"?\s*$')

Signature = tuple[int, int, int, int, int] | None  # (dev, ino, size, mtime_ns, ctime_ns), or missing


def signature(path: str) -> Signature:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _read(path: str, limit: int = 1 << 20) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""


def git_dir_excludes(git_file: str) -> list[str]:
    """The exclude files a `.git` file's repository applies: its git directory's `info/exclude` and, for a
    worktree, its common directory's."""
    head = _read(git_file, 4096).strip()
    if not head.startswith(b"gitdir:"):
        return []
    gitdir = os.fsdecode(head[len(b"gitdir:") :].strip())
    if not os.path.isabs(gitdir):
        gitdir = os.path.normpath(os.path.join(os.path.dirname(git_file), gitdir))
    out = [os.path.join(gitdir, "info", "exclude"), os.path.join(gitdir, "commondir")]
    common = os.fsdecode(_read(os.path.join(gitdir, "commondir"), 4096).strip())
    if common:
        if not os.path.isabs(common):
            common = os.path.normpath(os.path.join(gitdir, common))
        out.append(os.path.join(common, "info", "exclude"))
    return out


def global_sources(environ: Mapping[str, str]) -> list[str]:
    """git's config files and every excludes file they can name (ripgrep reads them the same way)."""
    home = environ.get("HOME", "")
    xdg = environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    configs = [
        p
        for p in (os.path.join(home, ".gitconfig") if home else "", os.path.join(xdg, "git", "config") if xdg else "")
        if p
    ]
    out = list(configs)
    if xdg:
        out.append(os.path.join(xdg, "git", "ignore"))
    for config in configs:
        for match in _EXCLUDES.finditer(_read(config)):
            named = os.fsdecode(match.group(1))
            if named.startswith("~") and home:
                named = home + named[1:]
            out.append(named)
    return out


def parent_sources(real_root: str) -> list[str]:
    """The rule files and repository markers of every directory above the workspace."""
    out: list[str] = []
    directory = os.path.dirname(real_root.rstrip("/")) or "/"
    while True:
        out += [os.path.join(directory, name) for name in RULE_FILES]
        git = os.path.join(directory, ".git")
        out += [git, os.path.join(git, "info", "exclude")]
        if os.path.isfile(git):
            out += git_dir_excludes(git)
        parent = os.path.dirname(directory)
        if parent == directory:
            return out
        directory = parent


class RuleFiles:
    """The files outside the watched tree (or behind a link) whose contents decide grep's walk."""

    def __init__(self, real_root: str, environ: Mapping[str, str]) -> None:
        self._root = real_root
        self._environ = dict(environ)
        self._inside: set[str] = set()
        self._seen: dict[str, Signature] = {}
        self.refresh()

    def add_inside(self, paths: Iterable[str]) -> None:
        """Files found inside the workspace that must be checked this way too (absolute paths)."""
        for path in paths:
            if path not in self._inside:
                self._inside.add(path)
                self._seen[path] = signature(path)

    def refresh(self) -> None:
        """Take every signature now: call before ripgrep lists grep's files, which reads the rules then."""
        paths = [*parent_sources(self._root), *global_sources(self._environ), *sorted(self._inside)]
        self._seen = {path: signature(path) for path in dict.fromkeys(paths)}

    def changed(self) -> str | None:
        """The first file whose signature is not the one taken at the last refresh, or None."""
        for path, seen in self._seen.items():
            now = signature(path)
            if now != seen:
                log.debug("rule file %s: %s, was %s", path, now, seen)
                return path
        return None

    def __len__(self) -> int:
        return len(self._seen)

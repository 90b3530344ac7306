"""The rules of grep's walk, checked by `stat` before every grep: what no watched directory reports.

ripgrep decides which files grep reads from ignore files (`.gitignore`, `.ignore`, `.rgignore`), a
repository's `.git/info/exclude` and git's global excludes file, and from where repositories are (a
`.git` directory or file). An edit of one inside the workspace through its own name raises an event.
Many edits do not:

- the ignore files, `.git` entries and exclude files of the workspace's **parent directories** (ripgrep
  reads parents' ignore files, and a `.git` above the workspace makes its `.gitignore` files count);
- git's **global excludes file** (`core.excludesFile` in `~/.gitconfig` or `$XDG_CONFIG_HOME/git/config`,
  else `$XDG_CONFIG_HOME/git/ignore`), and those config files themselves;
- any rule file in the workspace edited through **another name**: a symbolic link to a file elsewhere, a
  hard link (a shared ignore file), or one that gains a hard link later, from outside the workspace —
  which raises no event at all. So every rule file the walk finds is checked here, whatever it is;
- a `.git` that is not a directory: a **file** (a worktree's or a submodule's `gitdir:`) or a **symbolic
  link** to a repository elsewhere, whose `info/exclude` applies (`git_entry_rules`).

`RuleFiles` keeps the signature of each such file (or that it is missing) as it was when ripgrep last
listed grep's files; `changed()`, run before every grep answer, stats them all again — one `stat` per
rule file, a few dozen in most trees (docs/behaviour.md has the figures) — and says whether any
differs. Then grep's list is in doubt until ripgrep lists it again. A directory (a `.git` reached through
a link) is compared by identity only: what happens inside it is its files' business. A rule file that was
racily clean when its signature was taken (files.racy: changed within a timestamp tick or so) is compared
by its content too, until its times are old enough that any later write must change them.

Rules of this module: stat (and read the few racily clean rule files); which paths to check this way is
decided from what the walk found.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from dsh_search.index.files import racy

log = logging.getLogger("dsh_search.index")

RULE_FILES = (".gitignore", ".ignore", ".rgignore")
_EXCLUDES = re.compile(rb'(?im)^\s*excludesfile\s*=\s*"?\s*(\S+?)\s*"?\s*$')

# (dev, ino, size, mtime_ns, ctime_ns) of a file, (dev, ino, -1, 0, 0) of a directory, None: missing
Signature = tuple[int, int, int, int, int] | None


def signature(path: str) -> Signature:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return (st.st_dev, st.st_ino, -1, 0, 0)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _racy(sig: Signature, now_ns: int) -> bool:
    return sig is not None and sig[2] >= 0 and racy(sig[3], sig[4], now_ns)


def _digest(path: str) -> bytes | None:
    """The content's digest, or None when it is no regular file that can be read."""
    fd = _open_regular(path)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            return hashlib.file_digest(f, "sha256").digest()
    except OSError:
        return None


class _Seen(NamedTuple):
    sig: Signature
    digest: bytes | None  # the content's, while the signature alone cannot tell a change (racily clean)


def _read(path: str, limit: int = 1 << 20) -> bytes:
    """Up to `limit` bytes of a regular file (b"" for anything else: a FIFO or a device is never waited on)."""
    fd = _open_regular(path)
    if fd is None:
        return b""
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""


def _open_regular(path: str) -> int | None:
    """A descriptor of `path` (links followed) when it is a regular file, else None. Opened without
    blocking and checked by the descriptor, not the path: a rule file that is a FIFO holds nothing up."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


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


def git_entry_rules(git: str) -> list[str]:
    """What decides grep's walk for a `.git` entry that is not a directory of the workspace: the entry
    itself, and the exclude files of the repository it is — a directory elsewhere that it links to
    (ripgrep follows the link), or the git directory a `gitdir:` file names."""
    if os.path.isdir(git):
        return [git, os.path.join(git, "info", "exclude")]
    return [git, *git_dir_excludes(git)]


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
    """The files whose contents decide grep's walk, checked by stat (see the module's header)."""

    def __init__(self, real_root: str, environ: Mapping[str, str]) -> None:
        self._root = real_root
        self._environ = dict(environ)
        self._inside: set[str] = set()
        self._seen: dict[str, _Seen] = {}
        self.refresh()

    def add_inside(self, paths: Iterable[str]) -> None:
        """Files found inside the workspace that must be checked this way too (absolute paths)."""
        now = time.time_ns()
        for path in paths:
            if path not in self._inside:
                self._inside.add(path)
                self._seen[path] = _take(path, now)

    def refresh(self) -> None:
        """Take every signature now: call before ripgrep lists grep's files, which reads the rules then."""
        now = time.time_ns()
        paths = [*parent_sources(self._root), *global_sources(self._environ), *sorted(self._inside)]
        self._seen = {path: _take(path, now) for path in dict.fromkeys(paths)}

    def changed(self) -> str | None:
        """The first file whose signature (or, while it is racily clean, content) is not the one taken at
        the last refresh, or None."""
        for path, seen in self._seen.items():
            now_ns = time.time_ns()
            now = signature(path)
            if now != seen.sig:
                log.debug("rule file %s: %s, was %s", path, now, seen.sig)
                return path
            if seen.digest is not None:
                if _digest(path) != seen.digest:
                    log.debug("rule file %s: its content changed within one timestamp tick", path)
                    return path
                if not _racy(now, now_ns):  # from now on any write changes its times
                    self._seen[path] = _Seen(now, None)
        return None

    def __len__(self) -> int:
        return len(self._seen)


def _take(path: str, now_ns: int) -> _Seen:
    """A rule file's state now (`now_ns` taken before): its signature, and its content's digest when the
    signature may not show the next change."""
    sig = signature(path)
    return _Seen(sig, _digest(path) if _racy(sig, now_ns) else None)

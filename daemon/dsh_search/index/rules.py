"""The rules of grep's walk, checked by `stat` for every grep: what no watched directory reports.

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

`RuleFiles` keeps the signature of each such file (device, inode, type, size, modification and change
times; or that it is missing, and why) as it was when ripgrep last listed grep's files; `changed()`,
run for every grep answer (before it, or for this daemon's own searches while ripgrep reads the answer's
files: planner.py, `rules_later`), stats them all again — one `stat` per rule file, in one native call
(engine/native.py), a few dozen files in most trees and ~330 in the Linux tree — and says whether any
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
from array import array
from collections.abc import Iterable, Mapping

from dsh_search.engine import native
from dsh_search.index.files import racy

log = logging.getLogger("dsh_search.index")

RULE_FILES = (".gitignore", ".ignore", ".rgignore")
_EXCLUDES = re.compile(rb'(?im)^\s*excludesfile\s*=\s*"?\s*(\S+?)\s*"?\s*$')


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
    """The files whose contents decide grep's walk, checked by stat (see the module's header).

    Every file's state is the engine's native stat of it (engine/native.py: one call for them all, ~0.3 ms
    for the ~330 rule files of the Linux tree where a `stat` each through Python took ~1 ms before every
    grep answer): six numbers per file, as good as `signature` — a directory by its identity alone,
    and a file that cannot be stat-ed by why — so a change is an array that differs."""

    def __init__(self, real_root: str, environ: Mapping[str, str]) -> None:
        self._root = real_root
        self._environ = dict(environ)
        self._inside: set[str] = set()
        self._paths: list[str] = []
        self._checked: set[str] = set()  # the same paths
        self._names: list[bytes] = []
        self._fields = array("q")  # native.FIELDS numbers per file, as taken at the last refresh
        self._digests: dict[int, bytes] = {}  # file (its place) → content digest, while racily clean
        self.refresh()

    def add_inside(self, paths: Iterable[str]) -> None:
        """Files found inside the workspace that must be checked this way too (absolute paths)."""
        new = [path for path in dict.fromkeys(paths) if path not in self._inside]
        self._inside.update(new)
        checked = self._checked
        new = [path for path in new if path not in checked]  # a parent's rule file may be one already
        if new:
            self._take(new)

    def refresh(self) -> None:
        """Take every signature now: call before ripgrep lists grep's files, which reads the rules then."""
        paths = [*parent_sources(self._root), *global_sources(self._environ), *sorted(self._inside)]
        self._paths, self._checked, self._names, self._fields, self._digests = [], set(), [], array("q"), {}
        self._take(list(dict.fromkeys(paths)))

    def _take(self, paths: list[str]) -> None:
        """Append these files' states now (and their contents' digests while the times cannot tell)."""
        now_ns = time.time_ns()
        first = len(self._paths)
        names = [os.fsencode(path) for path in paths]
        fields = stat_all(names)
        self._paths += paths
        self._checked.update(paths)
        self._names += names
        self._fields += fields
        for k, path in enumerate(paths):
            if _racy_fields(fields, k, now_ns):
                digest = _digest(path)
                if digest is not None:
                    self._digests[first + k] = digest

    def changed(self) -> str | None:
        """The first file whose signature (or, while it is racily clean, content) is not the one taken at
        the last refresh, or None."""
        now_ns = time.time_ns()
        now = stat_all(self._names)
        if now != self._fields:
            for i, path in enumerate(self._paths):
                if _state(now, i) != _state(self._fields, i):
                    log.debug("rule file %s: %s, was %s", path, _state(now, i), _state(self._fields, i))
                    return path
        for i, digest in list(self._digests.items()):
            path = self._paths[i]
            if _digest(path) != digest:
                log.debug("rule file %s: its content changed within one timestamp tick", path)
                return path
            if not _racy_fields(now, i, now_ns):  # from now on any write changes its times
                del self._digests[i]
        return None

    def __len__(self) -> int:
        return len(self._paths)


def stat_all(names: list[bytes]) -> array[int]:
    """Every rule file's state now (links followed): engine/native.py's numbers (tests replace this)."""
    return native.stat_many(names)


def _state(fields: array[int], i: int) -> tuple[int, ...]:
    return tuple(fields[i * native.FIELDS : (i + 1) * native.FIELDS])


def _racy_fields(fields: array[int], i: int, now_ns: int) -> bool:
    """Whether the i-th file is a file (not missing, not a directory) whose times cannot show the next
    change yet."""
    at = i * native.FIELDS
    if fields[at + native.TYPE] == 0 or fields[at + native.SIZE] < 0:
        return False
    return racy(fields[at + native.MTIME], fields[at + native.CTIME], now_ns)

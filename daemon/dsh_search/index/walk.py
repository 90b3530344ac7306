"""Glob's walk of the workspace: every regular file with its modification time, every directory watched.

What glob lists is every regular file (no symbolic links, no devices), hidden and ignored ones included,
with the VCS directories left out — so the index walks for glob itself (`scandir`, which gives the
types for free and the mtimes for one stat each) instead of asking ripgrep. Each directory is watched
*before* it is listed, so nothing created meanwhile is missed: its event is queued.

What the walk cannot see completely it does not pretend to: a directory it cannot watch (no
permission, a name longer than the kernel takes, no watch left) or cannot list, or in which an entry
cannot be looked at, is *in doubt* (`Walked.doubts`, with the reason) and is not descended into —
searches that reach it walk, and ripgrep reports it as it does. A file with more than one hard link
(`Walked.linked`) can change through a name no watch sees. Every rule file of grep's walk (`Walked.rules`:
ignore files, `.git` entries that are not directories and what they point to, repositories' exclude
files) is handed to rules.py to be checked by `stat` too: any of them may be a link, or gain one, to a
name no watch sees.

Rules of this module: a walk is pure work on a thread (inputs in, a `Walked` out); it changes nothing
but the watcher's set of watches.
"""

from __future__ import annotations

import errno
import os
import threading
from typing import NamedTuple

from dsh_search.index.globlist import entry_key, inode_key
from dsh_search.index.rules import RULE_FILES, git_entry_rules
from dsh_search.index.watch import Unwatchable, Watcher, WatchLimit, reason

VCS_NAMES = frozenset((b".git", b".svn", b".hg", b".bzr", b".jj", b".sl"))  # never listed by glob
RULE_NAMES = frozenset(os.fsencode(name) for name in RULE_FILES)  # ignore files grep's walk reads

WATCH_LIMIT = "no inotify watch left (raise fs.inotify.max_user_watches)"


class WalkStopped(Exception):
    """The daemon is going away: the walk stopped where it was."""


class Walked(NamedTuple):
    files: list[bytes]  # globlist.entry_key(mtime, path relative to the workspace, inode) of each file
    doubts: dict[bytes, str]  # directories the walk could not see completely → why
    linked: dict[bytes, int]  # files with more than one hard link → their globlist.inode_key
    rules: set[str]  # rule files to check by stat (absolute paths)


def _doubt(exc: OSError) -> str:
    return reason(exc, "could not be listed")


def watch_vcs(root: bytes, watcher: Watcher, git: bytes, rules: set[str]) -> None:
    """A repository's `.git` directory: watched (not listed), with its `info` directory, for `exclude`;
    the exclude file itself checked by stat too (it may be a symbolic link)."""
    absolute = os.path.join(root, git)
    try:
        watcher.watch(git)
        if os.path.isdir(os.path.join(absolute, b"info")):
            watcher.watch(git + b"/info")
    except (Unwatchable, WatchLimit):
        pass  # its rules are still checked by stat, below
    rules.add(os.fsdecode(os.path.join(absolute, b"info", b"exclude")))


def walk(root: bytes, watcher: Watcher, start: bytes, stop: threading.Event | None = None) -> Walked:
    """Watch and list every directory from `start` down (relative to root), as glob sees the tree.
    Raises `WalkStopped` at the next directory once `stop` is set (the daemon is going away)."""
    files: list[bytes] = []
    doubts: dict[bytes, str] = {}
    linked: dict[bytes, int] = {}
    rules: set[str] = set()
    todo = [start]
    while todo:
        if stop is not None and stop.is_set():
            raise WalkStopped
        directory = todo.pop()
        try:
            if not watcher.watch(directory):
                continue  # gone already: its own event follows
        except Unwatchable as exc:
            doubts[directory] = str(exc)
            continue
        except WatchLimit:
            doubts[directory] = WATCH_LIMIT
            continue
        absolute = os.path.join(root, directory) if directory else root
        try:
            with os.scandir(absolute) as listing:
                entries = list(listing)
        except OSError as exc:
            doubts[directory] = _doubt(exc)
            continue
        for entry in entries:
            name = entry.name
            rel = directory + b"/" + name if directory else name
            try:
                if name in VCS_NAMES:
                    if name == b".git":
                        if entry.is_dir(follow_symlinks=False):
                            watch_vcs(root, watcher, rel, rules)
                        else:  # a `gitdir:` file, or a link to a repository elsewhere
                            rules.update(git_entry_rules(os.fsdecode(entry.path)))
                    continue
                if entry.is_dir(follow_symlinks=False):
                    todo.append(rel)
                    continue
                if name in RULE_NAMES:
                    rules.add(os.fsdecode(entry.path))
                if entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    inode = inode_key(st.st_dev, st.st_ino)
                    files.append(entry_key(st.st_mtime_ns, rel, inode))
                    if st.st_nlink > 1:
                        linked[rel] = inode
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                    continue  # vanished while listed: its own event follows
                doubts[directory] = _doubt(exc)  # an entry that cannot be looked at: ripgrep may say so
    return Walked(files, doubts, linked, rules)

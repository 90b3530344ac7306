"""Glob's walk of the workspace: every regular file with its modification time, every directory watched.

What glob lists is every regular file (no symbolic links, no devices), hidden and ignored ones included,
with the VCS directories left out — so the index walks for glob itself (`scandir`, which gives the
types for free and the mtimes for one stat each) instead of asking ripgrep. Each directory is watched
*before* it is listed, so nothing created meanwhile is missed: its event is queued.

Rules of this module: a walk is pure work on a thread (inputs in, a `Walked` out); it changes nothing
but the watcher's set of watches.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from dsh_search.index.globlist import entry_key
from dsh_search.index.watch import Watcher

VCS_NAMES = frozenset((b".git", b".svn", b".hg", b".bzr", b".jj", b".sl"))  # never listed by glob
RULE_FILES = frozenset((b".gitignore", b".ignore", b".rgignore"))  # ignore files grep's walk reads


class Walked(NamedTuple):
    files: list[bytes]  # globlist.entry_key(mtime, path relative to the workspace) of each file
    unreadable: set[bytes]  # directories that could not be listed


def walk(root: bytes, watcher: Watcher, start: bytes) -> Walked:
    """Watch and list every directory from `start` down (relative to root), as glob sees the tree
    (a repository's `.git` and `.git/info` are watched, not listed, for its `exclude` file)."""
    files: list[bytes] = []
    unreadable: set[bytes] = set()
    todo = [start]
    while todo:
        directory = todo.pop()
        if not watcher.watch(directory):
            continue  # gone already: its own event follows
        absolute = os.path.join(root, directory) if directory else root
        try:
            with os.scandir(absolute) as listing:
                entries = list(listing)
        except OSError:
            unreadable.add(directory)
            continue
        for entry in entries:
            name = entry.name
            rel = directory + b"/" + name if directory else name
            try:
                if name in VCS_NAMES:
                    if name == b".git" and entry.is_dir(follow_symlinks=False):
                        watcher.watch(rel)
                        if os.path.isdir(os.path.join(entry.path, b"info")):
                            watcher.watch(rel + b"/info")
                    continue
                if entry.is_dir(follow_symlinks=False):
                    todo.append(rel)
                elif entry.is_file(follow_symlinks=False):
                    files.append(entry_key(entry.stat(follow_symlinks=False).st_mtime_ns, rel))
            except OSError:
                continue  # vanished while listed
    return Walked(files, unreadable)

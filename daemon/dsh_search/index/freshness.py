"""Freshness: what the index knows of the tree *now*, against what it indexed — and what it is unsure of.

The index answers from what it built; the tree moves on. `Freshness` is the bookkeeping between the two,
kept on the event loop from the events drained before every answer (watch.py):

- `files`, glob's list (globlist.GlobList), kept current: a changed path gets its new mtime (or leaves)
  before glob answers (`refresh_stats`);
- `changed`: paths changed since indexed, each with the generation of its last event. A changed file is
  never answered from the content index: grep reads and judges it itself, and the background indexes it
  again; it leaves `changed` only when both its glob entry and its index rows are of that generation;
- `unknown`: new files for which it is not known yet whether grep's walk reads them (ripgrep settles
  them: `settle`); `grep_new`: files grep reads that the content index has no row for yet;
- `grep_dirs`: the directories grep's walk enters; `unreadable`: directories the walk could not read;
- `skipped`: the files glob lists and grep's walk skips (hidden or ignored), which an include glob can
  bring back; `None` while they are being listed again;
- the doubts: `glob_doubt` (events were lost: every file is in doubt until everything is listed again)
  and `grep_doubt` (grep's list is in doubt — an ignore file, a `.git`, a directory or its permissions
  changed, ripgrep reported problems — until ripgrep has listed grep's files again). A search in doubt
  walks.

Rules of this module: bookkeeping only, on the event loop's thread; the one IO it does is to stat a
changed path and to walk a directory that arrived (both small). Whether a search may be answered is the
workspace's question, answered from here.
"""

from __future__ import annotations

import asyncio
import os
import stat

from dsh_search.index.globlist import GlobList, Matcher, split_key
from dsh_search.index.lister import GrepLister
from dsh_search.index.walk import RULE_FILES, VCS_NAMES, walk
from dsh_search.index.watch import DIRECTORY, GONE, NEW, OVERFLOW, Event, Watcher


class Skipped:
    """The files glob lists that grep's walk skips, and the same joined for a `Matcher`."""

    def __init__(self) -> None:
        self.paths: set[bytes] | None = None  # None: not known (being listed again)
        self._blob: bytes | None = None  # `paths` NUL-separated; None: make again
        self._later: set[bytes] = set()  # found skipped while `paths` is being made again

    def reset(self, paths: set[bytes] | None) -> None:
        """The skipped files made again (with those found meanwhile), or None while they are made."""
        self.paths = None if paths is None else paths | self._later
        self._later = set()
        self._blob = None

    def add(self, path: bytes) -> None:
        if self.paths is None:
            self._later.add(path)
        else:
            self.paths.add(path)
            self._blob = None

    def discard(self, path: bytes) -> None:
        if self.paths is not None and path in self.paths:
            self.paths.discard(path)
            self._blob = None

    def blob(self) -> bytes:
        """The paths NUL-separated, with a NUL before and after (b"": none); joined on the loop's thread,
        which changes the set."""
        if self._blob is None:
            self._blob = b"\0" + b"\0".join(self.paths) + b"\0" if self.paths else b""
        return self._blob


class Freshness:
    def __init__(
        self, root: bytes, watcher: Watcher, files: GlobList, grep_dirs: set[bytes], unreadable: set[bytes]
    ) -> None:
        self.root = root
        self.watcher = watcher
        self.files = files
        self.grep_dirs = grep_dirs
        self.unreadable = unreadable
        self.changed: dict[bytes, int] = {}  # paths changed since indexed → event generation
        self.stated: dict[bytes, int] = {}  # changed paths whose glob entry is current → generation
        self.unknown: set[bytes] = set()
        self.grep_new: set[bytes] = set()
        self.skipped = Skipped()
        self.grep_doubt = False
        self.glob_doubt = False
        self.generation = 0
        self._probes: tuple[int, bytes] | None = None  # (watch changes then, VCS names under the watches)

    def pending(self) -> bool:
        """Whether the background has anything to catch up on."""
        return bool(self.changed or self.grep_doubt or self.glob_doubt or self.unknown)

    # --- events ----------------------------------------------------------------------------------------

    def mark_changed(self, path: bytes) -> None:
        self.generation += 1
        self.changed[path] = self.generation

    def apply(self, event: Event) -> None:
        """One drained event. Raises watch.WatchLimit when a directory that arrived cannot be watched."""
        path, kind, is_dir = event
        if kind == OVERFLOW:  # events were lost: everything is in doubt until listed again
            self.glob_doubt = self.grep_doubt = True
            return
        parts = path.split(b"/")
        if any(part in VCS_NAMES for part in parts):
            if parts[-1] in VCS_NAMES or (b".git" in parts and parts[-1] in (b"info", b"exclude")):
                self.grep_doubt = True  # a repository came or went, or its exclude file changed
            return
        if parts[-1] in RULE_FILES:
            self.grep_doubt = True
        if kind == GONE:
            self._gone(path, is_dir)
        elif kind == DIRECTORY:
            self._arrived(path)
        else:
            self.mark_changed(path)
            if kind == NEW:
                self.unknown.add(path)

    def _forget_file(self, path: bytes) -> None:
        self.mark_changed(path)
        self.skipped.discard(path)
        self.files.apply(path, None)
        self.stated[path] = self.changed[path]
        self.unknown.discard(path)

    def _gone(self, path: bytes, is_dir: bool) -> None:
        if not is_dir:
            self._forget_file(path)
            return
        self.watcher.forget(path)
        prefix = path + b"/"
        for child in self.files_under(prefix):
            self._forget_file(child)
        self.grep_dirs = {d for d in self.grep_dirs if d != path and not d.startswith(prefix)}
        self.unreadable = {d for d in self.unreadable if d != path and not d.startswith(prefix)}

    def _arrived(self, path: bytes) -> None:
        """A directory arrived (created, moved in) or its permissions changed: watch and list it again.
        Whether grep's walk enters it, ripgrep says when grep's files are listed again."""
        walked = walk(self.root, self.watcher, path)
        entries = [split_key(key) for key in walked.files]
        present = {p for _mtime, p in entries}
        for child in self.files_under(path + b"/"):
            if child not in present:
                self._forget_file(child)
        for mtime, child in entries:
            self.mark_changed(child)
            self.files.apply(child, mtime)
            self.stated[child] = self.changed[child]
            self.unknown.add(child)
        self.unreadable = {d for d in self.unreadable if d != path and not d.startswith(path + b"/")}
        self.unreadable |= walked.unreadable
        self.grep_doubt = True

    def files_under(self, prefix: bytes) -> list[bytes]:
        found = self.files.matching(Matcher(b"", prefix, b".*"))
        known = set(found)
        return found + [p for p in self.unknown if p.startswith(prefix) and p not in known]

    # --- what a search needs to know -------------------------------------------------------------------

    def refresh_stats(self) -> None:
        """Give every changed path's glob entry its current modification time (or drop it when gone)."""
        files = self.files
        for path, generation in [(p, g) for p, g in self.changed.items() if self.stated.get(p) != g]:
            try:
                st = os.stat(os.path.join(self.root, path), follow_symlinks=False)
            except OSError:
                files.apply(path, None)
            else:
                files.apply(path, st.st_mtime_ns if stat.S_ISREG(st.st_mode) else None)
            self.stated[path] = generation

    def readable(self, under: bytes) -> bool:
        """No directory the walk from `under` (workspace-relative, b"" or ending in `/`) enters was
        unreadable (ripgrep would report it)."""
        return not any(d.startswith(under) or d == under.rstrip(b"/") for d in self.unreadable)

    async def settle(self, under: bytes, lister: GrepLister, workspace: str) -> bool:
        """Whether grep's walk reads each new file under `under` is settled by ripgrep itself, for files in
        directories the walk enters (their siblings' rules are known); False when a new directory is
        among them (then the background lists grep's files again)."""
        unknown = [p for p in self.unknown if p.startswith(under)]
        if not unknown:
            return True
        directories = sorted({p.rpartition(b"/")[0] for p in unknown})
        if any(d not in self.grep_dirs for d in directories):
            return False
        generation = self.generation
        listed, problems = await lister(workspace, directories, 1)
        if problems:
            return False
        members = {p[2:] if p.startswith(b"./") else p for p in listed.split(b"\0") if p}
        for path in unknown:
            if self.changed.get(path, 0) > generation:
                continue  # changed again meanwhile: still unknown
            self.unknown.discard(path)
            if path in members:
                self.grep_new.add(path)
                self.skipped.discard(path)
            else:
                self.skipped.add(path)
        return not any(p.startswith(under) for p in self.unknown)

    async def include_reaches_skipped(self, prefix: bytes, under: bytes, include: bytes) -> bool:
        """Whether the include glob lets grep's walk search, under the search root, a file that walk does
        not read without it. ripgrep lets an include override its hidden-file and ignore rules: a hidden
        or ignored file the glob matches is searched, and so is what it matches inside a VCS directory
        whose name it matches (`*` enters `.git`). The index holds neither, so such a grep walks. The
        skipped files are known (`skipped`); VCS directories are not listed, so any name a VCS directory
        could have below a watched directory counts. Unknown skipped files: True."""
        if self.skipped.paths is None:
            return True
        skipped = self.skipped.blob()
        watcher = self.watcher
        if self._probes is None or self._probes[0] != watcher.changes:
            probes = [d + b"/" + name if d else name for d in watcher.directories() for name in VCS_NAMES]
            self._probes = (watcher.changes, b"\0" + b"\0".join(probes) + b"\0")
        reach = Matcher(prefix, under, include)
        blobs = [blob for blob in (skipped, self._probes[1]) if blob]
        return await asyncio.to_thread(lambda: any(reach.select(blob) for blob in blobs))

    # --- what the background found ---------------------------------------------------------------------

    def rescanned(self, files: GlobList, unreadable: set[bytes], stale: list[bytes]) -> None:
        """Everything was listed again after lost events: glob's list is the new one, and every indexed
        file whose signature changed is changed."""
        self.files = files
        self.stated.clear()
        self.changed.clear()
        for path in stale:
            self.mark_changed(path)
        self.unreadable = unreadable
        self.unknown.clear()
        self.glob_doubt = False
        self.grep_doubt = True

    def relisted(
        self, generation: int, new: list[bytes], grep_dirs: set[bytes], members: set[bytes], problems: bool
    ) -> None:
        """ripgrep listed grep's files again, starting at `generation`: `new` are the files it reads that
        are not indexed yet, `members` which of the unknown files then it reads."""
        self.grep_new = set(new)
        for path in new:
            self.changed.setdefault(path, generation)
        self.grep_dirs = grep_dirs
        if self.generation == generation:  # nothing happened while ripgrep listed
            self.grep_doubt = problems
            self.unknown.clear()
        else:  # what happened meanwhile is judged next time
            self.unknown -= members
            self.grep_doubt = True

    def reindexed(self, batch: dict[bytes, int], done: list[bytes]) -> None:
        """These paths of a batch (path → generation then) are settled in the index: each leaves `changed`
        if nothing happened to it since and its glob entry is of that generation too."""
        for path in done:
            generation = batch[path]
            if self.changed.get(path) == generation and self.stated.get(path) == generation:
                del self.changed[path]
                self.grep_new.discard(path)

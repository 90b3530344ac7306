"""Freshness: what the index knows of the tree *now*, against what it indexed — and what it is unsure of.

The index answers from what it built; the tree moves on. `Freshness` is the bookkeeping between the two,
kept on the event loop from the events drained before every answer (watch.py) and from the checks that
cover what inotify cannot report (`check`: the workspace root itself, the mount table; `check_rules`:
every rule file of grep's walk, whatever name it is edited through):

- `files`, glob's list (globlist.GlobList), kept current: a changed path gets its new mtime (or leaves)
  before glob answers (`refresh_stats`);
- `changed`: paths changed since indexed, each with the generation of its last event. A changed file is
  never answered from the content index: grep reads and judges it itself, and the background indexes it
  again; it leaves `changed` only when both its glob entry and its index rows are of that generation;
- `linked`: files with other names or views — more than one hard link (seen at the walk, or when a new
  name of it arrives: its other names in the workspace are found by inode in glob's list), or a mount
  point (a single file bound into the workspace, `mounted`). A write through another name raises no
  event for this one, so such a file is never answered from the index alone: glob stats it, grep reads
  it, every time;
- `unknown`: new files for which it is not known yet whether grep's walk reads them (ripgrep settles
  them: `settle`); `grep_new`: files grep reads that the content index has no row for yet;
- `grep_dirs`: the directories grep's walk enters (from ripgrep's own list);
- `skipped`: the files glob lists and grep's walk skips (hidden or ignored), which an include glob can
  bring back; `None` while they are being listed again;
- **doubts**, where a search walks instead (the walk's answer is then the answer, errors and footers
  included): `doubts` — directories the index cannot see completely (unreadable, unwatchable, a name too
  long for the kernel, no watch left, on a network filesystem, on a stacked one — overlayfs — mounted at
  or under the workspace), each with its reason and whether it bears on glob, grep or both;
  `glob_doubt` — everything is in doubt (events were lost, the root was
  moved, replaced or unmounted) until it is all listed again; `grep_doubt` — grep's list is in doubt
  (an ignore file, a repository, a directory or its permissions changed) until ripgrep lists it again.

**Events are hints.** A file event marks its path changed and lets `refresh_stats` and the searches read
the disk; a directory event re-reads that directory from the disk (`_resync`: it is there and is walked
again, or it is not and everything known under it goes), so the order of events, rename pairs and their
halves, renames over an existing entry and exchanges all come out as the disk is. The walk itself never
runs here, on the event loop (a directory moved in may hold any number of files): the directory waits
in `unwalked`, in doubt, until the background has walked it on a thread (`walked_again`).

Rules of this module: bookkeeping only, on the event loop's thread; the IO it does is small and is
the truth it keeps: stat a changed path, stat the rule files, poll the mount table (a directory that
changed is walked by the background, on a thread). Whether a search may be answered is the workspace's
question, answered from here.
"""

from __future__ import annotations

import asyncio
import os
import stat
from typing import NamedTuple

from dsh_search.index import mounts as mount_table
from dsh_search.index.globlist import GlobList, Matcher, inode_key, split_key
from dsh_search.index.lister import GrepLister, Listing
from dsh_search.index.rules import RuleFiles, git_entry_rules
from dsh_search.index.walk import RULE_NAMES, VCS_NAMES, Walked, watch_vcs
from dsh_search.index.watch import DIRECTORY, GONE, NEW, OVERFLOW, ROOT, UNREADABLE, Event, Watcher

GLOB_AND_GREP, GREP_ONLY = "glob and grep", "grep"
BEING_READ = "created, moved in or changed: being read again"


class Doubt(NamedTuple):
    reason: str
    glob: bool  # glob's answers under it walk
    grep: bool  # grep's answers under it walk


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


def _directory(path: bytes) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _identity(path: bytes) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def walk_doubts(walked: Walked) -> dict[bytes, Doubt]:
    """A walk's doubts as they bear on the searches: a directory that is only unreadable hides nothing from
    grep that grep could read either (ripgrep reports it if its walk enters it: `relisted`); any other
    reason leaves changes unseen, for both tools."""
    return {d: Doubt(reason, True, reason != UNREADABLE) for d, reason in walked.doubts.items()}


class Freshness:
    def __init__(
        self,
        root: bytes,
        real_root: str,
        watcher: Watcher,
        walked: Walked,
        files: GlobList,
        grep_dirs: set[bytes],
        rules: RuleFiles,
        mounts: dict[bytes, mount_table.Mount] | None,
        mount_watch: mount_table.MountWatch,
    ) -> None:
        self.root = root
        self.real_root = real_root
        self.watcher = watcher
        self.files = files
        self.grep_dirs = grep_dirs
        self.rules = rules
        self.root_identity = _identity(root)
        self.doubts: dict[bytes, Doubt] = walk_doubts(walked)
        self.linked: set[bytes] = set(walked.linked)
        self.mounted: set[bytes] = set()  # mount points that are not directories (a file bound here)
        self._names_of: set[int] = set()  # inodes seen under a new name whose other names are to be found
        rules.add_inside(walked.rules)
        self.changed: dict[bytes, int] = {}  # paths changed since indexed → event generation
        self.stated: dict[bytes, int] = {}  # changed paths whose glob entry is current → generation
        self.unknown: set[bytes] = set()
        self.grep_new: set[bytes] = set()
        self.skipped = Skipped()
        self.glob_doubt: str | None = None  # why everything is in doubt (None: it is not)
        self.grep_doubt: str | None = None  # why grep's list is in doubt (None: it is not)
        self.grep_stale = False  # grep's list is to be asked of ripgrep again (a doubt can outlive it)
        self.unwalked: set[bytes] = set()  # directories to walk again (none under another), in doubt until then
        self.generation = 0
        self._probes: tuple[int, bytes] | None = None  # (watch changes then, VCS names under the watches)
        self._mount_watch = mount_watch  # armed before `mounts` was read: every change since is seen
        self.mounts: dict[bytes, mount_table.Mount] = {}
        if mounts is not None:
            self._mounted(mounts)

    def close(self) -> None:
        self._mount_watch.close()

    def pending(self) -> bool:
        """Whether the background has anything to catch up on (a root that is gone waits for `check`)."""
        rescan = self.glob_doubt is not None and self.root_identity is not None
        return bool(self.changed or self.grep_stale or rescan or self.unknown or self.unwalked)

    # --- events ----------------------------------------------------------------------------------------

    def mark_changed(self, path: bytes) -> None:
        self.generation += 1
        self.changed[path] = self.generation

    def _touch(self, path: bytes) -> None:
        """A file event: the path changed, and what it is now is read from the disk when asked."""
        self.mark_changed(path)
        self.stated.pop(path, None)

    def doubt_everything(self, reason: str) -> None:
        if self.glob_doubt is None:
            self.glob_doubt = reason
        self.doubt_grep(reason)

    def doubt_grep(self, reason: str) -> None:
        if self.grep_doubt is None or not self.grep_stale:
            self.grep_doubt = reason
        self.grep_stale = True

    def apply(self, events: list[Event]) -> None:
        """A batch of drained events: files first, then every directory that changed, read again from the
        disk (one that lies under another read again is covered by it)."""
        directories: set[bytes] = set()
        for path, kind in events:
            if kind == OVERFLOW:
                self.doubt_everything("file events were lost (inotify's event queue overflowed)")
                continue
            if kind == ROOT:
                self.doubt_everything("the workspace directory itself was moved, deleted or unmounted")
                continue
            parts = path.split(b"/")
            if any(part in VCS_NAMES for part in parts):
                self._vcs(path, parts, kind)
                continue
            if parts[-1] in RULE_NAMES:
                self.doubt_grep(f"an ignore file changed: {os.fsdecode(path)}")
                if kind == NEW:  # checked by stat from now on: another name of it may be edited
                    self.rules.add_inside([os.fsdecode(os.path.join(self.root, path))])
            if kind == DIRECTORY:
                directories.add(path)
                continue
            self._touch(path)
            if kind == NEW:
                self.unknown.add(path)
                # Looked at now: a file arriving with other names makes its names here untrusted at once.
                self._stat(path)
                self.stated[path] = self.changed[path]
            elif kind == GONE:
                self.skipped.discard(path)
        for path in sorted(directories):
            if not any(path.startswith(d + b"/") for d in directories if d != path):
                self._resync(path)
        self._find_names()

    def _vcs(self, path: bytes, parts: list[bytes], kind: str) -> None:
        """An event inside or about a VCS directory: glob never lists them, but a repository that appears or
        vanishes, and its exclude file, change which files grep's walk reads; and a file arriving there
        may be another name of one of the workspace's."""
        if kind == NEW:
            self._other_name(os.path.join(self.root, path))
        first = next(i for i, part in enumerate(parts) if part in VCS_NAMES)
        if parts[first] != b".git":
            return
        rest = parts[first + 1 :]
        git = b"/".join(parts[: first + 1])
        absolute = os.path.join(self.root, git)
        if not rest:  # the .git entry itself
            self.doubt_grep(f"a repository appeared, changed or vanished: {os.fsdecode(git)}")
            if os.path.isdir(absolute) and not os.path.islink(absolute):
                rules: set[str] = set()
                watch_vcs(self.root, self.watcher, git, rules)
                self.rules.add_inside(rules)
            else:
                self.watcher.forget(git)
                if os.path.lexists(absolute):  # a `gitdir:` file, or a link to a repository elsewhere
                    self.rules.add_inside(git_entry_rules(os.fsdecode(absolute)))
        elif rest == [b"info"]:
            self.doubt_grep(f"a repository's info directory changed: {os.fsdecode(path)}")
            if kind == DIRECTORY and os.path.isdir(os.path.join(absolute, b"info")):
                rules = set()
                watch_vcs(self.root, self.watcher, git, rules)
                self.rules.add_inside(rules)
        elif rest == [b"info", b"exclude"]:
            self.doubt_grep(f"a repository's exclude file changed: {os.fsdecode(path)}")

    def _resync(self, path: bytes) -> None:
        """Read a directory again from the disk: watched and walked if it is one now, else forgotten with
        everything known under it."""
        absolute = os.path.join(self.root, path)
        prefix = path + b"/"
        known = self.files_under(prefix)
        self.watcher.forget(path)
        self.unwalked = {d for d in self.unwalked if d != path and not d.startswith(prefix)}
        self.doubts = {d: v for d, v in self.doubts.items() if not (d == path or d.startswith(prefix))}
        self.grep_dirs = {d for d in self.grep_dirs if d != path and not d.startswith(prefix)}
        self.linked = {p for p in self.linked if not p.startswith(prefix)} | self.mounted
        try:
            is_dir = stat.S_ISDIR(os.stat(absolute, follow_symlinks=False).st_mode)
        except OSError:
            is_dir = False
        if not is_dir:
            for child in known:
                self._touch(child)
                self.skipped.discard(child)
                self.unknown.discard(child)
            return
        # Whether grep's walk enters it, and what rules it brings, ripgrep says when it lists grep's files.
        self.doubt_grep(f"a directory was created, moved or its permissions changed: {os.fsdecode(path)}")
        # Its walk waits for the background (off the event loop); searches that reach it walk until then.
        if not any(path.startswith(d + b"/") for d in self.unwalked):
            self.unwalked.add(path)
            self.doubts[path] = Doubt(BEING_READ, True, True)

    def walked_again(self, path: bytes, walked: Walked) -> None:
        """A directory of `unwalked`, walked by the background: what is under it now is known."""
        if path not in self.unwalked:
            return  # read again meanwhile (gone, or waiting for a walk of its own)
        self.unwalked.discard(path)
        if self.doubts.get(path) == Doubt(BEING_READ, True, True):
            del self.doubts[path]
        known = self.files_under(path + b"/")
        entries = [split_key(key) for key in walked.files]
        present = {p for _mtime, p, _inode in entries}
        for child in known:
            if child not in present:
                self._touch(child)
        for mtime, child, inode in entries:
            self.mark_changed(child)
            self.files.apply(child, mtime, inode)
            self.stated[child] = self.changed[child]
            self.unknown.add(child)
        self.doubts.update(walk_doubts(walked))
        self.linked |= walked.linked.keys()
        self._names_of |= set(walked.linked.values())  # its other names may lie outside what was walked
        self.rules.add_inside(walked.rules)
        self._find_names()

    def files_under(self, prefix: bytes) -> list[bytes]:
        found = self.files.matching(Matcher(b"", prefix, b".*"))
        known = set(found)
        return found + [p for p in self.unknown if p.startswith(prefix) and p not in known]

    # --- what inotify cannot say ------------------------------------------------------------------------

    def check(self) -> None:
        """Before an answer: is the root still the directory watched, and did the mount table change?"""
        identity = _identity(self.root)
        if identity != self.root_identity:
            self.root_identity = identity
            if identity is None:
                self.doubt_everything("the workspace directory is gone or cannot be entered")
            else:
                self.doubt_everything("the workspace directory was replaced")
        if self._mount_watch.changed():
            table = mount_table.read()
            if table is not None:
                self._mounted(mount_table.under(self.real_root, table))
                self._find_names()

    def _mounted(self, now: dict[bytes, mount_table.Mount]) -> None:
        """The mounts under the workspace are now these: every mount point that came, went or changed is
        read again; a file mounted on (a single file bound into the workspace: its writes raise events
        in its source's directory, not here) is never answered from the index alone while it is; what is
        on a network or stacked filesystem is in doubt for good."""
        before, self.mounts = self.mounts, now
        files = {point for point in now if point and not _directory(os.path.join(self.root, point))}
        for point in sorted(set(before) | set(now)):
            if before.get(point) == now.get(point):
                continue
            if point == b"":
                if before:  # the filesystem holding the root itself changed: look at everything again
                    self.doubt_everything("a filesystem was mounted or unmounted at or above the workspace")
            elif before:
                self._resync(point)
            if point in files or point in self.mounted:
                self._touch(point)  # another file now, or the one beneath again
        self.mounted = files
        self.linked |= files
        self._mount_doubts()

    def _mount_doubts(self) -> None:
        """What is on a filesystem whose changes may raise no event here is in doubt: a network or FUSE one
        wherever it is mounted, a stacked one (overlayfs) mounted at or under the workspace. A stacked one
        holding the workspace from above (a container's root filesystem) is not: its layers are images,
        which overlayfs itself does not allow to change while it is mounted (docs/behaviour.md)."""
        for point, mount in self.mounts.items():
            reason = mount_table.hidden_changes(mount.fstype)
            if reason is None:
                continue
            above = point == b"" and mount.point.rstrip("/") != self.real_root.rstrip("/")
            if above and mount_table.stacked(mount.fstype):
                continue
            self.doubts[point] = Doubt(reason, True, True)

    def check_rules(self) -> None:
        """Before a grep answer: did a rule file change, through whatever name (rules.py)?"""
        if self.grep_doubt is None:
            changed = self.rules.changed()
            if changed is not None:
                self.doubt_grep(f"a rule file of grep's walk changed: {changed}")

    def rules_hold(self) -> bool:
        """`check_rules` for a grep answer given before it (planner: `rules_later`), made while ripgrep
        reads the answer's files: whether grep's list still holds. A failing check doubts everything."""
        try:
            self.check_rules()
        except Exception as exc:  # a bug or an OS error must cost speed, never an answer
            self.doubt_everything(f"checking the workspace failed: {exc}")
            return False
        return self.grep_doubt is None

    # --- what a search needs to know -------------------------------------------------------------------

    def refresh_stats(self) -> None:
        """Give every changed path's glob entry its current modification time (or drop it when gone)."""
        for path, generation in [(p, g) for p, g in self.changed.items() if self.stated.get(p) != g]:
            self._stat(path)
            self.stated[path] = generation
        self._find_names()

    def refresh_linked(self, matcher: Matcher | None = None) -> None:
        """Files with other names change without an event: stat the ones a search may list."""
        for path in [p for p in self.linked if matcher is None or matcher.matches(p)]:
            self._stat(path)
        self._find_names()

    def _stat(self, path: bytes) -> None:
        try:
            st = os.stat(os.path.join(self.root, path), follow_symlinks=False)
        except OSError:
            self.files.apply(path, None)
            if path not in self.mounted:
                self.linked.discard(path)
            return
        regular = stat.S_ISREG(st.st_mode)
        inode = inode_key(st.st_dev, st.st_ino)
        self.files.apply(path, st.st_mtime_ns if regular else None, inode)
        if regular and st.st_nlink > 1:
            if path not in self.linked:  # a name of a file with others: they are untrusted too
                self.linked.add(path)
                self._names_of.add(inode)
        elif path in self.linked and path not in self.mounted:
            self.linked.discard(path)
            self.mark_changed(path)  # indexed while it had other names: index it again
            self.stated[path] = self.generation

    def _other_name(self, absolute: bytes) -> None:
        """A file that is no entry of glob's list arrived here: if it has other names, find them."""
        try:
            st = os.stat(absolute, follow_symlinks=False)
        except OSError:
            return
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            self._names_of.add(inode_key(st.st_dev, st.st_ino))

    def _find_names(self) -> None:
        """The other names in the workspace of the files just seen under a new one (a hard link made here,
        or a directory of them moved in), found by inode in glob's list — all at once (one pass over it
        for many): each is a file with other names now, whose writes through them raise no event for it."""
        if self._names_of:
            inodes, self._names_of = self._names_of, set()
            self.linked.update(self.files.named(inodes))

    def in_doubt(self, start: bytes, tool: str) -> str | None:
        """Why a search of `tool` ("glob" or "grep") from this root (workspace-relative, b"" or ending in
        `/`) must walk, or None: a doubtful directory at, under or above it."""
        if self.glob_doubt is not None:
            return self.glob_doubt
        if tool == "grep" and self.grep_doubt is not None:
            return self.grep_doubt
        u = start.rstrip(b"/")
        for d, doubt in self.doubts.items():
            if not (doubt.glob if tool == "glob" else doubt.grep):
                continue
            if not u or d == u or not d or d.startswith(u + b"/") or u.startswith(d + b"/"):
                return doubt.reason
        return None

    def doubt_list(self) -> list[tuple[bytes, str, str]]:
        """Every part in doubt: (workspace-relative path, reason, the tools it bears on)."""
        out: list[tuple[bytes, str, str]] = []
        if self.glob_doubt is not None:
            out.append((b"", self.glob_doubt, GLOB_AND_GREP))
        elif self.grep_doubt is not None:
            out.append((b"", self.grep_doubt, GREP_ONLY))
        for d, doubt in sorted(self.doubts.items()):
            out.append(
                (d, doubt.reason, GLOB_AND_GREP if doubt.glob and doubt.grep else GREP_ONLY if doubt.grep else "glob")
            )
        return out

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
        listing = await lister(workspace, directories, 1)
        if not listing.clean:
            return False
        members = {p[2:] if p.startswith(b"./") else p for p in listing.paths.split(b"\0") if p}
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

    async def include_reaches_skipped(self, prefix: bytes, under: bytes, include_regex: bytes) -> bool:
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
        reach = Matcher(prefix, under, include_regex)
        blobs = [blob for blob in (skipped, self._probes[1]) if blob]
        return await asyncio.to_thread(lambda: any(reach.select(blob) for blob in blobs))

    # --- what the background found ---------------------------------------------------------------------

    def rescanned(self, walked: Walked, files: GlobList, stale: list[bytes]) -> None:
        """Everything was listed again (after lost events, a root moved or replaced): glob's list is the new
        one, and every indexed file whose signature changed is changed."""
        self.files = files
        self.stated.clear()
        self.changed.clear()
        for path in stale:
            self.mark_changed(path)
        self.doubts = walk_doubts(walked)
        self._mount_doubts()
        self.linked = set(walked.linked) | self.mounted
        self.rules.add_inside(walked.rules)
        self.unknown.clear()
        self.unwalked.clear()
        self.root_identity = _identity(self.root)
        self.glob_doubt = None if self.root_identity is not None else "the workspace directory is gone"
        self.doubt_grep("everything was listed again: ripgrep lists grep's files again")

    def relisted(
        self, generation: int, new: list[bytes], grep_dirs: set[bytes], members: set[bytes], listing: Listing
    ) -> None:
        """ripgrep listed grep's files again, starting at `generation`: `new` are the files it reads that
        are not indexed yet, `members` which of the unknown files then it reads, `listing.trouble` what
        it could not read (in doubt for grep from then on)."""
        self.grep_new = set(new)
        for path in new:
            self.changed.setdefault(path, generation)
        self.grep_dirs = grep_dirs
        # ripgrep's own reports are replaced by this listing's; the walk's doubts stay, as the walk saw them.
        self.doubts = {d: Doubt(v.reason, True, v.reason != UNREADABLE) for d, v in self.doubts.items() if v.glob}
        self._mount_doubts()
        trouble = listing.trouble
        for path, complaint in (trouble or {}).items():
            where = path.rpartition(b"/")[0] if complaint.startswith("line ") else path
            old = self.doubts.get(where)
            self.doubts[where] = (
                Doubt(old.reason, old.glob, True) if old else Doubt(f"ripgrep: {complaint}", False, True)
            )
        if trouble is None:  # kept until something changes: asking again would answer the same
            self.grep_doubt = "ripgrep reported problems it did not say the paths of"
            self.grep_stale = False
            self.unknown -= members
        elif self.generation == generation:  # nothing happened while ripgrep listed
            self.grep_doubt = None
            self.grep_stale = False
            self.unknown.clear()
        else:  # what happened meanwhile is judged next time
            self.unknown -= members
            self.doubt_grep("files changed while ripgrep listed grep's files")

    def reindexed(self, batch: dict[bytes, int], done: list[bytes], members: set[bytes], unknown: set[bytes]) -> None:
        """These paths of a batch (path → generation then) are settled in the index: each leaves `changed`
        if nothing happened to it since, its glob entry is of that generation too, and the batch knew
        whether grep reads it (`members`, `unknown`: as they were when the batch began). A new file whose
        membership was not settled then was indexed as one grep does not read; if a search or a listing
        has settled it since — as one grep reads — leaving `changed` would lose it from every later grep:
        it stays, and is indexed again as what it is."""
        for path in done:
            generation = batch[path]
            if path in unknown or (path in members) != (path in self.grep_new):
                continue
            if self.changed.get(path) == generation and self.stated.get(path) == generation:
                del self.changed[path]
                self.grep_new.discard(path)

"""File-change events for the workspace index: inotify (Linux), one watch per directory. The only module
that uses inotify.

Read-your-writes rests on when the kernel queues events: inotify queues a modification, a creation, a
rename or a close-after-write while the writing call runs, before it returns to the writer. So a file
written and closed before a request was sent has its events in the queue by the time the request is
read, and `drain` — a non-blocking read of everything queued, called before a search is answered —
sees them. What inotify cannot see at all (writes through a memory map, a network filesystem's remote
changes, a write through a hard link's other name) the freshness bookkeeping detects another way or
treats as in doubt (freshness.py).

**Events are hints, not deltas.** `drain` turns what the kernel says into `Event(path, kind)`: a file
`NEW` (created or moved in), `CHANGED` (written, closed after writing, metadata) or `GONE` (deleted or
moved away); a `DIRECTORY` to look at again — whatever happened to it: created, deleted, moved in or
out, renamed over another, exchanged with another (`renameat2(RENAME_EXCHANGE)`), its permissions
changed, a filesystem mounted on it or unmounted from it (`IN_UNMOUNT`), its watch dropped
(`IN_IGNORED`), itself moved or deleted (`IN_MOVE_SELF`, `IN_DELETE_SELF`). The caller re-reads the disk
for each path, so the order of events and the pairing of a rename's two halves by cookie do not
matter: an unpaired half is a path that left or arrived, a pair is both. `ROOT`: the workspace root
itself was moved, deleted or unmounted — everything must be looked at again. `OVERFLOW`: events were
lost — likewise.

**Watches by inode, names by path.** The kernel watches inodes: the same directory reached by two
names (a bind mount inside the workspace) is one watch, and its events are reported under every name
(`paths`); a directory moved is the same watch under a new name, its old name dropped once it no longer
leads to that inode.

A watch that cannot be added for lack of watches (`fs.inotify.max_user_watches`) raises `WatchLimit`; one
that cannot be added for another reason (no permission, a name longer than the kernel takes) raises
`Unwatchable`, with the reason; a directory that is no longer there answers False. An inotify instance
that cannot be made raises `WatchLimit` naming the limit (`fs.inotify.max_user_instances`).
"""

from __future__ import annotations

import contextlib
import errno
import os
from typing import NamedTuple

from inotify_simple import INotify, flags

NEW, CHANGED, GONE, DIRECTORY, ROOT, OVERFLOW = "new", "changed", "gone", "directory", "root", "overflow"

_MASK = (
    flags.CREATE
    | flags.DELETE
    | flags.MODIFY
    | flags.ATTRIB
    | flags.CLOSE_WRITE
    | flags.MOVED_FROM
    | flags.MOVED_TO
    | flags.DELETE_SELF
    | flags.MOVE_SELF
    | flags.ONLYDIR
    | flags.DONT_FOLLOW
)
_GONE = flags.DELETE | flags.MOVED_FROM
_ARRIVED = flags.CREATE | flags.MOVED_TO
_SELF = flags.DELETE_SELF | flags.MOVE_SELF | flags.UNMOUNT


class Event(NamedTuple):
    path: bytes  # relative to the workspace root; b"" for the root itself
    kind: str  # NEW, CHANGED, GONE (files); DIRECTORY (look again); ROOT, OVERFLOW (look at everything)


class WatchLimit(Exception):
    """No more inotify watches (ENOSPC: fs.inotify.max_user_watches) or instances may be made."""


class Unwatchable(Exception):
    """A directory that cannot be watched for a reason of its own (the message says which)."""


UNREADABLE = "unreadable (permission denied)"


def reason(exc: OSError, failed: str) -> str:
    """Why a directory is in doubt, from the error of watching or listing it (`failed`: what failed)."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return UNREADABLE
    if exc.errno == errno.ENAMETOOLONG:
        return "its name is longer than the kernel takes (PATH_MAX)"
    return f"{failed} ({os.strerror(exc.errno or 0) or exc})"


class Watcher:
    def __init__(self, root: bytes) -> None:
        self.root = root
        try:
            self._inotify = INotify(nonblocking=True)
        except OSError as exc:
            if exc.errno == errno.EMFILE:
                raise WatchLimit(
                    "no inotify instance may be made (fs.inotify.max_user_instances reached, or the process "
                    "has no file descriptor left)"
                ) from None
            raise WatchLimit(f"no inotify instance may be made: {exc.strerror or exc}") from None
        self._paths: dict[int, set[bytes]] = {}  # watch descriptor → the names of its directory
        self._wd: dict[bytes, int] = {}  # a directory's name → its watch descriptor
        self._inode: dict[int, tuple[int, int]] = {}  # watch descriptor → (st_dev, st_ino) when added
        self.changes = 0  # counts changes to the set of watched directories

    def fileno(self) -> int:
        fd: int = self._inotify.fileno()
        return fd

    def __len__(self) -> int:
        return len(self._paths)

    def directories(self) -> list[bytes]:
        """Every directory name watched now, relative to the root (b"": the root)."""
        return list(self._wd)

    def watching(self, directory: bytes) -> bool:
        return directory in self._wd

    def close(self) -> None:
        self._inotify.close()

    def _absolute(self, directory: bytes) -> bytes:
        return os.path.join(self.root, directory) if directory else self.root

    def watch(self, directory: bytes) -> bool:
        """Watch a directory (relative to the root); call before listing it, so nothing is missed. False
        when it is no longer there (or no longer a directory): its own event says so."""
        path = self._absolute(directory)
        try:
            wd = self._inotify.add_watch(path, _MASK)
            st = os.stat(path, follow_symlinks=False)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise WatchLimit(f"inotify watch limit reached at {len(self)} directories") from None
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                return False
            raise Unwatchable(reason(exc, "cannot be watched")) from None
        old = self._wd.get(directory)
        if old is not None and old != wd:
            self._drop_name(directory)  # this name leads to another directory now
        names = self._paths.setdefault(wd, set())
        inode = (st.st_dev, st.st_ino)
        for other in [n for n in names if n != directory]:
            if not self._same_inode(other, inode):
                self._drop_name(other, remove=False)  # moved: the old name leads elsewhere or nowhere
        names = self._paths.setdefault(wd, set())
        names.add(directory)
        self._wd[directory] = wd
        self._inode[wd] = inode
        self.changes += 1
        return True

    def _same_inode(self, directory: bytes, inode: tuple[int, int]) -> bool:
        try:
            st = os.stat(self._absolute(directory), follow_symlinks=False)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == inode

    def _drop_name(self, directory: bytes, remove: bool = True) -> None:
        wd = self._wd.pop(directory, None)
        if wd is None:
            return
        names = self._paths.get(wd)
        if names is not None:
            names.discard(directory)
            if not names:
                del self._paths[wd]
                self._inode.pop(wd, None)
                if remove:
                    with contextlib.suppress(OSError):  # the kernel dropped it already (the directory is gone)
                        self._inotify.rm_watch(wd)
        self.changes += 1

    def forget(self, directory: bytes) -> None:
        """Stop watching a directory name and every name below it (gone, or to be watched again)."""
        prefix = directory + b"/" if directory else b""
        for name in [d for d in self._wd if d == directory or d.startswith(prefix)]:
            self._drop_name(name)

    def drain(self) -> list[Event]:
        """Every event queued now, without waiting."""
        out: list[Event] = []
        while True:
            batch = self._inotify.read(timeout=0)
            if not batch:
                return out
            for wd, mask, _cookie, name in batch:
                if mask & flags.Q_OVERFLOW:
                    out.append(Event(b"", OVERFLOW))
                    continue
                names = self._paths.get(wd)
                if not names:
                    continue  # a watch already dropped
                if mask & flags.IGNORED:  # the kernel dropped the watch: look at its names again
                    for directory in sorted(names):
                        out.append(Event(directory, ROOT if directory == b"" else DIRECTORY))
                        self._wd.pop(directory, None)
                    del self._paths[wd]
                    self._inode.pop(wd, None)
                    self.changes += 1
                    continue
                if not name or mask & flags.UNMOUNT:  # about the watched directory itself
                    if mask & (_SELF | flags.ATTRIB):
                        for directory in sorted(names):
                            out.append(Event(directory, ROOT if directory == b"" else DIRECTORY))
                    continue
                raw = os.fsencode(name)
                for directory in sorted(names):
                    path = directory + b"/" + raw if directory else raw
                    if mask & flags.ISDIR:
                        out.append(Event(path, DIRECTORY))
                    elif mask & _GONE:
                        out.append(Event(path, GONE))
                    elif mask & _ARRIVED:
                        out.append(Event(path, NEW))
                    else:
                        out.append(Event(path, CHANGED))

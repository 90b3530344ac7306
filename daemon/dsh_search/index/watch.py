"""File-change events for the workspace index: inotify (Linux), one watch per directory.

Read-your-writes rests on when the kernel queues events: inotify queues a modification, a creation, a
rename or a close-after-write while the writing call runs, before it returns to the writer. So a file
written and closed before a request was sent has its events in the queue by the time the request is
read, and `drain` — a non-blocking read of everything queued, called before a search is answered —
sees them. The index trusts nothing else: what inotify cannot see (writes through a memory map, or a
network filesystem's remote changes) it cannot promise to see either (docs/behaviour.md, "The
workspace index").

Events come out as `Event(path, kind, is_dir)` with the path relative to the workspace root (bytes). A queue
overflow (`OVERFLOW`) means events were lost: everything is in doubt. A watch that cannot be added
(the user's watch limit, `fs.inotify.max_user_watches`) raises `WatchLimit`.
"""

from __future__ import annotations

import contextlib
import errno
import os
from typing import NamedTuple

from inotify_simple import INotify, flags

NEW, CHANGED, DIRECTORY, GONE, OVERFLOW = "new", "changed", "directory", "gone", "overflow"

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
_ARRIVED = _ARRIVED_DIR = flags.CREATE | flags.MOVED_TO


class Event(NamedTuple):
    path: bytes  # relative to the workspace root; b"" for the root itself
    kind: str  # NEW: a file was created or moved in; CHANGED: a file was written or its metadata changed;
    #            DIRECTORY: a directory arrived or its metadata changed (look at it again); GONE: the
    #            path was deleted or moved away; OVERFLOW: events were lost
    is_dir: bool = False  # GONE: it was a directory


class WatchLimit(Exception):
    """No more inotify watches may be added (ENOSPC: the user's fs.inotify.max_user_watches)."""


class Watcher:
    def __init__(self, root: bytes) -> None:
        self.root = root
        self._inotify = INotify(nonblocking=True)
        self._dir_of: dict[int, bytes] = {}  # watch descriptor → directory, relative to the root
        self._wd_of: dict[bytes, int] = {}
        self.changes = 0  # counts changes to the set of watched directories

    def fileno(self) -> int:
        fd: int = self._inotify.fileno()
        return fd

    def __len__(self) -> int:
        return len(self._wd_of)

    def directories(self) -> list[bytes]:
        """Every directory watched now, relative to the root (b"": the root)."""
        return list(self._wd_of)

    def close(self) -> None:
        self._inotify.close()

    def watch(self, directory: bytes) -> bool:
        """Watch a directory (relative to the root); call before listing it, so nothing is missed. False
        when it is no longer there (or no longer a directory): its own event says so."""
        path = os.path.join(self.root, directory) if directory else self.root
        try:
            wd = self._inotify.add_watch(path, _MASK)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise WatchLimit(f"inotify watch limit reached at {len(self)} directories") from None
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return False
            raise
        old = self._dir_of.get(wd)
        if old is not None and old != directory:  # the same directory under a new name (moved)
            self._wd_of.pop(old, None)
        self._dir_of[wd] = directory
        self._wd_of[directory] = wd
        self.changes += 1
        return True

    def forget(self, directory: bytes) -> None:
        """Stop watching a directory and everything below it (moved away or deleted)."""
        prefix = directory + b"/" if directory else b""
        self.changes += 1
        for name in [d for d in self._wd_of if d == directory or d.startswith(prefix)]:
            wd = self._wd_of.pop(name)
            self._dir_of.pop(wd, None)
            with contextlib.suppress(OSError):  # the kernel dropped it already (the directory is gone)
                self._inotify.rm_watch(wd)

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
                if mask & flags.IGNORED:
                    directory = self._dir_of.pop(wd, None)
                    if directory is not None and self._wd_of.get(directory) == wd:
                        del self._wd_of[directory]
                        self.changes += 1
                    continue
                directory = self._dir_of.get(wd)
                if directory is None:
                    continue
                if not name:  # about the watched directory itself
                    if mask & (flags.DELETE_SELF | flags.MOVE_SELF):
                        out.append(Event(directory, GONE, True))
                    continue
                raw = os.fsencode(name)
                path = directory + b"/" + raw if directory else raw
                is_dir = bool(mask & flags.ISDIR)
                if mask & _GONE:
                    out.append(Event(path, GONE, is_dir))
                elif is_dir:
                    if mask & (_ARRIVED_DIR | flags.ATTRIB):  # arrived, or its permissions changed
                        out.append(Event(path, DIRECTORY, True))
                elif mask & _ARRIVED:
                    out.append(Event(path, NEW))
                else:
                    out.append(Event(path, CHANGED))

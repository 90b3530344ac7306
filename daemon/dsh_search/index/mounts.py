"""The mount table, as the index needs it: which filesystems are mounted at or under a directory, of what
type, and whether the table changed since it was last read.

inotify says nothing of mounts: a filesystem mounted on a watched directory hides what was watched, and
one unmounted reveals what was under it, without an event in the workspace. Linux makes the table itself
pollable instead — `/proc/self/mountinfo` reports POLLPRI (and POLLERR) once the mount namespace changed,
until it is read again — so `changed()` is one `poll()` with no wait, cheap enough to run before every
answer, and a mount made before a request is seen by it.

A network or FUSE filesystem raises no inotify event for changes made elsewhere (another client of the
server, the FUSE daemon): anything on one is never answered from the index (`REMOTE_FILESYSTEMS`). Nor
does a stacked one (`STACKED_FILESYSTEMS`: overlayfs and its kin) for changes made to the directories it
stacks — an overlay's lower directory edited directly changes what the overlay shows without an event in
it — so one mounted at or under the workspace is never answered from either (`hidden_changes`).

Rules of this module: reads the table and answers questions about it; what a change means for the index
is freshness.py's. Off Linux (no mountinfo) every answer is "unknown": the index is off there anyway.
"""

from __future__ import annotations

import contextlib
import os
import select
from typing import NamedTuple

MOUNTINFO = "/proc/self/mountinfo"

# Filesystems whose changes may come from elsewhere without an inotify event.
REMOTE_FILESYSTEMS = frozenset(
    ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre", "gpfs", "virtiofs")
)


# Filesystems that show other directories (layers, a lower filesystem) whose own changes raise no event in
# the view: overlayfs, the union filesystems before it, and the stacked ones that encrypt or remap a lower
# directory. FUSE ones (fuse-overlayfs, mergerfs) are remote() already.
STACKED_FILESYSTEMS = frozenset(
    ("overlay", "overlayfs", "aufs", "unionfs", "ecryptfs", "shiftfs", "wrapfs", "sdcardfs", "esdfs")
)


def remote(fstype: str) -> bool:
    return fstype in REMOTE_FILESYSTEMS or fstype.startswith("fuse.") or fstype == "fuse"


def stacked(fstype: str) -> bool:
    return fstype in STACKED_FILESYSTEMS


def hidden_changes(fstype: str) -> str | None:
    """Why what a filesystem of this type holds can change without an inotify event, or None."""
    article = "an" if fstype[:1] in ("a", "e", "i", "o", "u") else "a"
    if remote(fstype):
        return f"on {article} {fstype} filesystem, whose changes made elsewhere raise no inotify event"
    if stacked(fstype):
        return f"on {article} {fstype} filesystem, whose layers' own changes raise no inotify event in it"
    return None


class Mount(NamedTuple):
    id: int  # the mount's id (mountinfo's first field): a mount made again has a new one
    point: str  # where it is mounted (absolute, as the kernel spells it)
    fstype: str


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (`\\040`)."""
    if "\\" not in field:
        return field
    out = []
    i = 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse(text: str) -> list[Mount]:
    """The mounts of a mountinfo text (lines that are not as the kernel writes them are skipped)."""
    mounts = []
    for line in text.splitlines():
        head, sep, tail = line.partition(" - ")
        fields = head.split()
        if not sep or len(fields) < 5 or not fields[0].isdigit():
            continue
        fstype = tail.split()[0] if tail.split() else ""
        mounts.append(Mount(int(fields[0]), _unescape(fields[4]), fstype))
    return mounts


def read() -> list[Mount] | None:
    """The current mount table, or None when it cannot be read (not Linux, no /proc)."""
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="surrogateescape") as f:
            return parse(f.read())
    except OSError:
        return None


def holding(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount that holds `path` (an absolute, real path): the longest mount point above it."""
    best: Mount | None = None
    for mount in mounts:
        point = mount.point
        above = path == point or path.startswith(point.rstrip("/") + "/")
        # The later of two mounts at one point is the one in effect (mountinfo lists them in order).
        if above and (best is None or len(point) >= len(best.point)):
            best = mount
    return best


def holding_now(path: str) -> Mount | None:
    """The mount holding `path` (an absolute, real path) now, or None when unknown."""
    mounts = read()
    return holding(path, mounts) if mounts else None


def workspace_unseen(real_root: str) -> str | None:
    """Why a workspace's changes may raise no event at all, or None: it is on a network or FUSE
    filesystem, or it is itself the mount point of a stacked one (one holding it from above, as a
    container's root filesystem does, is taken as it is: see `hidden_changes`)."""
    mount = holding_now(real_root)
    if mount is None:
        return None
    reason = hidden_changes(mount.fstype)
    if reason is None or (stacked(mount.fstype) and mount.point.rstrip("/") != real_root.rstrip("/")):
        return None
    return reason


def under(root: str, mounts: list[Mount]) -> dict[bytes, Mount]:
    """The mounts that decide what is under `root` (a real path), by where they are relative to it: b""
    for the filesystem holding the root itself (whether or not the root is its mount point), and the
    path of every mount point below it."""
    out: dict[bytes, Mount] = {}
    base = root.rstrip("/")
    own = holding(root, mounts)
    if own is not None:
        out[b""] = own
    for mount in mounts:
        point = mount.point
        if point != base and point.startswith(base + "/"):
            out[os.fsencode(point[len(base) + 1 :])] = mount
    return out


class MountWatch:
    """`changed()`: whether the mount table changed since the last call (True at the first call)."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._poll: select.poll | None = None
        with contextlib.suppress(OSError, AttributeError):
            self._fd = os.open(MOUNTINFO, os.O_RDONLY | os.O_CLOEXEC)
            self._poll = select.poll()
            self._poll.register(self._fd, select.POLLPRI | select.POLLERR)
        self._fresh = True

    def changed(self) -> bool:
        if self._fd is None or self._poll is None:
            return False  # no table to watch (not Linux): nothing can be said, and nothing is mounted here
        if self._fresh:
            self._fresh = False
            self._consume()
            return True
        if not self._poll.poll(0):
            return False
        self._consume()
        return True

    def _consume(self) -> None:
        """Read the table through, which re-arms the notification."""
        assert self._fd is not None
        with contextlib.suppress(OSError):
            os.lseek(self._fd, 0, os.SEEK_SET)
            while os.read(self._fd, 1 << 16):
                pass

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

"""Where a workspace's index lives on disk, who may write it, and whether it can be trusted.

    <indexDir>/<workspace key>/used                      touched whenever a daemon uses the workspace
                              /set-<8 hex>/lock          flock'ed by the daemon that writes the set
                                          /trust         the shards' file states as their writer left them
                                          /content-<i>.sqlite (+ -wal: see shards.py)

A workspace's directory is named by its real path's digest and its base name (`workspace_key`). A
*set* is one complete content index (its shards); a daemon uses the newest set no other daemon holds,
and holds it with an exclusive `flock` on its `lock` file for as long as it uses it, so two daemons
never write one set (SQLite's own lock, shards.py, keeps a second process out of a shard as well).

**Trust.** A set is used again only if its files are exactly as the daemon that wrote them left them:
`trust` records, after every write, each shard's database file state (device, inode, size, mtime: a
write by another process changes the mtime, unless that process puts it back on purpose). A set whose
trust file is missing, unreadable, of another shape, or that does not match a database file — random
bytes written into it, a file truncated, replaced or deleted — is set aside (`discard`: renamed away,
then removed) and a fresh set is built; it is never reused. The write-ahead log needs no such record:
SQLite checksums every frame and stops at the first that does not match, so a damaged log loses recent
writes, which the merge at the next start (builder.py) finds by their signatures and writes again.

**A bounded cache.** Indexes of many workspaces accumulate; `evict` keeps their total at or below
`indexMaxBytes`, removing the least recently used workspace's directory first (by its `used` stamp),
never one whose set is held by a live daemon.

**Whose.** The index directory and the workspace's are this user's alone (the manager checks them:
private.py), so nobody else can make or change a set; a set directory that is not this user's alone all
the same (made by an earlier, looser version, say) is neither used nor removed, and neither is another
workspace's directory that is not, when the cache evicts.

Rules of this module: directories, locks, trust and whole sets only; what is inside a shard is
shards.py's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import TYPE_CHECKING, NamedTuple

from dsh_search import osdep, private

if TYPE_CHECKING:  # SQLite is imported when a set is opened, not when the manager names a directory
    from dsh_search.index.shards import Shard

log = logging.getLogger("dsh_search.index")

TRUST = "trust"
TRUST_VERSION = 1


def workspace_key(real_root: str) -> str:
    """The index directory's name for a workspace: its real path's digest, and its name for people."""
    import hashlib  # here: the manager names the directory at the first search; hashlib's import (six
    # extension modules without _hashlib, which the build leaves out) is not the start's to pay

    digest = hashlib.sha256(os.fsencode(real_root)).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(real_root))[:40]
    return f"{digest}-{name or 'root'}"


def workspace_dir(index_dir: str, real_root: str) -> str:
    return os.path.join(index_dir, workspace_key(real_root))


def touch_used(workspace: str) -> None:
    """Mark the workspace's index as used now (the cache evicts the least recently used first)."""
    stamp = os.path.join(workspace, "used")
    with contextlib.suppress(OSError):
        with open(stamp, "a"):
            pass
        os.utime(stamp)


class Unusable(Exception):
    """A set that exists but must not be used: corrupt, of another schema, or not as its writer left it."""


class HeldElsewhere(Exception):
    """A set whose shards another process has open."""


class ShardSet:
    """One set of shards, opened and locked by this daemon."""

    def __init__(self, directory: str, lock_fd: int) -> None:
        self.directory = directory
        self.shards: list[Shard] = []
        self._lock_fd: int | None = lock_fd
        self._lock_identity = _fd_identity(lock_fd)
        self._trust_lock = threading.Lock()

    @classmethod
    def open(cls, workspace: str, count: int, *, fresh: bool = False) -> ShardSet:
        """The newest set under the workspace's directory that no other daemon holds and that can be
        trusted (unless `fresh`), else a new one. A set that cannot be trusted or opened is set aside."""
        sets = sorted(
            (e for e in os.scandir(workspace) if e.name.startswith("set-") and _private(e)),
            key=lambda e: e.stat().st_mtime,
            reverse=True,
        )
        for entry in [*([] if fresh else sets), None]:
            directory = entry.path if entry is not None else os.path.join(workspace, f"set-{os.urandom(4).hex()}")
            os.makedirs(directory, mode=0o700, exist_ok=True)
            fd = os.open(os.path.join(directory, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                osdep.flock_now(fd)
            except OSError:
                os.close(fd)
                continue  # held by another daemon
            opened = cls(directory, fd)
            _remove_temporaries(directory)
            try:
                opened._open_shards(count, new=entry is None)
            except Unusable as exc:
                log.warning("workspace index: set %s cannot be used (%s); setting it aside", directory, exc)
                opened.discard()
                continue
            except HeldElsewhere:
                opened.close()
                continue  # another process has its shards open after all (its lock file was replaced)
            except BaseException:
                opened.close()
                raise
            with contextlib.suppress(OSError):
                os.utime(directory)
            _remove_others(workspace, directory)
            return opened
        raise AssertionError("a new set is always free")

    def _open_shards(self, count: int, *, new: bool) -> None:
        from dsh_search.index.shards import Shard, file_state, held_elsewhere, storage_fault

        names = [f"content-{i}.sqlite" for i in range(count)]
        if not new:
            trusted = self._read_trust()
            for name in names:
                state = file_state(os.path.join(self.directory, name))
                if state is None or trusted.get(name) != list(state):
                    raise Unusable(f"{name} is not as its writer left it")
        try:
            self.shards = [
                Shard(os.path.join(self.directory, name), writable=True, on_write=self._record) for name in names
            ]
        except Exception as exc:
            if held_elsewhere(exc):
                raise HeldElsewhere(str(exc)) from None
            if storage_fault(exc):
                raise Unusable(f"{type(exc).__name__}: {exc}") from None
            raise
        self._record()

    def _read_trust(self) -> dict[str, list[int]]:
        import json  # here and below: a set is opened after the start, which need not import it

        try:
            with open(os.path.join(self.directory, TRUST), "rb") as f:
                data = json.loads(f.read(1 << 20))
        except (OSError, ValueError) as exc:
            raise Unusable(f"no record of how its writer left it ({exc})") from None
        if (
            not isinstance(data, dict)
            or data.get("version") != TRUST_VERSION
            or not isinstance(data.get("files"), dict)
        ):
            raise Unusable("its record of how its writer left it is not one this daemon reads")
        files: dict[str, list[int]] = data["files"]
        return files

    def _record(self, _shard: Shard | None = None) -> None:
        """Write down how this daemon leaves the shards' database files (after every write)."""
        import json

        from dsh_search.index.shards import file_state

        with self._trust_lock:
            files = {}
            for shard in self.shards:
                state = file_state(shard.path)
                if state is not None:
                    files[os.path.basename(shard.path)] = list(state)
            body = json.dumps({"version": TRUST_VERSION, "files": files}).encode()
            temporary = os.path.join(self.directory, f".{TRUST}.{os.getpid()}.{threading.get_ident()}")
            try:
                with open(temporary, "wb") as f:
                    f.write(body)
                os.replace(temporary, os.path.join(self.directory, TRUST))
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                # No record: the next daemon builds afresh rather than trust what it cannot check.
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.directory, TRUST))

    def intact(self) -> bool:
        """Whether the set is still this daemon's, and every shard's files are as it left them."""
        if self._lock_fd is None or _path_identity(os.path.join(self.directory, "lock")) != self._lock_identity:
            return False
        return all(shard.intact() for shard in self.shards)

    def close(self) -> None:
        """Close the shards and release the lock, recording how the files are left — unless they were not
        as this daemon left them, then removing the record, so that no daemon trusts them again."""
        if self._lock_fd is None:
            return
        trusted = bool(self.shards) and self.intact()
        for shard in self.shards:
            with contextlib.suppress(Exception):
                shard.close()
        if trusted:
            self._record()
        else:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.directory, TRUST))
        os.close(self._lock_fd)
        self._lock_fd = None

    def remove(self) -> None:
        """Close the set and delete its files (a set this daemon no longer uses)."""
        self.close()
        _remove_tree(self.directory)

    def discard(self) -> None:
        """Set the set aside for good: renamed out of the sets' names (so no daemon picks it up again),
        then removed. If it cannot even be renamed, its trust record goes, which has the same effect."""
        for shard in self.shards:
            with contextlib.suppress(Exception):
                shard.close()
        self.shards = []
        aside = os.path.join(os.path.dirname(self.directory), f"discarded-{os.urandom(4).hex()}")
        try:
            os.rename(self.directory, aside)
        except OSError:
            aside = self.directory
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.directory, TRUST))
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        _remove_tree(aside)


def _remove_temporaries(directory: str) -> None:
    """Trust records a daemon killed while writing one left under their temporary names (the set's lock is
    held: no other daemon is writing one now)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if entry.name.startswith(f".{TRUST}."):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _remove_others(workspace: str, keep: str) -> None:
    """Remove the workspace's other sets that no daemon holds: a build stopped half way into a fresh set,
    a set replaced by a rebuild, one set aside that could not be removed then. One index per workspace:
    only the set in use is kept."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(workspace):
            if entry.path == keep or not _private(entry):
                continue
            if entry.name.startswith("discarded-"):
                _remove_tree(entry.path)
            elif entry.name.startswith("set-"):
                try:
                    fd = os.open(os.path.join(entry.path, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                except OSError:
                    continue
                try:
                    osdep.flock_now(fd)
                except OSError:
                    continue  # held by a daemon: its business
                else:
                    _remove_tree(entry.path)
                finally:
                    os.close(fd)


def _private(entry: os.DirEntry[str]) -> bool:
    """Whether a directory entry is a directory of this user's alone (else it is left alone, and said so)."""
    try:
        if private.private_entry(entry.stat(follow_symlinks=False)):
            return True
    except OSError:
        return False
    if entry.is_dir(follow_symlinks=False):
        log.warning("workspace index: %s is not this user's alone; it is neither used nor removed", entry.path)
    return False


def _fd_identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _path_identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _remove_tree(directory: str) -> None:
    import shutil

    shutil.rmtree(directory, ignore_errors=True)


def disk_bytes(directory: str) -> int:
    """The size of every file below a directory."""
    total = 0
    for base, _dirs, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(base, name)).st_size
    return total


class Evicted(NamedTuple):
    directory: str
    bytes: int


def in_use(workspace: str) -> bool:
    """Whether a live daemon holds one of the workspace's sets (their locks are taken, then given back)."""
    try:
        entries = list(os.scandir(workspace))
    except OSError:
        return False
    for entry in entries:
        if not entry.name.startswith("set-"):
            continue
        try:
            fd = os.open(os.path.join(entry.path, "lock"), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            osdep.flock_now(fd)
        except OSError:
            return True
        finally:
            os.close(fd)  # closing it gives back a lock taken here
    return False


def evict(index_dir: str, max_bytes: int, keep: str | None = None) -> list[Evicted]:
    """Keep the indexes under `index_dir` at or below `max_bytes` in all, removing whole workspaces' indexes,
    the least recently used first; never `keep` nor one a live daemon holds. Returns what was removed."""
    try:
        entries = [e for e in os.scandir(index_dir) if _private(e)]
    except OSError:
        return []
    sizes = {e.path: disk_bytes(e.path) for e in entries}
    total = sum(sizes.values())
    if total <= max_bytes:
        return []

    def last_used(path: str) -> float:
        for name in ("used", "."):
            with contextlib.suppress(OSError):
                return os.stat(os.path.join(path, name)).st_mtime
        return 0.0

    evicted: list[Evicted] = []
    for path in sorted(sizes, key=last_used):
        if total <= max_bytes:
            break
        if path == keep or in_use(path):
            continue
        _remove_tree(path)
        total -= sizes[path]
        evicted.append(Evicted(path, sizes[path]))
        log.info("workspace index cache: removed %s (%d bytes, least recently used)", path, sizes[path])
    return evicted

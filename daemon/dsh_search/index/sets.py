"""Where a workspace's index lives on disk, and who may write it: shard sets and their locks.

    <indexDir>/<workspace key>/set-<8 hex>/lock
                                          /content-<i>.sqlite (+ SQLite's own -wal, -shm)

A workspace's directory is named by its real path's digest and its base name (`workspace_key`). A
*set* is one complete content index (its shards); a daemon uses the newest set no other daemon holds,
and holds it with an exclusive `flock` on its `lock` file for as long as it uses it, so two daemons
never write one set. A rebuild writes a fresh set beside the old one and removes the old one once no
search reads it.

Rules of this module: directories, locks and whole sets only; what is inside a shard is shards.py's.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # SQLite is imported when a set is opened, not when the manager names a directory
    from dsh_search.index.shards import Shard

log = logging.getLogger("dsh_search.index")


def workspace_key(real_root: str) -> str:
    """The index directory's name for a workspace: its real path's digest, and its name for people."""
    digest = hashlib.sha256(os.fsencode(real_root)).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(real_root))[:40]
    return f"{digest}-{name or 'root'}"


def workspace_dir(index_dir: str, real_root: str) -> str:
    return os.path.join(index_dir, workspace_key(real_root))


class ShardSet:
    """One set of shards, opened and locked by this daemon."""

    def __init__(self, directory: str, lock_fd: int, shards: list[Shard]) -> None:
        self.directory = directory
        self.shards = shards
        self._lock_fd: int | None = lock_fd

    @classmethod
    def open(cls, workspace: str, count: int, *, fresh: bool = False) -> ShardSet:
        """The newest set under the workspace's directory that no other daemon holds (unless `fresh`),
        else a new one. A set that cannot be opened (corrupt, another schema) starts afresh."""
        sets = sorted(
            (e for e in os.scandir(workspace) if e.is_dir(follow_symlinks=False) and e.name.startswith("set-")),
            key=lambda e: e.stat().st_mtime,
            reverse=True,
        )
        for entry in [*([] if fresh else sets), None]:
            directory = entry.path if entry is not None else os.path.join(workspace, f"set-{os.urandom(4).hex()}")
            os.makedirs(directory, mode=0o700, exist_ok=True)
            fd = os.open(os.path.join(directory, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            try:
                try:
                    shards = _shards_in(directory, count)
                except Exception as exc:  # corrupt, or another schema: this set starts afresh
                    log.info("workspace index set %s unusable (%s); rebuilding it", directory, exc)
                    for name in os.listdir(directory):
                        if name != "lock":
                            with contextlib.suppress(OSError):
                                os.unlink(os.path.join(directory, name))
                    shards = _shards_in(directory, count)
                os.utime(directory)
            except BaseException:
                os.close(fd)
                raise
            return cls(directory, fd, shards)
        raise AssertionError("a new set is always free")

    def intact(self) -> bool:
        """Whether every shard file is still the one opened (not deleted or replaced)."""
        return all(shard.intact() for shard in self.shards)

    def close(self) -> None:
        """Close the shards and release the lock (another daemon may take the set then)."""
        for shard in self.shards:
            with contextlib.suppress(Exception):
                shard.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def remove(self) -> None:
        """Close the set and delete its files (a set this daemon no longer uses)."""
        self.close()
        for name in os.listdir(self.directory):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.directory, name))
        with contextlib.suppress(OSError):
            os.rmdir(self.directory)


def _shards_in(directory: str, count: int) -> list[Shard]:
    from dsh_search.index.shards import Shard

    return [Shard(os.path.join(directory, f"content-{i}.sqlite"), writable=True) for i in range(count)]


def disk_bytes(directory: str) -> int:
    """The size of every file below a directory."""
    total = 0
    for base, _dirs, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(base, name)).st_size
    return total

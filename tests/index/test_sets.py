"""Shard sets on disk (dsh_search.index.sets): a set is reused only as its writer left it, anything else is
set aside; stale sets go; the cache stays within its bound, least recently used first, never one in use."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from dsh_search.index.files import Content, Signature
from dsh_search.index.sets import TRUST, ShardSet, evict, in_use, touch_used


def _fill(shard_set: ShardSet) -> None:
    for i, shard in enumerate(shard_set.shards):
        with shard.batch() as batch:
            batch.put(f"f{i}".encode(), Signature(1, 2, 3, 4), Content([b"needle in a file"]))


def test_a_set_left_as_its_writer_left_it_is_reused(tmp_path: Path) -> None:
    first = ShardSet.open(str(tmp_path), 2)
    _fill(first)
    first.close()
    again = ShardSet.open(str(tmp_path), 2)
    assert again.directory == first.directory
    assert again.shards[0].count(b"", None) == 1
    again.close()


def test_a_trust_record_left_half_written_by_a_killed_daemon_is_removed(tmp_path: Path) -> None:
    first = ShardSet.open(str(tmp_path), 2)
    _fill(first)
    first.close()
    stray = Path(first.directory) / f".{TRUST}.12345.67890"  # the temporary name of sets._record
    stray.write_bytes(b'{"version": 1, "fi')
    again = ShardSet.open(str(tmp_path), 2)
    assert again.directory == first.directory
    assert not stray.exists()
    again.close()


def test_a_set_written_by_another_process_is_set_aside(tmp_path: Path) -> None:
    first = ShardSet.open(str(tmp_path), 2)
    _fill(first)
    first.close()
    shard = Path(first.directory) / "content-0.sqlite"
    with open(shard, "r+b") as f:  # random bytes where the pages are: SQLite may not even notice
        f.seek(4096)
        f.write(os.urandom(512))
    fresh = ShardSet.open(str(tmp_path), 2)
    assert fresh.directory != first.directory
    assert not Path(first.directory).exists()  # set aside, never reused
    assert fresh.shards[0].count(b"", None) == 0
    fresh.close()


def test_a_set_others_can_write_is_neither_used_nor_removed(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    workspace = index_dir / "ws"
    workspace.mkdir(parents=True)
    first = ShardSet.open(str(workspace), 1)
    _fill(first)
    first.close()
    Path(first.directory).chmod(0o777)  # as an earlier, looser version (or another user) left it
    fresh = ShardSet.open(str(workspace), 1)
    assert fresh.directory != first.directory and Path(first.directory).is_dir()
    fresh.close()
    workspace.chmod(0o777)
    assert evict(str(index_dir), 0) == []  # nor does the cache remove a workspace's that others can write
    assert Path(first.directory).is_dir()


def test_a_set_without_its_record_is_set_aside(tmp_path: Path) -> None:
    first = ShardSet.open(str(tmp_path), 1)
    first.close()
    (Path(first.directory) / TRUST).unlink()
    fresh = ShardSet.open(str(tmp_path), 1)
    assert fresh.directory != first.directory and not Path(first.directory).exists()
    fresh.close()


def test_a_set_changed_under_a_running_daemon_is_not_intact(tmp_path: Path) -> None:
    shard_set = ShardSet.open(str(tmp_path), 1)
    _fill(shard_set)
    assert shard_set.intact()
    path = shard_set.shards[0].path
    with open(path, "r+b") as f:
        f.seek(100)
        f.write(b"\0" * 8)
    assert not shard_set.intact()
    shard_set.close()
    assert not (Path(shard_set.directory) / TRUST).exists()  # closed as untrusted: no daemon reuses it


def test_a_set_held_by_another_daemon_is_not_taken_and_stale_ones_go(tmp_path: Path) -> None:
    held = ShardSet.open(str(tmp_path), 1)
    stale = tmp_path / "set-00000000"
    stale.mkdir()
    (stale / "lock").write_text("")
    (tmp_path / "discarded-1234").mkdir()
    other = ShardSet.open(str(tmp_path), 1)  # the held set is skipped; the free stale ones are removed
    assert other.directory != held.directory
    assert not stale.exists() and not (tmp_path / "discarded-1234").exists()
    assert Path(held.directory).exists()
    other.close()
    held.close()


def test_the_cache_evicts_the_least_recently_used_first_never_one_in_use(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    sizes = {}
    for i, name in enumerate(["old", "older", "newer", "busy"]):
        workspace = index_dir / name
        (workspace / "set-x").mkdir(parents=True)
        (workspace / "set-x" / "content-0.sqlite").write_bytes(b"x" * 1000)
        (workspace / "set-x" / "lock").write_text("")
        touch_used(str(workspace))
        stamp = time.time() - {"older": 300, "old": 200, "busy": 400, "newer": 10}[name]
        os.utime(workspace / "used", (stamp, stamp))
        sizes[name] = i
    fd = os.open(index_dir / "busy" / "set-x" / "lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a live daemon's
    try:
        assert in_use(str(index_dir / "busy")) and not in_use(str(index_dir / "old"))
        evicted = evict(str(index_dir), 2500, keep=str(index_dir / "newer"))
        assert [Path(e.directory).name for e in evicted] == ["older", "old"]  # busy is older still, but held
        assert sorted(p.name for p in index_dir.iterdir()) == ["busy", "newer"]
        assert evict(str(index_dir), 10_000) == []
    finally:
        os.close(fd)

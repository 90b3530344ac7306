"""The content index on disk (dsh_search.index.shards): a shard's writes and reads, a real SQLite file in a
temporary directory."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from dsh_search.index.files import BINARY, OPAQUE, TEXT, Signature, Text
from dsh_search.index.query.analysis import required
from dsh_search.index.query.plan import Need, plan
from dsh_search.index.shards import Shard, prefix_range


def need(pattern: str) -> Need:
    planned = plan(required(pattern), None)
    assert planned.need is not None
    return planned.need


def test_prefix_range() -> None:
    assert prefix_range(b"") == (b"", None)
    assert prefix_range(b"src/") == (b"src/", b"src0")
    assert prefix_range(b"a\xff") == (b"a\xff", b"b")
    assert prefix_range(b"\xff\xff") == (b"\xff\xff", None)


SIG = Signature(1, 2, 3, 4)


@pytest.fixture
def shard(tmp_path: Path) -> Shard:
    return Shard(str(tmp_path / "content-0.sqlite"), writable=True)


def test_a_shard_finds_a_literal_across_a_chunk_seam(shard: Shard) -> None:
    with shard.batch() as batch:
        batch.put(b"a/one", SIG, Text([b"xxxxneed", b"lexxxx"]))  # two documents: `nee` and `dle` apart
        batch.put(b"a/two", SIG, Text([b"nothing here"]))
        batch.put(b"a/split", SIG, Text([b"nee", b"d", b"l", b"e"]))  # every trigram, but no needle
        batch.put(b"b/three", SIG, Text([b"needle"]))
        batch.opaque(b"a/wide", SIG)
    planned = need("needle")
    found = sorted(shard.candidates(planned, *prefix_range(b"a/"))[0])
    # a/split holds every trigram of `needle` across its documents: a candidate (sound, not exact)
    assert found == [(b"a/one", TEXT), (b"a/split", TEXT), (b"a/wide", OPAQUE)]
    assert sorted(shard.candidates(planned, b"", None)[0])[-1] == (b"b/three", TEXT)
    other = need("needle|nothing")
    assert [p for p, _ in sorted(shard.candidates(other, b"a/", b"a0")[0])] == [
        b"a/one",
        b"a/split",
        b"a/two",
        b"a/wide",
    ]
    with shard.batch() as batch:
        batch.put(b"a/bin", SIG, Text([b"a need", b"le\0 and"]))  # big and binary: walked to, never named
    assert (b"a/bin", BINARY) in shard.candidates(planned, b"a/", b"a0")[0]
    both = need("xxxx.*needle")
    assert [p for p, _ in sorted(shard.candidates(both, b"a/", b"a0")[0])] == [b"a/one", b"a/wide"]
    assert shard.count(b"", None) == 6
    assert list(shard.paths(b"a/", b"a0")) == [b"a/bin", b"a/one", b"a/split", b"a/two", b"a/wide"]
    assert shard.present([b"a/one", b"gone"]) == {b"a/one"}
    assert dict(shard.signatures())[b"a/one"] == SIG


def test_reindexing_and_removing_leave_garbage_counted_and_no_stale_hit(shard: Shard) -> None:
    with shard.batch() as batch:
        batch.put(b"f", SIG, Text([b"old needle", b" more"]))
    assert shard.documents() == 2
    with shard.batch() as batch:
        batch.put(b"f", SIG, Text([b"new text"]))
    assert shard.candidates(need("needle"), b"", None)[0] == []
    assert shard.garbage() == 2
    with shard.batch() as batch:
        batch.remove(b"f")
    assert shard.count(b"", None) == 0
    assert shard.garbage() == 3


def test_a_batch_that_fails_writes_nothing(shard: Shard) -> None:
    with pytest.raises(RuntimeError), shard.batch() as batch:
        batch.put(b"f", SIG, Text([b"needle"]))
        raise RuntimeError("midway")
    assert shard.count(b"", None) == 0
    assert shard.documents() == 0


def test_checkpoint_commits_what_was_put_so_far(shard: Shard) -> None:
    reader = sqlite3.connect(shard.path)
    with shard.batch(commit_bytes=10) as batch:
        batch.put(b"one", SIG, Text([b"0123456789ab"]))
        batch.checkpoint()
        assert reader.execute("SELECT count(*) FROM files").fetchone()[0] == 1  # visible: committed
        batch.put(b"two", SIG, Text([b"x"]))
        batch.checkpoint()  # under the threshold: still one transaction
        assert reader.execute("SELECT count(*) FROM files").fetchone()[0] == 1
    assert reader.execute("SELECT count(*) FROM files").fetchone()[0] == 2
    reader.close()


def test_another_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value)")
    db.execute("INSERT INTO meta VALUES ('schema', 2)")
    db.commit()
    db.close()
    with pytest.raises(sqlite3.DatabaseError, match="schema 3"):
        Shard(str(path), writable=True)


def test_intact_notices_a_replaced_shard(tmp_path: Path, shard: Shard) -> None:
    assert shard.intact()
    os.rename(shard.path, tmp_path / "moved")
    assert not shard.intact()

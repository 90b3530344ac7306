"""The content index on disk (dsh_search.index.shards): a shard's writes and reads, a real SQLite file and its
segments in a temporary directory."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from dsh_search.index import shards
from dsh_search.index.files import BINARY, OPAQUE, TEXT, Content, Signature
from dsh_search.index.query.analysis import required
from dsh_search.index.query.plan import Need, plan
from dsh_search.index.shards import Corrupt, Shard, Tampered, prefix_range


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
        batch.put(b"a/one", SIG, Content([b"xxxxneed", b"lexxxx"]))  # read in two pieces: one document
        batch.put(b"a/two", SIG, Content([b"nothing here"]))
        batch.put(b"a/split", SIG, Content([b"nee", b"d", b"l", b"e"]))
        batch.put(b"a/parts", SIG, Content([b"needl", b"x needle"[2:5], b"dle"]))  # every trigram, no needle
        batch.put(b"b/three", SIG, Content([b"needle"]))
        batch.opaque(b"a/wide", SIG)
    planned = need("needle")
    found = sorted(shard.candidates(planned, *prefix_range(b"a/"))[0])
    # a/parts holds every trigram of `needle`: a candidate (sound, not exact)
    assert found == [(b"a/one", TEXT), (b"a/parts", TEXT), (b"a/split", TEXT), (b"a/wide", OPAQUE)]
    assert sorted(shard.candidates(planned, b"", None)[0])[-1] == (b"b/three", TEXT)
    other = need("needle|nothing")
    assert [p for p, _ in sorted(shard.candidates(other, b"a/", b"a0")[0])] == [
        b"a/one",
        b"a/parts",
        b"a/split",
        b"a/two",
        b"a/wide",
    ]
    with shard.batch() as batch:
        batch.put(b"a/bin", SIG, Content([b"a need", b"le\0 and"]))  # binary: its text before the NUL
        batch.put(b"a/after", SIG, Content([b"\0needle"]))  # nothing before its NUL
    assert (b"a/bin", BINARY) in shard.candidates(planned, b"a/", b"a0")[0]
    assert b"a/after" not in {p for p, _ in shard.candidates(planned, b"a/", b"a0")[0]}
    both = need("xxxx.*needle")
    assert [p for p, _ in sorted(shard.candidates(both, b"a/", b"a0")[0])] == [b"a/one", b"a/wide"]
    assert shard.count(b"", None) == 8
    assert list(shard.paths(b"a/", b"a0")) == [
        b"a/after",
        b"a/bin",
        b"a/one",
        b"a/parts",
        b"a/split",
        b"a/two",
        b"a/wide",
    ]
    assert shard.present([b"a/one", b"gone"]) == {b"a/one"}
    assert dict(shard.signatures())[b"a/one"] == SIG


def test_non_ascii_literals_are_their_utf8_bytes(shard: Shard) -> None:
    with shard.batch() as batch:
        batch.put(b"latin", SIG, Content(["der Grüße Ort".encode()]))
        batch.put(b"kelvin", SIG, Content(["273 \u212a".encode()]))
        batch.put(b"broken", SIG, Content([b"Gr\xfc\xdfe"]))  # Latin-1: not the UTF-8 of "Grüße"
    assert [p for p, _ in shard.candidates(need("Grüße"), b"", None)[0]] == [b"latin"]
    assert [p for p, _ in shard.candidates(need("(?i)3 k"), b"", None)[0]] == [b"kelvin"]
    assert shard.doc_frequency("üße") == 1


def test_reindexing_and_removing_leave_no_stale_hit_and_merges_drop_old_versions(shard: Shard) -> None:
    with shard.batch() as batch:
        batch.put(b"f", SIG, Content([b"old needle", b" more"]))
        batch.put(b"g", SIG, Content([b"another needle"]))
    assert shard.documents() == 2
    with shard.batch() as batch:
        batch.put(b"f", SIG, Content([b"new text"]))
    assert [p for p, _ in shard.candidates(need("needle"), b"", None)[0]] == [b"g"]
    # A small segment beside a larger one: not merged yet; f's old version is garbage until then.
    assert (shard.documents(), shard.garbage()) == (3, 1)
    with shard.batch(commit_bytes=1) as batch:  # a build: its segments are merged when it ends
        for i in range(5):
            batch.put(b"h%d" % i, SIG, Content([b"needle %d" % i]))
            batch.checkpoint()
        batch.remove(b"g")
    assert sorted(p for p, _ in shard.candidates(need("needle"), b"", None)[0]) == [b"h%d" % i for i in range(5)]
    # Seven segments, none twice the size of the newer ones together: one, without the old versions.
    assert len(list(Path(shard.path).parent.glob("content-0.*.grams"))) == 1
    assert (shard.documents(), shard.garbage()) == (6, 0)
    assert shard.count(b"", None) == 6


def test_a_lookup_stops_at_its_limit(shard: Shard) -> None:
    with shard.batch() as batch:
        for i in range(10):
            batch.put(b"f%d" % i, SIG, Content([b"needle"]))
    found, stopped = shard.candidates(need("needle"), b"", None, limit=4)
    assert stopped and len(found) == 4
    found, stopped = shard.candidates(need("needle"), b"f5", None, limit=6)
    assert not stopped and len(found) == 5


def test_a_batch_that_fails_writes_nothing(shard: Shard) -> None:
    with pytest.raises(RuntimeError), shard.batch() as batch:
        batch.put(b"f", SIG, Content([b"needle"]))
        raise RuntimeError("midway")
    assert shard.count(b"", None) == 0
    assert shard.documents() == 0
    assert not list(Path(shard.path).parent.glob("*.grams"))


def test_checkpoint_commits_what_was_put_so_far(shard: Shard) -> None:
    reader = sqlite3.connect(shard.path)
    with shard.batch(commit_bytes=10) as batch:
        batch.put(b"one", SIG, Content([b"0123456789ab"]))
        batch.checkpoint()
        assert reader.execute("SELECT count(*) FROM files").fetchone()[0] == 1  # visible: committed
        batch.put(b"two", SIG, Content([b"x"]))
        batch.checkpoint()  # under the threshold: still one transaction
        assert reader.execute("SELECT count(*) FROM files").fetchone()[0] == 1
    assert reader.execute("SELECT count(*) FROM files").fetchone()[0] == 2
    reader.close()


def test_another_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value)")
    db.execute("INSERT INTO meta VALUES ('schema', 3)")
    db.commit()
    db.close()
    with pytest.raises(sqlite3.DatabaseError, match="schema 4"):
        Shard(str(path), writable=True)


def test_intact_notices_a_replaced_shard(tmp_path: Path, shard: Shard) -> None:
    assert shard.intact()
    os.rename(shard.path, tmp_path / "moved")
    assert not shard.intact()


def _segment(shard: Shard) -> Path:
    (segment,) = Path(shard.path).parent.glob("content-0.*.grams")
    return segment


@pytest.mark.parametrize("how", ["flip", "truncate", "delete", "foreign"])
def test_a_damaged_segment_is_corrupt_when_the_shard_opens(tmp_path: Path, how: str) -> None:
    path = str(tmp_path / "content-0.sqlite")
    shard = Shard(path, writable=True)
    with shard.batch() as batch:
        for i in range(50):
            batch.put(b"f%d" % i, SIG, Content([b"needle %d and more text" % i]))
    segment = _segment(shard)
    shard.close()
    data = bytearray(segment.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 1
        segment.write_bytes(data)
    elif how == "truncate":
        segment.write_bytes(data[: len(data) - 7])
    elif how == "delete":
        segment.unlink()
    else:
        segment.write_bytes(os.urandom(len(data)))
    with pytest.raises(Corrupt):
        Shard(path, writable=True)


def test_a_segment_written_during_a_lookup_is_not_trusted(shard: Shard) -> None:
    with shard.batch() as batch:
        batch.put(b"f", SIG, Content([b"needle"]))
    assert shard.intact()
    segment = _segment(shard)
    with open(segment, "r+b") as f:  # same bytes, but written by another process: the state changes
        f.seek(70)
        byte = f.read(1)
        f.seek(70)
        f.write(byte)
    os.utime(segment, ns=(1, 1))
    assert not shard.intact()
    with pytest.raises(Tampered):
        shard.candidates(need("needle"), b"", None)


def test_an_unrecorded_segment_is_removed_when_the_shard_opens(tmp_path: Path) -> None:
    path = str(tmp_path / "content-0.sqlite")
    Shard(path, writable=True).close()
    stray = tmp_path / "content-0.7.grams"
    stray.write_bytes(b"written, never recorded")
    Shard(path, writable=True).close()
    assert not stray.exists()


def test_a_build_that_writes_many_segments_merges_them_as_it_goes(
    shard: Shard, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shards, "MEMORY_BUDGET", 1)  # a segment after every file
    monkeypatch.setattr(shards, "MAX_BUILD_SEGMENTS", 4)
    most = 0
    with shard.batch(commit_bytes=1 << 30) as batch:
        for i in range(30):
            batch.put(b"f%02d" % i, SIG, Content([b"needle %d" % i]))
            batch.checkpoint()
            most = max(most, len(list(Path(shard.path).parent.glob("content-0.*.grams"))))
    assert most <= 4
    # What is left keeps the merges' rule: every segment at least twice the size of all newer ones.
    sizes = [p.stat().st_size for p in sorted(Path(shard.path).parent.glob("content-0.*.grams"), key=_number)]
    assert all(size >= 2 * sum(sizes[i + 1 :]) for i, size in enumerate(sizes[:-1])), sizes
    assert len(shard.candidates(need("needle"), b"", None)[0]) == 30


def _number(segment: Path) -> int:
    return int(segment.name.split(".")[1])

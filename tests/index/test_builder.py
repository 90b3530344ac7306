"""The builder and the reading of workspace files (dsh_search.index.builder, .reading): one version read and
checked, what cannot be read cleanly indexed OPAQUE, changed files judged, a listing merged with a shard,
a racily clean version recorded so that the next merge reads it again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_search.index import builder, files, shards
from dsh_search.index.builder import index_file, index_shard
from dsh_search.index.files import BINARY, OPAQUE, TEXT, Signature
from dsh_search.index.query.analysis import required
from dsh_search.index.query.plan import Need, plan
from dsh_search.index.reading import Opened, judged
from dsh_search.index.shards import Shard


def need(pattern: str) -> Need:
    planned = plan(required(pattern), None)
    assert planned.need is not None
    return planned.need


@pytest.fixture
def shard(tmp_path: Path) -> Shard:
    return Shard(str(tmp_path / "content-0.sqlite"), writable=True)


def test_a_file_written_while_it_is_read_is_not_intact(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"first")
    with Opened(bytes(tmp_path), b"f") as opened:
        assert b"".join(opened.chunks()) == b"first"
        (tmp_path / "f").write_bytes(b"second, longer")
        assert not opened.intact()
    with Opened(bytes(tmp_path), b"f") as opened:
        list(opened.chunks())
        assert opened.intact()


def test_what_cannot_be_read_cleanly_is_indexed_opaque(tmp_path: Path, shard: Shard) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "text").write_bytes(b"needle")
    os.symlink("text", tmp_path / "link")
    root = bytes(tmp_path)
    with shard.batch() as batch:
        assert index_file(batch, root, b"pipe") == (0, False)
        assert index_file(batch, root, b"link") == (0, False)  # never followed
        assert index_file(batch, root, b"missing") == (0, False)
        assert index_file(batch, root, b"text") == (6, True)
    assert b"pipe" in dict(shard.signatures())
    found = dict(shard.candidates(need("zzz"), b"", None)[0])
    assert found == {b"pipe": OPAQUE, b"link": OPAQUE, b"missing": OPAQUE}


def test_changed_files_are_judged_by_the_pattern(tmp_path: Path) -> None:
    (tmp_path / "hit").write_bytes(b"a needle here")
    (tmp_path / "miss").write_bytes(b"nothing")
    (tmp_path / "bin").write_bytes(b"needle\0rest")
    (tmp_path / "late").write_bytes(b"rest\0needle")
    (tmp_path / "wide").write_bytes(b"\xff\xfen\0")
    root = bytes(tmp_path)
    found = judged(root, [b"hit", b"miss", b"bin", b"late", b"wide", b"gone"], required("needle"))
    assert found == [(b"hit", TEXT), (b"bin", BINARY), (b"wide", OPAQUE)]


def test_an_update_merges_the_listing_with_the_index_a_page_at_a_time(
    tmp_path: Path, shard: Shard, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shards, "PAGE_ROWS", 3)  # pages end between the paths written
    monkeypatch.setattr(files, "RACY_NS", 0)  # files just written are not racily clean here: see below
    root = tmp_path / "w"
    root.mkdir()
    for i in range(0, 20, 2):
        (root / f"f{i:02d}").write_bytes(b"old %d" % i)
    first = b"\0".join(sorted(p.name.encode() for p in root.iterdir()))
    index_shard(shard, bytes(root), first, 0, 1)
    for i in range(20):  # the odd ones are new, every fourth one changes, and f10..f14 leave the listing
        if i % 2 or i % 4 == 0:
            (root / f"f{i:02d}").write_bytes(b"new content %d" % i)
    listed = [f"f{i:02d}".encode() for i in range(20) if not 10 <= i <= 14]
    progress = [0]
    total, unsettled = index_shard(shard, bytes(root), b"\0".join(reversed(listed)), 0, 1, progress)
    assert unsettled == []
    assert progress == [len(listed)]  # what index/status reports as `indexed` while building
    rows = dict(shard.signatures())
    assert sorted(rows) == listed
    for path, sig in rows.items():
        assert sig == Signature.of(os.stat(root / os.fsdecode(path)))
    assert total == sum(len((root / os.fsdecode(p)).read_bytes()) for p in listed)
    found = shard.candidates(need("new content"), b"", None)[0]
    assert sorted(p for p, _ in found) == sorted(p for p in listed if int(p[1:]) % 2 or int(p[1:]) % 4 == 0)


def test_a_racily_clean_version_is_read_again_by_the_next_merge(
    tmp_path: Path, shard: Shard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file read within a timestamp tick of its last change may be rewritten in that same tick, leaving
    size, times and inode as they were: its row is smudged, so the next merge does not trust equal times."""
    root = tmp_path / "w"
    root.mkdir()
    (root / "fresh").write_bytes(b"old needle")
    old = Signature.of(os.stat(root / "fresh"))
    index_shard(shard, bytes(root), b"fresh", 0, 1)
    assert dict(shard.signatures())[b"fresh"] == old._replace(size=-1)  # just written: racily clean
    (root / "fresh").write_bytes(b"new needle")  # the same size
    # The rewrite as a filesystem with a one-second tick leaves it: every field as it was indexed.
    monkeypatch.setattr(builder, "signature_of", lambda _root, _path: old)
    index_shard(shard, bytes(root), b"fresh", 0, 1)
    assert [p for p, _ in shard.candidates(need("new needle"), b"", None)[0]] == [b"fresh"]


def test_a_version_older_than_a_tick_is_recorded_as_it_is(tmp_path: Path, shard: Shard) -> None:
    (tmp_path / "f").write_bytes(b"text")
    sig = Signature.of(os.stat(tmp_path / "f"))
    assert files.smudged(sig, max(sig.mtime_ns, sig.ctime_ns) + files.RACY_NS) == sig
    assert files.smudged(sig, max(sig.mtime_ns, sig.ctime_ns) + files.RACY_NS - 1).size == -1

"""The content index's parts on their own: a file's text as it is indexed piece by piece, the lookups a
query becomes, and a shard's writes and reads (a real SQLite file in a temporary directory)."""

from __future__ import annotations

import itertools
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_search.store.index import content
from dsh_search.store.index.content import BINARY, OPAQUE, TEXT, Shard, Signature, Text, joined
from dsh_search.store.index.regex import required
from dsh_search.store.index.workspace import _index_file, _index_shard, _Opened, _read_changed


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


texts = st.text(alphabet=st.sampled_from("ab\u00e9\u20ac\U0001f600\n\0"), max_size=40)


@given(texts, st.lists(st.integers(0, 200), max_size=6))
def test_pieces_join_to_the_whole_text_and_lose_no_trigram(text: str, cuts: list[int]) -> None:
    data = text.encode()
    whole_kind, whole = content.extract(data)
    pieces = Text(split(data, cuts))
    listed = list(pieces)
    assert pieces.kind == whole_kind
    assert joined(listed) == whole
    expected = whole.split("\0")[0] if "\0" in text else whole
    assert whole == expected
    grams = {whole[i : i + 3] for i in range(len(whole) - 2)}
    seen = {p[i : i + 3] for p in listed for i in range(len(p) - 2)}
    assert grams <= seen  # every trigram of the text is in some piece: no lookup misses a file


def test_kinds() -> None:
    assert content.extract(b"plain") == (TEXT, "plain")
    assert content.extract(b"\xef\xbb\xbfbom") == (TEXT, "bom")  # ripgrep drops a UTF-8 BOM
    assert content.extract(b"head\0tail") == (BINARY, "head")  # a walk reports nothing past the NUL
    assert content.extract(b"\xff\xfeh\0i\0")[0] == OPAQUE  # UTF-16: ripgrep transcodes, we do not
    assert content.extract(b"bad \xff byte") == (TEXT, "bad \ufffd byte")


def test_a_nul_in_a_later_chunk_ends_the_text() -> None:
    text = Text([b"abc", b"de\0fg", b"never read"])
    assert joined(text) == "abcde"
    assert text.kind == BINARY


def test_joined_stops_past_its_limit() -> None:
    assert joined(Text([b"x" * 10, b"y" * 10]), limit=15) is None
    assert joined(Text([b"x" * 10, b"y" * 10]), limit=20) == "x" * 10 + "y" * 10


def test_trigrams_are_spread_over_a_long_literal() -> None:
    grams = content.trigrams("abcdefghijklmnopqrstuvwxyz")
    assert len(grams) == content.TRIGRAMS_PER_LITERAL
    assert grams[0] == "abc" and grams[-1] == "xyz"
    assert content.trigrams("ab") == []


def test_plan_picks_the_rarest_trigrams_and_bounds_the_documents() -> None:
    counts = {"abc": 50, "bcd": 3, "cde": 9, "def": 700}
    planned = content.plan(required("abcdef"), lambda g: counts[g])
    assert planned.expression == '"bcd" AND "cde" AND "abc"'
    assert planned.estimate == 3
    either = content.plan(required("abcd|cdef"), lambda g: counts[g])
    assert either.estimate == 3 + 9
    assert content.plan(required("a.c|abcd"), None).expression is None  # one alternative unconstrained


def test_prefix_range() -> None:
    assert content.prefix_range(b"") == (b"", None)
    assert content.prefix_range(b"src/") == (b"src/", b"src0")
    assert content.prefix_range(b"a\xff") == (b"a\xff", b"b")
    assert content.prefix_range(b"\xff\xff") == (b"\xff\xff", None)


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
    planned = content.plan(required("needle"), None)
    found = sorted(shard.candidates(planned, *content.prefix_range(b"a/")))
    # a/split holds every trigram of `needle` across its documents: a candidate (sound, not exact)
    assert found == [(b"a/one", TEXT), (b"a/split", TEXT), (b"a/wide", OPAQUE)]
    assert sorted(shard.candidates(planned, b"", None))[-1] == (b"b/three", TEXT)
    other = content.plan(required("needle|nothing"), None)
    assert [p for p, _ in sorted(shard.candidates(other, b"a/", b"a0"))] == [b"a/one", b"a/split", b"a/two", b"a/wide"]
    with shard.batch() as batch:
        batch.put(b"a/bin", SIG, Text([b"a need", b"le\0 and"]))  # big and binary: walked to, never named
    assert (b"a/bin", BINARY) in shard.candidates(planned, b"a/", b"a0")
    both = content.plan(required("xxxx.*needle"), None)
    assert [p for p, _ in sorted(shard.candidates(both, b"a/", b"a0"))] == [b"a/one", b"a/wide"]
    assert shard.count(b"", None) == 6
    assert list(shard.paths(b"a/", b"a0")) == [b"a/bin", b"a/one", b"a/split", b"a/two", b"a/wide"]
    assert shard.present([b"a/one", b"gone"]) == {b"a/one"}
    assert shard.signature(b"a/one") == (SIG, TEXT)


def test_reindexing_and_removing_leave_garbage_counted_and_no_stale_hit(shard: Shard) -> None:
    with shard.batch() as batch:
        batch.put(b"f", SIG, Text([b"old needle", b" more"]))
    assert shard.documents() == 2
    with shard.batch() as batch:
        batch.put(b"f", SIG, Text([b"new text"]))
    assert shard.candidates(content.plan(required("needle"), None), b"", None) == []
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


# --- reading files for the index -----------------------------------------------------------------------------


def test_a_file_written_while_it_is_read_is_not_intact(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"first")
    with _Opened(bytes(tmp_path), b"f") as opened:
        assert b"".join(opened.chunks()) == b"first"
        (tmp_path / "f").write_bytes(b"second, longer")
        assert not opened.intact()
    with _Opened(bytes(tmp_path), b"f") as opened:
        list(opened.chunks())
        assert opened.intact()


def test_what_cannot_be_read_cleanly_is_indexed_opaque(tmp_path: Path, shard: Shard) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "text").write_bytes(b"needle")
    os.symlink("text", tmp_path / "link")
    root = bytes(tmp_path)
    with shard.batch() as batch:
        assert _index_file(batch, root, b"pipe") == (0, False)
        assert _index_file(batch, root, b"link") == (0, False)  # never followed
        assert _index_file(batch, root, b"missing") == (0, False)
        assert _index_file(batch, root, b"text") == (6, True)
    assert shard.signature(b"pipe") is not None
    found = dict(shard.candidates(content.plan(required("zzz"), None), b"", None))
    assert found == {b"pipe": OPAQUE, b"link": OPAQUE, b"missing": OPAQUE}


def test_changed_files_are_judged_by_the_pattern(tmp_path: Path) -> None:
    (tmp_path / "hit").write_bytes(b"a needle here")
    (tmp_path / "miss").write_bytes(b"nothing")
    (tmp_path / "bin").write_bytes(b"needle\0rest")
    (tmp_path / "late").write_bytes(b"rest\0needle")
    (tmp_path / "wide").write_bytes(b"\xff\xfen\0")
    root = bytes(tmp_path)
    found = _read_changed(root, [b"hit", b"miss", b"bin", b"late", b"wide", b"gone"], required("needle"))
    assert found == [(b"hit", TEXT), (b"bin", BINARY), (b"wide", OPAQUE)]


def test_an_update_merges_the_listing_with_the_index_a_page_at_a_time(
    tmp_path: Path, shard: Shard, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(content, "PAGE_ROWS", 3)  # pages end between the paths written
    root = tmp_path / "w"
    root.mkdir()
    for i in range(0, 20, 2):
        (root / f"f{i:02d}").write_bytes(b"old %d" % i)
    first = b"\0".join(sorted(p.name.encode() for p in root.iterdir()))
    _index_shard(shard, bytes(root), first, 0, 1)
    for i in range(20):  # the odd ones are new, every fourth one changes, and f10..f14 leave the listing
        if i % 2 or i % 4 == 0:
            (root / f"f{i:02d}").write_bytes(b"new content %d" % i)
    listed = [f"f{i:02d}".encode() for i in range(20) if not 10 <= i <= 14]
    progress = [0]
    total, unsettled = _index_shard(shard, bytes(root), b"\0".join(reversed(listed)), 0, 1, progress)
    assert unsettled == []
    assert progress == [len(listed)]  # what index/status reports as `indexed` while building
    rows = dict(shard.signatures())
    assert sorted(rows) == listed
    for path, sig in rows.items():
        assert sig == Signature.of(os.stat(root / os.fsdecode(path)))
    assert total == sum(len((root / os.fsdecode(p)).read_bytes()) for p in listed)
    found = shard.candidates(content.plan(required("new content"), None), b"", None)
    assert sorted(p for p, _ in found) == sorted(p for p in listed if int(p[1:]) % 2 or int(p[1:]) % 4 == 0)

"""Byte-trigram postings (dsh_search.index.grams): the native library against the pure-Python one, which is
the reference — the same postings from the same documents however they are cut into pieces, the same
lists combined and merged — and damaged lists refused, never read past their end."""

from __future__ import annotations

import importlib
import os
from array import array
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_search.index import grams
from tests.support.examples import examples


@pytest.fixture(scope="module")
def pure() -> Iterator[object]:
    """grams.py loaded a second time without its native library."""
    os.environ["DSH_SEARCH_PURE_GRAMS"] = "1"
    try:
        spec = importlib.util.find_spec("dsh_search.index.grams")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        del os.environ["DSH_SEARCH_PURE_GRAMS"]
    assert not module.NATIVE
    yield module


def test_the_native_library_is_built_and_loaded() -> None:
    # scripts/lib.sh builds it for every test run; without it the index is correct but slow.
    assert grams.NATIVE


def postings(module: object, documents: list[list[bytes]]) -> tuple[list[int], list[int], list[int], bytes]:
    builder = module.Builder()  # type: ignore[attr-defined]
    for doc, pieces in enumerate(documents, 1):
        builder.begin(doc)
        for piece in pieces:
            builder.add(piece)
        builder.end()
    directory = builder.directory()
    data = b"".join(builder.read(7))
    builder.release()
    return list(directory.grams), list(directory.counts), list(directory.lens), data


alphabets = st.sampled_from([b"ab", b"abc\n", bytes(range(256)), "aé€\U0001f600".encode()])
document = alphabets.flatmap(lambda a: st.lists(st.lists(st.sampled_from(list(a)), max_size=40), max_size=5)).map(
    lambda pieces: [bytes(p) for p in pieces]
)


@settings(max_examples=examples(50), deadline=None)
@given(documents=st.lists(document, max_size=12))
def test_native_and_pure_postings_are_the_same(pure: object, documents: list[list[bytes]]) -> None:
    native = postings(grams, documents)
    assert native == postings(pure, documents)
    found, _counts, lens, data = native
    whole = [b"".join(pieces) for pieces in documents]
    at = 0
    for gram, count, size in zip(found, native[1], lens, strict=True):
        docs = grams.decode(data[at : at + size], count, 1, max(1, len(documents)))
        at += size
        key = bytes([gram >> 16, (gram >> 8) & 0xFF, gram & 0xFF])
        assert list(docs) == [i for i, text in enumerate(whole, 1) if key in text]
    assert at == len(data)


@settings(max_examples=examples(100), deadline=None)
@given(a=st.sets(st.integers(1, 5000)), b=st.sets(st.integers(1, 5000)))
def test_both_and_either_are_set_operations(pure: object, a: set[int], b: set[int]) -> None:
    x, y = array("I", sorted(a)), array("I", sorted(b))
    for module in (grams, pure):
        assert list(module.both(x, y)) == sorted(a & b)  # type: ignore[attr-defined]
        assert list(module.either(x, y)) == sorted(a | b)  # type: ignore[attr-defined]
    where = grams.positions(array("I", sorted(a & b)), x)
    assert [x[i] for i in where] == sorted(a & b)


@settings(max_examples=examples(100), deadline=None)
@given(lists=st.lists(st.sets(st.integers(1, 3000), min_size=1), min_size=1, max_size=5))
def test_a_lookups_and_reads_encoded_lists_as_their_intersection(pure: object, lists: list[set[int]]) -> None:
    """`all_of` (one native call for a lookup's AND) and `both_encoded` give what decoding every list and
    intersecting them gives, however far each list had to be read."""
    encoded = [(grams.encode(sorted(docs)), len(docs)) for docs in sorted(lists, key=len)]
    expected = sorted(set.intersection(*lists))
    for module in (grams, pure):
        assert list(module.all_of(encoded, 1, 3000, 0)) == expected  # type: ignore[attr-defined]
        first = module.decode(*encoded[0], 1, 3000)  # type: ignore[attr-defined]
        for data, count in encoded[1:]:
            first = module.both_encoded(first, data, count, 1, 3000)  # type: ignore[attr-defined]
        assert list(first) == expected


@settings(max_examples=examples(100), deadline=None)
@given(
    lists=st.lists(st.sets(st.integers(1, 3000), min_size=1, max_size=400), min_size=1, max_size=6),
    ratio=st.sampled_from([0, 1, 2, 8, grams.ENOUGH_RATIO]),
)
def test_a_lookups_and_stops_at_a_list_far_longer_than_what_is_left(
    pure: object, lists: list[set[int]], ratio: int
) -> None:
    """With a ratio, the AND reads no further list once what is left is fewer than a ratio-th of the next
    one's documents: its answer is the intersection of the lists read up to there, so it holds every
    document of the whole intersection (a sound lookup: ripgrep decides the rest)."""
    lists = sorted(lists, key=len)
    encoded = [(grams.encode(sorted(docs)), len(docs)) for docs in lists]
    left = set(lists[0])
    for docs in lists[1:]:
        if not left or (ratio and len(left) * ratio < len(docs)):
            break
        left &= docs
    for module in (grams, pure):
        got = list(module.all_of(encoded, 1, 3000, ratio))  # type: ignore[attr-defined]
        assert got == sorted(left)
        assert set(got) >= set.intersection(*lists)


@settings(max_examples=examples(200), deadline=None)
@given(data=st.binary(max_size=64), count=st.integers(0, 70), lo=st.integers(0, 300), span=st.integers(0, 300))
def test_a_damaged_list_is_refused_in_a_lookup_and_never_read_past(
    pure: object, data: bytes, count: int, lo: int, span: int
) -> None:
    """A list read only as far as the AND needs: what it says then is what decoding says, or a refusal;
    the pure reading (which decodes it whole) refuses whatever the native one refuses, and more."""
    docs = array("I", range(max(1, lo), lo + span + 1))
    try:
        native = list(grams.both_encoded(docs, data, count, lo, lo + span))
    except grams.Invalid:
        native = None
    try:
        whole = list(pure.both_encoded(docs, data, count, lo, lo + span))  # type: ignore[attr-defined]
    except pure.Invalid:  # type: ignore[attr-defined]
        whole = None
    assert whole is None or native == whole


@settings(max_examples=examples(30), deadline=None)
@given(segments=st.lists(st.lists(document, min_size=1, max_size=6), min_size=1, max_size=4), data=st.data())
def test_a_merge_is_the_postings_of_every_live_document(
    pure: object, segments: list[list[list[bytes]]], data: st.DataObject
) -> None:
    parts, first, everything = [], 1, []
    for documents in segments:
        builder = grams.Builder()
        for doc, pieces in enumerate(documents, first):
            builder.begin(doc)
            for piece in pieces:
                builder.add(piece)
            builder.end()
        directory = builder.directory()
        parts.append(grams.Part(directory, b"".join(builder.read()), first, first + len(documents) - 1))
        builder.release()
        everything += documents
        first += len(documents)
    dead = array("I", sorted(data.draw(st.sets(st.integers(1, len(everything))))))
    merged = grams.merge(parts, dead)
    assert merged[0] == pure.merge(parts, dead)[0]  # type: ignore[attr-defined]
    live = [docs if i + 1 not in set(dead) else [] for i, docs in enumerate(everything)]
    expected = postings(pure, live)
    assert list(merged[1].grams) == expected[0]
    assert list(merged[1].counts) == expected[1]


@settings(max_examples=examples(200), deadline=None)
@given(data=st.binary(max_size=64), count=st.integers(0, 70), lo=st.integers(0, 300), span=st.integers(0, 300))
def test_a_damaged_list_is_refused_the_same_way(pure: object, data: bytes, count: int, lo: int, span: int) -> None:
    results = []
    for module in (grams, pure):
        try:
            results.append(list(module.decode(data, count, lo, lo + span)))  # type: ignore[attr-defined]
        except grams.Invalid:
            results.append(None)
        except pure.Invalid:  # type: ignore[attr-defined]
            results.append(None)
    assert results[0] == results[1]


def test_a_literal_is_looked_up_by_its_utf8_windows() -> None:
    assert grams.windows("abcd") == [0x616263, 0x626364]
    assert grams.windows("ab") == []
    assert grams.windows("\ud800xyz") == []  # no UTF-8 form: asks for nothing

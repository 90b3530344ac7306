"""A file's text as the index reads it (dsh_search.index.files, sans IO): pieces that join to the whole
text and lose no trigram at a seam, and the kinds ripgrep's walk implies."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from dsh_search.index.files import BINARY, OPAQUE, TEXT, Text, joined


def extract(data: bytes) -> tuple[int, str]:
    """A whole file's kind and indexable text."""
    text = Text([data])
    whole = joined(text)
    assert whole is not None
    return text.kind, whole


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


texts = st.text(alphabet=st.sampled_from("ab\u00e9\u20ac\U0001f600\n\0"), max_size=40)


texts = st.text(alphabet=st.sampled_from("ab\u00e9\u20ac\U0001f600\n\0"), max_size=40)


@given(texts, st.lists(st.integers(0, 200), max_size=6))
def test_pieces_join_to_the_whole_text_and_lose_no_trigram(text: str, cuts: list[int]) -> None:
    data = text.encode()
    whole_kind, whole = extract(data)
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
    assert extract(b"plain") == (TEXT, "plain")
    assert extract(b"\xef\xbb\xbfbom") == (TEXT, "bom")  # ripgrep drops a UTF-8 BOM
    assert extract(b"head\0tail") == (BINARY, "head")  # a walk reports nothing past the NUL
    assert extract(b"\xff\xfeh\0i\0")[0] == OPAQUE  # UTF-16: ripgrep transcodes, we do not
    assert extract(b"bad \xff byte") == (TEXT, "bad \ufffd byte")


def test_a_nul_in_a_later_chunk_ends_the_text() -> None:
    text = Text([b"abc", b"de\0fg", b"never read"])
    assert joined(text) == "abcde"
    assert text.kind == BINARY


def test_joined_stops_past_its_limit() -> None:
    assert joined(Text([b"x" * 10, b"y" * 10]), limit=15) is None
    assert joined(Text([b"x" * 10, b"y" * 10]), limit=20) == "x" * 10 + "y" * 10

"""The glob list's matcher: its shortcuts for the common globs (`*`, `*.x`, `**/name`) select exactly
what the glob's full regex selects, in order, with the right offsets."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from dsh_search.index.globlist import (
    ALL,
    NAME,
    SUFFIX,
    GlobList,
    Matcher,
    Snapshot,
    _shape,
    entry_key,
    glob_regex,
    inode_key,
    split_key,
)

segment = st.text(alphabet="ax.é-", min_size=1, max_size=4)
paths = st.lists(st.lists(segment, min_size=1, max_size=3).map("/".join), max_size=30, unique=True)
GLOBS = ["*", "**", "*.x", "**/*.x", "*x", "x", "**/x", "a.x", "**/a.x", "*.é", "**/**/*.x", "a*", "*.[ax]", "a/**"]


@given(paths, st.sampled_from(GLOBS))
def test_shortcuts_select_what_the_regex_selects(names: list[str], glob: str) -> None:
    encoded = [n.encode() for n in names]
    snapshot = Snapshot([entry_key(i % 3, p) for i, p in enumerate(encoded)])
    regex = re.compile(glob_regex(glob), re.DOTALL)
    expected = [p for p in _in_order(snapshot) if regex.fullmatch(p)]
    matcher = Matcher(b"", b"", glob_regex(glob))
    assert snapshot.matching(matcher) == expected
    positions = list(matcher.positions(snapshot.blob))
    assert [p for _, p in positions] == expected
    assert all(snapshot.blob[at : at + len(p)] == p and snapshot.blob[at - 1] == 0 for at, p in positions)


def _in_order(snapshot: Snapshot) -> list[bytes]:
    return [path for _mtime, path, _inode in snapshot.entries()]


def test_shapes() -> None:
    assert _shape(glob_regex("*")) == (ALL, b"")
    assert _shape(glob_regex("**")) == (ALL, b"")
    assert _shape(glob_regex("*.c")) == (SUFFIX, b".c")
    assert _shape(glob_regex("**/*.c")) == (SUFFIX, b".c")
    assert _shape(glob_regex("**/Makefile")) == (NAME, b"Makefile")
    assert _shape(glob_regex("Makefile")) == (NAME, b"Makefile")
    assert _shape(glob_regex("*.日本")) == (SUFFIX, ".日本".encode())
    for other in ("a*.c", "*.[ch]", "src/*.c", "src/**", "*.{c,h}", "?.c"):
        assert _shape(glob_regex(other)) is None, other


@given(paths, st.lists(st.integers(1, 4), min_size=30, max_size=30), st.sets(st.integers(1, 5)))
def test_the_names_of_an_inode_are_found_in_the_snapshot_and_the_changes(
    names: list[str], inodes: list[int], wanted: set[int]
) -> None:
    encoded = [n.encode() for n in names]
    files = GlobList.from_keys([entry_key(i % 3, p, inodes[i]) for i, p in enumerate(encoded)])
    expected = {p for i, p in enumerate(encoded) if inodes[i] in wanted}
    assert set(files.named(wanted)) == expected
    if encoded:
        files.apply(encoded[0], 7, 5)  # its inode is another now
        files.apply(b"new", 8, 5)
        expected = (expected - {encoded[0]}) | ({encoded[0], b"new"} if 5 in wanted else set())
        assert set(files.named(wanted)) == expected
        assert set(files.compacted().named(wanted)) == expected


def test_an_entry_key_sorts_as_glob_orders_and_splits_back() -> None:
    keys = [entry_key(1, b"a/b", 9), entry_key(1, b"a", -3), entry_key(0, b"z", 1)]
    assert [split_key(k)[1] for k in sorted(keys)] == [b"z", b"a", b"a/b"]
    assert split_key(entry_key(-5, b"p", -(1 << 63))) == (-5, b"p", -(1 << 63))
    assert inode_key(1, 2) == inode_key(1, 2) != inode_key(2, 1)

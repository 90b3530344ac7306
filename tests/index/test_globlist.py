"""The glob list's matcher: its shortcuts for the common globs (`*`, `*.x`, `**/name`) select exactly
what the glob's full regex selects, in order, with the right offsets."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from dsh_search.index.globlist import ALL, NAME, SUFFIX, Matcher, Snapshot, _shape, entry_key, glob_regex

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

"""The freshness bookkeeping's rules for what leaves `changed`, on the state alone (no watcher, no disk)."""

from __future__ import annotations

from dsh_search.index.freshness import Freshness


def bookkeeping(changed: dict[bytes, int], grep_new: set[bytes], unknown: set[bytes]) -> Freshness:
    """A Freshness holding only what `reindexed` reads and writes."""
    fresh = Freshness.__new__(Freshness)
    fresh.changed = dict(changed)
    fresh.stated = dict(changed)  # glob's entries are current
    fresh.grep_new = set(grep_new)
    fresh.unknown = set(unknown)
    return fresh


def test_a_new_file_settled_as_grep_reads_it_during_a_batch_stays_changed() -> None:
    """The race a loaded machine found (a file written after a rename elsewhere, never found by grep
    again): the batch began while whether grep reads the new file was unknown, so it was indexed as a
    file grep does not read; a search settled it meanwhile as one grep reads. It must stay changed (read
    by searches, indexed again as a member), not be taken as settled in the index."""
    path = b"src/m2/new.c"
    fresh = bookkeeping({path: 7}, grep_new=set(), unknown={path})
    batch, members, unknown = {path: 7}, set(), {path}
    fresh.unknown.discard(path)  # the search's own listing: grep reads it
    fresh.grep_new.add(path)
    fresh.reindexed(batch, [path], members, unknown)
    assert fresh.changed == {path: 7}
    assert path in fresh.grep_new


def test_a_file_whose_membership_moved_during_a_batch_stays_changed() -> None:
    path = b"a.c"
    fresh = bookkeeping({path: 3}, grep_new={path}, unknown=set())
    batch, members = {path: 3}, {path}
    fresh.grep_new.discard(path)  # a listing meanwhile: grep no longer reads it
    fresh.reindexed(batch, [path], members, set())
    assert fresh.changed == {path: 3}


def test_settled_files_leave_changed() -> None:
    member, other, later = b"m.c", b"ignored.log", b"again.c"
    fresh = bookkeeping({member: 1, other: 1, later: 1}, grep_new={member}, unknown=set())
    fresh.changed[later] = 2  # changed again after the batch began
    fresh.reindexed({member: 1, other: 1, later: 1}, [member, other, later], {member}, set())
    assert fresh.changed == {later: 2}
    assert fresh.grep_new == set()

"""The freshness bookkeeping: its rules for what leaves `changed`, on the state alone (no watcher, no disk),
and the names of a file found by inode when it gains one (on a real tree, with its watcher)."""

from __future__ import annotations

import os
from pathlib import Path

from dsh_search.index.freshness import Freshness
from dsh_search.index.globlist import GlobList
from dsh_search.index.mounts import MountWatch
from dsh_search.index.rules import RuleFiles
from dsh_search.index.walk import walk
from dsh_search.index.watch import Watcher


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


def watched(root: Path) -> Freshness:
    """The bookkeeping of a tree as a first build leaves it (no mounts looked at)."""
    root_b = os.fsencode(root)
    watcher = Watcher(root_b)
    walked = walk(root_b, watcher, b"")
    files = GlobList.from_keys(list(walked.files))
    return Freshness(root_b, str(root), watcher, walked, files, set(), RuleFiles(str(root), {}), None, MountWatch())


def test_a_name_given_after_the_build_makes_every_name_of_the_file_untrusted(tmp_path: Path) -> None:
    """link(2) raises no event in the directory of the file's old name: that name is found by inode."""
    root = tmp_path / "w"
    for rel in ("a/x.c", "a/x2.c", "a/alone.c"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "b").mkdir()
    fresh = watched(root)
    try:
        assert fresh.linked == set()
        os.link(root / "a/x.c", root / "b/y.c")
        fresh.apply(fresh.watcher.drain())
        assert fresh.linked == {b"a/x.c", b"b/y.c"}
        # A directory of other names moved in (`cp -al` elsewhere, then `mv`): found when it is walked.
        (tmp_path / "stage").mkdir()
        os.link(root / "a/x2.c", tmp_path / "stage/z.c")
        os.rename(tmp_path / "stage", root / "c")
        fresh.apply(fresh.watcher.drain())
        for path in sorted(fresh.unwalked):  # the background's walk of what moved in (off the event loop)
            fresh.walked_again(path, walk(os.fsencode(root), fresh.watcher, path))
        assert fresh.linked == {b"a/x.c", b"b/y.c", b"a/x2.c", b"c/z.c"}
        # A name inside a repository (glob never lists it, but its directory is watched).
        (root / ".git").mkdir()
        fresh.watcher.watch(b".git")
        os.link(root / "a/alone.c", root / ".git/alone-too")
        fresh.apply(fresh.watcher.drain())
        assert b"a/alone.c" in fresh.linked
        # Its other name gone, a file is trusted again once it is read into the index again.
        (root / "b/y.c").unlink()
        fresh.apply(fresh.watcher.drain())
        fresh.refresh_linked()
        assert b"a/x.c" not in fresh.linked and b"a/x.c" in fresh.changed
    finally:
        fresh.close()
        fresh.watcher.close()

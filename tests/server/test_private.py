"""Directories only this user may write (dsh_search.private): what makes one unsafe, each with its message
naming the directory and the fix, and what `ensure` makes."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_search import private
from tests.support.trees import remove_tree
from tests.support.unprivileged import NOBODY

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make another user's directory")


@pytest.fixture
def base() -> Iterator[Path]:
    """Under /tmp (root-owned and sticky, as ancestors may be), private to this user."""
    made = Path(tempfile.mkdtemp(prefix="dsh-private-", dir="/tmp"))
    try:
        yield made
    finally:
        remove_tree(made)


def test_ensure_makes_every_missing_level_private(base: Path) -> None:
    deep = base / "a" / "b" / "c"
    private.ensure(str(deep), "index directory")
    for level in (base / "a", base / "a" / "b", deep):
        assert stat.S_IMODE(level.stat().st_mode) == 0o700, level
    private.ensure(str(deep), "index directory")  # exists and is safe: nothing to do
    assert private.problem(str(deep), "index directory") is None


def test_what_makes_a_directory_unsafe_is_named_with_the_fix(base: Path) -> None:
    missing = private.problem(str(base / "missing"), "spill directory")
    assert missing == f"the spill directory {base}/missing does not exist"
    (base / "file").write_text("")
    assert "is not a directory" in (private.problem(str(base / "file"), "spill directory") or "")
    open_to_all = base / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    reason = private.problem(str(open_to_all), "spill directory") or ""
    assert f"the spill directory {open_to_all} is writable by its group and every user (mode 0777)" in reason
    assert f"chmod 700 {open_to_all}" in reason
    with pytest.raises(private.Unsafe):
        private.ensure(str(open_to_all), "spill directory")
    inside = open_to_all / "mine"  # safe itself, but anyone may replace it: its parent is not sticky
    inside.mkdir(mode=0o700)
    reason = private.problem(str(inside), "index directory") or ""
    assert f"lies in {open_to_all}, which its group and every user can write and which is not sticky" in reason
    open_to_all.chmod(0o1777)  # sticky, as /tmp: nobody can rename another user's entries
    assert private.problem(str(inside), "index directory") is None


def test_tighten_takes_others_off_a_directory_of_ours(base: Path) -> None:
    listed = base / "listed"
    listed.mkdir(mode=0o755)
    listed.chmod(0o755)
    assert private.problem(str(listed), "index directory") is None  # safe: nobody else can write it
    private.tighten(str(listed))
    assert stat.S_IMODE(listed.stat().st_mode) == 0o700


@ROOT_ONLY
def test_another_users_directory_link_or_parent_is_unsafe(base: Path) -> None:
    base.chmod(0o755)
    theirs = base / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, NOBODY, NOBODY)
    reason = private.problem(str(theirs), "index directory") or ""
    assert f"belongs to user nobody (uid {NOBODY}), not to this daemon's user root (uid 0)" in reason
    assert "use a directory of your own" in reason
    mine_in_theirs = theirs / "mine"
    mine_in_theirs.mkdir(mode=0o700)
    assert f"lies in {theirs}, which belongs to user nobody" in (private.problem(str(mine_in_theirs), "x") or "")
    mine = base / "mine"
    mine.mkdir(mode=0o700)
    link = base / "link"
    link.symlink_to(mine)
    assert private.problem(str(link), "spill directory") is None  # a link of ours to a directory of ours
    os.lchown(link, NOBODY, NOBODY)
    assert "symbolic link" in (private.problem(str(link), "spill directory") or "")
    assert private.private_entry(os.lstat(mine)) and not private.private_entry(os.lstat(theirs))

"""index/manager.py on its own, no daemon: the `index` modes made concrete (which workspace, when to build),
the engine's FileSource answering or saying None with every walk counted by its reason, one owner and its
guests on a workspace (two managers in this process, the real peer socket between them), the takeover when
the owner goes, and a failed index built again after a pause."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GlobQuery, GrepQuery
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index import manager as manager_mod
from dsh_search.index.lister import GrepLister
from dsh_search.index.manager import IndexManager, unsupported_reason
from dsh_search.index.sets import workspace_dir
from dsh_search.index.status import FAILED, OFF, READY, Walk

NO_DENY = DenyGlobs(())


def tree(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    for i in range(8):
        (root / "src" / f"f{i}.c").write_text(f"int f{i}; // common\n")
    (root / "src" / "rare.c").write_text("RARE_WORD_HERE\n")
    return root


def make(rg_path: str, index_dir: Path, mode: str = "on", version: str = "1") -> IndexManager:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(index_dir)}
    return IndexManager(
        mode=mode, index_dir=str(index_dir), grep_lister=GrepLister.create(rg_path, env, 3.0), version=version
    )


async def until(condition: Callable[[], Any], within: float = 30) -> None:
    """Wait for evidence (polling), never for a guessed duration."""
    async with asyncio.timeout(within):
        while not condition():
            await asyncio.sleep(0.02)


async def ready(m: IndexManager) -> None:
    await until(lambda: m._workspace is not None and m._workspace.state == READY)


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(body())


def checked(found: GrepFiles | None) -> GrepFiles | None:
    """An answer of this daemon's own index, its rule check (left for the time ripgrep runs) made: it holds."""
    assert found is not None and found.holds is not None
    assert found.holds()
    return found._replace(holds=None)


# --- modes and workspaces ------------------------------------------------------------------------------------


def test_off_never_indexes(rg_path: str, tmp_path: Path) -> None:
    async def body() -> None:
        m = make(rg_path, tmp_path / "index", mode="off")
        m.set_workspace(str(tree(tmp_path / "w")))
        assert m._workspace is None and m.root == str(tmp_path / "w")
        assert await m.grep(str(tmp_path / "w"), GrepQuery("RARE_WORD_HERE"), NO_DENY) is None
        status = await m.status()
        assert (status.state, status.walked, status.walked_because) == (OFF, 1, {Walk.NO_INDEX: 1})
        m.close()

    run(body)


def test_auto_waits_for_a_slow_walk_of_the_workspace(rg_path: str, tmp_path: Path) -> None:
    async def body() -> None:
        root = str(tree(tmp_path / "w"))
        m = make(rg_path, tmp_path / "index", mode="auto")
        assert (await m.status()).reason == "no workspace directory to index"
        m.set_workspace(root)
        assert m._workspace is None
        assert "waiting for a search that walks" in ((await m.status()).reason or "")
        m.note_walk(root, manager_mod.AUTO_AFTER_S / 2)  # fast: nothing
        m.note_walk(str(tmp_path), 10.0)  # elsewhere: nothing
        assert m._workspace is None
        assert m.walk_note(root) is None
        m.note_walk(root + "/src", 10.0)  # slow, in the workspace: the build starts
        assert m._workspace is not None
        assert m.walk_note(root) is not None and m.walk_note(str(tmp_path)) is None
        await ready(m)
        assert m.walk_note(root) is None
        m.close()

        # An index of it on disk: the next daemon in auto mode opens it at once.
        again = make(rg_path, tmp_path / "index", mode="auto")
        again.set_workspace(root)
        assert again._workspace is not None
        again.close()

    run(body)


def test_the_root_and_no_workspace_are_nothing_to_index(rg_path: str, tmp_path: Path) -> None:
    m = make(rg_path, tmp_path / "index")
    m.set_workspace("/")
    assert m.root is None and m._workspace is None
    m.set_workspace(None)
    assert m.root is None


def test_an_index_directory_that_cannot_be_made_is_a_reason(rg_path: str, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")

    async def body() -> None:
        m = make(rg_path, blocker / "index")
        m.set_workspace(str(tree(tmp_path / "w")))
        assert m._workspace is None
        assert "cannot be made" in ((await m.status()).reason or "")

    run(body)


def test_where_the_index_cannot_be_exact_auto_stays_off(
    rg_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")  # the OS seam (osdep.posix) asks at call time
    assert "no inotify on darwin" in (unsupported_reason(str(tmp_path)) or "")
    root = str(tree(tmp_path / "w"))

    async def body() -> None:
        auto = make(rg_path, tmp_path / "index", mode="auto")
        auto.set_workspace(root)
        assert auto._workspace is None and "no inotify" in ((await auto.status()).reason or "")
        on = make(rg_path, tmp_path / "index2", mode="on")
        on.set_workspace(root)  # as asked, with a warning
        assert on._workspace is not None
        on.close()

    run(body)


def test_a_network_filesystem_is_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.path.realpath(tmp_path)
    table = [manager_mod.mounts.Mount(id=1, point=real, fstype="nfs4")]
    monkeypatch.setattr(manager_mod.mounts, "read", lambda: table)
    assert "nfs4" in (unsupported_reason(str(tmp_path)) or "")


# --- the engine's FileSource ---------------------------------------------------------------------------------


def test_answers_and_walks_are_counted_by_reason(rg_path: str, tmp_path: Path) -> None:
    async def body() -> None:
        root = str(tree(tmp_path / "w"))
        m = make(rg_path, tmp_path / "index")
        m.set_workspace(root)
        assert await m.grep(root, GrepQuery("RARE_WORD_HERE"), NO_DENY) is None  # building
        await ready(m)
        files = await m.grep(root, GrepQuery("RARE_WORD_HERE"), NO_DENY)
        assert checked(files) == GrepFiles([b"src/rare.c"], [])
        assert await m.grep(root, GrepQuery("."), NO_DENY) is None
        assert await m.grep(str(tmp_path), GrepQuery("RARE_WORD_HERE"), NO_DENY) is None
        listed = await m.glob(root, GlobQuery("*.c"), NO_DENY)
        assert isinstance(listed, GlobFiles) and len(listed.paths) == 9
        status = await m.status()
        assert status.role == "owner" and status.answered == {"glob": 1, "grep": 1}
        assert status.walked == 3
        assert status.walked_because == {Walk.BUILDING: 1, Walk.NO_LITERALS: 1, Walk.OUTSIDE: 1}
        m.close()

    run(body)


def test_a_rule_file_changed_before_the_check_left_for_ripgreps_run_sends_grep_walking(
    rg_path: str, tmp_path: Path
) -> None:
    """The answer is given before the rule files are checked; an ignore file changed by then: the check
    says the answer no longer holds, grep's list is in doubt (searches walk) until it is listed again."""

    async def body() -> None:
        root = str(tree(tmp_path / "w"))
        m = make(rg_path, tmp_path / "index")
        m.set_workspace(root)
        await ready(m)
        ws = m._workspace
        assert ws is not None and ws._fresh is not None
        found = await m.grep(root, GrepQuery("RARE_WORD_HERE"), NO_DENY)
        assert found is not None and found.holds is not None
        fresh = ws._fresh
        # An ignore file made in the workspace's parent directory (ripgrep reads it; no watch sees it).
        (tmp_path / ".ignore").write_text("rare.c\n")
        assert not found.holds()
        assert fresh.grep_doubt is not None
        assert await m.grep(root, GrepQuery("RARE_WORD_HERE"), NO_DENY) is None
        assert m.walked_because == {Walk.IN_DOUBT: 1}
        await until(lambda: fresh.grep_doubt is None)  # listed again, on the index's own schedule
        again = await m.grep(root, GrepQuery("RARE_WORD_HERE"), NO_DENY)
        assert checked(again) == GrepFiles([], [])  # grep's walk no longer reads rare.c: nothing to search
        m.close()

    run(body)


def test_an_error_inside_the_index_fails_it_and_the_search_walks(
    rg_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager_mod, "RETRY_AFTER_S", (0.05,))

    async def body() -> None:
        root = str(tree(tmp_path / "w"))
        m = make(rg_path, tmp_path / "index")
        m.set_workspace(root)
        await ready(m)
        ws = m._workspace
        assert ws is not None

        async def broken(*_args: Any) -> Any:
            raise RuntimeError("a bug")

        ws.grep = broken  # type: ignore[method-assign]
        ws.glob = broken  # type: ignore[method-assign]
        assert await m.grep(root, GrepQuery("RARE_WORD_HERE"), NO_DENY) is None
        assert ws.state == FAILED
        assert await m.glob(root, GlobQuery("*"), NO_DENY) is None  # failed: walks without asking it
        assert m.walked_because == {Walk.INDEX_ERROR: 1, Walk.FAILED: 1}
        # After the pause, a fresh index is built and answers again.
        await until(lambda: m._workspace is not ws and m._workspace is not None and m._workspace.state == READY)
        assert checked(await m.grep(root, GrepQuery("RARE_WORD_HERE"), NO_DENY)) == GrepFiles([b"src/rare.c"], [])
        m.close()

    run(body)


def test_a_glob_that_raises_fails_the_index_too(rg_path: str, tmp_path: Path) -> None:
    async def body() -> None:
        root = str(tree(tmp_path / "w"))
        m = make(rg_path, tmp_path / "index")
        m.set_workspace(root)
        await ready(m)
        ws = m._workspace
        assert ws is not None

        async def broken(*_args: Any) -> Any:
            raise RuntimeError("a bug")

        ws.glob = broken  # type: ignore[method-assign]
        assert await m.glob(root, GlobQuery("*"), NO_DENY) is None
        assert ws.state == FAILED and m.walked_because == {Walk.INDEX_ERROR: 1}
        m.close()

    run(body)


# --- one owner, its guests, the takeover ---------------------------------------------------------------------


def test_a_second_manager_asks_the_first_and_takes_over_when_it_goes(
    rg_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager_mod, "TAKEOVER_POLL_S", 0.05)

    async def body() -> None:
        root = str(tree(tmp_path / "w"))
        owner = make(rg_path, tmp_path / "index")
        owner.set_workspace(root)
        await ready(owner)
        assert owner._listening is not None and owner._owner is not None
        await owner._listening
        assert owner._owner.problem is None  # listening
        guest = make(rg_path, tmp_path / "index")
        guest.set_workspace(root)
        assert guest._guest is not None and guest._workspace is None
        assert guest.walk_note(root) is None  # its state is the owner's
        deny = DenyGlobs(("*.h",))
        # The owner checks its rule files before it answers a guest: nothing is left for the guest to check.
        assert await guest.grep(root, GrepQuery("RARE_WORD_HERE"), deny) == GrepFiles([b"src/rare.c"], [])
        assert await guest.grep(root, GrepQuery("RARE_WORD_HERE"), deny) == GrepFiles([b"src/rare.c"], [])
        assert await guest.grep(root, GrepQuery("."), deny) is None
        listed = await guest.glob(root, GlobQuery("*.c"), NO_DENY)
        assert isinstance(listed, GlobFiles) and len(listed.paths) == 9
        status = await guest.status()
        assert (status.role, status.state, status.served, status.mode) == ("guest", READY, None, "on")
        assert status.answered == {"glob": 1, "grep": 2} and status.walked_because == {Walk.NO_LITERALS: 1}
        assert (await owner.status()).served == 5  # 4 searches and the status
        assert len(owner._deny) == 2  # the guest's deny globs, made once each

        owner.close()  # gone: its lock is given back, and the guest takes the index over
        await until(lambda: guest._workspace is not None)
        assert guest._guest is None
        await ready(guest)
        assert checked(await guest.grep(root, GrepQuery("RARE_WORD_HERE"), NO_DENY)) == GrepFiles([b"src/rare.c"], [])
        assert (await guest.status()).role == "owner"
        guest.close()

    run(body)


def test_a_guest_whose_owner_does_not_answer_walks(rg_path: str, tmp_path: Path) -> None:
    async def body() -> None:
        root = str(tree(tmp_path / "w"))
        owner = make(rg_path, tmp_path / "index", version="1")
        owner.set_workspace(root)
        await ready(owner)
        assert owner._listening is not None and owner._owner is not None
        await owner._listening
        assert owner._owner.problem is None  # listening
        guest = make(rg_path, tmp_path / "index", version="2")  # another version: no answers
        guest.set_workspace(root)
        assert await guest.grep(root, GrepQuery("RARE_WORD_HERE"), NO_DENY) is None
        assert await guest.glob(root, GlobQuery("*"), NO_DENY) is None
        status = await guest.status()
        assert status.state == OFF and status.role == "guest" and "did not answer" in (status.reason or "")
        assert "the owner is dsh-search 1" in (status.reason or "")
        assert status.walked_because == {Walk.OWNER_SILENT: 2}
        guest.close()
        owner.close()

    run(body)


def test_switching_workspace_lets_go_of_the_old_one(rg_path: str, tmp_path: Path) -> None:
    async def body() -> None:
        first, second = str(tree(tmp_path / "a")), str(tree(tmp_path / "b"))
        m = make(rg_path, tmp_path / "index")
        m.set_workspace(first)
        await ready(m)
        m.set_workspace(first)  # the same: nothing happens
        old = m._workspace
        m.set_workspace(second)
        assert m._workspace is not old and m.root == second
        other = make(rg_path, tmp_path / "index")
        other.set_workspace(first)  # the first workspace's ownership was given back
        assert other._workspace is not None
        other.close()
        m.close()

    run(body)
    assert os.path.isdir(workspace_dir(str(tmp_path / "index"), os.path.realpath(tmp_path / "a")))

"""Owner and guest over the real socket, in one process (dsh_search.index.peers, .view): views compared,
a bounded wait that no question spends behind another, a published name, and an owner that says why
guests cannot ask it."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from dsh_search.index import peers
from dsh_search.index.view import View

VIEW = View.of_process({"HOME": "/home/a", "PATH": "/bin", "GIT_CONFIG_GLOBAL": "/g"})


def test_a_view_holds_what_decides_ripgreps_rules_and_names_what_differs() -> None:
    assert VIEW.environment == (("GIT_CONFIG_GLOBAL", "/g"), ("HOME", "/home/a"))  # not PATH
    assert View.from_json(VIEW.as_json()) == VIEW
    other = View.of_process({"HOME": "/home/a", "XDG_CONFIG_HOME": "/x"})._replace(groups=(1, 2, 3))
    assert VIEW.differs(VIEW) is None
    assert VIEW.differs(other) == "supplementary groups, environment (GIT_CONFIG_GLOBAL, XDG_CONFIG_HOME)"
    with pytest.raises(ValueError):
        View.from_json({"uid": 0})


def _private_dir(tmp_path: Path) -> str:
    directory = tmp_path / "ws"
    directory.mkdir(mode=0o700)
    return str(directory)


async def _owner(workspace: str, answer: Any, view: View = VIEW) -> peers.Owner:
    owner = peers.Owner(workspace, "1.0", answer, view)
    await owner.listen()
    return owner


def test_questions_wait_a_bounded_time_each_and_never_one_behind_another(tmp_path: Path) -> None:
    workspace = _private_dir(tmp_path)

    async def scenario() -> None:
        release = asyncio.Event()

        async def answer(request: dict[str, Any]) -> Any:
            if request["op"] == "slow":
                await release.wait()
            return {"echo": request["op"]}

        owner = await _owner(workspace, answer)
        guest = peers.Guest(workspace, "1.0", VIEW, wait_s=0.2)
        try:
            assert await guest.ask({"op": "quick"}) == {"echo": "quick"}
            started = time.monotonic()
            got = await asyncio.gather(*(guest.ask({"op": "slow"}) for _ in range(10)), guest.ask({"op": "quick"}))
            assert got == [None] * 10 + [{"echo": "quick"}]  # the quick one did not wait behind them
            assert time.monotonic() - started < 1.0  # ten bounded waits at once, not one after another
            # An owner that did not answer in time is not asked again for a while: no wait at all.
            started = time.monotonic()
            assert await guest.ask({"op": "quick"}) is None
            assert time.monotonic() - started < 0.1
            assert "did not answer within 200 ms" in (guest.note or "")
        finally:
            release.set()
            guest.close()
            owner.close()

    asyncio.run(scenario())
    assert not os.path.exists(os.path.join(workspace, peers.ADDRESS))  # its name goes with it


def test_an_owner_with_another_view_answers_nothing_and_says_what_differs(tmp_path: Path) -> None:
    workspace = _private_dir(tmp_path)

    async def scenario() -> None:
        async def answer(request: dict[str, Any]) -> Any:
            return "from the index"

        owner = await _owner(workspace, answer, VIEW._replace(environment=(("HOME", "/home/b"),)))
        guest = peers.Guest(workspace, "1.0", VIEW)
        same = peers.Guest(workspace, "1.0", VIEW._replace(environment=(("HOME", "/home/b"),)))
        try:
            assert await guest.ask({"op": "glob"}) is None
            assert guest.differs == "environment (GIT_CONFIG_GLOBAL, HOME)"
            assert await same.ask({"op": "glob"}) == "from the index" and owner.served == 1
        finally:
            guest.close()
            same.close()
            owner.close()

    asyncio.run(scenario())


def test_an_owner_that_cannot_publish_its_name_says_so_and_tries_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = _private_dir(tmp_path)
    os.mkdir(os.path.join(workspace, peers.ADDRESS))  # in the way of the name's file
    monkeypatch.setattr(peers, "RETRY_S", (0.05,))

    async def scenario() -> None:
        owner = peers.Owner(workspace, "1.0", lambda request: asyncio.sleep(0, "answered"), VIEW)
        listening = asyncio.ensure_future(owner.listen())
        guest = peers.Guest(workspace, "1.0", VIEW)
        try:
            while owner.problem is None:
                await asyncio.sleep(0.01)
            assert "cannot ask this one" in owner.problem and "trying again in 0.05 s" in owner.problem
            assert await guest.ask({"op": "x"}) is None and "no daemon" in (guest.note or "")
            os.rmdir(os.path.join(workspace, peers.ADDRESS))
            await asyncio.wait_for(listening, 5)
            assert owner.problem is None
            assert await guest.ask({"op": "x"}) == "answered"
        finally:
            listening.cancel()
            guest.close()
            owner.close()

    asyncio.run(scenario())

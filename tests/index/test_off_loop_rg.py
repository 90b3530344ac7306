"""The owner's event loop never walks a directory itself (issue 31): a directory moved into the workspace
was walked inline, on the loop, while every other daemon's question and the host's own requests waited.
Now it is walked on a thread, and an answer waits for that walk a bounded time."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GlobQuery, GrepQuery
from dsh_search.index import freshness, workspace
from dsh_search.index.status import Walk
from tests.index.test_equivalence_rg import Pair, run


def test_a_directory_moved_in_is_walked_off_the_event_loop(
    rg_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[bool] = []  # for each walk: whether it ran on the event loop's thread
    loop_thread: list[int] = []
    real = workspace.walk

    def walk(*args: Any, **kwargs: Any) -> Any:
        calls.append(threading.get_ident() in loop_thread)
        return real(*args, **kwargs)

    monkeypatch.setattr(workspace, "walk", walk)
    monkeypatch.setattr(freshness, "walk", walk, raising=False)  # where the walk used to run inline
    root = tmp_path / "w"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.c").write_text("int SUSPEND;\n")
    outside = tmp_path / "elsewhere"
    for i in range(2000):
        path = outside / f"d{i % 40}" / f"f{i}.c"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"int MOVED_{i};\n")

    async def scenario() -> None:
        loop_thread.append(threading.get_ident())
        pair = Pair(root, rg_path, tmp_path / "index", ())
        ws = pair.workspace
        try:
            ws.start()
            await asyncio.wait_for(ws._ready.wait(), 30)
            built = len(calls)
            os.rename(outside, root / "moved")
            for call in (GrepQuery("MOVED_1999"), GlobQuery("**/f7.c")):
                assert await run(pair.indexed, root, call) == await run(pair.plain, root, call)
            deadline = asyncio.get_running_loop().time() + 30
            while isinstance(await ws.grep(str(root), GrepQuery("MOVED_1234", "moved"), DenyGlobs(())), Walk):
                assert asyncio.get_running_loop().time() < deadline, ws.status("on")
                await asyncio.sleep(0.02)
            assert len(calls) > built  # the directory moved in was walked again, and is answered from the index
        finally:
            pair.close()

    asyncio.run(scenario())
    assert calls and not any(calls), calls  # ...never on the event loop's thread

"""A file source's answer that leaves its last check for the time ripgrep runs (engine/source.py,
`GrepFiles.holds`): the engine starts ripgrep with the source's files, makes the check while ripgrep reads
them, and reads that run only when the check holds; otherwise it stops the run and ripgrep walks. The
real ripgrep; the source is a stand-in that names a deliberately short list, so whose answer was read
shows in the result."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from dsh_search import config as config_mod
from dsh_search.engine.grep import grep
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GlobQuery, GrepQuery, OutputMode
from dsh_search.engine.ripgrep import Launcher, child_environment
from dsh_search.engine.scope import Scope
from dsh_search.engine.searcher import Searcher, Workers
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.wiring import rg_limits


class Answering:
    """Names `files` for every grep and leaves a check that says `verdict` (or raises it)."""

    def __init__(self, files: list[bytes], verdict: bool | Exception) -> None:
        self.files, self.verdict = files, verdict
        self.checked = 0
        self.walks: list[str] = []

    async def glob(self, cwd: str, query: GlobQuery, deny: DenyGlobs) -> GlobFiles | None:
        return None

    async def grep(self, cwd: str, query: GrepQuery, deny: DenyGlobs) -> GrepFiles | None:
        return GrepFiles(self.files, [], self.check)

    def check(self) -> bool:
        self.checked += 1
        if isinstance(self.verdict, Exception):
            raise self.verdict
        return self.verdict

    def note_walk(self, cwd: str, seconds: float) -> None:
        self.walks.append(cwd)

    def walk_note(self, cwd: str) -> str | None:
        return None


def searcher(rg_path: str, source: Answering) -> Searcher:
    config = config_mod.build(
        {"index": "off", "sampleOverCapGlobResults": True}, environ={"XDG_STATE_HOME": "/nonexistent-state"}
    )
    return Searcher(
        config=config,
        launch=Launcher(rg_path, child_environment(os.environ, frozen=False), rg_limits(config)),
        spill=None,  # type: ignore[arg-type]  # nothing here is over a cap
        deny_globs=DenyGlobs(()),
        workers=Workers.start(),
        source=source,
    )


def ask(rg_path: str, root: Path, source: Answering, **params: Any) -> str:
    async def run() -> str:
        return (await grep(searcher(rg_path, source), GrepQuery(**params), Scope(str(root)))).text

    return asyncio.run(run())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("needle\n")
    return tmp_path


@pytest.mark.parametrize("mode", list(OutputMode))
def test_a_check_that_holds_reads_the_sources_files(rg_path: str, tree: Path, mode: OutputMode) -> None:
    source = Answering([b"a.txt"], True)
    params: dict[str, Any] = {"pattern": "needle"}
    if mode != OutputMode.CONTENT:
        params["output_mode"] = mode
    text = ask(rg_path, tree, source, **params)
    assert "a.txt" in text and "b.txt" not in text  # the source's (short) list was searched
    assert source.checked == 1 and source.walks == []


@pytest.mark.parametrize("verdict", [False, OSError("a stat failed")])
def test_a_check_that_fails_walks_instead(rg_path: str, tree: Path, verdict: bool | Exception) -> None:
    source = Answering([b"a.txt"], verdict)
    text = ask(rg_path, tree, source, pattern="needle")
    assert text == "Found 2 matches\n\na.txt\nLine 1: needle\n\nb.txt\nLine 1: needle"
    assert source.checked == 1


def _children() -> set[int]:
    pid = os.getpid()
    kids: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            kids.update(int(k) for k in Path(f"/proc/{pid}/task/{task}/children").read_text().split())
        except OSError:
            continue
    return kids


def test_a_search_cancelled_while_ripgrep_reads_the_sources_files_ends_it(rg_path: str, tree: Path) -> None:
    """ripgrep blocks reading a FIFO it was named, the check held; the search is cancelled: no child is left."""
    os.mkfifo(tree / "pipe.txt")
    source = Answering([b"pipe.txt"], True)
    before = _children()

    async def run() -> None:
        task = asyncio.ensure_future(grep(searcher(rg_path, source), GrepQuery(pattern="needle"), Scope(str(tree))))
        for _ in range(500):
            await asyncio.sleep(0.01)
            if source.checked and _children() - before:
                break
        assert source.checked == 1 and _children() - before  # the source's run is reading the FIFO
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert _children() - before == set()


def test_a_run_whose_check_failed_is_stopped_and_the_walk_answers(rg_path: str, tree: Path) -> None:
    """The source's run would block on a FIFO forever; the check fails: that run ends, the walk (which
    skips a FIFO) answers, and no child is left."""
    os.mkfifo(tree / "pipe.txt")
    source = Answering([b"pipe.txt"], False)
    before = _children()
    text = ask(rg_path, tree, source, pattern="needle")
    assert text == "Found 2 matches\n\na.txt\nLine 1: needle\n\nb.txt\nLine 1: needle"
    assert _children() - before == set()

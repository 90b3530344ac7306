"""index/planner.py on its own: every gate of the answer-or-walk decision, each met by a search on a real
workspace index (no daemon) and answered with its reason (status.Walk), in the planner's order; and the
query as the index reads it (`narrowing`), with the rules of the flags that change what can match."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GlobQuery, GrepQuery
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index import answers, planner
from dsh_search.index.lister import GrepLister
from dsh_search.index.planner import Narrowing, narrowing
from dsh_search.index.query.formula import Lit, Or
from dsh_search.index.status import FAILED, READY, Walk
from dsh_search.index.workspace import Workspace

NO_DENY = DenyGlobs(())


# --- the query as the index reads it ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        (GrepQuery("a\0b"), Walk.NUL_ARGUMENT),
        (GrepQuery("word", include="*\0"), Walk.NUL_ARGUMENT),
        (GrepQuery("word", exclude="*\0"), Walk.NUL_ARGUMENT),
        (GrepQuery("."), Walk.NO_LITERALS),
        (GrepQuery("ab"), Walk.NO_LITERALS),  # shorter than a trigram
        (GrepQuery("[a-z]+x"), Walk.NO_LITERALS),
        (GrepQuery("word", include="[é]*"), Walk.GLOB_UNREAD),
        (GrepQuery("word", include="{a"), Walk.GLOB_UNREAD),
        (GrepQuery("word", exclude="{a"), Walk.GLOB_UNREAD),
        (GrepQuery("word", exclude="[é]x"), Walk.GLOB_UNREAD),
    ],
)
def test_what_the_index_cannot_narrow(query: GrepQuery, reason: Walk) -> None:
    assert narrowing(query) == reason


def test_the_flags_that_change_what_can_match_have_their_rules() -> None:
    plain = narrowing(GrepQuery("word"))
    assert isinstance(plain, Narrowing) and plain.query == Lit("word")
    # Case folding (ignoreCase, and smartCase, which may fold): every case of each letter.
    for query in (GrepQuery("WoRd", ignore_case=True), GrepQuery("word", smart_case=True)):
        folded = narrowing(query)
        assert isinstance(folded, Narrowing)
        assert folded.query != Lit("word") and "WORD" in str(folded.query) and "word" in str(folded.query)
    # Fixed strings: the pattern's characters, none of them special.
    fixed = narrowing(GrepQuery("a.b(c", fixed_strings=True))
    assert isinstance(fixed, Narrowing) and fixed.query == Lit("a.b(c")
    assert narrowing(GrepQuery("a.b(c")) == Walk.NO_LITERALS  # as a regex: `(` unclosed, nothing known
    # Multiline needs no rule of its own: a literal across lines is a substring of the text all the same.
    multi = narrowing(GrepQuery("foo\\nbar", multiline=True))
    assert isinstance(multi, Narrowing) and multi.query == Lit("foo\nbar")
    assert narrowing(GrepQuery("foo|bar")) == Narrowing(Or((Lit("bar"), Lit("foo"))), None, ())
    with_globs = narrowing(GrepQuery("word", include="*.c", exclude="vendor/**"))
    assert isinstance(with_globs, Narrowing) and with_globs.include is not None
    assert with_globs.exclude == ("vendor/**",)


# --- every gate, on a real index ------------------------------------------------------------------------------


def tree(root: Path) -> None:
    files = {
        ".gitignore": "ignored/\n",
        "src/a.c": "RARE_ONE common\n",
        "src/b.c": "common\n",
        "src/c.c": "common\n",
        "src/d_test.c": "RARE_ONE in a test\n",
        "lib/e.c": "common\n",
        "lib/f.h": "common RARE_TWO\n",
        ".hidden/g.c": "RARE_ONE hidden\n",
        "ignored/h.c": "RARE_ONE ignored\n",
        "bin.dat": "RARE_THREE\0binary\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / ".git").mkdir()


@pytest.fixture
def index(rg_path: str, tmp_path: Path) -> Iterator[Any]:
    root = tmp_path / "w"
    tree(root)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path / "index")}
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    async def start() -> Workspace:
        ws = Workspace(str(root), index_dir=str(tmp_path / "index"), grep_lister=GrepLister.create(rg_path, env, 3.0))
        ws.start()
        await asyncio.wait_for(ws._ready.wait(), 30)
        assert ws.state == READY
        return ws

    ws = loop.run_until_complete(start())

    def decide(query: GrepQuery | GlobQuery, cwd: Path | None = None, deny: DenyGlobs = NO_DENY) -> Any:
        where = str(cwd or root)
        if isinstance(query, GlobQuery):
            return loop.run_until_complete(ws.glob(where, query, deny))
        return loop.run_until_complete(ws.grep(where, query, deny))

    decide.root = root  # type: ignore[attr-defined]
    decide.ws = ws  # type: ignore[attr-defined]
    decide.loop = loop  # type: ignore[attr-defined]
    yield decide
    ws.close()
    loop.close()
    asyncio.set_event_loop(None)


def test_a_rare_literal_is_answered_with_the_files_that_hold_it(index: Any) -> None:
    assert index(GrepQuery("RARE_ONE")) == GrepFiles([b"src/a.c", b"src/d_test.c"], [])
    assert index(GrepQuery("RARE_ONE", "src")) == GrepFiles([b"src/a.c", b"src/d_test.c"], [])
    assert index(GrepQuery("RARE_ONE", "./src/")) == GrepFiles([b"./src/a.c", b"./src/d_test.c"], [])
    assert index(GrepQuery("RARE_ONE"), cwd=index.root / "src") == GrepFiles([b"a.c", b"d_test.c"], [])
    # A file that holds a NUL is walked to, from its directory, never named.
    assert index(GrepQuery("RARE_THREE", ".")) == GrepFiles([], [(b".", [b"bin.dat"])])


def test_a_small_lookup_runs_on_the_loop_unless_a_shard_is_busy_with_the_same_answer(
    index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lookup whose rarest trigram is in few files runs on the event loop; when a shard is held by
    another reader (or the rule is off) it goes to threads, and the answer is the same either way."""
    asked: list[str] = []
    real_at_once, real_to_thread = planner._ask_at_once, asyncio.to_thread

    def at_once(*a: Any) -> Any:
        parts = real_at_once(*a)
        asked.append("loop" if parts is not None else "busy")
        return parts

    async def to_thread(fn: Any, *a: Any, **k: Any) -> Any:
        if fn is planner._ask:
            asked.append("thread")
        return await real_to_thread(fn, *a, **k)

    monkeypatch.setattr(planner, "_ask_at_once", at_once)
    monkeypatch.setattr(planner.asyncio, "to_thread", to_thread)
    queries = [GrepQuery("RARE_ONE"), GrepQuery("RARE_TWO", "lib"), GrepQuery("RARE_TWO|RARE_ONE", "src")]
    on_loop = [index(q) for q in queries]
    assert asked == ["loop"] * len(queries)
    shards = index.ws._set.shards
    asked.clear()
    done = threading.Event()
    held = threading.Event()

    def hold() -> None:  # another search's lookup, on a thread, holding the first shard
        with shards[0].read_lock:
            held.set()
            done.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        busy = []
        for q in queries:
            task = index.loop.create_task(index.ws.grep(str(index.root), q, NO_DENY))
            index.loop.run_until_complete(asyncio.sleep(0.05))  # it went to threads, which wait for the shard
            assert not task.done()
            done.set()
            busy.append(index.loop.run_until_complete(task))
            holder.join(10)
            done.clear()
            held.clear()
            holder = threading.Thread(target=hold)
            holder.start()
            held.wait(10)
    finally:
        done.set()
        holder.join(10)
    assert busy == on_loop
    assert asked == ["busy", *["thread"] * len(shards)] * len(queries)
    monkeypatch.setattr(planner, "AT_ONCE_ESTIMATE", -1)
    asked.clear()
    assert [index(q) for q in queries] == on_loop
    assert "loop" not in asked and "busy" not in asked


def test_the_include_exclude_and_deny_globs_are_applied_by_the_index(index: Any) -> None:
    assert index(GrepQuery("RARE_ONE", exclude="*_test.c")) == GrepFiles([b"src/a.c"], [])
    assert index(GrepQuery("RARE_ONE", exclude="src")) == GrepFiles([], [])  # a directory: all below it
    assert index(GrepQuery("RARE_ONE", include="*_test.c")) == GrepFiles([b"src/d_test.c"], [])
    assert index(GrepQuery("RARE_ONE"), deny=DenyGlobs(("a.c",))) == GrepFiles([b"src/d_test.c"], [])
    assert index(GrepQuery("rare_one", ignore_case=True)) == GrepFiles([b"src/a.c", b"src/d_test.c"], [])


def test_gate_1_outside_the_workspace(index: Any) -> None:
    assert index(GrepQuery("RARE_ONE"), cwd=index.root.parent) == Walk.OUTSIDE
    assert index(GlobQuery("*.c"), cwd=index.root.parent) == Walk.OUTSIDE


def test_gate_2_the_narrowing(index: Any) -> None:
    assert index(GrepQuery(".")) == Walk.NO_LITERALS
    assert index(GrepQuery("RARE_ONE", include="{x")) == Walk.GLOB_UNREAD
    assert index(GlobQuery("*\0")) == Walk.NUL_ARGUMENT
    assert index(GlobQuery("!x")) == Walk.GLOB_UNREAD


def test_gate_3_an_index_that_is_not_usable(index: Any) -> None:
    index.ws.fail("for the test")
    assert index.ws.state == FAILED
    assert index(GrepQuery("RARE_ONE")) == Walk.FAILED
    assert index(GlobQuery("*.c")) == Walk.FAILED


def test_gate_3_an_index_still_building(rg_path: str, tmp_path: Path) -> None:
    root = tmp_path / "w"
    tree(root)

    async def body() -> Any:
        ws = Workspace(str(root), index_dir=str(tmp_path / "index"), grep_lister=GrepLister.create(rg_path, {}, 3.0))
        ws.start()
        try:
            return await ws.grep(str(root), GrepQuery("RARE_ONE"), NO_DENY)
        finally:
            ws.close()

    assert asyncio.run(body()) == Walk.BUILDING


def test_gate_4_the_root(index: Any) -> None:
    assert index(GrepQuery("RARE_ONE", "src/../lib")) == Walk.ROOT_UNSPELLED
    assert index(GrepQuery("RARE_ONE", "src/a.c")) == Walk.ROOT_UNSPELLED  # a file as the root
    assert index(GlobQuery("*", "src/../lib")) == Walk.ROOT_UNSPELLED
    assert index(GrepQuery("RARE_ONE", ".hidden")) == Walk.ROOT_NOT_LISTED
    assert index(GrepQuery("RARE_ONE", "ignored")) == Walk.ROOT_NOT_LISTED
    assert index(GrepQuery("RARE_ONE", include=".hidden/*")) == Walk.INCLUDE_REACHES_SKIPPED
    fresh = index.ws._fresh
    fresh.doubt_everything("for the test")
    assert index(GrepQuery("RARE_ONE")) == Walk.IN_DOUBT
    assert index(GlobQuery("*")) == Walk.IN_DOUBT


def test_gate_5_the_cost_model(index: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert index(GrepQuery("common")) == Walk.TOO_COMMON  # in more than half the files
    monkeypatch.setattr(planner, "MAX_CANDIDATE_SHARE", 0.1)
    assert index(GrepQuery("RARE_ONE")) in (Walk.TOO_COMMON, Walk.TOO_MANY_CANDIDATES)
    monkeypatch.setattr(planner, "MAX_CANDIDATE_SHARE", 0.5)
    monkeypatch.setattr(answers, "MAX_ARGV_BYTES", 10)
    assert index(GrepQuery("RARE_ONE")) == Walk.CANNOT_NAME
    monkeypatch.setattr(answers, "MAX_ARGV_BYTES", 1 << 20)
    assert index(GrepQuery("RARE_ONE", include="*.txt")) == Walk.NO_FILE_SEARCHED
    assert index(GrepQuery("NOWHERE_AT_ALL")) == GrepFiles([], [])  # none: the walk would find nothing either


def test_gate_5_too_many_changed_files(index: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "MAX_CHANGED_READ", 0)
    (index.root / "src" / "b.c").write_text("now RARE_ONE too\n")
    assert index(GrepQuery("RARE_ONE")) == Walk.TOO_MANY_CHANGED
    monkeypatch.setattr(planner, "MAX_CHANGED_READ", 4000)
    # Read and judged by the search itself: the change is in the answer at once.
    assert index(GrepQuery("RARE_ONE")) == GrepFiles([b"src/a.c", b"src/b.c", b"src/d_test.c"], [])


def test_glob_is_answered_from_the_list(index: Any) -> None:
    found = index(GlobQuery("*.c", "src"))
    assert isinstance(found, GlobFiles) and sorted(found.paths) == ["src/a.c", "src/b.c", "src/c.c", "src/d_test.c"]

"""index/peers.py on its own, no daemon: the owner's lock, the protocol's encoding (a query carried whole,
an answer that is files, a reason to walk or a status), an owner answering over a socketpair, and a guest
asking a real owner's socket in this process — its silences (no owner, too slow, another version or
view, a reply it does not read) all `None`, so its search walks; views compared (index/view.py), a
bounded wait that no question spends behind another, a published name, and an owner that says why
guests cannot ask it."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from dsh_search.engine.request import GlobQuery, GrepQuery, OutputMode
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index import peers
from dsh_search.index.peers import Answer, Guest, Owner, OwnerLock, Question
from dsh_search.index.status import Status, Walk
from dsh_search.index.view import View

VERSION = "9.9.9"
VIEW = View.of_process({"HOME": "/home/a", "PATH": "/bin", "GIT_CONFIG_GLOBAL": "/g"})
EXTENDED = GrepQuery(
    "a+b",
    "src",
    "*.c",
    ignore_case=True,
    smart_case=True,
    fixed_strings=True,
    before=1,
    after=2,
    context=3,
    output_mode=OutputMode.COUNT,
    multiline=True,
    exclude="*_test.c",
    offset=5,
    limit=7,
    cwd="/host/only",
    session_id="host-only",
)


# --- the owner's lock -------------------------------------------------------------------------------------


def test_one_lock_holder_per_workspace_until_it_lets_go(tmp_path: Path) -> None:
    first, second = OwnerLock(str(tmp_path)), OwnerLock(str(tmp_path))
    assert first.take() and first.take()  # taken, and still held
    assert not second.take()
    first.release()
    first.release()  # twice is harmless
    assert second.take()
    second.release()


def test_a_lock_that_cannot_be_made_is_not_taken(tmp_path: Path) -> None:
    assert not OwnerLock(str(tmp_path / "missing" / "dir")).take()


def test_the_address_is_drawn_at_each_listen_and_kept_in_the_private_directory(tmp_path: Path) -> None:
    async def run() -> list[str | None]:
        names = []
        for _ in range(2):
            owner = Owner(str(tmp_path), VERSION, answering(Walk.OUTSIDE), VIEW)
            await owner.listen()
            names.append(peers._address_of(str(tmp_path)))
            owner.close()
            names.append(peers._address_of(str(tmp_path)))  # gone with it
        return names

    first, after_first, second, after_second = asyncio.run(run())
    assert first and second and first != second and first.startswith("dsh-search-")
    assert after_first is None and after_second is None


# --- the encoding --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        Question("status"),
        Question("glob", "/w", GlobQuery("*.c", "src"), (".env*",)),
        Question("grep", "/w", GrepQuery("x"), ()),
        Question("grep", "/w", EXTENDED, ("*.pem", "secret*")),
    ],
)
def test_a_question_crosses_the_wire_whole(question: Question) -> None:
    message = orjson.loads(orjson.dumps(peers.encode_question(question, VERSION)))
    assert message["v"] == peers.PROTOCOL and message["version"] == VERSION
    decoded = peers.decode_question(message)
    if question.query is not None:  # the host's own fields do not travel: they are the guest's business
        assert "cwd" not in message["query"] and "session_id" not in message["query"]
        question = question._replace(query=question.query._replace(cwd=None, session_id="default"))
    assert decoded == question
    if isinstance(decoded.query, GrepQuery):
        assert isinstance(decoded.query.output_mode, OutputMode)


@pytest.mark.parametrize(
    "change",
    [
        {"op": "delete"},
        {"op": None},
        {"cwd": 3},
        {"deny": "*.pem"},
        {"deny": [1]},
        {"query": [1]},
        {"query": {"pattern": 3}},
        {"query": {"pattern": "x", "ignore_case": "yes"}},
        {"query": {"pattern": "x", "before": True}},
        {"query": {"pattern": "x", "output_mode": "lines"}},
        {"query": {"pattern": "x", "cwd": "/elsewhere"}},
        {"query": {"pattern": "x", "no_such_field": 1}},
    ],
)
def test_a_question_not_as_this_daemon_asks_is_refused(change: dict[str, Any]) -> None:
    message = peers.encode_question(Question("grep", "/w", GrepQuery("x")), VERSION)
    with pytest.raises(ValueError):
        peers.decode_question({**message, **change})


@pytest.mark.parametrize(
    ("op", "answer"),
    [
        ("glob", GlobFiles(["a.c", "é/b.c"], 12, 0)),
        ("grep", GrepFiles([b"a.c", b"\xff.c"], [(b"src", [b"src/x.c", b"src/y.c"])])),
        ("grep", GrepFiles([], [])),
        ("grep", Walk.TOO_COMMON),
        ("glob", Walk.IN_DOUBT),
        ("status", Status("ready", "on", "/w", 3, 10, walked_because={"too-common": 2})),
    ],
)
def test_an_answer_crosses_the_wire_whole(op: str, answer: Answer) -> None:
    message = orjson.loads(orjson.dumps(peers.encode_answer(answer)))
    assert message["v"] == peers.PROTOCOL
    assert peers.decode_answer(op, message) == answer


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ("grep", {"walk": "because"}),
        ("glob", {"files": {"paths": [1], "stdout_bytes": 1, "growth": 0}}),
        ("glob", {"files": {"paths": "a", "stdout_bytes": 1, "growth": 0}}),
        ("grep", {"files": {"named": 3, "walk_to": []}}),
        ("grep", {"nothing": None}),
        ("status", {"status": [1]}),
    ],
)
def test_an_answer_not_as_this_daemon_writes_is_refused(op: str, message: dict[str, Any]) -> None:
    with pytest.raises((KeyError, TypeError, ValueError)):
        peers.decode_answer(op, message)


# --- an owner, over a socketpair -------------------------------------------------------------------------------


def converse(serve: peers.Serve, messages: list[bytes]) -> list[Any]:
    """`messages` (framed or not) written to an owner serving one end of a socketpair; its replies."""

    async def run() -> list[Any]:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        owner = Owner("/nowhere", VERSION, serve, VIEW)
        reader, writer = await asyncio.open_connection(sock=theirs)
        served = asyncio.ensure_future(owner._serve(reader, writer))
        my_reader, my_writer = await asyncio.open_connection(sock=mine)
        replies = []
        for message in messages:
            my_writer.write(message)
            await my_writer.drain()
            replies.append(await peers._read(my_reader))
        my_writer.close()
        await asyncio.wait_for(served, 5)
        replies.append(owner.served)
        return replies

    return asyncio.run(run())


def frame(message: Any) -> bytes:
    return peers._frame(message)


def asked(question: Question, version: str = VERSION) -> dict[str, Any]:
    """A question as a guest of this view writes it."""
    return {**peers.encode_question(question, version), "view": VIEW.as_json()}


def answering(answer: Answer) -> peers.Serve:
    async def serve(question: Question) -> Answer:
        assert question.op in ("glob", "grep", "status")
        return answer

    return serve


def test_an_owner_answers_each_question_in_turn() -> None:
    files = GrepFiles([b"a.c"], [])
    grep = asked(Question("grep", "/w", EXTENDED, ()))
    replies = converse(answering(files), [frame(grep), frame(grep)])
    assert [peers.decode_answer("grep", r) for r in replies[:2]] == [files, files]
    assert replies[2] == 2  # questions served


def test_an_owner_says_why_it_does_not_answer() -> None:
    async def failing(question: Question) -> Answer:
        raise RuntimeError("the shard is gone")

    grep = asked(Question("grep", "/w", GrepQuery("x")))
    other = VIEW._replace(groups=(*VIEW.groups, 99999)).as_json()
    replies = converse(
        failing,
        [
            frame({**grep, "v": 1}),
            frame({**grep, "version": "0.0.1"}),
            frame([1, 2]),
            frame({**grep, "op": "delete"}),
            frame(grep),
            frame({**grep, "view": other}),
            frame({**grep, "view": None}),
        ],
    )
    assert replies[0] == {"v": peers.PROTOCOL, "error": "another protocol"}
    assert replies[1] == {"v": peers.PROTOCOL, "error": f"the owner is dsh-search {VERSION}"}
    assert replies[2] == {"v": peers.PROTOCOL, "error": "another protocol"}
    assert replies[3]["error"].startswith("ValueError: no such question")
    assert replies[4] == {"v": peers.PROTOCOL, "error": "RuntimeError: the shard is gone"}
    assert replies[5] == {
        "v": peers.PROTOCOL,
        "error": "the owner sees the files otherwise: supplementary groups",
        "view": "supplementary groups",
    }
    assert replies[6]["error"].startswith("not a view")
    assert replies[7] == 0  # none served


def test_an_owner_drops_a_connection_that_sends_an_oversized_or_broken_message() -> None:
    async def run(data: bytes) -> bytes:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        owner = Owner("/nowhere", VERSION, answering(Walk.OUTSIDE), VIEW)
        reader, writer = await asyncio.open_connection(sock=theirs)
        served = asyncio.ensure_future(owner._serve(reader, writer))
        mine.sendall(data)
        mine.shutdown(socket.SHUT_WR)
        await asyncio.wait_for(served, 5)
        mine.setblocking(False)
        try:
            return mine.recv(100)
        except BlockingIOError:
            return b""
        finally:
            mine.close()

    assert asyncio.run(run((peers.MAX_MESSAGE + 1).to_bytes(4, "big"))) == b""  # too large: dropped
    assert asyncio.run(run(b"\0\0\0\x05{no}")) == b""  # not JSON: dropped
    assert asyncio.run(run(b"\0\0")) == b""  # cut short: dropped


# --- a guest, asking an owner in this process ------------------------------------------------------------------


def with_owner(
    tmp_path: Path,
    serve: peers.Serve,
    body: Callable[[Guest], Awaitable[Any]],
    *,
    version: str = VERSION,
    wait_s: float = peers.ASK_WAIT_S,
) -> Any:
    async def run() -> Any:
        owner = Owner(str(tmp_path), VERSION, serve, VIEW)
        await owner.listen()
        assert owner.problem is None
        guest = Guest(str(tmp_path), version, VIEW, wait_s)
        try:
            return await body(guest)
        finally:
            guest.close()
            owner.close()

    return asyncio.run(run())


def test_a_guest_gets_the_owners_answers_on_one_connection(tmp_path: Path) -> None:
    files = GlobFiles(["a.c"], 4, 0)

    async def body(guest: Guest) -> list[Any]:
        found = [await guest.ask(Question("glob", "/w", GlobQuery("*.c"), ())) for _ in range(3)]
        assert guest.connected and not guest.lost.is_set()
        return found

    assert with_owner(tmp_path, answering(files), body) == [files] * 3


def test_a_guest_of_another_version_gets_no_answer(tmp_path: Path) -> None:
    async def body(guest: Guest) -> Any:
        return await guest.ask(Question("grep", "/w", GrepQuery("x"), ()))

    assert with_owner(tmp_path, answering(Walk.OUTSIDE), body, version="0.0.1") is None


def test_a_guest_reads_a_reason_to_walk_and_a_status(tmp_path: Path) -> None:
    status = Status("ready", "on", "/w", 1, 2)

    async def serve(question: Question) -> Answer:
        return status if question.op == "status" else Walk.NO_LITERALS

    async def body(guest: Guest) -> list[Any]:
        return [await guest.ask(Question("status")), await guest.ask(Question("grep", "/w", GrepQuery("."), ()))]

    assert with_owner(tmp_path, serve, body) == [status, Walk.NO_LITERALS]


def test_a_slow_owner_is_no_answer_and_the_guest_tries_anew(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peers, "STALLED_S", 0.0)  # asked again at once (see the bounded wait's test)

    async def body(guest: Guest) -> list[Any]:
        first = await guest.ask(Question("grep", "/w", GrepQuery("slow"), ()))
        assert guest.lost.is_set() and not guest.connected  # dropped: the next question connects again
        second = await guest.ask(Question("grep", "/w", GrepQuery("fast"), ()))
        return [first, second]

    async def serve(question: Question) -> Answer:
        assert isinstance(question.query, GrepQuery)
        if question.query.pattern == "slow":
            await asyncio.sleep(5)
        return Walk.OUTSIDE

    assert with_owner(tmp_path, serve, body, wait_s=0.2) == [None, Walk.OUTSIDE]


def test_no_owner_is_no_answer(tmp_path: Path) -> None:
    async def run() -> Any:
        guest = Guest(str(tmp_path), VERSION, VIEW)
        try:
            return await guest.ask(Question("status")), guest.lost.is_set()
        finally:
            guest.close()

    assert asyncio.run(run()) == (None, True)


def test_a_reply_the_guest_does_not_read_is_no_answer(tmp_path: Path) -> None:
    """An owner that answers something that is not an answer (here: files for a status question)."""

    async def body(guest: Guest) -> Any:
        return await guest.ask(Question("status"))

    assert with_owner(tmp_path, answering(GrepFiles([b"a"], [])), body) is None


def test_peer_credentials_are_read_from_a_unix_socket() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        assert peers._peer_uid(a) == os.getuid()
    finally:
        a.close()
        b.close()
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        assert peers._peer_uid(tcp) is None or isinstance(peers._peer_uid(tcp), int)
    finally:
        tcp.close()


# --- views, the bounded wait, an owner that cannot listen ------------------------------------------------------


def test_a_view_holds_what_decides_ripgreps_rules_and_names_what_differs() -> None:
    assert VIEW.environment == (("GIT_CONFIG_GLOBAL", "/g"), ("HOME", "/home/a"))  # not PATH
    assert View.from_json(VIEW.as_json()) == VIEW
    other = View.of_process({"HOME": "/home/a", "XDG_CONFIG_HOME": "/x"})._replace(groups=(1, 2, 3))
    assert VIEW.differs(VIEW) is None
    assert VIEW.differs(other) == "supplementary groups, environment (GIT_CONFIG_GLOBAL, XDG_CONFIG_HOME)"
    with pytest.raises(ValueError):
        View.from_json({"uid": 0})


def test_questions_wait_a_bounded_time_each_and_never_one_behind_another(tmp_path: Path) -> None:
    release = asyncio.Event()
    asked = {"quick": 0, "slow": 0, "slow at once": 0, "most slow at once": 0}

    async def serve(question: Question) -> Answer:
        assert isinstance(question.query, GrepQuery)
        asked[question.query.pattern] += 1
        if question.query.pattern == "slow":
            asked["slow at once"] += 1
            asked["most slow at once"] = max(asked["most slow at once"], asked["slow at once"])
            try:
                await release.wait()
            finally:
                asked["slow at once"] -= 1
        return Walk.OUTSIDE

    async def body(guest: Guest) -> None:
        slow, quick = Question("grep", "/w", GrepQuery("slow")), Question("grep", "/w", GrepQuery("quick"))
        try:
            assert await guest.ask(quick) == Walk.OUTSIDE
            got = await asyncio.gather(*(guest.ask(slow) for _ in range(10)), guest.ask(quick))
            assert got == [None] * 10 + [Walk.OUTSIDE]  # the quick one did not wait behind them
            # Ten bounded waits at once, not one after another: the owner held all ten questions together.
            assert asked["most slow at once"] == 10, asked
            # An owner that did not answer in time is not asked again for a while: the guest walks at once.
            before = dict(asked)
            assert await guest.ask(quick) is None
            assert asked == before, asked
            assert "did not answer within 200 ms" in (guest.note or "")
        finally:
            release.set()

    with_owner(tmp_path, serve, body, wait_s=0.2)
    assert not os.path.exists(os.path.join(tmp_path, peers.ADDRESS))  # its name goes with it


def test_an_owner_with_another_view_answers_nothing_and_says_what_differs(tmp_path: Path) -> None:
    theirs = VIEW._replace(environment=(("HOME", "/home/b"),))

    async def run() -> None:
        owner = Owner(str(tmp_path), VERSION, answering(Walk.OUTSIDE), theirs)
        await owner.listen()
        guest, same = Guest(str(tmp_path), VERSION, VIEW), Guest(str(tmp_path), VERSION, theirs)
        try:
            assert await guest.ask(Question("status")) is None
            assert guest.differs == "environment (GIT_CONFIG_GLOBAL, HOME)"
            assert await same.ask(Question("grep", "/w", GrepQuery("x"))) == Walk.OUTSIDE and owner.served == 1
        finally:
            guest.close()
            same.close()
            owner.close()

    asyncio.run(run())


def test_an_owner_that_cannot_publish_its_name_says_so_and_tries_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkdir(os.path.join(tmp_path, peers.ADDRESS))  # in the way of the name's file
    monkeypatch.setattr(peers, "RETRY_S", (0.05,))

    async def run() -> None:
        owner = Owner(str(tmp_path), VERSION, answering(Walk.OUTSIDE), VIEW)
        listening = asyncio.ensure_future(owner.listen())
        guest = Guest(str(tmp_path), VERSION, VIEW)
        try:
            while owner.problem is None:
                await asyncio.sleep(0.01)
            assert "cannot ask this one" in owner.problem and "trying again in 0.05 s" in owner.problem
            assert await guest.ask(Question("status")) is None and "no daemon" in (guest.note or "")
            os.rmdir(os.path.join(tmp_path, peers.ADDRESS))
            await asyncio.wait_for(listening, 5)
            assert owner.problem is None
            assert await guest.ask(Question("grep", "/w", GrepQuery("x"))) == Walk.OUTSIDE
        finally:
            listening.cancel()
            guest.close()
            owner.close()

    asyncio.run(run())

"""One index per workspace per machine: which daemon owns it, and how the others use it.

However many daemons serve one workspace — at once (several agents on one repository) or one after
another (a host that starts a daemon per call) — one of them *owns* the workspace's index: it builds it,
keeps it fresh and answers the others. Ownership is an exclusive `flock` on `owner.lock` in the
workspace's index directory, taken without waiting: the kernel gives it back when the owner exits or
dies, however it dies, and the next daemon to ask takes it over (its build merges from what the owner
left on disk, which the trust record of sets.py vouches for).

The other daemons are *guests*: they build nothing, watch nothing, open no SQLite file. For each search
they ask the owner, over a unix socket, which files ripgrep should read — the owner drains its own
inotify queue first, so an answer is as fresh as a write made before the guest's request — and run
ripgrep themselves on its answer. An owner that is not ready, not there, of another version, or that
sees the files otherwise answers nothing, and the guest walks: never a wrong answer, at worst a walk.

**Views.** Each question carries the guest's `View` (view.py: user, groups, privileges, filesystem, the
environment that decides ripgrep's rules); an owner whose view differs refuses it and says what differs
— its ripgrep would read other files than the guest's walk — and the guest walks.

**A bounded wait.** A guest waits for an answer at most `wait_s` (a small share of a search's timeout:
see the manager), then walks; an owner that did not answer in time (stopped with SIGSTOP, or busy) is
not asked again for `STALLED_S`, so a stopped owner costs one bounded wait, not one per search. Questions
never queue behind each other: each takes an idle connection or opens one of its own.

**The socket** is in Linux's abstract namespace (no file to leave behind, no path length limit) under a
name the owner draws at random each time it listens and writes into `owner.addr` in the workspace's
index directory, which is this user's alone (private.py): another user can neither read the name nor
take it first. Both ends check the other's credentials (`SO_PEERCRED`): a daemon answers and trusts only
a process of its own user. An owner that cannot listen says so (log, `index/status`) and tries again
after a pause (`RETRY_S`).


**The protocol**: each message is a 4-byte big-endian length and a JSON object. A question is a
`Question` — the search's query as the method face made it (engine/request.py), carried unchanged — and
an answer the owner's `Answer`; both are encoded and decoded here and nowhere else.

    question {"v": 2, "version": "<daemon version>", "view": <view.View.as_json>,
              "op": "glob" | "grep" | "status",
              "cwd": "<the directory the search runs in>", "deny": [<deny globs>],
              "query": {<the query's fields by name, host-only fields left out>}}
    answer   {"v": 2, "files": <files>} | {"v": 2, "walk": "<status.Walk>"} | {"v": 2, "status": {...}}
             or {"v": 2, "error": "<why>"[, "view": "<what differs between the two views>"]}
             glob's files: {"paths": [...], "stdout_bytes": n, "growth": n}
             grep's files: {"named": "<base64 of NUL-joined paths>", "walk_to": [["<b64 dir>", "<b64 paths>"], ...]}
             status: the owner's index/status fields

Its versions (`PROTOCOL`; owners and guests of one daemon version speak one, and a guest whose owner
speaks another walks):

    1  glob and grep asked by their arguments (cwd, path, pattern, include, deny); an answer was the
       files or null.
    2  the query as one value (every grep parameter of the extended profile travels with it); an answer
       that is no files names why the search walks (status.Walk); each question carries the guest's
       view, which an owner with another refuses.

Rules of this module: ownership, the socket and the protocol; what an answer is, is the workspace's.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import secrets
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, get_args, get_type_hints

from dsh_search import osdep
from dsh_search.engine.request import HOST_FIELDS, GlobQuery, GrepQuery, OutputMode
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index.status import Status, Walk
from dsh_search.index.view import View

log = logging.getLogger("dsh_search.index")

PROTOCOL = 2  # see the versions in the header
ASK_WAIT_S = 2.0  # a guest's wait for an answer, unless the manager says otherwise
STALLED_S = 5.0  # an owner that did not answer in time is not asked again for this long
RETRY_S = (1.0, 2.0, 5.0, 10.0)  # an owner that cannot listen tries again after these pauses (then every last)
MAX_MESSAGE = 1 << 30
NOTICE = 25  # between info and warning: shown at the default log level (MCP's "notice")
OWNER_LOCK = "owner.lock"
ADDRESS = "owner.addr"  # the owner's socket name, in the workspace's (private) index directory


class OwnerLock:
    """The workspace's ownership: taken without waiting, kept for as long as the daemon owns it."""

    def __init__(self, workspace: str) -> None:
        self.path = os.path.join(workspace, OWNER_LOCK)
        self._fd: int | None = None

    def take(self) -> bool:
        """Whether this daemon owns the workspace now (it did, or it just took it)."""
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return False
        try:
            osdep.flock_now(fd)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _address_of(workspace: str) -> str | None:
    """The owner's socket name as it wrote it, or None (no owner has listened, or it is unreadable)."""
    try:
        with open(os.path.join(workspace, ADDRESS), "rb") as f:
            name = f.read(256).decode("ascii")
    except (OSError, UnicodeDecodeError):
        return None
    return name if name.startswith("dsh-search-") and name.isprintable() else None


def _peer_uid(sock: socket.socket) -> int | None:
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _paths(text: str) -> list[bytes]:
    joined = base64.b64decode(text)
    return joined.split(b"\0") if joined else []


class Question(NamedTuple):
    """What a guest asks the owner."""

    op: str  # "glob", "grep" or "status"
    cwd: str = ""  # the directory the search runs in (absolute)
    query: GlobQuery | GrepQuery | None = None
    deny: tuple[str, ...] = ()  # the guest's deny globs


# What the owner answers: the files, why the search walks, or its index's status.
Answer = GlobFiles | GrepFiles | Walk | Status

_QUERIES: dict[str, type[GlobQuery] | type[GrepQuery]] = {"glob": GlobQuery, "grep": GrepQuery}
_TYPES = {name: get_type_hints(kind) for name, kind in _QUERIES.items()}


def encode_question(question: Question, version: str) -> dict[str, Any]:
    message: dict[str, Any] = {"v": PROTOCOL, "version": version, "op": question.op}
    if question.query is not None:
        fields = {f: v for f, v in question.query._asdict().items() if f not in HOST_FIELDS}
        message.update(cwd=question.cwd, deny=list(question.deny), query=fields)
    return message


def decode_question(message: dict[str, Any]) -> Question:
    """A guest's question; ValueError when it is not one this daemon asks."""
    op = message.get("op")
    if op == "status":
        return Question("status")
    cwd, deny, fields = message.get("cwd"), message.get("deny"), message.get("query")
    if op not in _QUERIES or not isinstance(cwd, str) or not isinstance(fields, dict) or not _strings(deny):
        raise ValueError(f"no such question: {op!r}")
    assert isinstance(op, str) and isinstance(deny, list)
    kind = _QUERIES[op]
    types = _TYPES[op]
    for name, value in fields.items():
        if name not in types or name in HOST_FIELDS or not _typed(value, types[name]):
            raise ValueError(f"a {op} query's {name!r} is not as this daemon writes it")
    query = kind(**fields)
    if isinstance(query, GrepQuery):
        query = query._replace(output_mode=OutputMode(query.output_mode))
    return Question(op, cwd, query, tuple(deny))


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _typed(value: Any, kind: Any) -> bool:
    """Whether a decoded JSON value has a field's type (`int | None`, `bool`, `OutputMode`, …)."""
    options = get_args(kind) or (kind,)
    for option in options:
        if option is type(None) and value is None:
            return True
        if option is bool and isinstance(value, bool):
            return True
        if option is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if option is str and isinstance(value, str):
            return True
        if option is OutputMode and value in OutputMode.__members__.values():
            return True
    return False


def encode_answer(answer: Answer) -> dict[str, Any]:
    if isinstance(answer, Walk):
        return {"v": PROTOCOL, "walk": answer.value}
    if isinstance(answer, Status):
        return {"v": PROTOCOL, "status": answer._asdict()}
    if isinstance(answer, GlobFiles):
        return {
            "v": PROTOCOL,
            "files": {"paths": answer.paths, "stdout_bytes": answer.stdout_bytes, "growth": answer.growth},
        }
    return {
        "v": PROTOCOL,
        "files": {
            "named": _b64(b"\0".join(answer.named)),
            "walk_to": [[_b64(directory), _b64(b"\0".join(paths))] for directory, paths in answer.walk_to],
        },
    }


def decode_answer(op: str, message: dict[str, Any]) -> Answer:
    """The owner's answer to a question of `op`; ValueError (or KeyError, TypeError) when it is not one
    this daemon writes."""
    if "walk" in message:
        return Walk(message["walk"])
    if op == "status":
        fields = message["status"]
        if not isinstance(fields, dict):
            raise ValueError("not a status")
        return Status(**{k: v for k, v in fields.items() if k in Status._fields})
    data = message["files"]
    if op == "glob":
        paths = data["paths"]
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ValueError("not glob's files")
        return GlobFiles(paths, int(data["stdout_bytes"]), int(data["growth"]))
    walk_to = [(base64.b64decode(directory), _paths(paths)) for directory, paths in data["walk_to"]]
    return GrepFiles(_paths(data["named"]), walk_to)


async def _read(reader: asyncio.StreamReader) -> Any:
    import orjson

    head = await reader.readexactly(4)
    size = int.from_bytes(head, "big")
    if size > MAX_MESSAGE:
        raise ValueError("message too large")
    return orjson.loads(await reader.readexactly(size))


def _frame(message: Any) -> bytes:
    import orjson

    body = orjson.dumps(message)
    return len(body).to_bytes(4, "big") + body


# What the owner answers a question with.
Serve = Callable[[Question], Awaitable[Answer]]


class Owner:
    """The owner's side: a socket that answers guests' questions with `answer`."""

    def __init__(self, workspace: str, version: str, answer: Serve, view: View) -> None:
        self._workspace = workspace
        self._version = version
        self._answer = answer
        self._view = view
        self._server: asyncio.AbstractServer | None = None
        self._name: str | None = None
        self.served = 0  # questions answered for guests
        self._guests = 0  # guests connected now
        self.problem: str | None = None  # why guests cannot ask it now (it tries again), or None

    async def listen(self) -> None:
        """Listen for guests under a fresh name, and publish it; when that fails, say so and try again
        after a pause, for as long as this daemon owns the index (the manager cancels it then)."""
        failures = 0
        while True:
            try:
                await self._listen()
            except OSError as exc:
                pause = RETRY_S[min(failures, len(RETRY_S) - 1)]
                failures += 1
                self.problem = (
                    f"other daemons on this workspace cannot ask this one, its socket could not be opened "
                    f"({exc.strerror or exc}); trying again in {pause:g} s"
                )
                log.warning("workspace index: %s", self.problem)
                self._unlisten()
                await asyncio.sleep(pause)
                continue
            if failures:
                log.log(NOTICE, "workspace index: other daemons on this workspace can ask this one again")
            self.problem = None
            return

    async def _listen(self) -> None:
        name = f"dsh-search-{secrets.token_hex(16)}"  # nobody else can know it, so nobody can take it first
        self._server = await asyncio.start_unix_server(self._serve, path="\0" + name)
        temporary = os.path.join(self._workspace, f".{ADDRESS}")  # only the lock's holder writes it
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, name.encode("ascii"))
        finally:
            os.close(fd)
        try:
            os.replace(temporary, os.path.join(self._workspace, ADDRESS))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        self._name = name

    def _unlisten(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def close(self) -> None:
        """Stop answering; the published name goes too (while this daemon still owns the index, nobody else
        writes it)."""
        if self._name is not None and _address_of(self._workspace) == self._name:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self._workspace, ADDRESS))
        self._name = None
        if self._server is not None:
            self._unlisten()
            if self._guests:
                # Normal life (several agents on one repository, one leaving first): one notice, no more.
                # The connections end with the daemon; each guest walks, and the next one to search takes
                # the index over.
                log.log(
                    NOTICE,
                    "workspace index: this daemon owned it and leaves with %d other daemon%s using it; "
                    "the next of them to search takes it over",
                    self._guests,
                    "" if self._guests == 1 else "s",
                )

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        try:
            if sock is None or _peer_uid(sock) != os.getuid():
                return  # only a process of this user is answered
            self._guests += 1
            try:
                await self._converse(reader, writer)
            finally:
                self._guests -= 1
        except asyncio.CancelledError:
            # The owner is exiting with this guest connected (the loop cancels the connection's task):
            # said once by `close`, never as a traceback. Not raised again: asyncio's stream server would
            # log a cancelled connection task as an error.
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer one guest's questions until it goes."""
        try:
            while True:
                try:
                    request = await _read(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                writer.write(_frame(await self._reply(request)))
                await writer.drain()
        except (ConnectionError, ValueError, OSError):
            return

    async def _reply(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or request.get("v") != PROTOCOL:
            return {"v": PROTOCOL, "error": "another protocol"}
        if request.get("version") != self._version:
            return {"v": PROTOCOL, "error": f"the owner is dsh-search {self._version}"}
        try:
            theirs = View.from_json(request.get("view"))
        except ValueError as exc:
            return {"v": PROTOCOL, "error": str(exc)}
        differs = self._view.differs(theirs)
        if differs is not None:
            return {"v": PROTOCOL, "error": f"the owner sees the files otherwise: {differs}", "view": differs}
        try:
            answer = await self._answer(decode_question(request))
        except Exception as exc:  # a question the owner cannot answer: the guest walks
            log.debug("workspace index: a guest's question failed", exc_info=True)
            return {"v": PROTOCOL, "error": f"{type(exc).__name__}: {exc}"}
        self.served += 1
        return encode_answer(answer)


Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Guest:
    """A guest's side: questions to the owner, each on a connection of its own while it is asked (idle
    connections are kept for the next questions)."""

    def __init__(self, workspace: str, version: str, view: View, wait_s: float = ASK_WAIT_S) -> None:
        self._workspace = workspace
        self._version = version
        self._view = view.as_json()
        self.wait_s = wait_s
        self._idle: list[Stream] = []
        self._stalled_until = 0.0
        self.lost: asyncio.Event = asyncio.Event()  # set when the owner goes away (to try taking over)
        self.differs: str | None = None  # what differs between the owner's view and this daemon's, when it does
        self.note: str | None = None  # why the last question went unanswered (None: it was answered)

    async def ask(self, question: Question) -> Answer | None:
        """The owner's answer, or None — no owner, another version or view, an error, an answer this
        daemon does not read, or no answer within `wait_s` — after at most `wait_s`."""
        if time.monotonic() < self._stalled_until:
            return None  # it did not answer in time a moment ago: walk at once
        request = {**encode_question(question, self._version), "view": self._view}
        reply = None
        self.differs = None  # as the owner says this time
        try:
            async with asyncio.timeout(self.wait_s):
                reply = await self._exchange(request)
        except TimeoutError:
            self._stalled_until = time.monotonic() + STALLED_S
            self.note = (
                f"the daemon that owns the workspace's index did not answer within {round(self.wait_s * 1000)} ms "
                f"(stopped or busy): searches walk, and it is asked again in {STALLED_S:g} s"
            )
            self.lost.set()
            return None
        if reply is None:
            return None
        if not isinstance(reply, dict) or "error" in reply or reply.get("v") != PROTOCOL:
            why = reply.get("error", "another protocol") if isinstance(reply, dict) else "an answer of another shape"
            log.debug("workspace index: the owner did not answer: %s", why)
            view = reply.get("view") if isinstance(reply, dict) else None
            self.differs = view if isinstance(view, str) else None
            self.note = f"the daemon that owns the workspace's index did not answer: {why}"
            return None
        try:
            answer = decode_answer(question.op, reply)
        except (KeyError, TypeError, ValueError):
            self.note = "the daemon that owns the workspace's index answered what this one does not read"
            return None
        self.note = None
        return answer

    async def _exchange(self, request: dict[str, Any]) -> Any:
        """One question and its reply on a connection of its own; a kept connection that fails (the owner
        it led to is gone) is dropped with the others kept, and the question asked once more on a new one."""
        for _attempt in range(2):
            reused = bool(self._idle)
            stream = self._idle.pop() if reused else None
            try:
                if stream is None:
                    stream = await self._connect()
                reader, writer = stream
                writer.write(_frame(request))
                await writer.drain()
                reply = await _read(reader)
            except (OSError, ConnectionError, ValueError, asyncio.IncompleteReadError, KeyError) as exc:
                _close(stream)
                self._drop_idle()
                if reused:
                    continue
                self.note = f"no daemon that owns the workspace's index answers ({exc})"
                self.lost.set()
                return None
            except BaseException:  # cancelled, or out of time: the reply may still come, on this connection
                _close(stream)
                raise
            self._idle.append(stream)
            return reply
        return None

    async def _connect(self) -> Stream:
        name = _address_of(self._workspace)
        if name is None:
            raise ConnectionError("no owner has published its socket")
        reader, writer = await asyncio.open_unix_connection(path="\0" + name)
        sock = writer.get_extra_info("socket")
        if sock is None or _peer_uid(sock) != os.getuid():
            writer.close()
            raise ConnectionError("the owner's socket is held by a process of another user")
        return reader, writer

    def _drop_idle(self) -> None:
        for stream in self._idle:
            _close(stream)
        self._idle.clear()

    @property
    def connected(self) -> bool:
        """Whether a connection to the owner is open, idle between questions."""
        return bool(self._idle)

    def close(self) -> None:
        self._drop_idle()
        self.lost.set()


def _close(stream: Stream | None) -> None:
    if stream is not None:
        with contextlib.suppress(Exception):
            stream[1].close()

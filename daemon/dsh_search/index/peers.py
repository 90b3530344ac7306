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
ripgrep themselves on its answer. An owner that is not ready, not there, too slow (`ASK_TIMEOUT_S`) or
of another version answers nothing, and the guest walks: never a wrong answer, at worst a walk.

**The socket** is in Linux's abstract namespace (no file to leave behind, no path length limit), named
by the workspace's index directory and the user's id; both ends check the other's credentials
(`SO_PEERCRED`): a daemon answers and trusts only a process of its own user.

**The protocol**: each message is a 4-byte big-endian length and a JSON object. A question is a
`Question` — the search's query as the method face made it (engine/request.py), carried unchanged — and
an answer the owner's `Answer`; both are encoded and decoded here and nowhere else.

    question {"v": 2, "version": "<daemon version>", "op": "glob" | "grep" | "status",
              "cwd": "<the directory the search runs in>", "deny": [<deny globs>],
              "query": {<the query's fields by name, host-only fields left out>}}
    answer   {"v": 2, "files": <files>} | {"v": 2, "walk": "<status.Walk>"} | {"v": 2, "status": {...}}
             or {"v": 2, "error": "<why>"}
             glob's files: {"paths": [...], "stdout_bytes": n, "growth": n}
             grep's files: {"named": "<base64 of NUL-joined paths>", "walk_to": [["<b64 dir>", "<b64 paths>"], ...]}
             status: the owner's index/status fields

Its versions (`PROTOCOL`; owners and guests of one daemon version speak one, and a guest whose owner
speaks another walks):

    1  glob and grep asked by their arguments (cwd, path, pattern, include, deny); an answer was the
       files or null.
    2  the query as one value (every grep parameter of the extended profile travels with it); an answer
       that is no files names why the search walks (status.Walk).

Rules of this module: ownership, the socket and the protocol; what an answer is, is the workspace's.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import os
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, get_args, get_type_hints

from dsh_search import osdep
from dsh_search.engine.request import HOST_FIELDS, GlobQuery, GrepQuery, OutputMode
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index.status import Status, Walk

log = logging.getLogger("dsh_search.index")

PROTOCOL = 2  # see the versions in the header
ASK_TIMEOUT_S = 2.0  # past it, a guest's search walks
MAX_MESSAGE = 1 << 30
NOTICE = 25  # between info and warning: shown at the default log level (MCP's "notice")
OWNER_LOCK = "owner.lock"


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


def address(workspace: str) -> str:
    """The owner's socket: an abstract name of the workspace's index directory and the user."""
    digest = hashlib.sha256(f"{os.getuid()}:{os.path.realpath(workspace)}".encode()).hexdigest()[:40]
    return f"\0dsh-search-index-{digest}"


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

    def __init__(self, workspace: str, version: str, answer: Serve) -> None:
        self._address = address(workspace)
        self._version = version
        self._answer = answer
        self._server: asyncio.AbstractServer | None = None
        self.served = 0  # questions answered for guests
        self._guests = 0  # guests connected now

    async def start(self) -> bool:
        """Listen for guests; False when the address is taken (a stale owner's, or a stranger's)."""
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=self._address)
        except OSError as exc:
            log.warning("workspace index: other daemons cannot use this one's index (%s)", exc)
            return False
        return True

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
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
            answer = await self._answer(decode_question(request))
        except Exception as exc:  # a question the owner cannot answer: the guest walks
            log.debug("workspace index: a guest's question failed", exc_info=True)
            return {"v": PROTOCOL, "error": f"{type(exc).__name__}: {exc}"}
        self.served += 1
        return encode_answer(answer)


class Guest:
    """A guest's side: one connection to the owner, made when first needed and again after a failure."""

    def __init__(self, workspace: str, version: str) -> None:
        self._address = address(workspace)
        self._version = version
        self._stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()  # one question at a time on the connection
        self.connected = False
        self.lost: asyncio.Event = asyncio.Event()  # set when the owner goes away (to try taking over)

    async def ask(self, question: Question) -> Answer | None:
        """The owner's answer, or None: no owner, too slow, another version, an error, an answer this
        daemon does not read."""
        request = encode_question(question, self._version)
        async with self._lock:
            try:
                async with asyncio.timeout(ASK_TIMEOUT_S):
                    reader, writer = await self._connect()
                    writer.write(_frame(request))
                    await writer.drain()
                    reply = await _read(reader)
            except (OSError, ConnectionError, ValueError, TimeoutError, asyncio.IncompleteReadError, KeyError):
                self._drop()
                return None
        if not isinstance(reply, dict) or "error" in reply or reply.get("v") != PROTOCOL:
            if isinstance(reply, dict):
                log.debug("workspace index: the owner did not answer: %s", reply.get("error"))
            return None
        try:
            return decode_answer(question.op, reply)
        except (KeyError, TypeError, ValueError):
            return None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._stream is not None:
            return self._stream
        reader, writer = await asyncio.open_unix_connection(path=self._address)
        sock = writer.get_extra_info("socket")
        if sock is None or _peer_uid(sock) != os.getuid():
            writer.close()
            raise ConnectionError("the owner's socket is held by a process of another user")
        self._stream = (reader, writer)
        self.connected = True
        return self._stream

    def _drop(self) -> None:
        if self._stream is not None:
            with contextlib.suppress(Exception):
                self._stream[1].close()
        self._stream = None
        self.connected = False
        self.lost.set()

    def close(self) -> None:
        self._drop()

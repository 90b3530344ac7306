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

**The protocol**: each message is a 4-byte big-endian length and a JSON object.

    request  {"v": 1, "version": "<daemon version>", "op": "glob" | "grep" | "status",
              "cwd", "path", "pattern", "include", "deny": [<deny globs>]}
    answer   {"v": 1, "answer": null | <files>} or {"v": 1, "error": "<why>"}
             glob's files: {"paths": [...], "stdout_bytes": n, "growth": n}
             grep's files: {"named": "<base64 of NUL-joined paths>", "walk_to": [["<b64 dir>", "<b64 paths>"], ...]}
             status: the owner's index/status fields

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
from typing import Any

from dsh_search import osdep
from dsh_search.engine.source import GlobFiles, GrepFiles

log = logging.getLogger("dsh_search.index")

PROTOCOL = 1
ASK_TIMEOUT_S = 2.0  # past it, a guest's search walks
MAX_MESSAGE = 1 << 30
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


def encode_files(files: GlobFiles | GrepFiles | None) -> Any:
    if files is None:
        return None
    if isinstance(files, GlobFiles):
        return {"paths": files.paths, "stdout_bytes": files.stdout_bytes, "growth": files.growth}
    return {
        "named": _b64(b"\0".join(files.named)),
        "walk_to": [[_b64(directory), _b64(b"\0".join(paths))] for directory, paths in files.walk_to],
    }


def decode_glob(data: Any) -> GlobFiles | None:
    if data is None:
        return None
    paths = data["paths"]
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ValueError("not glob's files")
    return GlobFiles(paths, int(data["stdout_bytes"]), int(data["growth"]))


def decode_grep(data: Any) -> GrepFiles | None:
    if data is None:
        return None
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


# What the owner answers with: (request) → the answer's JSON (None: nothing to say, walk).
Answer = Callable[[dict[str, Any]], Awaitable[Any]]


class Owner:
    """The owner's side: a socket that answers guests' questions with `answer`."""

    def __init__(self, workspace: str, version: str, answer: Answer) -> None:
        self._address = address(workspace)
        self._version = version
        self._answer = answer
        self._server: asyncio.AbstractServer | None = None
        self.served = 0  # questions answered for guests

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

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        try:
            if sock is None or _peer_uid(sock) != os.getuid():
                return  # only a process of this user is answered
            while True:
                try:
                    request = await _read(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                writer.write(_frame(await self._reply(request)))
                await writer.drain()
        except (ConnectionError, ValueError, OSError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _reply(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or request.get("v") != PROTOCOL:
            return {"v": PROTOCOL, "error": "another protocol"}
        if request.get("version") != self._version:
            return {"v": PROTOCOL, "error": f"the owner is dsh-search {self._version}"}
        try:
            answer = await self._answer(request)
        except Exception as exc:  # a question the owner cannot answer: the guest walks
            log.debug("workspace index: a guest's question failed", exc_info=True)
            return {"v": PROTOCOL, "error": f"{type(exc).__name__}: {exc}"}
        self.served += 1
        return {"v": PROTOCOL, "answer": answer}


class Guest:
    """A guest's side: one connection to the owner, made when first needed and again after a failure."""

    def __init__(self, workspace: str, version: str) -> None:
        self._address = address(workspace)
        self._version = version
        self._stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()  # one question at a time on the connection
        self.connected = False
        self.lost: asyncio.Event = asyncio.Event()  # set when the owner goes away (to try taking over)

    async def ask(self, request: dict[str, Any]) -> Any:
        """The owner's answer, or None: no owner, not ready, too slow, another version, an error."""
        request = {"v": PROTOCOL, "version": self._version, **request}
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
        if not isinstance(reply, dict) or "error" in reply:
            if isinstance(reply, dict):
                log.debug("workspace index: the owner did not answer: %s", reply.get("error"))
            return None
        return reply.get("answer")

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

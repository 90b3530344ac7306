"""A small test client that spawns the daemon and talks JSON-RPC to it over real pipes.

It speaks either framing, can write raw bytes (to send garbage), and collects every response in a
background thread so tests can wait for a given id or for silence.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.locations import EXE, LAUNCH, WINDOWS
from tests.support.processes import TAG_VARIABLE, new_tag, processes_named, tagged

BASE_ARGS = ("--sample-over-cap-glob-results", "true")


# The end-to-end suite's second pass (scripts/test): every daemon it starts runs with the workspace index
# on. In both passes the indexes go to one scratch directory for the whole run (removed at exit), never
# to the user's cache: a daemon in the first pass runs the default mode, `auto`, which indexes a
# workspace whose walk was slow.
INDEX = os.environ.get("DSH_E2E_INDEX", "")
_INDEX_DIR: list[str] = []


def index_args(args: Sequence[str]) -> list[str]:
    """`--index <mode>` when the suite runs with the index, and `--index-dir DIR`, unless the args say
    otherwise."""
    if any(a in args for a in ("--check", "--version", "--help")):
        return []
    if not _INDEX_DIR:
        import atexit
        import shutil
        import tempfile

        _INDEX_DIR.append(tempfile.mkdtemp(prefix="dsh-e2e-index-"))
        atexit.register(shutil.rmtree, _INDEX_DIR[0], ignore_errors=True)
    mode = ["--index", INDEX] if INDEX and "--index" not in args else []
    where = ["--index-dir", _INDEX_DIR[0]] if "--index-dir" not in args else []
    return [*mode, *where]


def settle_index(d: Conversation, timeout: float = 120) -> None:
    """When the suite runs with the index, wait until the daemon's first build is over (a test that takes
    a baseline of descriptors or memory takes it after, not during, the build)."""
    if not INDEX:
        return
    deadline = time.monotonic() + timeout
    while d.result("index/status")["state"] == "building":
        assert time.monotonic() < deadline, "the index build did not end"
        time.sleep(0.05)


def host_view(message: Any) -> Any:
    """A message of the Windows daemon under wine as the platform-neutral tests read it: every string with
    wine's drive `Z:\\` (the host's `/`) as `/` and every `\\` as `/`, so that the tests' expected texts,
    written with POSIX separators, and their host paths hold. (Requests need no translation: a host path
    such as /tmp/x is a path on the current drive, Z:, under wine.) What the model really sees on Windows,
    backslashes and drive letters, is tested word for word in tests/windows, which reads answers raw."""
    if isinstance(message, str):
        return message.replace("Z:\\", "/").replace("\\", "/")
    if isinstance(message, list):
        return [host_view(item) for item in message]
    if isinstance(message, dict):
        return {key: host_view(value) for key, value in message.items()}
    return message


def frame(body: bytes, framing: str) -> bytes:
    if framing == "lsp":
        return b"Content-Length: %d\r\n\r\n" % len(body) + body
    return body + b"\n"


class Conversation:
    """JSON-RPC with a daemon over two file descriptors: requests written to one, every message read from
    the other by a background thread (responses, and the daemon's own notifications and requests)."""

    def __init__(self, write_fd: int, read_fd: int, framing: str = "ndjson", raw: bool = False) -> None:
        self.framing = framing
        self._view = host_view if WINDOWS and not raw else None  # see host_view
        self._write_fd = write_fd
        self._read_fd = read_fd
        self.responses: queue.Queue[Any] = queue.Queue()
        self.raw_stdout = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0
        self._pending: dict[Any, Any] = {}
        self.notifications: list[dict[str, Any]] = []

    # -- IO ------------------------------------------------------------------------------------------

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._read_fd, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                break
            self.raw_stdout += chunk
            buf += chunk
            while True:
                if self.framing == "lsp":
                    head, sep, rest = buf.partition(b"\r\n\r\n")
                    if not sep:
                        break
                    length = int(head.split(b":")[1])
                    if len(rest) < length:
                        break
                    body, buf = rest[:length], rest[length:]
                else:
                    line, sep, rest = buf.partition(b"\n")
                    if not sep:
                        break
                    body, buf = line, rest
                message = json.loads(body)
                self.responses.put(message if self._view is None else self._view(message))
        self.responses.put(EOFError())

    @property
    def stderr(self) -> str:
        return ""

    def write_raw(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._write_fd, view) :]

    def send(self, message: Any) -> None:
        self.write_raw(frame(json.dumps(message).encode(), self.framing))

    def send_body(self, body: bytes) -> None:
        self.write_raw(frame(body, self.framing))

    # -- requests ------------------------------------------------------------------------------------

    def request(self, method: str, params: Any = None, *, id_: Any = None) -> Any:
        if id_ is None:
            self._next_id += 1
            id_ = f"r{self._next_id}"
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": id_}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return id_

    def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def next_response(self, timeout: float = 20.0) -> Any:
        item = self.responses.get(timeout=timeout)
        if isinstance(item, EOFError):
            self.responses.put(item)
            raise EOFError(f"daemon stdout closed; stderr: {self.stderr}")
        return item

    def wait_for(self, id_: Any, timeout: float = 30.0) -> dict[str, Any]:
        """The response with this id (responses for other ids are kept for later)."""
        deadline = time.monotonic() + timeout
        if id_ in self._pending:
            return self._pending.pop(id_)  # type: ignore[no-any-return]
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no response for id {id_!r}; stderr: {self.stderr}")
            try:
                msg = self.next_response(timeout=remaining)
            except queue.Empty:
                continue
            if isinstance(msg, dict) and "id" not in msg and "method" in msg:
                self.notifications.append(msg)  # from the daemon, not an answer: kept for tests that look
                continue
            if isinstance(msg, dict) and msg.get("id") == id_:
                return msg
            self._pending[msg.get("id") if isinstance(msg, dict) else repr(msg)] = msg

    def call(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        return self.wait_for(self.request(method, params), timeout=timeout)

    def result(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        response = self.call(method, params, timeout)
        assert "result" in response, response
        return response["result"]

    def drain(self, until_id: Any, timeout: float = 60) -> list[dict[str, Any]]:
        """Every message up to and including the response with this id, in the order written."""
        messages: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            message = self.next_response(timeout=max(0.1, deadline - time.monotonic()))
            messages.append(message)
            if message.get("id") == until_id and "method" not in message:
                return messages

    def no_response(self, within: float = 0.5) -> bool:
        try:
            msg = self.responses.get(timeout=within)
        except queue.Empty:
            return True
        self.responses.put(msg)
        return False


class Daemon(Conversation):
    """The frozen executable (or any command), spawned, over real pipes."""

    def __init__(
        self,
        args: Sequence[str] = BASE_ARGS,
        *,
        framing: str = "ndjson",
        exe: Path | str = EXE,
        cwd: Path | str | None = None,
        env: dict[str, str] | None = None,
        command: Sequence[str] | None = None,
        index: bool = True,
        raw: bool = False,
        **popen: Any,
    ) -> None:
        argv = list(command) if command is not None else [*LAUNCH, str(exe)]
        if WINDOWS and env is not None:
            env = {**{k: v for k, v in os.environ.items() if k.startswith("WINE")}, **env}
        self.tag = new_tag()  # in its environment and its children's: what it leaves behind is found by it
        env = {**(os.environ if env is None else env), TAG_VARIABLE: self.tag}
        self.proc = subprocess.Popen(
            [*argv, *args, *(index_args(args) if index else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            **popen,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        super().__init__(self.proc.stdin.fileno(), self.proc.stdout.fileno(), framing, raw)
        self.stderr_chunks: list[bytes] = []
        self._err_reader = threading.Thread(target=self._read_err, daemon=True)
        self._err_reader.start()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self.stderr_chunks.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    def ripgreps(self) -> list[int]:
        """This daemon's ripgrep processes now (running, or left behind once it has gone). Under wine the
        tag does not reach the host's view of a Windows child's environment: there, every process of the
        sidecar's name counts (the Windows leg runs one test at a time)."""
        if WINDOWS:
            return processes_named("dsh-search-rg.exe")
        return tagged(self.tag, "-rg ")

    def leftovers(self) -> list[int]:
        """Whatever this daemon started that still runs (checked once it has gone)."""
        if WINDOWS:
            return processes_named("dsh-search-rg.exe") + processes_named(str(EXE).replace("/", "\\"))
        return tagged(self.tag)

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    # -- the serving process -------------------------------------------------------------------------

    @property
    def server_pid(self) -> int:
        """The process that serves: the onefile launcher's child (it unpacks and runs Python), or the
        process itself when it is not a onefile launcher."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                    children = [int(c) for c in f.read().split()]
            except OSError:
                children = []
            if children:
                return children[0]
            if os.path.basename(os.readlink(f"/proc/{self.proc.pid}/exe")).startswith("python"):
                return self.proc.pid
            time.sleep(0.01)
        raise AssertionError("the daemon never started its serving process")

    def open_fds(self) -> list[str]:
        """What the serving process has open (readlink of each of its descriptors)."""
        pid = self.server_pid
        found = []
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                continue
        return found

    def rss_kib(self) -> int:
        with open(f"/proc/{self.server_pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    # -- lifetime ------------------------------------------------------------------------------------

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait_exit(self, timeout: float = 10.0) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                self.close_stdin()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self._reader.join(timeout=5)


@contextmanager
def running(*args: str, **kwargs: Any) -> Iterator[Daemon]:
    daemon = Daemon(args or BASE_ARGS, **kwargs)
    try:
        yield daemon
    finally:
        daemon.stop()


# A fixture's factory: starts a daemon with extra arguments (see tests/conftest.py's `start`).
MakeDaemon = Callable[..., Daemon]


def text_of(response: dict[str, Any]) -> str:
    assert "result" in response, response
    return str(response["result"]["text"])


def error_of(response: dict[str, Any]) -> tuple[int, str, str]:
    assert "error" in response, response
    err = response["error"]
    return err["code"], err.get("data", {}).get("code", ""), err.get("data", {}).get("text", "")

"""An asyncio client for the dsh-search daemon: standard library only, Python 3.11+.

    from dsh_search_bin import Client

    async with Client(sample_over_cap_glob_results=True, workdir="/path/to/project") as client:
        found = await client.grep("TODO", include="*.py")
        print(found.text)

The client spawns the daemon (the wheel's own executable unless told otherwise), speaks newline-delimited
JSON-RPC 2.0 over its stdin/stdout, matches answers by id so that calls may run concurrently from many
tasks, and stops the daemon gracefully when the `async with` block ends. It reads the daemon's stdout in
large chunks and splits lines itself, so no answer is too long for it (asyncio's `readline()` stops at
64 KiB by default).

Cancelling the task that awaits a call (directly, or through `asyncio.timeout`) sends `$/cancelRequest`
for that request and waits, up to `cancel_wait` seconds, for the daemon's `-32800` answer, which confirms
that the search and its ripgrep are gone; then `asyncio.CancelledError` propagates as usual, with the
daemon's answer as its `__cause__` (a `RequestError` whose `rpc_code` is -32800). `asyncio.timeout` and
`asyncio.wait_for` turn that into a `TimeoutError`; `cancel_reply(exc)` finds the daemon's answer in either.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import math
import os
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, Literal, TypedDict, cast

__all__ = [
    "ERROR_KINDS",
    "REQUEST_CANCELLED",
    "AppendResult",
    "Client",
    "ClosedError",
    "DshSearchError",
    "GlobMeta",
    "GlobResult",
    "GrepFile",
    "GrepLine",
    "GrepMeta",
    "GrepResult",
    "InitializeResult",
    "NotificationHandler",
    "Progress",
    "ProgressHandler",
    "RequestError",
    "ScrollbackPage",
    "Spill",
    "SpillPage",
    "StartupError",
    "TerminalMatch",
    "TerminalSearchResult",
    "cancel_reply",
]

log = logging.getLogger("dsh_search_bin")

REQUEST_CANCELLED = -32800
"""The JSON-RPC error code of a request cancelled with `$/cancelRequest` (LSP's RequestCancelled)."""

ERROR_KINDS: Mapping[str, int] = MappingProxyType(
    {
        "INVALID_ARGS": -32602,
        "SEARCH_INVALID_PATTERN": 1001,
        "SEARCH_FAILED": 1002,
        "SEARCH_RAW_OUTPUT_OVERFLOW": 1003,
        "SEARCH_ABORTED": 1004,
    }
)
"""The failure kinds of tool methods (`RequestError.code`, the daemon's `data.code`) and their JSON-RPC codes:
the daemon's own table, as its `rpc.discover` publishes it (the tests check it against a running daemon).
SEARCH_ABORTED is answered -32800 instead for a request cancelled with `$/cancelRequest`."""

# Names for the errors that carry no `data.code` (envelope errors), so that RequestError.code is always a
# string to branch on.
_ENVELOPE_CODES = {
    -32700: "PARSE_ERROR",
    -32600: "INVALID_REQUEST",
    -32601: "METHOD_NOT_FOUND",
    -32602: "INVALID_PARAMS",
    -32603: "INTERNAL_ERROR",
    REQUEST_CANCELLED: "REQUEST_CANCELLED",
}

_READ_CHUNK = 1 << 20
_STDERR_LINES = 200
_EXIT_HINTS = {
    2: "invalid configuration",
    3: "the ripgrep sidecar dsh-search-rg is missing or unusable",
    127: "the launcher could not run what it unpacked into $TMPDIR (a noexec mount?)",
}

# Through a launcher the status is the channel's: the far side's daemon's, or the launcher's own failure.
_LAUNCHER_EXIT_HINTS = {
    **_EXIT_HINTS,
    126: "the far side found the executable but could not run it",
    127: "the far side found no such executable (is it on the PATH a non-interactive session gets?), or "
    "its launcher could not run what it unpacked into $TMPDIR",
    255: "the launcher could not reach the far side (ssh's own failures exit 255)",
}

NotificationHandler = Callable[[str, Any], Awaitable[None] | None]
"""Called with (method, params) for every notification the daemon sends (progress, log messages,
`notifications/tools/list_changed`, …). It may be a coroutine function; exceptions are logged."""

StderrMode = Literal["inherit", "capture", "discard"]
_STDERR_MODES = ("inherit", "capture", "discard")


# -- errors ------------------------------------------------------------------------------------------------


class DshSearchError(Exception):
    """Base class of every error this client raises."""


class RequestError(DshSearchError):
    """The daemon answered a request with a JSON-RPC error.

    `code` is the failure kind to branch on: for tool methods the daemon's `data.code` (`INVALID_ARGS`,
    `SEARCH_INVALID_PATTERN`, `SEARCH_FAILED`, `SEARCH_RAW_OUTPUT_OVERFLOW`, `SEARCH_ABORTED`); for
    envelope errors, which carry no data, a name for the numeric code (`PARSE_ERROR`, `INVALID_REQUEST`,
    `METHOD_NOT_FOUND`, `INVALID_PARAMS`, `INTERNAL_ERROR`), else `ERROR_<n>`. `rpc_code` is the
    numeric JSON-RPC code (1001-1004, -32602, -32800, …). `text` is `data.text` — exactly what a model
    should be shown (`Error: …`) — or the error message when there is no data.
    """

    def __init__(self, method: str, error: Mapping[str, Any]) -> None:
        raw_code = error.get("code")
        self.rpc_code: int = raw_code if isinstance(raw_code, int) else 0
        self.message: str = str(error.get("message", ""))
        self.data: Any = error.get("data")
        data = self.data if isinstance(self.data, dict) else {}
        kind = data.get("code")
        self.code: str = kind if isinstance(kind, str) else _ENVELOPE_CODES.get(self.rpc_code, f"ERROR_{self.rpc_code}")
        text = data.get("text")
        self.text: str = text if isinstance(text, str) else self.message
        self.method = method
        super().__init__(f"{method}: error {self.rpc_code} {self.code}: {self.text}")


def cancel_reply(exc: BaseException | None) -> RequestError | None:
    """The daemon's answer to a cancelled call (`rpc_code` -32800, `code` SEARCH_ABORTED, `text` for the
    model), found in what the call raised: the `TimeoutError` of `asyncio.timeout`/`asyncio.wait_for`, the
    `CancelledError` of a cancelled task, the `RequestError` of a call cancelled by `close(cancel=True)`, or
    an exception of yours raised from one of them. None if there is none (not a cancellation, or the daemon did
    not answer within `cancel_wait`).
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, RequestError) and exc.rpc_code == REQUEST_CANCELLED:
            return exc
        exc = exc.__cause__ if exc.__cause__ is not None or exc.__suppress_context__ else exc.__context__
    return None


class ClosedError(DshSearchError):
    """The daemon's stdout ended (it exited) before the answer came, or the client was closed."""

    def __init__(self, message: str, returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


class StartupError(ClosedError):
    """The daemon exited before answering `initialize`.

    Exit status 3: the ripgrep sidecar is missing or broken (a broken installation: reinstall, do not
    retry); 2: invalid configuration; 127: see docs/troubleshooting.md. The daemon explains itself in one
    stderr line, which is in `stderr` when the client was made with `stderr="capture"`.
    """


# -- results -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Spill:
    """Where the complete result of a capped search was saved; page through it with `spill_pages`."""

    locator: str
    bytes: int
    retrieval_hint: str


class GlobMeta(TypedDict):
    shape: Literal["paths"]
    paths: list[str]
    truncated: bool
    total: int


class GrepLine(TypedDict):
    lineNumber: int
    line: str


class GrepFile(TypedDict):
    path: str
    matches: list[GrepLine]


class GrepMeta(TypedDict):
    shape: Literal["matches"]
    files: list[GrepFile]
    truncated: bool
    total: int


@dataclass(frozen=True, slots=True)
class GlobResult:
    """`text` is what the model sees; `meta` the paths shown inline, for a UI; `spill` is set when capped."""

    text: str
    meta: GlobMeta
    spill: Spill | None


@dataclass(frozen=True, slots=True)
class GrepResult:
    """`text` is what the model sees; `meta` the matches shown inline, for a UI; `spill` is set when capped."""

    text: str
    meta: GrepMeta
    spill: Spill | None


@dataclass(frozen=True, slots=True)
class TerminalMatch:
    offset: int
    """Newest-relative: a `scrollback_read` with this offset ends at the match line."""
    line: str


@dataclass(frozen=True, slots=True)
class TerminalSearchResult:
    text: str
    matches: list[TerminalMatch]
    match_count: int
    total_lines: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class AppendResult:
    total_lines: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class ScrollbackPage:
    text: str
    line_begin: int
    line_end: int
    """The offset to pass for the next, older page."""
    total_lines: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class SpillPage:
    text: str
    start_line: int
    end_line: int
    total_lines: int
    next_offset: int | None


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress report of a running search (MCP's notifications/progress)."""

    progress: float
    """Seconds since the call started (grows with every report)."""
    message: str
    """What ripgrep found so far, e.g. `grep: 31 matches in 7 files so far`."""


ProgressHandler = Callable[[Progress], Awaitable[None] | None]
"""A call's `on_progress`: called with each progress report while the call runs (a coroutine function's
coroutine runs as a task); exceptions are logged."""


@dataclass(frozen=True, slots=True)
class InitializeResult:
    """The daemon's answer to `initialize` (`Client.initialize_result`)."""

    protocol_version: str
    """The MCP revision the session speaks."""
    server_name: str
    server_version: str
    ripgrep_path: str
    """The daemon's ripgrep sidecar, dsh-search-rg."""
    ripgrep_version: str
    instructions: str
    """Guidance on the tools for a system prompt."""
    config: dict[str, Any]
    """The daemon's effective configuration: every configuration key (timeoutMs, grepMaxMatches, spillDir, …)
    as the daemon resolved it. `--workdir` is not a configuration key and is not here."""
    raw: dict[str, Any]
    """The whole `initialize` answer."""
    guidance: dict[str, str]
    """The guidance tool by tool (`glob`, `grep`, `terminal_search`)."""


def _spill(value: Any) -> Spill | None:
    if not isinstance(value, dict):
        return None
    return Spill(str(value["locator"]), int(value["bytes"]), str(value.get("retrievalHint", "")))


# -- the client --------------------------------------------------------------------------------------------


class Client:
    """One dsh-search daemon process and a JSON-RPC session with it.

    Use it as `async with Client(...) as client:` (start, then a graceful stop at the end), or call
    `await client.start()` and `await client.close()` yourself. Calls may be made concurrently from
    several tasks; answers are matched by id.

    executable: the daemon; default `dsh_search_bin.executable_path()` (the wheel's own). With a launcher, its
        path (or a name found on the PATH) on the far side, default `dsh-search`; nothing checks it here.
    sample_over_cap_glob_results: required by the daemon (an explicit choice of how an over-cap glob is
        ordered); pass None only if `args` or a `--config` file sets it.
    launcher: a command prefix, as an argv list (never a shell string), that starts the daemon on the far side
        of a channel: `["ssh", "-T", "-o", "BatchMode=yes", "user@host"]`, `["docker", "exec", "-i", "ctr"]`,
        `["kubectl", "exec", "-i", "pod", "--"]`, `["podman", "exec", "-i", "ctr"]`, `["wsl.exe", "--exec"]`.
    launcher_quote: "auto" (default: quote the daemon's argv for the remote shell when the launcher is ssh),
        "shell" (always), "none" (never): see `dsh_search_bin.remote.LauncherQuote`.
    remote: pass `--remote true` (the daemon's paths are not the host's); default: when there is a launcher.
    install: with a launcher, first put a build on the far side through it (its per-user cache, checked by
        sha256, reused when present) and run that: True for the wheel's own build, or a directory holding
        `dsh-search` and `dsh-search-rg` built for the far side's platform (`remote.install_remote`).
    workdir, spill_dir: `--workdir` (the default `cwd` of searches) and `--spill-dir`.
    args: further command-line flags (`--timeout-ms`, `--config FILE`, …).
    env: the daemon's whole environment (default: this process's).
    stderr: "inherit" (default: the daemon's logs go to this process's stderr), "discard", or "capture"
        (the last lines are kept for `StartupError.stderr` and `stderr_tail`).
    on_notification: called for every notification the daemon sends; unknown ones are ignored otherwise.
    initialize: send `initialize` at start (default); its answer is `initialize_result`.
    cancel_wait: how long a cancelled call waits for the daemon to confirm (-32800) the cancellation.
    cancel_on_close: `close()` cancels the calls still running instead of letting `shutdown` wait for them.
    shutdown_wait, exit_wait, term_wait: the graceful stop's bounds: for `shutdown`'s answer (it waits for
        running searches), for the exit after stdin is closed, and after SIGTERM (the daemon needs at
        most graceMs + 1 s); SIGKILL only after all of them.

    Every argument is checked for its type here: TypeError (or ValueError for a value out of range) names it.
    """

    def __init__(
        self,
        executable: str | os.PathLike[str] | None = None,
        *,
        sample_over_cap_glob_results: bool | None,
        launcher: Sequence[str] | None = None,
        launcher_quote: Literal["auto", "shell", "none"] = "auto",
        remote: bool | None = None,
        install: bool | str | os.PathLike[str] | None = None,
        workdir: str | os.PathLike[str] | None = None,
        spill_dir: str | os.PathLike[str] | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        stderr: StderrMode = "inherit",
        on_notification: NotificationHandler | None = None,
        initialize: bool = True,
        client_info: Mapping[str, str] | None = None,
        cancel_wait: float = 5.0,
        shutdown_wait: float = 10.0,
        exit_wait: float = 5.0,
        term_wait: float = 6.0,
        cancel_on_close: bool = False,
    ) -> None:
        _check_path("executable", executable)
        from .remote import check_launcher

        check_launcher(launcher, launcher_quote)
        if remote is not None and not isinstance(remote, bool):
            raise _type_error("remote", "True, False or None", remote)
        if install is not None and not isinstance(install, bool):
            _check_path("install", install)
        if install not in (None, False):
            if launcher is None:
                raise ValueError("install needs a launcher: it puts the build on the far side of the launcher")
            if executable is not None:
                raise ValueError("pass executable or install, not both: install runs the build it installed")
        if sample_over_cap_glob_results is not None and not isinstance(sample_over_cap_glob_results, bool):
            raise _type_error("sample_over_cap_glob_results", "True, False or None", sample_over_cap_glob_results)
        _check_path("workdir", workdir)
        _check_path("spill_dir", spill_dir)
        if isinstance(args, str | bytes) or not all(isinstance(arg, str) for arg in args):
            raise _type_error("args", "a sequence of strings", args)
        if env is not None and not (
            isinstance(env, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise _type_error("env", "a mapping of strings to strings", env)
        if stderr not in _STDERR_MODES:
            raise ValueError(f"stderr must be one of {', '.join(map(repr, _STDERR_MODES))}, not {stderr!r}")
        if on_notification is not None and not callable(on_notification):
            raise _type_error("on_notification", "a function", on_notification)
        if client_info is not None and not (
            isinstance(client_info, Mapping) and all(isinstance(v, str) for v in client_info.values())
        ):
            raise _type_error("client_info", "a mapping of strings", client_info)
        for name, flag in (("initialize", initialize), ("cancel_on_close", cancel_on_close)):
            if not isinstance(flag, bool):
                raise _type_error(name, "True or False", flag)
        for name, seconds in (
            ("cancel_wait", cancel_wait),
            ("shutdown_wait", shutdown_wait),
            ("exit_wait", exit_wait),
            ("term_wait", term_wait),
        ):
            if isinstance(seconds, bool) or not isinstance(seconds, int | float):
                raise _type_error(name, "a number of seconds", seconds)
            if not (math.isfinite(seconds) and seconds >= 0):
                raise ValueError(f"{name} must be a finite number of seconds, 0 or more, not {seconds!r}")
        self._executable = executable
        self._launcher = list(launcher) if launcher is not None else None
        self._launcher_quote = launcher_quote
        self._install = None if install is None or install is False else install
        argv: list[str] = ["--framing", "ndjson"]
        if sample_over_cap_glob_results is not None:
            argv += ["--sample-over-cap-glob-results", "true" if sample_over_cap_glob_results else "false"]
        if workdir is not None:
            argv.append(f"--workdir={os.fspath(workdir)}")  # one argument: a directory may start with "-"
        if spill_dir is not None:
            argv.append(f"--spill-dir={os.fspath(spill_dir)}")
        if remote if remote is not None else launcher is not None:
            argv += ["--remote", "true"]
        self._args = [*argv, *args]
        self._env = dict(env) if env is not None else None
        self._stderr_mode = stderr
        self._on_notification = on_notification
        self._initialize = initialize
        self._client_info = dict(client_info or {"name": "dsh-search-bin-python", "version": _package_version()})
        self.cancel_wait = cancel_wait
        self.shutdown_wait = shutdown_wait
        self.exit_wait = exit_wait
        self.term_wait = term_wait
        self.cancel_on_close = cancel_on_close

        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stderr_reader: asyncio.Task[None] | None = None
        self._stderr_lines: deque[str] = deque(maxlen=_STDERR_LINES)
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any] | None]] = {}
        self._abandoned: set[int] = set()  # cancelled requests whose late answers are dropped quietly
        self._cancellable: set[int] = set()  # the requests close(cancel=True) cancels (not shutdown's)
        self._progress: dict[str, ProgressHandler] = {}  # progressToken → the on_progress of its call
        self._progress_tokens = itertools.count(1)
        self._background: set[asyncio.Task[Any]] = set()
        self._eof = False
        self._shut_down = False
        self._closing = False  # close() has begun
        self._closed = False  # no more requests: shutdown/exit have been sent
        self._initialize_result: InitializeResult | None = None

    # -- lifetime ----------------------------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> Client:
        """Spawn the daemon and (unless initialize=False) initialize the session.

        Raises StartupError when the daemon exits before answering `initialize` (see its docstring), and
        FileNotFoundError/PermissionError for a missing or non-executable executable or sidecar.
        """
        if self._proc is not None:
            raise RuntimeError("this Client was already started")
        from . import remote

        if self._install is not None:
            assert self._launcher is not None
            build = None if self._install is True else self._install
            executable: str | os.PathLike[str] = await remote.install_remote(
                self._launcher, build, launcher_quote=self._launcher_quote, env=self._env
            )
        elif self._launcher is not None:
            executable = self._executable if self._executable is not None else "dsh-search"  # the far side's
        elif self._executable is None:
            from . import executable_path

            executable = executable_path()
        else:
            executable = Path(self._executable)
        argv = remote.command(self._launcher, self._launcher_quote, os.fspath(executable), self._args)
        stderr = {"inherit": None, "capture": subprocess.PIPE, "discard": subprocess.DEVNULL}[self._stderr_mode]
        # The pipes are created close-on-exec (Python's default), so no other child of this process holds a
        # copy: when this process dies, the daemon (or the launcher) sees EOF on stdin and a closed stdout,
        # and exits.
        self._proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=self._env,
            limit=_READ_CHUNK,
        )
        self._reader = asyncio.create_task(self._read_stdout(), name="dsh-search stdout")
        if self._proc.stderr is not None:
            self._stderr_reader = asyncio.create_task(self._read_stderr(), name="dsh-search stderr")
        if self._initialize:
            try:
                raw = await self._call("initialize", self._initialize_params(), cancellable=False)
            except ClosedError:
                returncode = await self._wait_exit(self.exit_wait)
                await self.close()
                status = "still running" if returncode is None else f"exited with status {returncode}"
                hint = (_LAUNCHER_EXIT_HINTS if self._launcher else _EXIT_HINTS).get(returncode or 0)
                message = f"dsh-search {status} before answering initialize" + (f" ({hint})" if hint else "")
                tail = self.stderr_tail
                raise StartupError(message + (f": {tail.strip()}" if tail.strip() else ""), returncode, tail) from None
            except BaseException:
                await self.close()
                raise
            self._initialize_result = _initialize_result(raw)
        return self

    def _initialize_params(self) -> dict[str, Any]:
        return {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": self._client_info}

    @property
    def initialize_result(self) -> InitializeResult | None:
        """The daemon's answer to `initialize`: versions, `instructions`/`guidance` for a system prompt, and
        the effective `config` (which has no workdir). None if the client was made with initialize=False."""
        return self._initialize_result

    @property
    def pid(self) -> int | None:
        """The daemon's process id (of the PyInstaller onefile launcher), once started; with a `launcher`, the
        launcher's (ssh's, docker's, …): a signal to it ends the channel, and so the daemon."""
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        """The daemon's exit status once it has exited (negative: killed by that signal)."""
        return self._proc.returncode if self._proc is not None else None

    @property
    def stderr_tail(self) -> str:
        """The last lines the daemon wrote to stderr (only with stderr="capture")."""
        return "".join(self._stderr_lines)

    @property
    def pending(self) -> int:
        """How many requests are waiting for an answer."""
        return len(self._pending)

    async def shutdown(self) -> None:
        """Send `shutdown`: the daemon finishes the searches already running, then answers; later requests
        other than `exit` are refused. `close()` (and the end of `async with`) does this for you."""
        await self._call("shutdown", None, cancellable=False)
        self._shut_down = True

    async def close(self, *, cancel: bool | None = None) -> int | None:
        """Stop the daemon gracefully and release everything; returns its exit status. Idempotent.

        The order leaks nothing: `shutdown` (bounded by shutdown_wait), the `exit` notification, close
        stdin, wait exit_wait; then SIGTERM (the daemon aborts its searches, kills their ripgrep process
        groups and exits within graceMs + 1 s) and wait term_wait; SIGKILL only as the very last resort,
        because a SIGKILLed onefile launcher leaves its `_MEI*` directory behind and orphans the daemon.

        By default `shutdown` lets the calls still running finish. With `cancel=True` (default: the
        client's `cancel_on_close`) they are cancelled first (`$/cancelRequest` each) and raise the daemon's
        -32800 answer, a `RequestError` with code SEARCH_ABORTED.
        """
        if cancel is not None and not isinstance(cancel, bool):
            raise _type_error("cancel", "True, False or None", cancel)
        if self.cancel_on_close if cancel is None else cancel:
            self._cancel_running()
        proc = self._proc
        if proc is None or self._closing:
            return self.returncode
        self._closing = True
        try:
            if not self._eof and proc.returncode is None:
                if not self._shut_down:
                    with contextlib.suppress(DshSearchError, TimeoutError):
                        async with asyncio.timeout(self.shutdown_wait):
                            await self._call("shutdown", None, cancellable=False)
                with contextlib.suppress(DshSearchError):
                    self._write({"jsonrpc": "2.0", "method": "exit"})
            self._closed = True
            self._close_stdin()
            if await self._wait_exit(self.exit_wait) is None:
                log.warning("dsh-search still running %.1f s after stdin was closed; sending SIGTERM", self.exit_wait)
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                if await self._wait_exit(self.term_wait) is None:
                    log.error("dsh-search ignored SIGTERM for %.1f s; sending SIGKILL (last resort)", self.term_wait)
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    await proc.wait()
            await self._finish_readers()
        except asyncio.CancelledError:
            # Cancelled while stopping: make sure the daemon goes anyway, without waiting for it.
            self._closed = True
            self._close_stdin()
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
            raise
        return proc.returncode

    def _cancel_running(self) -> None:
        for ident in sorted(self._cancellable):
            with contextlib.suppress(DshSearchError):
                self._write({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": ident}})

    async def _wait_exit(self, seconds: float) -> int | None:
        assert self._proc is not None
        try:
            async with asyncio.timeout(seconds):
                return await self._proc.wait()
        except TimeoutError:
            return None

    async def _finish_readers(self) -> None:
        # Normally stdout has ended by now. After a SIGKILL an orphaned daemon may still hold it for a moment;
        # don't wait for that, and close our end (the transport) so no file descriptor is left open.
        tasks = [t for t in (self._reader, self._stderr_reader) if t is not None]
        if tasks:
            _done, still = await asyncio.wait(tasks, timeout=2.0)
            for task in still:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        transport = getattr(self._proc, "_transport", None)
        if transport is not None:
            transport.close()
        self._fail_pending()

    def _close_stdin(self) -> None:
        if self._proc is not None and self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()

    # -- reading -----------------------------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        out = self._proc.stdout
        buf = bytearray()
        try:
            while chunk := await out.read(_READ_CHUNK):
                scan = len(buf)
                buf += chunk
                start = 0
                while (end := buf.find(b"\n", scan)) != -1:
                    line = bytes(buf[start:end])
                    start = scan = end + 1
                    if line.strip():
                        self._dispatch(line)
                del buf[:start]
        except Exception:
            log.exception("reading the daemon's stdout failed")
        finally:
            self._eof = True
            self._fail_pending()

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        err = self._proc.stderr
        partial = b""
        while chunk := await err.read(65536):
            partial += chunk
            *lines, partial = partial.split(b"\n")
            for line in lines:
                self._stderr_lines.append(line.decode("utf-8", "replace") + "\n")
            partial = partial[-65536:]
        if partial:
            self._stderr_lines.append(partial.decode("utf-8", "replace"))

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_result(None)  # None: the connection ended without an answer

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            log.warning("unparsable line from the daemon: %r", line[:200])
            return
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict):
                self._dispatch_one(item)

    def _dispatch_one(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:  # a request from the daemon: this client serves none
                with contextlib.suppress(DshSearchError):
                    self._write(
                        {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "error": {"code": -32601, "message": f"method not found: {method}"},
                        }
                    )
            else:
                params = message.get("params")
                if method == "notifications/progress" and isinstance(params, dict):
                    self._report_progress(params)
                if self._on_notification is not None:
                    self._notify_handler(method, params)
            return
        ident = message.get("id")
        future = self._pending.pop(ident, None) if isinstance(ident, int) else None
        if future is None:
            if isinstance(ident, int) and ident in self._abandoned:
                self._abandoned.discard(ident)  # the late answer of a call whose caller gave up
            else:
                log.warning("answer nobody waits for: %.200s", json.dumps(message))
        elif not future.done():
            future.set_result(message)

    def _notify_handler(self, method: str, params: Any) -> None:
        assert self._on_notification is not None
        self._run_handler(f"the notification handler ({method})", self._on_notification, method, params)

    def _report_progress(self, params: dict[str, Any]) -> None:
        token = params.get("progressToken")
        handler = self._progress.get(token) if isinstance(token, str) else None
        if handler is None:
            return
        raw = params.get("progress")
        number = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else 0.0
        report = Progress(number, str(params.get("message", "")))
        self._run_handler("on_progress", handler, report)

    def _run_handler(self, what: str, handler: Callable[..., Any], *args: Any) -> None:
        """Call a host's callback; a coroutine it returns runs as a task. What it raises is logged."""
        try:
            outcome = handler(*args)
        except Exception:
            log.exception("%s failed", what)
            return
        if isinstance(outcome, Awaitable):
            awaitable = outcome

            async def run() -> None:
                try:
                    await awaitable
                except Exception:
                    log.exception("%s failed", what)

            task = asyncio.create_task(run())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    # -- writing -----------------------------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        """Queue one message; it goes out whole (one write to the transport), never interleaved."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise ClosedError("the client is not started")
        if self._eof or proc.stdin.is_closing():
            raise ClosedError("the daemon's connection is closed", proc.returncode, self.stderr_tail)
        proc.stdin.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    async def _drain(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            await self._proc.stdin.drain()
        except (ConnectionError, OSError) as exc:
            raise ClosedError(f"the daemon's stdin is closed: {exc}", self._proc.returncode) from None

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (no id, never answered)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)
        await self._drain()

    async def request(self, method: str, params: Any = None) -> Any:
        """Send any request and return its `result`; an error answer raises RequestError.

        Cancelling the awaiting task cancels the request in the daemon (see the module docstring).
        """
        reply = await self._call(method, params, cancellable=True)
        return reply

    async def _call(self, method: str, params: Any, *, cancellable: bool) -> Any:
        if self._closed:
            raise ClosedError("the client is closed", self.returncode, self.stderr_tail)
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self._pending[ident] = future
        try:
            self._write(message)
        except BaseException:
            self._pending.pop(ident, None)
            raise
        if cancellable:
            self._cancellable.add(ident)
        try:
            await self._drain()
            reply = await asyncio.shield(future)
        except asyncio.CancelledError as cancelled:
            if cancellable:
                answer = await self._cancel(ident, future)
                if answer is not None:
                    cancelled.__cause__ = RequestError(method, answer)
                    cancelled.__suppress_context__ = True
            else:
                self._give_up(ident, future)
            raise
        except ClosedError:
            self._give_up(ident, future)
            raise
        finally:
            self._cancellable.discard(ident)
        if reply is None:
            raise ClosedError(
                f"{method}: the daemon's stdout ended before the answer came", self.returncode, self.stderr_tail
            )
        error = reply.get("error")
        if error is not None:
            raise RequestError(method, error if isinstance(error, dict) else {"message": str(error)})
        return reply.get("result")

    async def _cancel(self, ident: int, future: asyncio.Future[dict[str, Any] | None]) -> dict[str, Any] | None:
        """Ask the daemon to cancel request `ident` and wait (bounded) for its answer; return the error."""
        if future.done():
            return _error_of(future.result())
        try:
            self._write({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": ident}})
            async with asyncio.timeout(self.cancel_wait):
                reply = await asyncio.shield(future)
        except (DshSearchError, TimeoutError, asyncio.CancelledError):
            # No connection, no answer in time, or cancelled once more: stop waiting.
            self._give_up(ident, future)
            return None
        return _error_of(reply)

    def _give_up(self, ident: int, future: asyncio.Future[dict[str, Any] | None]) -> None:
        if not future.done() and self._pending.pop(ident, None) is not None:
            self._abandoned.add(ident)
            future.cancel()

    # -- methods -----------------------------------------------------------------------------------------

    async def ping(self) -> dict[str, Any]:
        """What the daemon answers: `{}`."""
        return dict(await self.request("ping"))

    async def _search(self, method: str, params: dict[str, Any], on_progress: ProgressHandler | None) -> Any:
        """A typed search; with `on_progress`, the call asks for progress (`_meta.progressToken`) and the
        daemon's reports for it go to `on_progress` until the call is over."""
        if on_progress is None:
            return await self.request(method, params)
        if not callable(on_progress):
            raise _type_error("on_progress", "a function or None", on_progress)
        token = f"dsh-search-bin-{next(self._progress_tokens)}"
        self._progress[token] = on_progress
        try:
            return await self.request(method, {**params, "_meta": {"progressToken": token}})
        finally:
            del self._progress[token]

    async def tools_list(self) -> list[dict[str, Any]]:
        """The model-facing tools (name, description, inputSchema, outputSchema, annotations). The list may
        grow during a session (`notifications/tools/list_changed`), e.g. terminal_search after an append."""
        result = await self.request("tools/list")
        return list(result["tools"])

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, cwd: str | None = None, session_id: str | None = None
    ) -> dict[str, Any]:
        """MCP's `tools/call`: an MCP tool result; a failed search is `isError: true`, not an exception."""
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments)}
        meta = _without_none(cwd=cwd, sessionId=session_id)
        if meta:
            params["_meta"] = meta
        return dict(await self.request("tools/call", params))

    async def glob(
        self,
        pattern: str,
        *,
        path: str | None = None,
        cwd: str | None = None,
        session_id: str | None = None,
        on_progress: ProgressHandler | None = None,
    ) -> GlobResult:
        """Files matching a glob pattern, oldest modification first (capped inline; see `spill`)."""
        params = _without_none(pattern=pattern, path=path, cwd=cwd, sessionId=session_id)
        result = await self._search("glob", params, on_progress)
        return GlobResult(str(result["text"]), cast(GlobMeta, result["meta"]), _spill(result.get("spill")))

    async def grep(
        self,
        pattern: str,
        *,
        path: str | None = None,
        include: str | None = None,
        cwd: str | None = None,
        session_id: str | None = None,
        on_progress: ProgressHandler | None = None,
    ) -> GrepResult:
        """Lines matching a ripgrep regex, grouped by file (capped inline; see `spill`)."""
        params = _without_none(pattern=pattern, path=path, include=include, cwd=cwd, sessionId=session_id)
        result = await self._search("grep", params, on_progress)
        return GrepResult(str(result["text"]), cast(GrepMeta, result["meta"]), _spill(result.get("spill")))

    async def terminal_search(
        self,
        session_id: str,
        pattern: str,
        *,
        regex: bool = False,
        offset: int | None = None,
        limit: int | None = None,
        on_progress: ProgressHandler | None = None,
    ) -> TerminalSearchResult:
        """Search a terminal's retained scrollback, newest match first."""
        params = _without_none(sessionId=session_id, pattern=pattern, offset=offset, limit=limit)
        if regex:
            params["regex"] = True
        result = await self._search("terminal_search", params, on_progress)
        return TerminalSearchResult(
            text=str(result["text"]),
            matches=[TerminalMatch(int(m["offset"]), str(m["line"])) for m in result["matches"]],
            match_count=int(result["matchCount"]),
            total_lines=int(result["totalLines"]),
            truncated=bool(result["truncated"]),
        )

    async def scrollback_append(self, session_id: str, data: str | bytes) -> AppendResult:
        """Append terminal output (text, or raw PTY bytes) to a session's scrollback; creates the session."""
        result = await self.request("scrollback/append", _chunk(session_id, data))
        return AppendResult(int(result["totalLines"]), bool(result["truncated"]))

    async def scrollback_append_nowait(self, session_id: str, data: str | bytes) -> None:
        """The same as a notification: no answer is waited for (output arrives in order all the same)."""
        await self.notify("scrollback/append", _chunk(session_id, data))

    async def scrollback_read(
        self, session_id: str, *, offset: int | None = None, count: int | None = None
    ) -> ScrollbackPage:
        """A page of retained output, in terminal_read's coordinates (offset 0 = the newest line)."""
        result = await self.request("scrollback/read", _without_none(sessionId=session_id, offset=offset, count=count))
        return ScrollbackPage(
            text=str(result["text"]),
            line_begin=int(result["lineBegin"]),
            line_end=int(result["lineEnd"]),
            total_lines=int(result["totalLines"]),
            truncated=bool(result["truncated"]),
        )

    async def scrollback_close(self, session_id: str) -> bool:
        """Free a session's scrollback; False if there was none."""
        result = await self.request("scrollback/close", {"sessionId": session_id})
        return bool(result["closed"])

    async def spill_read(self, spill: Spill | str, *, offset: int | None = None, limit: int | None = None) -> SpillPage:
        """Lines offset..offset+limit-1 (1-based; defaults 1 and 2000) of a saved complete result."""
        locator = spill.locator if isinstance(spill, Spill) else spill
        result = await self.request("spill/read", _without_none(locator=locator, offset=offset, limit=limit))
        next_offset = result.get("nextOffset")
        return SpillPage(
            text=str(result["text"]),
            start_line=int(result["startLine"]),
            end_line=int(result["endLine"]),
            total_lines=int(result["totalLines"]),
            next_offset=int(next_offset) if next_offset is not None else None,
        )

    async def spill_pages(self, spill: Spill | str, *, offset: int = 1, limit: int = 2000) -> AsyncIterator[SpillPage]:
        """Every page of a saved complete result, in order: `async for page in client.spill_pages(r.spill)`."""
        next_offset: int | None = offset
        while next_offset is not None:
            page = await self.spill_read(spill, offset=next_offset, limit=limit)
            yield page
            next_offset = page.next_offset


# -- helpers -----------------------------------------------------------------------------------------------


def _type_error(name: str, expected: str, value: object) -> TypeError:
    return TypeError(f"{name} must be {expected}, not {type(value).__name__} {value!r:.80}")


def _check_path(name: str, value: object) -> None:
    if value is not None and not isinstance(value, str | os.PathLike):
        raise _type_error(name, "a path (str or os.PathLike) or None", value)


def _without_none(**params: Any) -> dict[str, Any]:
    return {key: value for key, value in params.items() if value is not None}


def _chunk(session_id: str, data: str | bytes) -> dict[str, Any]:
    if isinstance(data, str):
        return {"sessionId": session_id, "data": data}
    return {"sessionId": session_id, "dataBase64": base64.b64encode(data).decode("ascii")}


def _error_of(reply: dict[str, Any] | None) -> dict[str, Any] | None:
    if reply is None:
        return None
    error = reply.get("error")
    return error if isinstance(error, dict) else None


def _initialize_result(raw: Any) -> InitializeResult:
    raw = dict(raw or {})
    server = raw.get("serverInfo") or {}
    ripgrep = raw.get("ripgrep") or {}
    return InitializeResult(
        protocol_version=str(raw.get("protocolVersion", "")),
        server_name=str(server.get("name", "")),
        server_version=str(server.get("version", "")),
        ripgrep_path=str(ripgrep.get("path", "")),
        ripgrep_version=str(ripgrep.get("version", "")),
        instructions=str(raw.get("instructions", "")),
        config=dict(raw.get("config") or {}),
        raw=raw,
        guidance={str(k): str(v) for k, v in (raw.get("guidance") or {}).items()},
    )


def _package_version() -> str:
    from . import __version__

    return __version__

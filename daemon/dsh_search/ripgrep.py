"""One ripgrep run: argv, environment, process group, output caps, termination.

Every search goes through `run()`. ripgrep gets an argv list (never a shell) that starts with
`--no-config`, stdin from /dev/null (or the bytes given), its own session and process group, and the
scrubbed environment of SPEC §1. stdout is collected up to a byte cap; the moment it passes the cap
the group is terminated rather than left to finish (a fix over upstream, which waited). stderr keeps
its tail. Cancelling the awaiting task — a timeout, `$/cancelRequest`, shutdown — terminates the whole
group: SIGTERM, then SIGKILL once the grace has passed, and the call returns only when rg is reaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

_CREDENTIAL_NAME = re.compile("KEY|PASSWORD|SECRET|TOKEN", re.IGNORECASE)
_READ_CHUNK = 1 << 20


def child_environment(environ: Mapping[str, str], *, frozen: bool) -> dict[str, str]:
    """The environment ripgrep runs with.

    Upstream's scrub (credential-looking names and `DSH_*`), plus `RIPGREP_CONFIG_PATH` (belt and braces
    next to `--no-config`). Frozen, PyInstaller's bootloader variables are dropped too and the
    `LD_LIBRARY_PATH` it prepended to is restored, so rg never loads the bundle's libraries.
    """
    env: dict[str, str] = {}
    for name, value in environ.items():
        if _CREDENTIAL_NAME.search(name) or name.upper().startswith("DSH_") or name == "RIPGREP_CONFIG_PATH":
            continue
        if frozen and (name.startswith("_PYI_") or name in ("LD_LIBRARY_PATH", "LD_LIBRARY_PATH_ORIG")):
            continue
        env[name] = value
    if frozen and "LD_LIBRARY_PATH_ORIG" in environ:
        env["LD_LIBRARY_PATH"] = environ["LD_LIBRARY_PATH_ORIG"]
    return env


class LaunchError(Exception):
    """ripgrep could not be started (missing binary, unusable cwd, NUL in argv, …)."""


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None  # None when killed by a signal
    signal: int | None
    stdout: bytes  # complete unless stdout_overflow or sent to a sink
    stdout_overflow: bool  # stdout passed the cap; rg was terminated
    stderr: bytes  # the tail, at most the stderr cap
    stderr_lossy: bool  # the head of stderr slid out of the cap
    stdout_bytes: int = 0  # how many bytes rg wrote to stdout (up to the first past the cap)
    reported_paths: int = 0  # `rg: <path>: …` error reports on all of stderr, not only its tail
    bad_ignore_files: int = 0  # reports of ignore files with rules ripgrep could not parse


# How ripgrep reports a rule of an ignore file (.gitignore, .ignore, .rgignore) it cannot parse:
# `rg: <file>: line <n>: error parsing glob '<rule>': …`, once per file (its further bad rules follow on
# lines of their own without the `rg: ` prefix). The file was read, and its other rules apply.
_IGNORE_RULE_ERROR = re.compile(rb"rg: .*: line [0-9]+: error parsing glob ")


class StderrTally:
    """Counts ripgrep's error reports while stderr streams past, before only its tail is kept.

    ripgrep writes one line starting `rg: ` per problem: a path it could not read, or an ignore file with
    rules it could not parse. Lines are put back together across reads; each is looked at only up to
    `max_line` bytes, which is all the classification needs.
    """

    def __init__(self, max_line: int = 1 << 16) -> None:
        self.paths = 0
        self.ignore_files = 0
        self._line = bytearray()
        self._max_line = max_line

    def feed(self, chunk: bytes) -> None:
        lines = chunk.split(b"\n")
        self._extend(lines[0])
        if len(lines) == 1:
            return
        self._count(bytes(self._line))
        for line in lines[1:-1]:
            self._count(line[: self._max_line])
        self._line.clear()
        self._extend(lines[-1])

    def finish(self) -> None:
        """The stream ended: count a last line that had no newline."""
        if self._line:
            self._count(bytes(self._line))
            self._line.clear()

    def _extend(self, piece: bytes) -> None:
        room = self._max_line - len(self._line)
        if room > 0:
            self._line += piece[:room]

    def _count(self, line: bytes) -> None:
        if line.startswith(b"rg: "):
            if _IGNORE_RULE_ERROR.match(line):
                self.ignore_files += 1
            else:
                self.paths += 1


class LiveGroups:
    """Process groups of running rg processes, so that the way out can make sure none survives."""

    def __init__(self) -> None:
        self._pgids: set[int] = set()

    def add(self, pgid: int) -> None:
        self._pgids.add(pgid)

    def discard(self, pgid: int) -> None:
        self._pgids.discard(pgid)

    def __len__(self) -> int:
        return len(self._pgids)

    def kill_all(self) -> None:
        for pgid in list(self._pgids):
            signal_group(pgid, signal.SIGKILL)


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    # A pid is never reused while a process group of that id exists, so this cannot hit a stranger.
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def terminate(proc: asyncio.subprocess.Process, grace_s: float) -> None:
    """SIGTERM the group, SIGKILL it after the grace, and reap the direct child."""
    pgid = proc.pid
    signal_group(pgid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), grace_s)
    if proc.returncode is None or group_alive(pgid):
        signal_group(pgid, signal.SIGKILL)
    await proc.wait()


class _StdoutReader:
    """Reads rg's stdout on a thread of its own with large blocking reads.

    ripgrep writes in many small pieces; through the event loop each one costs a wakeup of the whole
    asyncio machinery, which measurably slowed large searches. A blocking `read` on a thread costs a
    GIL hand-off per piece and lets the kernel coalesce writes. Chunks go to the sink (or are kept)
    on this thread; past the cap the group is terminated and the rest is drained and dropped.
    """

    def __init__(
        self,
        fd: int,
        pgid: int,
        cap: int,
        sink: Callable[[bytes], None] | None,
        on_overflow: Callable[[], object],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.fd = fd
        self.pgid = pgid
        self.cap = cap
        self.sink = sink
        self.on_overflow = on_overflow
        self.chunks: list[bytes] = []
        self.size = 0
        self.overflow = False
        self.error: BaseException | None = None
        self.done: asyncio.Future[None] = loop.create_future()
        self._loop = loop
        threading.Thread(target=self._run, name="rg-stdout", daemon=True).start()

    def _run(self) -> None:
        try:
            while chunk := os.read(self.fd, _READ_CHUNK):
                if self.overflow:
                    continue  # drain what is left while the group dies
                self.size += len(chunk)
                if self.size > self.cap:
                    self.overflow = True
                    self.chunks.clear()
                    signal_group(self.pgid, signal.SIGTERM)
                    self._loop.call_soon_threadsafe(self.on_overflow)
                elif self.sink is not None:
                    self.sink(chunk)
                else:
                    self.chunks.append(chunk)
        except BaseException as exc:  # a failing sink must still end the read, and be reported
            self.error = exc
        finally:
            os.close(self.fd)
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
                self._loop.call_soon_threadsafe(_resolve, self.done)


def _big_pipe() -> tuple[int, int]:
    """A pipe enlarged to 1 MiB (Linux): a writer rarely blocks, and data moves in few large steps."""
    read_end, write_end = os.pipe()
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, _READ_CHUNK)
    return read_end, write_end


def _feed_stdin(fd: int, data: bytes) -> None:
    """Write all of data to rg's stdin with blocking writes on this thread, then close it."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass  # rg exited early (a bad pattern, a kill): what it did not read does not matter
    finally:
        os.close(fd)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def run(
    rg_path: str,
    args: Sequence[str | bytes],
    *,
    cwd: str | bytes,
    env: Mapping[str, str],
    stdout_cap: int,
    stderr_cap: int,
    grace_s: float,
    stdin_data: bytes | None = None,
    groups: LiveGroups | None = None,
    on_spawn: Callable[[int], None] | None = None,
    stdout_sink: Callable[[bytes], None] | None = None,
) -> Outcome:
    """Run `rg --no-config <args>` in `cwd` and collect its output within the caps.

    With `stdout_sink`, stdout chunks go to the sink as they arrive, on a reader thread (so work on
    them can overlap the search), instead of being collected; the cap still applies to their total.
    """
    out_r, out_w = _big_pipe()  # rg never waits for us to drain its output
    in_r, in_w = _big_pipe() if stdin_data is not None else (None, None)
    try:
        proc = await asyncio.create_subprocess_exec(
            rg_path,
            "--no-config",
            *args,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL if in_r is None else in_r,
            stdout=out_w,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except (OSError, ValueError, TypeError) as exc:
        for fd in (out_r, in_w):
            if fd is not None:
                os.close(fd)
        raise LaunchError(str(exc)) from exc
    finally:
        for fd in (out_w, in_r):
            if fd is not None:
                os.close(fd)
    if in_w is not None and stdin_data is not None:
        threading.Thread(target=_feed_stdin, args=(in_w, stdin_data), name="rg-stdin", daemon=True).start()
    pgid = proc.pid
    if groups is not None:
        groups.add(pgid)
    loop = asyncio.get_running_loop()
    reader = _StdoutReader(
        out_r, pgid, stdout_cap, stdout_sink, lambda: loop.call_later(grace_s, _kill_if_running, proc), loop
    )
    try:
        if on_spawn is not None:
            on_spawn(proc.pid)
        return await _collect(proc, reader, stderr_cap, grace_s)
    except BaseException:
        # Cancelled (timeout, caller, shutdown) or failed while rg runs: the group must not outlive us.
        ending = asyncio.ensure_future(terminate(proc, grace_s))
        try:
            await asyncio.shield(ending)
        except asyncio.CancelledError:
            signal_group(pgid, signal.SIGKILL)  # cancelled again while waiting: stop being polite
        raise
    finally:
        if groups is not None and proc.returncode is not None:
            groups.discard(pgid)


async def _collect(
    proc: asyncio.subprocess.Process,
    reader: _StdoutReader,
    stderr_cap: int,
    grace_s: float,
) -> Outcome:
    assert proc.stderr is not None
    stderr_stream = proc.stderr
    err_tail = bytearray()
    err_lossy = False
    tally = StderrTally()

    async def read_stderr() -> None:
        nonlocal err_lossy
        while chunk := await stderr_stream.read(_READ_CHUNK):
            tally.feed(chunk)
            err_tail.extend(chunk)
            if len(err_tail) > stderr_cap:
                del err_tail[: len(err_tail) - stderr_cap]
                err_lossy = True

    io_tasks = [asyncio.ensure_future(read_stderr())]
    try:
        await proc.wait()
        # A descendant holding a pipe open must not hang the call: give the pipes the grace, no more.
        done, pending = await asyncio.wait([*io_tasks, reader.done], timeout=grace_s)
        for task in pending:
            task.cancel()
        for task in done:
            if not task.cancelled() and (error := task.exception()) is not None:
                raise error
        if reader.error is not None:
            raise reader.error
    finally:
        for task in io_tasks:
            task.cancel()
    code = proc.returncode
    assert code is not None
    tally.finish()
    return Outcome(
        exit_code=code if code >= 0 else None,
        signal=-code if code < 0 else None,
        stdout=b"".join(reader.chunks),
        stdout_overflow=reader.overflow,
        stderr=bytes(err_tail),
        stderr_lossy=err_lossy,
        stdout_bytes=reader.size,
        reported_paths=tally.paths,
        bad_ignore_files=tally.ignore_files,
    )


def _kill_if_running(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        signal_group(proc.pid, signal.SIGKILL)

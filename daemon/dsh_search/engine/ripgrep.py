"""One ripgrep run: argv, environment, process group, output caps, memory bound, termination.

Every search goes through `run()` (the daemon's `Launcher` binds its binary, environment and limits, and
tracks the children it runs). ripgrep gets an argv list (never a shell) that starts with
`--no-config`, stdin from the null device (or the bytes given), a process tree of its own (POSIX: its own
session and process group; Windows: a Job Object with kill-on-close — dsh_search.osdep), the scrubbed
environment of `child_environment`, and (Linux, Windows) a memory bound, so that no input can make it
buffer without bound. stdout is collected up to a byte cap; the moment it passes the cap the
group is terminated rather than left to finish. stderr keeps its tail.

Why it is built this way: a run must release everything it opened whatever instant it is cancelled
at. So the spawn is synchronous — there is no `await` between creating the pipes and handing them to
their owner — and from then on one thread owns the child: it reads both pipes, feeds stdin, applies
the caps, and reaps the child, closing every descriptor on its way out. The event loop only waits for
that thread's verdict; cancelling the wait (a timeout, `$/cancelRequest`, shutdown) terminates the
whole tree — SIGTERM, then SIGKILL once the grace has passed (Windows: the job is terminated at once) — and
the call returns only once rg is reaped. Signals go to the group only while its leader is unreaped (under
a lock), so a recycled pid can never be hit.

The binary is pinned (Linux, through the OS seam): a `Launcher` opens the ripgrep it was given once, and
every run executes that open file (`/proc/self/fd/N`), so a sidecar replaced or removed under a running
daemon (a rebuild, an upgrade) changes nothing for it; argv[0] still names the sidecar's path.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import queue
import re
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from dsh_search import osdep

_CREDENTIAL_NAME = re.compile("KEY|PASSWORD|SECRET|TOKEN", re.IGNORECASE)

# ripgrep writes a file's output as it finishes it, often a few hundred bytes at a time (grep `static` in the
# kernel's drivers/net/ethernet: 635 writes, half under 130 bytes; `[A-Z]+_SUSPEND` over the whole tree:
# ~1,800 writes in 1.5 s), and each wake-up of the reading thread costs ~30 µs of Python and takes the GIL
# from whoever holds it. So a read that brought little waits before the next, a hundredth of the time the
# run has taken so far (at most 5 ms): the output's end is noticed at most ~1 % later than it came.
_COALESCE_BELOW = 1 << 14
_COALESCE_SHARE = 0.01
_COALESCE_MAX_S = 0.005
_COALESCE_MIN_S = 0.0005
# What ripgrep (a Rust program) prints when an allocation fails, just before it aborts: `memory allocation
# of <n> bytes failed`, in several writes. Threads that fail at once interleave them (seen: `memory
# allocation of memory allocation of 67108864 bytes failed`), so its opening words anywhere on a line
# count; the abort under a memory bound is the rest of the evidence.
_ALLOCATION_FAILED = b"memory allocation of "


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
    """ripgrep could not be started (missing binary, unusable cwd, NUL in argv, argv too long, …)."""


class Limits(NamedTuple):
    stdout_cap: int  # bytes of stdout past which the group is terminated
    stderr_cap: int  # bytes of stderr tail kept
    grace_s: float  # SIGTERM → SIGKILL, and how long pipes may outlive the child
    memory_cap: int | None = None  # memory limit of the child (Linux, Windows); None: unbounded


class Outcome(NamedTuple):
    exit_code: int | None  # None when killed by a signal
    signal: int | None
    stdout: bytes  # complete unless stdout_overflow (empty when a sink took it)
    stdout_overflow: bool  # stdout passed the cap; rg was terminated
    stderr: bytes  # the tail, at most the stderr cap
    stderr_lossy: bool  # the head of stderr slid out of the cap
    stdout_bytes: int = 0  # how many bytes rg wrote to stdout (up to the first past the cap)
    reported_paths: int = 0  # `rg: <path>: …` error reports on all of stderr, not only its tail
    bad_ignore_files: int = 0  # reports of ignore files with rules ripgrep could not parse
    out_of_memory: bool = False  # rg aborted because an allocation failed under the memory cap


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
        self.allocation_failed = False  # ripgrep ran out of memory (and is about to abort)
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
        elif _ALLOCATION_FAILED in line:
            self.allocation_failed = True


class _Collected(NamedTuple):
    """What the owning thread gathered from the pipes."""

    stdout: bytes
    stdout_bytes: int
    overflow: bool
    stderr: bytes
    stderr_lossy: bool
    tally: StderrTally


class Owners:
    """The threads that own children, kept and reused.

    Starting a thread makes the starter wait until the new thread runs (~0.5 ms on a busy machine: a
    third of a small search's overhead), so a finished owner waits for the next child instead of ending.
    There are never more threads than children ever ran at once. They are daemon threads: the way out
    kills every child (`LiveGroups.kill_all`) and must not wait for their owners.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def run(self, job: Callable[[], None]) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._serve, name="rg-owner", daemon=True).start()

    def _serve(self) -> None:
        while True:
            self._jobs.get()()
            with self._lock:
                self._idle += 1


class Child:
    """A running rg and the thread that owns its pipes until it is reaped.

    Created by `spawn`, which either returns a running child whose thread already owns every
    descriptor, or raises `LaunchError` having closed everything it opened.
    """

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        tree: osdep.Tree,
        fds: tuple[int, int, int | None],
        stdin_data: bytes | None,
        limits: Limits,
        sink: Callable[[bytes], None] | None,
        loop: asyncio.AbstractEventLoop,
        memory_bounded: bool,
        owners: Owners,
        on_overflow: Callable[[], None] | None = None,
    ) -> None:
        self.pid = proc.pid
        self._proc = proc
        self._tree = tree  # its process group (POSIX) or Job Object (Windows)
        self._out_fd, self._err_fd, self._in_fd = fds
        self._stdin_data = stdin_data
        self._limits = limits
        self._sink = sink
        self._on_overflow = on_overflow
        self._loop = loop
        self._memory_bounded = memory_bounded
        self._lock = threading.Lock()  # orders signals against the reap
        self._reaped = False
        self._kill_timer: asyncio.TimerHandle | None = None
        self.error: BaseException | None = None  # the sink failed
        self.done: asyncio.Future[Outcome] = loop.create_future()
        owners.run(self._own)

    # -- signalling (any thread) --------------------------------------------------------------------

    def ask_to_end(self) -> None:
        """SIGTERM the tree (Windows: end it)."""
        with self._lock:
            if not self._reaped:
                self._tree.terminate()

    def kill(self) -> None:
        """SIGKILL the tree (Windows: end it)."""
        with self._lock:
            if not self._reaped:
                self._tree.kill()

    def terminate(self) -> None:
        """SIGTERM the tree now and SIGKILL it after the grace (event-loop thread)."""
        self.ask_to_end()
        if self._kill_timer is None:
            self._kill_timer = self._loop.call_later(self._limits.grace_s, self.kill)

    # -- the owning thread ----------------------------------------------------------------------------

    def _own(self) -> None:
        collected: _Collected | None = None
        try:
            collected = self._pump()
        except BaseException as exc:  # never leave the awaiting side hanging, nor rg running
            self.error = exc
            self.kill()
        finally:
            for fd in (self._out_fd, self._err_fd, self._in_fd):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            code = self._reap()
            self._tree.close()
        got = collected or _Collected(b"", 0, False, b"", False, StderrTally())
        outcome = Outcome(
            exit_code=code if code >= 0 else None,
            signal=-code if code < 0 else None,
            stdout=got.stdout,
            stdout_overflow=got.overflow,
            stderr=got.stderr,
            stderr_lossy=got.stderr_lossy,
            stdout_bytes=got.stdout_bytes,
            reported_paths=got.tally.paths,
            bad_ignore_files=got.tally.ignore_files,
            out_of_memory=self._memory_bounded and osdep.aborted(code) and got.tally.allocation_failed,
        )
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            self._loop.call_soon_threadsafe(self._settle, outcome)

    def _settle(self, outcome: Outcome) -> None:
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        if not self.done.done():
            self.done.set_result(outcome)

    def _pump(self) -> _Collected:
        return _Pump(self).run()

    def _reap(self) -> int:
        """Wait for the child's exit and reap it; signals stop reaching the group from then on."""
        while True:
            with self._lock:
                code = self._proc.poll()
                if code is not None:
                    self._reaped = True
                    return code
            osdep.wait_exit(self._proc)  # wait for the exit without reaping, outside the lock


class _Pump:
    """The owning thread's loop over a child's pipes: wait for the next event or deadline, hand it to its
    handler — stdout (`_out`: the cap, the sink, the coalescing of small reads), stderr (`_err`: the
    tally of error reports, the tail), the exit (`_exited`: a pidfd on Linux, a thread on Windows) — and
    stop when both output pipes are closed, or when a descendant keeps one open past the grace after the
    exit (it must not hang the call). The events come from `osdep.ChildStreams`, which also feeds stdin
    (a selector on POSIX, a thread per pipe on Windows)."""

    def __init__(self, child: Child) -> None:
        self.child = child
        self.limits = child._limits
        self.started = time.monotonic()
        self.chunks: list[bytes] = []  # stdout, when no sink takes it
        self.size = 0
        self.overflow = False
        self.err_tail = bytearray()
        self.err_lossy = False
        self.tally = StderrTally()
        self.kill_at: float | None = None  # overflow: SIGKILL if still running by then
        self.exited_at: float | None = None  # the child exited while a pipe is still open
        self.open_pipes = 2

    def run(self) -> _Collected:
        child = self.child
        in_fd, child._in_fd = child._in_fd, None  # the streams own it from here
        streams = osdep.ChildStreams(child._proc, child._out_fd, child._err_fd, in_fd, child._stdin_data)
        handlers = {"out": self._out, "err": self._err, "exit": self._exited}
        try:
            while self.open_pipes:
                for what, chunk in streams.wait(self._timeout()):
                    handlers[what](chunk)
                if self._past_deadlines():
                    break  # a descendant holds a pipe open: it must not hang the call
            if self.open_pipes:
                child.kill()  # the leader is an unreaped zombie: the group id is still ours
        finally:
            streams.close()
        self.tally.finish()
        return _Collected(
            b"".join(self.chunks), self.size, self.overflow, bytes(self.err_tail), self.err_lossy, self.tally
        )

    def _timeout(self) -> float | None:
        deadlines = [t for t in (self.kill_at, self.exited_at) if t is not None]
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _past_deadlines(self) -> bool:
        """SIGKILL a group that outlived its overflow's grace; True once the exit's grace has passed."""
        now = time.monotonic()
        if self.kill_at is not None and now >= self.kill_at:
            self.child.kill()
            self.kill_at = None
        return self.exited_at is not None and now >= self.exited_at

    def _stop(self) -> None:
        """SIGTERM now, SIGKILL after the grace."""
        self.child.ask_to_end()
        self.kill_at = time.monotonic() + self.limits.grace_s

    def _out(self, chunk: bytes) -> None:
        if not chunk:
            self.open_pipes -= 1
            return
        if self.overflow:
            return  # read and dropped: the group is being stopped
        self.size += len(chunk)
        if len(chunk) < _COALESCE_BELOW:  # let more of the output gather: one wake-up, not dozens
            pause = min(_COALESCE_MAX_S, (time.monotonic() - self.started) * _COALESCE_SHARE)
            if pause >= _COALESCE_MIN_S:
                time.sleep(pause)
        if self.size > self.limits.stdout_cap:
            self._overflowed()
        elif self.child._sink is None:
            self.chunks.append(chunk)
        elif self.child.error is None:
            try:
                self.child._sink(chunk)
            except Exception as exc:  # report it, and stop rg: its output has no taker
                self.child.error = exc
                self._stop()

    def _overflowed(self) -> None:
        """stdout passed the cap: nothing of it is kept, the group is stopped, whoever works on the output
        is told (it has no taker now)."""
        self.overflow = True
        self.chunks.clear()
        self._stop()
        on_overflow = self.child._on_overflow
        if on_overflow is not None:
            try:
                on_overflow()
            except Exception as exc:
                self.child.error = exc

    def _err(self, chunk: bytes) -> None:
        if not chunk:
            self.open_pipes -= 1
            return
        self.tally.feed(chunk)
        self.err_tail += chunk
        cap = self.limits.stderr_cap
        if len(self.err_tail) > cap:
            del self.err_tail[: len(self.err_tail) - cap]
            self.err_lossy = True

    def _exited(self, _: bytes) -> None:
        """The child exited; its pipes should close right after."""
        self.exited_at = time.monotonic() + self.limits.grace_s


def spawn(
    rg_path: str,
    args: Sequence[str | bytes],
    *,
    cwd: str | bytes,
    env: Mapping[str, str],
    limits: Limits,
    stdin_data: bytes | None,
    sink: Callable[[bytes], None] | None,
    loop: asyncio.AbstractEventLoop,
    owners: Owners,
    on_overflow: Callable[[], None] | None = None,
    pinned: int | None = None,
) -> Child:
    """Start `rg --no-config <args>` in `cwd`; synchronous, so it cannot be interrupted half-way. With
    `pinned`, the open file of that descriptor is what runs (see `pin`), `rg_path` is its argv[0]."""
    opened: list[int] = []
    try:
        out_r, out_w = osdep.pipe()
        opened += (out_r, out_w)
        err_r, err_w = os.pipe()
        opened += (err_r, err_w)
        in_r: int | None = None
        in_w: int | None = None
        if stdin_data is not None:
            in_r = osdep.memory_file(stdin_data)
            if in_r is None:
                in_r, in_w = osdep.pipe()
                opened.append(in_w)
            else:
                stdin_data = None  # all of it is in the file already: nothing to feed
            opened.append(in_r)
        proc = subprocess.Popen(
            [rg_path, "--no-config", *args],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL if in_r is None else in_r,
            stdout=out_w,
            stderr=err_w,
            **osdep.spawn_options(),
            **(osdep.pinned_spawn_options(pinned) if pinned is not None else {}),
        )
    except (OSError, ValueError, TypeError) as exc:
        for opened_fd in opened:
            with contextlib.suppress(OSError):
                os.close(opened_fd)
        raise LaunchError(_describe(exc)) from exc
    for child_end in (out_w, err_w, in_r):
        if child_end is not None:
            os.close(child_end)
    tree = osdep.Tree.adopt(proc)
    bounded = limits.memory_cap is not None and osdep.limit_memory(tree, limits.memory_cap)
    return Child(proc, tree, (out_r, err_r, in_w), stdin_data, limits, sink, loop, bounded, owners, on_overflow)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno == errno.E2BIG:
        return "argument list too long"
    return str(exc)


class LiveGroups:
    """The running rg children, so that the way out can make sure none survives."""

    def __init__(self) -> None:
        self._children: set[Child] = set()

    def add(self, child: Child) -> None:
        self._children.add(child)

    def discard(self, child: Child) -> None:
        self._children.discard(child)

    def __len__(self) -> int:
        return len(self._children)

    def kill_all(self) -> None:
        for child in list(self._children):
            child.kill()


async def run(
    rg_path: str,
    args: Sequence[str | bytes],
    *,
    cwd: str | bytes,
    env: Mapping[str, str],
    limits: Limits,
    stdin_data: bytes | None = None,
    groups: LiveGroups | None = None,
    owners: Owners | None = None,
    on_spawn: Callable[[int], None] | None = None,
    stdout_sink: Callable[[bytes], None] | None = None,
    on_overflow: Callable[[], None] | None = None,
    pinned: int | None = None,
) -> Outcome:
    """Run `rg --no-config <args>` in `cwd` and collect its output within the limits.

    With `stdout_sink`, stdout chunks go to the sink as they arrive, on the child's thread (so work on
    them can overlap the search), instead of being collected; the cap still applies to their total.
    `on_overflow` is called on that thread the moment stdout passes the cap (rg is being stopped, and
    what the sink was given will not be used).
    `groups` tracks the child while it runs; `owners` lends it a thread (a new one when not given).
    """
    child = spawn(
        rg_path, args, cwd=cwd, env=env, limits=limits, stdin_data=stdin_data, sink=stdout_sink,
        loop=asyncio.get_running_loop(), owners=owners or Owners(), on_overflow=on_overflow, pinned=pinned,
    )  # fmt: skip
    if groups is not None:
        groups.add(child)
    try:
        if on_spawn is not None:
            on_spawn(child.pid)
        try:
            outcome = await asyncio.shield(child.done)
        except asyncio.CancelledError:
            # A timeout, the caller, or shutdown: the group must not outlive the call.
            child.terminate()
            while not child.done.done():
                try:
                    await asyncio.shield(child.done)
                except asyncio.CancelledError:
                    child.kill()  # cancelled again while waiting: stop being polite
            raise
        if child.error is not None:
            raise child.error
        return outcome
    finally:
        if groups is not None:
            groups.discard(child)


class Launcher:
    """ripgrep as the daemon runs it: one binary, one scrubbed environment and one set of limits for
    every run, each child tracked while it runs (so the way out can kill them all: `groups.kill_all`)
    and owned by a reused thread."""

    def __init__(self, rg_path: str, env: Mapping[str, str], limits: Limits) -> None:
        self.rg_path = rg_path
        self.env = dict(env)
        self.limits = limits
        self.groups = LiveGroups()
        self.owners = Owners()
        self.pinned = osdep.pin_file(rg_path)
        if self.pinned is not None:
            weakref.finalize(self, os.close, self.pinned)

    async def __call__(
        self,
        args: Sequence[str | bytes],
        *,
        cwd: str | bytes,
        stdin_data: bytes | None = None,
        sink: Callable[[bytes], None] | None = None,
        on_overflow: Callable[[], None] | None = None,
    ) -> Outcome:
        return await run(
            self.rg_path, args, cwd=cwd, env=self.env, limits=self.limits, stdin_data=stdin_data,
            groups=self.groups, owners=self.owners, stdout_sink=sink, on_overflow=on_overflow, pinned=self.pinned,
        )  # fmt: skip

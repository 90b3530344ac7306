"""The Windows side of the seam: Job Objects, a thread per pipe, console control events, msvcrt locks.

- A ripgrep child runs in a Job Object of its own with kill-on-close: `Tree.terminate`/`kill` terminate
  the job (every process in it; Windows has no polite SIGTERM for a console program that is not ours to
  signal, and rg has nothing to clean up), and the job's handle closing — the daemon ending in any way,
  TerminateProcess included — ends whatever is still in it. A memory cap is the job's per-process limit
  (enforced by Windows; wine does not enforce it).
- Anonymous pipes cannot be waited on with select(): each of a child's pipes gets a thread that reads it
  (or writes stdin) with blocking calls and hands what it got to the owner through a queue.
- Ctrl-C and Ctrl-Break arrive as SIGINT and SIGBREAK; closing the console, logging off and shutting down
  arrive as console control events, which a handler turns into the same stop, then holds the process
  until the daemon has stopped its children (Windows allows 5 s for that).
- The onefile launcher's extraction directory is `%TEMP%\\_MEI<launcher pid, 8 hex digits><_wtempnam's
  suffix>`; the daemon holds a byte-range lock on its marker file while it runs. The launcher (PyInstaller's
  bootloader) does not end its child when it is terminated: a thread waits on the launcher's process
  handle and stops the daemon when it ends.
"""

from __future__ import annotations

import _winapi
import asyncio
import contextlib
import ctypes
import msvcrt
import os
import queue
import signal
import stat
import subprocess
import threading
from collections.abc import Callable
from ctypes import wintypes
from typing import Any

__all__ = [
    "ARGV_RESERVE",
    "NULL_DEVICE",
    "O_CLOEXEC",
    "O_NONBLOCK",
    "STOP_SIGNALS",
    "ChildStreams",
    "ExtractionLock",
    "Tree",
    "aborted",
    "argv_names_budget",
    "blocking",
    "cache_home",
    "extraction_suffix_ok",
    "flock_now",
    "fsync_directory",
    "glibc",
    "index_unavailable_reason",
    "index_unsupported_reason",
    "limit_memory",
    "lock",
    "lock_extraction",
    "memory_file",
    "on_stop_signals",
    "own_executable",
    "owned_by_me",
    "parent_gone",
    "pin_file",
    "pinned_name",
    "pinned_spawn_options",
    "pipe",
    "pread",
    "process_alive",
    "request_stop",
    "sidecar_path_for",
    "spawn_options",
    "stat_at",
    "state_home",
    "stopped",
    "try_lock_extraction",
    "unfrozen_rg_name",
    "user_id",
    "user_name",
    "wait_exit",
    "watch_parent",
    "watch_reader_gone",
]

NULL_DEVICE = b"NUL"
O_NONBLOCK = 0
O_CLOEXEC = os.O_NOINHERIT
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGBREAK)

_READ = 1 << 16
_CREATE_NEW_PROCESS_GROUP = 0x00000200
_CREATE_SUSPENDED = 0x00000004
_JOB_OBJECT_LIMIT_PROCESS_MEMORY = 0x00000100
_JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x00002000
_JOB_EXTENDED_LIMIT_INFORMATION = 9
_JOB_BASIC_ACCOUNTING_INFORMATION = 1
_SYNCHRONIZE = 0x00100000
_PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
_STILL_ACTIVE = 259
_STATUS_STACK_BUFFER_OVERRUN = 0xC0000409  # Rust's abort (__fastfail)
_CURRENT_PROCESS = wintypes.HANDLE(-1)  # GetCurrentProcess()'s pseudo-handle
_CTRL_CLOSE_EVENT, _CTRL_LOGOFF_EVENT, _CTRL_SHUTDOWN_EVENT = 2, 5, 6
_EVENT_NAMES = {0: "Ctrl-C", 1: "Ctrl-Break", 2: "console closed", 5: "log-off", 6: "shutdown"}
_ERROR_ACCESS_DENIED = 5

_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
_ntdll = ctypes.WinDLL("ntdll")


class _IoCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_ulonglong) for name in ("r", "w", "o", "rb", "wb", "ob")]


class _BasicLimits(ctypes.Structure):
    _fields_ = [
        ("PerProcessUserTimeLimit", ctypes.c_int64),
        ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", wintypes.DWORD),
        ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t),
        ("ActiveProcessLimit", wintypes.DWORD),
        ("Affinity", ctypes.c_size_t),
        ("PriorityClass", wintypes.DWORD),
        ("SchedulingClass", wintypes.DWORD),
    ]


class _ExtendedLimits(ctypes.Structure):
    _fields_ = [
        ("BasicLimitInformation", _BasicLimits),
        ("IoInfo", _IoCounters),
        ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t),
        ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    ]


class _Accounting(ctypes.Structure):
    _fields_ = [
        ("TotalUserTime", ctypes.c_int64),
        ("TotalKernelTime", ctypes.c_int64),
        ("ThisPeriodTotalUserTime", ctypes.c_int64),
        ("ThisPeriodTotalKernelTime", ctypes.c_int64),
        ("TotalPageFaultCount", wintypes.DWORD),
        ("TotalProcesses", wintypes.DWORD),
        ("ActiveProcesses", wintypes.DWORD),
        ("TotalTerminatedProcesses", wintypes.DWORD),
    ]


_kernel32.CreateJobObjectW.restype = wintypes.HANDLE
_kernel32.CreateJobObjectW.argtypes = [ctypes.c_void_p, wintypes.LPCWSTR]
_kernel32.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD]
_kernel32.QueryInformationJobObject.argtypes = [
    wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD, ctypes.c_void_p,
]  # fmt: skip
_kernel32.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
_kernel32.TerminateJobObject.argtypes = [wintypes.HANDLE, wintypes.UINT]
_kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
_ntdll.NtResumeProcess.argtypes = [wintypes.HANDLE]
_ntdll.NtResumeProcess.restype = ctypes.c_long
_kernel32.OpenProcess.restype = wintypes.HANDLE
_kernel32.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
_kernel32.GetExitCodeProcess.argtypes = [wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD)]
_kernel32.WaitForSingleObject.argtypes = [wintypes.HANDLE, wintypes.DWORD]
_HANDLER = ctypes.WINFUNCTYPE(wintypes.BOOL, wintypes.DWORD)
_kernel32.SetConsoleCtrlHandler.argtypes = [_HANDLER, wintypes.BOOL]

# -- process trees ----------------------------------------------------------------------------------------


def spawn_options() -> dict[str, Any]:
    """Popen's arguments for a child at the root of a tree of its own: a new console process group (a
    Ctrl-C typed at the console is the daemon's to handle, not rg's), no handles but its std ones, and
    suspended: `Tree.adopt` puts it in its Job Object before it runs a single instruction. Between its
    creation and that, it is already in the daemon's own job (`_join_own_job`), so a daemon killed at any
    instant leaves no child behind, not even a suspended one."""
    _join_own_job()
    return {"creationflags": _CREATE_NEW_PROCESS_GROUP | _CREATE_SUSPENDED, "close_fds": True}


_OWN_JOB: list[int | None] = []  # the daemon's own job, once tried (None: it could not be made or joined)


def _join_own_job() -> None:
    """Put the daemon in a Job Object of its own with kill-on-close, once, before its first child.

    A child is in its creator's job from its creation, and each search's job is nested in this one. The
    handle is never closed: the daemon's end closes it, and kill-on-close then ends whatever the daemon
    started — even a child created suspended whose own job it did not live to make (a suspended process
    outside any job would otherwise stay for ever). Where the daemon cannot join (a host's job that allows
    no nesting), each child's own job still holds it once made."""
    if _OWN_JOB:
        return
    job = _kernel32.CreateJobObjectW(None, None)
    if job:
        info = _ExtendedLimits()
        info.BasicLimitInformation.LimitFlags = _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        joined = _kernel32.SetInformationJobObject(
            job, _JOB_EXTENDED_LIMIT_INFORMATION, ctypes.byref(info), ctypes.sizeof(info)
        ) and _kernel32.AssignProcessToJobObject(job, _CURRENT_PROCESS)
        if not joined:
            _kernel32.CloseHandle(job)
            job = None
    _OWN_JOB.append(job or None)


class Tree:
    """A child and whatever it starts, in a Job Object with kill-on-close. Where the job cannot be made
    or the child cannot join it, the child alone is terminated through its process handle."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.pid = proc.pid
        self._proc = proc
        self._flags = _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        self._lock = threading.Lock()
        job = _kernel32.CreateJobObjectW(None, None)
        self._job: int | None = job or None
        if self._job is not None and not (
            self._set_limits(0) and _kernel32.AssignProcessToJobObject(self._job, int(proc._handle))  # type: ignore[attr-defined]
        ):
            _kernel32.CloseHandle(self._job)
            self._job = None

    @classmethod
    def adopt(cls, proc: subprocess.Popen[bytes]) -> Tree:
        """The tree of a child started with `spawn_options()` (suspended): in its job, then resumed."""
        tree = cls(proc)
        if _ntdll.NtResumeProcess(int(proc._handle)) != 0:  # type: ignore[attr-defined]
            tree.kill()  # it cannot run: end it rather than leave it suspended forever
        return tree

    def _set_limits(self, memory: int) -> bool:
        assert self._job is not None
        info = _ExtendedLimits()
        info.BasicLimitInformation.LimitFlags = self._flags
        info.ProcessMemoryLimit = memory
        return bool(
            _kernel32.SetInformationJobObject(
                self._job, _JOB_EXTENDED_LIMIT_INFORMATION, ctypes.byref(info), ctypes.sizeof(info)
            )
        )

    def limit_memory(self, cap: int) -> bool:
        with self._lock:
            if self._job is None:
                return False
            self._flags |= _JOB_OBJECT_LIMIT_PROCESS_MEMORY
            return self._set_limits(cap)

    def terminate(self) -> None:
        """Windows has no polite request to send: the tree ends now."""
        self.kill()

    def kill(self) -> None:
        with self._lock:
            if self._job is not None:
                _kernel32.TerminateJobObject(self._job, 1)
                return
        with contextlib.suppress(OSError):
            _winapi.TerminateProcess(int(self._proc._handle), 1)  # type: ignore[attr-defined]

    def alive(self) -> bool:
        with self._lock:
            if self._job is not None:
                info = _Accounting()
                if _kernel32.QueryInformationJobObject(
                    self._job, _JOB_BASIC_ACCOUNTING_INFORMATION, ctypes.byref(info), ctypes.sizeof(info), None
                ):
                    return bool(info.ActiveProcesses > 0)
        return self._proc.poll() is None

    def close(self) -> None:
        """Close the job: kill-on-close ends anything still in it."""
        with self._lock:
            if self._job is not None:
                _kernel32.CloseHandle(self._job)
                self._job = None


def limit_memory(tree: Tree, cap: int) -> bool:
    """The job's per-process memory limit (Windows enforces it; wine 8 does not)."""
    return tree.limit_memory(cap)


def aborted(returncode: int) -> bool:
    """Whether a child's exit status is an abort: Rust's (__fastfail: STATUS_STACK_BUFFER_OVERRUN) or the
    C runtime's abort() (3)."""
    return returncode & 0xFFFFFFFF in (_STATUS_STACK_BUFFER_OVERRUN, 3)


def wait_exit(proc: subprocess.Popen[bytes]) -> None:
    """Wait until the child has exited (its handle stays open: Popen closes it)."""
    _winapi.WaitForSingleObject(int(proc._handle), _winapi.INFINITE)  # type: ignore[attr-defined]


# -- child IO ---------------------------------------------------------------------------------------------


def pipe() -> tuple[int, int]:
    """An anonymous pipe, not inherited by children (Popen duplicates the child's end as inheritable)."""
    return os.pipe()


def memory_file(data: bytes) -> int | None:
    """Windows has no anonymous in-memory file to hand a child as stdin: the caller feeds a pipe."""
    return None


class ChildStreams:
    """A child's stdout and stderr as events, its stdin fed from `stdin_data`, and its exit — one thread
    per pipe (blocking reads and writes; pipes cannot be selected on), one waiting for the exit.

    `wait(timeout)` returns `("out", chunk)`, `("err", chunk)` (an empty chunk: that pipe reached its end)
    and `("exit", b"")`. It owns `in_fd` (its thread closes it once everything is written or the child
    stopped reading); the caller owns the other two."""

    def __init__(
        self, proc: subprocess.Popen[bytes], out_fd: int, err_fd: int, in_fd: int | None, stdin_data: bytes | None
    ) -> None:
        self._events: queue.SimpleQueue[tuple[str, bytes]] = queue.SimpleQueue()
        for fd, what in ((out_fd, "out"), (err_fd, "err")):
            threading.Thread(target=self._read, args=(fd, what), name=f"rg-{what}", daemon=True).start()
        if in_fd is not None:
            threading.Thread(target=self._write, args=(in_fd, stdin_data or b""), name="rg-in", daemon=True).start()

        def exited() -> None:
            wait_exit(proc)
            self._events.put(("exit", b""))

        threading.Thread(target=exited, name="rg-exit", daemon=True).start()

    def _read(self, fd: int, what: str) -> None:
        while True:
            try:
                chunk = os.read(fd, _READ)
            except OSError:
                chunk = b""
            self._events.put((what, chunk))
            if not chunk:
                return

    @staticmethod
    def _write(fd: int, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view[:_READ]) :]
        except OSError:  # rg exited early (a bad pattern, a kill): what it did not read does not matter
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)

    def wait(self, timeout: float | None) -> list[tuple[str, bytes]]:
        try:
            events = [self._events.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                events.append(self._events.get_nowait())
            except queue.Empty:
                return events

    def close(self) -> None:
        """The threads end with their pipes."""


# -- the daemon's own lifetime ----------------------------------------------------------------------------

_stopped = threading.Event()  # set once the daemon has stopped its children (`stopped`)
_console_handlers: list[Any] = []  # kept alive: ctypes calls them from a thread Windows starts


def on_stop_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[str], None]) -> None:
    """Call `stop(reason)` on the loop for SIGTERM (raised in the process), and for the console's control
    events: Ctrl-C, Ctrl-Break, the console closed, log-off and shutdown; for the last three, hold the
    process (Windows ends it when the handler returns) until `stopped()` or 4.5 s, within the 5 s Windows
    allows."""

    def handler(signum: int, frame: object) -> None:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(stop, f"signal {signal.Signals(signum).name}")

    for signum in STOP_SIGNALS:
        signal.signal(signum, handler)

    def console(event: int) -> bool:
        # Ctrl-C and Ctrl-Break are taken here too, not left to the C runtime's mapping to SIGINT and
        # SIGBREAK (wine's C runtime maps Ctrl-C only).
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(stop, _EVENT_NAMES.get(event, f"console event {event}"))
        if event in (_CTRL_CLOSE_EVENT, _CTRL_LOGOFF_EVENT, _CTRL_SHUTDOWN_EVENT):
            _stopped.wait(4.5)  # Windows ends the process when this returns
        return True

    _console_handlers.append(_HANDLER(console))
    _kernel32.SetConsoleCtrlHandler(_console_handlers[-1], True)


def stopped() -> None:
    """The daemon has stopped every child: a console event's handler may let Windows end the process."""
    _stopped.set()


def watch_reader_gone(fd: int, gone: Callable[[], None]) -> Callable[[], None] | None:
    """An anonymous pipe's write end does not tell that its reader has gone: a host that dies is noticed
    by the end of stdin and by the next write failing."""
    return None


# -- files ------------------------------------------------------------------------------------------------


def lock(fd: int, *, exclusive: bool = True, wait: bool = False) -> bool:
    """A byte-range lock on the first byte of `fd` (msvcrt: exclusive only; `exclusive` is ignored)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_LOCK if wait else msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


def flock_now(fd: int) -> None:
    """An exclusive lock on the open file `fd`'s first byte, taken now or not at all: OSError when held."""
    os.lseek(fd, 0, os.SEEK_SET)
    msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)


def fsync_directory(path: str) -> None:
    """NTFS makes a directory's entries durable with the files themselves: nothing to do."""


def pread(fd: int, size: int, offset: int) -> bytes:
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


class stat_at:
    """Stat paths relative to `directory` (Windows has no dir_fd: by joined path)."""

    def __init__(self, directory: str) -> None:
        if not os.path.isdir(directory):
            raise NotADirectoryError(directory)
        self._directory = directory

    def __enter__(self) -> Callable[[str], os.stat_result]:
        join, stat_, directory = os.path.join, os.stat, self._directory
        return lambda path: stat_(join(directory, path))

    def __exit__(self, *exc: object) -> None:
        pass


# -- where things live ------------------------------------------------------------------------------------


def sidecar_path_for(executable: str) -> str:
    """The ripgrep sidecar beside the real executable: `dsh-search.exe` → `dsh-search-rg.exe`."""
    real = os.path.realpath(executable)
    stem = real[:-4] if real.lower().endswith(".exe") else real
    return stem + "-rg.exe"


def unfrozen_rg_name() -> str:
    return "rg.exe"


def _local_app_data(environ: Any) -> str:
    return str(environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local"))


def state_home(environ: Any) -> str:
    """%LOCALAPPDATA% (XDG_STATE_HOME when set, as on POSIX)."""
    return str(environ.get("XDG_STATE_HOME") or _local_app_data(environ))


def cache_home(environ: Any) -> str:
    return str(environ.get("XDG_CACHE_HOME") or _local_app_data(environ))


# -- the frozen launcher's extraction directory -----------------------------------------------------------


def extraction_suffix_ok(suffix: str) -> bool:
    """The part of an extraction directory's name after `_MEI<8 hex digits>`: what the C runtime's
    _wtempnam appended (a short run of letters, digits and dots)."""
    return 0 < len(suffix) <= 16 and all(c.isalnum() or c == "." for c in suffix)


def lock_extraction(directory: str, marker: str) -> int | None:
    """Hold the directory: a lock on its marker file, for as long as the process lives (a sweeper that
    cannot take the lock leaves the directory alone). None when the marker cannot be locked."""
    try:
        fd = os.open(os.path.join(directory, marker), os.O_RDONLY | os.O_NOINHERIT)
    except OSError:
        return None
    if not lock(fd, wait=False):
        os.close(fd)
        return None
    return fd


class ExtractionLock:
    """A killed daemon's directory, found unheld (its marker's lock could be taken, and was let go)."""

    def __init__(self, path: str, info: os.stat_result, marked: bool) -> None:
        self.path, self.info, self.marked = path, info, marked

    def same_as(self, seen: os.stat_result) -> bool:
        try:
            current = os.lstat(self.path)
        except OSError:
            return False
        return (current.st_dev, current.st_ino) == (seen.st_dev, seen.st_ino)

    def empty(self) -> bool:
        try:
            return not os.listdir(self.path)
        except OSError:
            return False

    def close(self) -> None:
        pass


def try_lock_extraction(path: str, marker: str) -> ExtractionLock | None:
    """Whether nobody holds the directory: its marker's lock can be taken (then it is let go at once: an
    open file cannot be deleted on Windows). None when it is held, or is no plain directory."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_reparse_tag:
        return None
    try:
        fd = os.open(os.path.join(path, marker), os.O_RDONLY | os.O_NOINHERIT)
    except FileNotFoundError:
        return ExtractionLock(path, info, marked=False)
    except OSError:
        return None
    try:
        if not lock(fd, wait=False):
            return None
        with contextlib.suppress(OSError):
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    finally:
        os.close(fd)
    return ExtractionLock(path, info, marked=True)


def _open_process(pid: int, access: int) -> int | None:
    handle = _kernel32.OpenProcess(access, False, pid)
    return handle or None


def watch_parent(pid: int, on_gone: Callable[[], None]) -> None:
    """A thread waits on the launcher's process handle and calls `on_gone` when it ends (PyInstaller's
    bootloader does not take its child down when it is terminated)."""
    handle = _open_process(pid, _SYNCHRONIZE)
    if handle is None:
        return  # gone already: the caller sees it

    def wait() -> None:
        _kernel32.WaitForSingleObject(handle, 0xFFFFFFFF)
        on_gone()

    threading.Thread(target=wait, name="launcher-watch", daemon=True).start()


def parent_gone(launcher: int) -> bool:
    return not process_alive(launcher)


def request_stop() -> None:
    """Stop this process as a host's stop request would: SIGTERM raised in it (its handler stops the
    server, or — before the server runs — releases the extraction directory and exits)."""
    signal.raise_signal(signal.SIGTERM)


def user_id() -> int | None:
    """No POSIX owner and modes: a user's own directories are kept private by their ACLs (the profile's
    LocalAppData), which private.py does not judge."""
    return None


def user_name(uid: int) -> str | None:
    return None


def blocking(fd: int) -> None:
    """Files opened here never block: nothing to undo."""


# Windows keeps a running executable from being replaced or removed: nothing to pin.


def pin_file(path: str) -> int | None:
    return None


def own_executable() -> int | None:
    return None


def pinned_name(fd: int) -> str:
    raise NotImplementedError("no file is pinned on Windows")


def pinned_spawn_options(fd: int) -> dict[str, Any]:
    raise NotImplementedError("no file is pinned on Windows")


def owned_by_me(info: os.stat_result) -> bool:
    """%TEMP% is the user's own directory on Windows (C:\\Users\\<name>\\AppData\\Local\\Temp)."""
    return True


def process_alive(pid: int) -> bool:
    handle = _open_process(pid, _PROCESS_QUERY_LIMITED_INFORMATION)
    if handle is None:
        return bool(ctypes.get_last_error() == _ERROR_ACCESS_DENIED)  # another user's: not ours to judge
    try:
        code = wintypes.DWORD()
        if not _kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == _STILL_ACTIVE
    finally:
        _kernel32.CloseHandle(handle)


# -- the index, the allocator -----------------------------------------------------------------------------


_NO_INDEX = (
    "the index is off on Windows: no change watcher here is proven exact (ReadDirectoryChangesW drops every "
    "event when its buffer overflows, and a write through a memory mapping or another hard link is reported "
    "late or not at all), so it could not promise that a file written before a request is seen by it"
)


def index_unsupported_reason() -> str | None:
    return _NO_INDEX


def index_unavailable_reason() -> str | None:
    """The index does not run on Windows, even with `--index on`: searches walk (exactness first)."""
    return _NO_INDEX


def glibc() -> Any:
    return None


# --- ripgrep's command line --------------------------------------------------------------------------------

ARGV_RESERVE = 0


def argv_names_budget(environ: dict[bytes, bytes] | None = None) -> int:
    """No file names on ripgrep's command line beyond a search's own path: CreateProcess takes 32,767
    characters in all, which the pattern (up to 4,096) and the deny globs share; searches walk instead."""
    return 0

"""The POSIX side of the seam (Linux, macOS): process groups, selectable pipes, signals, flock.

Each Linux-only call is looked up when it is used, with the fallback of other POSIX systems (macOS) beside
it: tests/engine/test_portability_rg.py takes the calls away and runs the fallbacks on Linux.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import functools
import os
import resource
import selectors
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
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

NULL_DEVICE = b"/dev/null"
O_NONBLOCK = os.O_NONBLOCK
O_CLOEXEC = os.O_CLOEXEC
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

_PIPE_BYTES = 1 << 20
_READ_CHUNK = 1 << 20
# A read asks for 64 KiB unless the last one filled that: a 1 MiB buffer is allocated (and trimmed) at every
# read, ~20 µs each, and most reads bring a few hundred bytes.
_SMALL_READ = 1 << 16
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)

# -- process trees ----------------------------------------------------------------------------------------


def spawn_options() -> dict[str, Any]:
    """Popen's arguments that put a child at the root of a tree of its own: its own session and process
    group, so that the group can be signalled whole."""
    return {"start_new_session": True, "close_fds": True}


class Tree:
    """A child's process group. Signals go to the whole group; the caller orders them against the
    child's reaping (a group id is the leader's pid, reused once the leader is reaped)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    @classmethod
    def adopt(cls, proc: subprocess.Popen[bytes]) -> Tree:
        return cls(proc.pid)

    def terminate(self) -> None:
        """Ask the tree to end (SIGTERM)."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """End the tree now (SIGKILL)."""
        self._signal(signal.SIGKILL)

    def alive(self) -> bool:
        try:
            os.killpg(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def close(self) -> None:
        """Nothing to release: a process group is no handle."""

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


def limit_memory(tree: Tree, cap: int) -> bool:
    """Bound the child's address space: Linux's prlimit sets it on the running process (its exec is
    done when Popen returns, and rg allocates its big buffers later). Other POSIX systems have no call to
    do it from outside the child; there the run stays unbounded (docs/reliability.md)."""
    prlimit = getattr(resource, "prlimit", None)
    if prlimit is None:
        return False
    try:
        prlimit(tree.pid, resource.RLIMIT_AS, (cap, cap))
    except (OSError, ValueError):
        return False
    return True


def aborted(returncode: int) -> bool:
    """Whether a child's exit status is an abort (what a Rust program does when an allocation fails)."""
    return returncode == -signal.SIGABRT


def wait_exit(proc: subprocess.Popen[bytes]) -> None:
    """Wait until the child has exited, without reaping it (Linux, macOS: waitid WNOWAIT); where that
    call is missing, return after a short sleep (the caller polls)."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        time.sleep(0.002)
        return
    with contextlib.suppress(ChildProcessError, InterruptedError):
        waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)


# -- child IO ---------------------------------------------------------------------------------------------


def pipe() -> tuple[int, int]:
    """A pipe enlarged to 1 MiB where the platform allows (Linux): a writer rarely blocks, and data
    moves in few large steps. Elsewhere the default size is kept."""
    read_end, write_end = os.pipe()
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(write_end, set_size, _PIPE_BYTES)
    return read_end, write_end


def memory_file(data: bytes) -> int | None:
    """A file in memory holding `data`, positioned at its start (Linux's memfd), or None elsewhere.

    As rg's stdin it beats a pipe: rg reads a file in large blocks and nobody has to feed it (a 4 MiB
    scrollback searched through a pipe cost rg ~50 % more than the same text in a file)."""
    create = getattr(os, "memfd_create", None)
    if create is None:
        return None
    try:
        fd: int = create("dsh-search-stdin", getattr(os, "MFD_CLOEXEC", 0))
    except OSError:
        return None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        return None
    return fd


class ChildStreams:
    """A child's stdout and stderr as events, its stdin fed from `stdin_data`, and its exit.

    `wait(timeout)` returns `("out", chunk)`, `("err", chunk)` (an empty chunk: that pipe reached its end)
    and `("exit", b"")` (Linux ≥ 5.3, through a pidfd: the exit is known at once, even while a descendant
    holds a pipe open). It owns `in_fd` and closes it once everything is written (or at `close`); the
    caller owns the other two."""

    def __init__(
        self, proc: subprocess.Popen[bytes], out_fd: int, err_fd: int, in_fd: int | None, stdin_data: bytes | None
    ) -> None:
        self._out_fd, self._err_fd, self._in_fd = out_fd, err_fd, in_fd
        self._stdin = memoryview(stdin_data) if stdin_data is not None else None
        self._want = _SMALL_READ
        self._selector = selectors.DefaultSelector()
        self._pidfd: int | None = None
        try:
            self._selector.register(out_fd, selectors.EVENT_READ, "out")
            self._selector.register(err_fd, selectors.EVENT_READ, "err")
            if in_fd is not None:
                os.set_blocking(in_fd, False)
                self._selector.register(in_fd, selectors.EVENT_WRITE, "in")
            with contextlib.suppress(AttributeError, OSError):  # Linux ≥ 5.3: learn of the exit at once
                self._pidfd = os.pidfd_open(proc.pid)
                self._selector.register(self._pidfd, selectors.EVENT_READ, "exit")
        except BaseException:
            self.close()
            raise

    def wait(self, timeout: float | None) -> list[tuple[str, bytes]]:
        events: list[tuple[str, bytes]] = []
        for key, _ in self._selector.select(timeout):
            what = key.data
            if what == "out":
                chunk = os.read(self._out_fd, self._want)
                self._want = _READ_CHUNK if len(chunk) >= _SMALL_READ else _SMALL_READ
                if not chunk:
                    self._selector.unregister(self._out_fd)
                events.append(("out", chunk))
            elif what == "err":
                chunk = os.read(self._err_fd, _SMALL_READ)
                if not chunk:
                    self._selector.unregister(self._err_fd)
                events.append(("err", chunk))
            elif what == "in":
                self._write_stdin()
            else:  # the child exited; its pipes should close right after
                self._selector.unregister(key.fd)
                events.append(("exit", b""))
        return events

    def _write_stdin(self) -> None:
        fd, data = self._in_fd, self._stdin
        assert fd is not None and data is not None
        try:
            written = os.write(fd, data[:_READ_CHUNK])
        except BlockingIOError:
            return
        except OSError:  # rg exited early (a bad pattern, a kill): what it did not read does not matter
            written = len(data)
        self._stdin = data = data[written:]
        if not data:
            self._selector.unregister(fd)
            os.close(fd)
            self._in_fd = None

    def close(self) -> None:
        self._selector.close()
        for fd in (self._pidfd, self._in_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._pidfd = self._in_fd = None


# -- the daemon's own lifetime ----------------------------------------------------------------------------


def on_stop_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[str], None]) -> None:
    """Call `stop("signal NAME")` on the loop for SIGTERM, SIGINT and SIGHUP."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop, f"signal {signal.Signals(sig).name}")


def stopped() -> None:
    """The daemon has stopped every child (nothing waits for that on POSIX)."""


def watch_reader_gone(fd: int, gone: Callable[[], None]) -> Callable[[], None] | None:
    """Call `gone()` (from a thread) once the reader of the pipe or socket `fd` has closed its end, and
    return what stops the watch; None when that cannot be noticed before a write fails.

    Linux's poll() reports POLLHUP/POLLERR on a pipe's or socket's write end once its reader is gone,
    with no events asked for. Other systems' poll() is not known to (macOS implements it on kqueue):
    there, a host that dies is noticed by the end of our stdin (its write end closes with it) and by
    the next write failing, as on Linux when stdout is a file or a terminal."""
    import select

    if not (sys.platform.startswith("linux") and hasattr(select, "poll") and _is_pipe_or_socket(fd)):
        return None
    wake_r, wake_w = os.pipe()

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, 0)
        poller.register(wake_r, select.POLLIN)
        try:
            while True:
                ready = poller.poll()
                if any(ready_fd == wake_r for ready_fd, _ in ready):
                    return
                if any(ev & (select.POLLERR | select.POLLHUP) for _, ev in ready):
                    gone()
                    return
        finally:
            os.close(wake_r)

    watcher = threading.Thread(target=watch, name="stdout-watch", daemon=True)
    watcher.start()

    def stop() -> None:
        # Its poll holds a reference to our stdout: end it, so a server inside another program (tests)
        # lets go of the pipe when it returns.
        with contextlib.suppress(OSError):  # it has ended already (it saw the reader go): no reader left
            os.write(wake_w, b"x")
        watcher.join(timeout=1.0)
        os.close(wake_w)

    return stop


def _is_pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


# -- files ------------------------------------------------------------------------------------------------


def lock(fd: int, *, exclusive: bool = True, wait: bool = False) -> bool:
    """flock the open file `fd`; False when another holds it (and `wait` is false) or locks are missing."""
    how = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB)
    try:
        fcntl.flock(fd, how)
    except OSError:
        return False
    return True


def flock_now(fd: int) -> None:
    """An exclusive lock on the open file `fd`, taken now or not at all: OSError when another holds it."""
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def fsync_directory(path: str) -> None:
    """Make a directory's entries durable (a rename or link in it); errors are ignored."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def pread(fd: int, size: int, offset: int) -> bytes:
    return os.pread(fd, size, offset)


class stat_at:
    """Stat paths relative to `directory` through one open descriptor of it (a rename of the directory
    meanwhile cannot make them resolve elsewhere): `with stat_at(d) as st: st(path)`."""

    def __init__(self, directory: str) -> None:
        self._fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)

    def __enter__(self) -> Callable[[str], os.stat_result]:
        return functools.partial(os.stat, dir_fd=self._fd)  # C all the way: no Python frame per path

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)


# -- where things live ------------------------------------------------------------------------------------


def sidecar_path_for(executable: str) -> str:
    """The ripgrep sidecar beside the real (symlink-resolved) executable: `<path>-rg`."""
    return os.path.realpath(executable) + "-rg"


def unfrozen_rg_name() -> str:
    return "rg"


def state_home(environ: dict[str, str] | Any) -> str:
    return str(environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state"))


def cache_home(environ: dict[str, str] | Any) -> str:
    return str(environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"))


# -- the frozen launcher's extraction directory -----------------------------------------------------------


def extraction_suffix_ok(suffix: str) -> bool:
    """The part of an extraction directory's name after `_MEI<8 hex digits>`: mkdtemp's six characters."""
    return len(suffix) == 6 and suffix.isalnum()


def lock_extraction(directory: str, marker: str) -> int | None:
    """Take a shared lock on the directory, held until the process ends (the sign, for a sweeper and for
    systemd-tmpfiles' aging alike, that it is in use); None where the file system has no locks."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    except OSError:
        return None
    if not lock(fd, exclusive=False, wait=True):
        os.close(fd)
        return None
    return fd


class ExtractionLock:
    """A directory opened without following a link and locked exclusively: nobody runs from it. Its
    marker and emptiness are judged through the descriptor, so a rename meanwhile changes nothing."""

    def __init__(self, path: str, fd: int, marker: str) -> None:
        self.path = path
        self.info = os.fstat(fd)
        self._fd = fd
        try:
            found = os.stat(marker, dir_fd=fd, follow_symlinks=False)
        except OSError:
            found = None
        self.marked = found is not None and stat.S_ISREG(found.st_mode)

    def same_as(self, seen: os.stat_result) -> bool:
        """Whether the directory locked is the one `seen` (lstat before), and the name still leads to it."""
        if (self.info.st_dev, self.info.st_ino) != (seen.st_dev, seen.st_ino):
            return False
        try:
            current = os.lstat(self.path)
        except OSError:
            return False
        return (current.st_dev, current.st_ino) == (self.info.st_dev, self.info.st_ino)

    def empty(self) -> bool:
        try:
            return not os.listdir(self._fd)
        except OSError:
            return False

    def close(self) -> None:
        os.close(self._fd)


def try_lock_extraction(path: str, marker: str) -> ExtractionLock | None:
    """The directory locked exclusively without waiting, or None: held (a daemon runs from it), a file
    system without locks, or no directory (a link is not followed). The caller closes it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    if not lock(fd, exclusive=True, wait=False):
        os.close(fd)
        return None
    try:
        return ExtractionLock(path, fd, marker)
    except BaseException:
        os.close(fd)
        raise


def watch_parent(pid: int, on_gone: Callable[[], None]) -> None:
    """Be told when the launcher dies. Linux: the kernel sends SIGTERM (parent-death signal), which the
    server handles as any SIGTERM. macOS: a thread waits on a kqueue for the launcher's exit and then
    calls `on_gone`. Elsewhere, or when the call fails: nothing (the daemon then ends with its stdin)."""
    if sys.platform.startswith("linux"):
        import ctypes  # loaded already in the frozen executable (PyInstaller's bootstrap imports it)

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGTERM), ctypes.c_ulong(0), ctypes.c_ulong(0), 0)
    elif sys.platform == "darwin":
        import select

        try:
            kq = select.kqueue()
            kq.control(
                [
                    select.kevent(
                        pid,
                        filter=select.KQ_FILTER_PROC,
                        flags=select.KQ_EV_ADD | select.KQ_EV_ONESHOT,
                        fflags=select.KQ_NOTE_EXIT,
                    )
                ],
                0,
            )
        except ProcessLookupError:  # gone already: the caller sees it
            return
        except OSError:
            return

        def wait() -> None:
            with contextlib.suppress(OSError):
                kq.control(None, 1)
                on_gone()

        threading.Thread(target=wait, name="launcher-watch", daemon=True).start()


def parent_gone(launcher: int) -> bool:
    """Whether the launcher has died (this process was then reparented)."""
    return os.getppid() != launcher


def request_stop() -> None:
    """End this process as a host's stop request would: SIGTERM to itself (the server handles it)."""
    os.kill(os.getpid(), signal.SIGTERM)


def user_id() -> int | None:
    """The user whose files and directories this process may call its own (the effective uid)."""
    return os.geteuid()


def user_name(uid: int) -> str | None:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return None


def blocking(fd: int) -> None:
    """Clear O_NONBLOCK, which an open took to not wait on a FIFO: reads of the file behave as usual."""
    os.set_blocking(fd, True)


# --- files pinned by descriptor: what a running daemon reads and runs, whatever their names lead to later --


def pin_file(path: str) -> int | None:
    """A descriptor of the file at `path`, to read or run it by later (`pinned_name`) whatever its path
    names then; None where no path leads to an open descriptor (Linux's /proc/self/fd; not macOS)."""
    if not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def own_executable() -> int | None:
    """This process's executable file, open: Linux's /proc/self/exe is the very file the kernel ran,
    whatever its path names now. None elsewhere."""
    return pin_file("/proc/self/exe") if os.path.exists("/proc/self/exe") else None


def pinned_name(fd: int) -> str:
    """A name that opens (or runs) the file a pinned descriptor holds: each open its own."""
    return f"/proc/self/fd/{fd}"


def pinned_spawn_options(fd: int) -> dict[str, Any]:
    """Popen's arguments that run the pinned file (argv[0] stays what the caller gives)."""
    return {"executable": pinned_name(fd), "pass_fds": (fd,)}


def owned_by_me(info: os.stat_result) -> bool:
    return info.st_uid == os.getuid()


def process_alive(pid: int) -> bool:
    """Whether a process with this pid exists and has not exited (a zombie has: it awaits its reaping).
    Another user's process counts as alive: the pid was reused, or the directory is not ours to judge."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError as exc:
        return exc.errno == errno.EPERM
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        return state not in (b"Z", b"X")
    return True


# -- the index, the allocator -----------------------------------------------------------------------------


def index_unsupported_reason() -> str | None:
    """Why the warm index cannot promise read-your-writes on this system at all, or None."""
    if not sys.platform.startswith("linux"):
        return f"no inotify on {sys.platform}: the index cannot see writes as they happen"
    return None


def index_unavailable_reason() -> str | None:
    """Why the warm index cannot run here even when asked (`--index on`), or None: it can on POSIX."""
    return None


def glibc() -> Any:
    """glibc through ctypes with malloc's arenas capped at two, or None off glibc."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt"):
            libc.mallopt(_M_ARENA_MAX, 2)  # later threads share arenas instead of adding some
            return libc
    return None


# --- ripgrep's command line --------------------------------------------------------------------------------

ARGV_RESERVE = 384 << 10  # for the rest of ripgrep's command line: flags, deny globs, the pattern (≤ 128 KiB)


def argv_names_budget(environ: dict[bytes, bytes] | None = None) -> int:
    """Bytes of file names ripgrep's command line may carry (each name counted with its NUL and its
    pointer, +9): what execve takes (ARG_MAX counts the strings of argv and of the environment, and their
    pointers), less this process's environment (the child's is a scrubbed copy of it, never bigger) and a
    reserve for the rest of the command line."""
    environ = dict(os.environb) if environ is None else environ
    try:
        arg_max = os.sysconf("SC_ARG_MAX")
    except (ValueError, OSError):
        arg_max = -1
    if arg_max <= 0:
        return 512 << 10
    environment = sum(len(name) + len(value) + 2 + 8 for name, value in environ.items())  # `=`, NUL, pointer
    return max(256 << 10, arg_max - environment - ARGV_RESERVE)

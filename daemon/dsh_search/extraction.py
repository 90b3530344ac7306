"""The onefile launcher's extraction directory: held while the daemon runs, never left behind for long.

The frozen `dsh-search` is a PyInstaller onefile executable, and runs as two processes: the launcher (the
process the host started, C code) unpacks the Python runtime into a fresh `_MEI<launcher pid, 8 hex
digits><6 characters>` directory of the temporary directory, runs the daemon as its child (the same
executable, with `sys._MEIPASS` naming that directory), waits for it and then removes the directory.
A launcher killed with SIGKILL removes nothing, and its child lived on as an orphan. Three things here
bound what a killed daemon leaves (docs/hosts.md, "Stopping it"):

- `hold()`, the first thing the child does: it takes a shared `flock` on its directory (held until the
  process ends: the sign, for a sweeper and for systemd-tmpfiles' aging alike, that the directory is in
  use), and asks to be sent SIGTERM when the launcher dies (Linux: `PR_SET_PDEATHSIG`; macOS: a kqueue
  watch of the launcher's pid), so a SIGKILLed launcher no longer leaves an orphan: the daemon ends as
  on SIGTERM. Before the server handles signals, SIGTERM, SIGINT and SIGHUP release the directory and
  end the process by that signal (their default action); once it has stopped, they end it at once with
  the status it was exiting with.
- `Held.release()`, the last thing it does (at exit): when the launcher is gone, nobody else will remove
  the directory, so the daemon removes it itself.
- `sweep()`, run by a serving daemon a second after start or with its first search: sibling `_MEI*` directories that a
  killed daemon left (launcher and child killed together, or the launcher killed while it unpacked) are
  removed when all of this holds: the name is a onefile's, the entry is a real directory of this user,
  it holds `MARKER` (the first file the launcher unpacks, so only dsh-search's are touched), it has not
  changed for `MIN_AGE_S`, the launcher whose pid the name carries is gone, and no process holds the
  directory's lock. A directory is renamed out of the way (`TRASH_PREFIX`) before it is deleted, so a
  removal interrupted half-way is recognisable and finished by the next sweep.

The name's format (`_MEI%08x` plus mkdtemp's six characters) is PyInstaller 6.22's, which the child's
own bootloader checks; a directory named otherwise is never ours to hold or remove, so a
PyInstaller that changes it makes all of this a no-op (tests/server/test_extraction_e2e.py notices).
Nothing here imports an extension module after the directory is gone: those are loaded from it.

**The executable file itself.** The Python modules are not unpacked: they stay in the executable's
embedded archive (PYZ), and PyInstaller's reader opens the executable *by its path* at each module's
first import (`pyimod01_archive.ZlibArchiveReader.extract`: open, seek to the entry's offset, read,
inflate). A daemon imports lazily — grep's module, msgspec, SQLite, the index — so an executable
rebuilt or upgraded in place under a running daemon broke it at its next first import: the path named
another file (PyInstaller's build removes the old file and writes the new one from the bootloader up,
so a read at the old offsets found too few bytes — `zlib.error: Error -5 … incomplete or truncated
stream` — or another build's bytes), or none (`… appears to have been moved or deleted`). That was the
rare start-up failure seen right after a fresh build: a daemon whose launcher started on the old file
imported from the new one. `pin_archive()`, the first thing the child does, opens the file it runs
from — on Linux `/proc/self/exe`, the very file the kernel executed, whatever its name leads to now —
checks the archive's magic at the reader's offset, and points the reader at that open file
(`/proc/self/fd/N`, or `/dev/fd/N` elsewhere, where the reads are serialised: that name shares one
offset among its opens). From then on, nothing the daemon imports depends on what the path names.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import os
import signal
import stat
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import NamedTuple

MARKER = "DSH-SEARCH-RUNTIME"  # packaging/DSH-SEARCH-RUNTIME, unpacked first (see packaging/dsh-search.spec)
TRASH_PREFIX = ".dsh-search-trash-"
MIN_AGE_S = 60.0  # a directory younger than this may still be unpacked into, or its child still starting

_PREFIX = "_MEI"
_PID_DIGITS = 8
_NAME_LENGTH = len(_PREFIX) + _PID_DIGITS + 6
_HEX = frozenset("0123456789abcdef")
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


_PYZ_MAGIC = b"PYZ\0"


def pin_archive() -> bool:
    """Make the frozen daemon's module imports read the executable file it runs from, whatever its path
    names later (see the module's header). False when it is not frozen this way, or the file open is not
    the archive the reader knows (then nothing changes)."""
    importers = sys.modules.get("pyimod02_importers")
    archive = getattr(importers, "pyz_archive", None)
    name = getattr(archive, "_filename", None)
    offset = getattr(archive, "_start_offset", None)
    if not isinstance(name, str) or not isinstance(offset, int):
        return False
    linux = sys.platform.startswith("linux")
    try:
        fd = os.open("/proc/self/exe" if linux else name, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if os.pread(fd, len(_PYZ_MAGIC), offset) != _PYZ_MAGIC:
            os.close(fd)
            return False
    except OSError:
        os.close(fd)
        return False
    opened = f"/proc/self/fd/{fd}" if linux else f"/dev/fd/{fd}"
    archive._filename = opened  # type: ignore[union-attr]
    if not linux:  # /dev/fd/N is the same open file each time: one seek-and-read at a time
        import threading

        extract = archive.extract  # type: ignore[union-attr]
        lock = threading.Lock()

        def serialised(entry: str, raw: bool = False) -> object:
            with lock:
                return extract(entry, raw)

        archive.extract = serialised  # type: ignore[union-attr]
    return True


def launcher_pid(name: str) -> int | None:
    """The pid of the launcher that made the extraction directory `name`, or None when the name is not
    a onefile extraction directory's."""
    if len(name) != _NAME_LENGTH or not name.startswith(_PREFIX):
        return None
    digits = name[len(_PREFIX) : len(_PREFIX) + _PID_DIGITS]
    if not _HEX.issuperset(digits) or not name[len(_PREFIX) + _PID_DIGITS :].isalnum():
        return None
    return int(digits, 16)


def own_directory() -> str | None:
    """This process's extraction directory: `sys._MEIPASS` when it is a onefile's, else None (unfrozen,
    or another layout)."""
    directory = getattr(sys, "_MEIPASS", None)
    if not isinstance(directory, str) or launcher_pid(os.path.basename(directory)) is None:
        return None
    return directory


class Held:
    """The extraction directory this process runs from, locked for as long as the process lives."""

    def __init__(self, directory: str, launcher: int) -> None:
        self.directory = directory
        self.launcher = launcher
        self._fd: int | None = None  # the shared lock, taken by `lock`; it goes with the process
        self._released = False

    def lock(self) -> None:
        """Take the shared lock on the directory (where the file system has no locks, it is held by its
        age and its launcher alone)."""
        self._fd = _lock_shared(self.directory)

    def launcher_gone(self) -> bool:
        """Whether the launcher has died (this process was then reparented): nobody will remove the
        directory but us."""
        return os.getppid() != self.launcher

    def release(self) -> None:
        """At exit: remove the directory when the launcher is gone; otherwise leave it to the launcher,
        which removes it once this process has exited. Stop signals are ignored from here on: the
        process is ending, and a removal must not be cut short."""
        if self._released:
            return
        self._released = True
        _install(signal.SIG_IGN)
        if self.launcher_gone():
            remove(self.directory)

    def handle_signals(self) -> None:
        """Until the server handles signals: a stop signal releases the directory, then ends the process
        by that signal, as its default action would have. Nothing is raised into the code it interrupts:
        an exception thrown in the middle of an extension module's initialisation can crash the
        interpreter."""
        _install(self._die)

    def exiting(self, status: int) -> None:
        """The daemon is done (its server no longer handles signals) and will exit with `status`: a stop
        signal from now on (a second copy of one sent to the process group, which the launcher forwards,
        or a host in a hurry) releases the directory and exits with that status at once."""

        def finish(signum: int, frame: FrameType | None) -> None:
            self._leave()
            os._exit(status)

        _install(finish)

    def _die(self, signum: int, frame: FrameType | None) -> None:
        self._leave()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    def _leave(self) -> None:
        _install(signal.SIG_IGN)  # a signal sent to the process group arrives twice
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        self.release()


def hold() -> Held | None:
    """Hold this process's extraction directory (None: it runs from none), and register its release at
    exit. When the launcher has died already, before it could be watched, the process ends as if the
    launcher's death had been signalled."""
    directory = own_directory()
    if directory is None:
        return None
    launcher = launcher_pid(os.path.basename(directory))
    assert launcher is not None
    held = Held(directory, launcher)
    held.handle_signals()
    held.lock()
    atexit.register(held.release)  # registered first: runs last, once every other exit handler has run
    _watch_launcher(launcher, _terminate_self)
    if held.launcher_gone():
        _terminate_self()
    return held


def _install(handler: Callable[[int, FrameType | None], None] | signal.Handlers) -> None:
    for signum in _STOP_SIGNALS:
        with contextlib.suppress(OSError, ValueError):  # ValueError: not the main thread
            signal.signal(signum, handler)


def _terminate_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


def _lock_shared(directory: str) -> int | None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return fd


def _watch_launcher(pid: int, on_gone: Callable[[], None]) -> None:
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
        import threading

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
        except ProcessLookupError:  # gone already: hold() sees it
            return
        except OSError:
            return

        def wait() -> None:
            with contextlib.suppress(OSError):
                kq.control(None, 1)
                on_gone()

        threading.Thread(target=wait, name="launcher-watch", daemon=True).start()


# -- removal ----------------------------------------------------------------------------------------------


def remove(directory: str) -> bool:
    """Rename `directory` out of the way, then delete it; False when it could not be renamed (gone, or
    another sweeper took it). A deletion cut short leaves a `TRASH_PREFIX` entry, which `sweep` removes."""
    base, name = os.path.split(directory)
    trash = os.path.join(base, TRASH_PREFIX + name)
    try:
        os.rename(directory, trash)
    except OSError:
        return False
    _delete_tree(trash)
    return True


def _delete_tree(top: str) -> None:
    """Delete a directory tree, ignoring what is already gone. It imports nothing (it may run in a signal
    handler, interrupting an import), and follows no symbolic link: the tree is a 0700 directory of ours
    that nobody else can change."""
    for root, dirs, files in os.walk(top, topdown=False):
        for name in files:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(root, name))
        for name in dirs:
            path = os.path.join(root, name)
            with contextlib.suppress(OSError):
                if os.path.islink(path):
                    os.unlink(path)
                else:
                    os.rmdir(path)
    with contextlib.suppress(OSError):
        os.rmdir(top)


class Swept(NamedTuple):
    """What a sweep did: the directories it removed, and in how many seconds the youngest it left for
    being too young will be old enough (None: none was)."""

    removed: list[str]
    retry_in: float | None


def sweep(base: str | None = None, own: str | None = None, min_age_s: float = MIN_AGE_S) -> Swept:
    """Remove the extraction directories of killed daemons beside this one's (`base` and `own` default
    to this process's directory's parent and name; unfrozen, there is nothing to sweep)."""
    if base is None:
        directory = own_directory()
        if directory is None:
            return Swept([], None)
        base, own = os.path.split(directory)
    uid = os.getuid()
    now = time.time()
    removed: list[str] = []
    retry_in: float | None = None
    try:
        names = os.listdir(base)
    except OSError:
        return Swept([], None)
    for name in names:
        path = os.path.join(base, name)
        if name.startswith(TRASH_PREFIX) and launcher_pid(name[len(TRASH_PREFIX) :]) is not None:
            if _own_directory_entry(path, uid) is not None:
                _delete_tree(path)  # a removal cut short (or running now: both sides ignore what is gone)
            continue
        pid = launcher_pid(name)
        if pid is None or name == own:
            continue
        info = _own_directory_entry(path, uid)
        if info is None:
            continue
        age = now - info.st_mtime
        if age < min_age_s:
            wait = min_age_s - age
            retry_in = wait if retry_in is None else min(retry_in, wait)
            continue
        if _alive(pid):
            continue  # it is unpacking, serving, or about to remove the directory itself
        if _remove_unheld(path, info):
            removed.append(name)
    return Swept(removed, retry_in)


def _own_directory_entry(path: str, uid: int) -> os.stat_result | None:
    """The entry's lstat when it is a directory (not a link to one) of this user, else None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
        return None
    return info


def _remove_unheld(path: str, seen: os.stat_result) -> bool:
    """Remove a dead launcher's directory, if it is ours and nobody holds it: lock, then check that the
    name still leads to the directory locked and that it is marked."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # held (a daemon runs from it), or a file system without locks: leave it
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino):
            return False
        try:
            current = os.lstat(path)
        except OSError:
            return False
        if (current.st_dev, current.st_ino) != (opened.st_dev, opened.st_ino):
            return False
        try:
            marker = os.stat(MARKER, dir_fd=fd, follow_symlinks=False)
        except OSError:
            marker = None
        if marker is None or not stat.S_ISREG(marker.st_mode):
            # Not marked: another program's, unless it is empty (a launcher killed before it unpacked
            # anything), which is nothing to anyone.
            if os.listdir(fd):
                return False
            try:
                os.rmdir(path)
            except OSError:
                return False
            return True
        return remove(path)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
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

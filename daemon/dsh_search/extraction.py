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

On Windows (dsh_search/osdep/windows.py) the same three hold with Windows means: the lock is a byte-range
lock on MARKER, the launcher is watched by a thread waiting on its process handle (PyInstaller's Windows
launcher does not end its child when it is terminated), a stop is SIGTERM raised in the process, and the
directory is `%TEMP%\\_MEI%08x` plus what the C runtime's `_wtempnam` appended. A daemon cannot remove its
own directory there while its DLLs are loaded from it: the next start's sweep does.

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
(`/proc/self/fd/N`). From then on, nothing the daemon imports depends on what the path names. (macOS
has no such name: there a rebuild in place still breaks a running daemon; Windows keeps a running
executable from being replaced.)
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import stat
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import NamedTuple

from dsh_search import osdep

MARKER = "DSH-SEARCH-RUNTIME"  # packaging/DSH-SEARCH-RUNTIME, unpacked first (see packaging/dsh-search.spec)
TRASH_PREFIX = ".dsh-search-trash-"
MIN_AGE_S = 60.0  # a directory younger than this may still be unpacked into, or its child still starting

_PREFIX = "_MEI"
_PID_DIGITS = 8
_HEX = frozenset("0123456789abcdef")
_STOP_SIGNALS = osdep.STOP_SIGNALS  # SIGTERM, SIGINT, SIGHUP (Windows: SIGTERM, SIGINT, SIGBREAK)


_PYZ_MAGIC = b"PYZ\0"


def pin_archive() -> bool:
    """Make the frozen daemon's module imports read the executable file it runs from, whatever its path
    names later (see the module's header). False when it is not frozen this way, the platform cannot pin
    a file (only Linux can), or the file open is not the archive the reader knows (then nothing changes)."""
    importers = sys.modules.get("pyimod02_importers")
    archive = getattr(importers, "pyz_archive", None)
    offset = getattr(archive, "_start_offset", None)
    if not isinstance(getattr(archive, "_filename", None), str) or not isinstance(offset, int):
        return False
    fd = osdep.own_executable()
    if fd is None:
        return False
    try:
        magic = osdep.pread(fd, len(_PYZ_MAGIC), offset)
    except OSError:
        magic = b""
    if magic != _PYZ_MAGIC:
        os.close(fd)
        return False
    archive._filename = osdep.pinned_name(fd)  # type: ignore[union-attr]
    return True


def launcher_pid(name: str) -> int | None:
    """The pid of the launcher that made the extraction directory `name`, or None when the name is not
    a onefile extraction directory's."""
    if not name.startswith(_PREFIX):
        return None
    digits = name[len(_PREFIX) : len(_PREFIX) + _PID_DIGITS]
    if len(digits) != _PID_DIGITS or not _HEX.issuperset(digits):
        return None
    if not osdep.extraction_suffix_ok(name[len(_PREFIX) + _PID_DIGITS :]):  # mkdtemp's (Windows: _wtempnam's)
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
        self._fd = osdep.lock_extraction(self.directory, MARKER)

    def launcher_gone(self) -> bool:
        """Whether the launcher has died (this process was then reparented): nobody will remove the
        directory but us."""
        return osdep.parent_gone(self.launcher)

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
    osdep.watch_parent(launcher, _terminate_self)
    if held.launcher_gone():
        _terminate_self()
    return held


def _install(handler: Callable[[int, FrameType | None], None] | signal.Handlers) -> None:
    for signum in _STOP_SIGNALS:
        with contextlib.suppress(OSError, ValueError):  # ValueError: not the main thread
            signal.signal(signum, handler)


def _terminate_self() -> None:
    osdep.request_stop()


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
            if _own_directory_entry(path) is not None:
                _delete_tree(path)  # a removal cut short (or running now: both sides ignore what is gone)
            continue
        pid = launcher_pid(name)
        if pid is None or name == own:
            continue
        info = _own_directory_entry(path)
        if info is None:
            continue
        age = now - info.st_mtime
        if age < min_age_s:
            wait = min_age_s - age
            retry_in = wait if retry_in is None else min(retry_in, wait)
            continue
        if osdep.process_alive(pid):
            continue  # it is unpacking, serving, or about to remove the directory itself
        if _remove_unheld(path, info):
            removed.append(name)
    return Swept(removed, retry_in)


def _own_directory_entry(path: str) -> os.stat_result | None:
    """The entry's lstat when it is a directory (not a link to one) of this user, else None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or not osdep.owned_by_me(info):
        return None
    return info


def _remove_unheld(path: str, seen: os.stat_result) -> bool:
    """Remove a dead launcher's directory, if it is ours and nobody holds it: lock, then check that the
    name still leads to the directory locked and that it is marked."""
    held = osdep.try_lock_extraction(path, MARKER)
    if held is None:
        return False  # held (a daemon runs from it), or a file system without locks: leave it
    try:
        if not held.same_as(seen):
            return False
        if not held.marked:
            # Not marked: another program's, unless it is empty (a launcher killed before it unpacked
            # anything), which is nothing to anyone.
            if not held.empty():
                return False
            try:
                os.rmdir(path)
            except OSError:
                return False
            return True
        return remove(path)
    finally:
        held.close()

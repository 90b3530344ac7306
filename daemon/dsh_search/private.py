"""Directories only this user can write: where the daemon keeps what it saves (spill store, index).

An index or spill directory can be shared by name — `--index-dir /tmp/idx`, a shared `XDG_CACHE_HOME`,
a `--spill-dir` under `/tmp` — and another user who makes it first, or who can write into it, could read
what the daemon writes there (the index holds every file's trigrams: enough to confirm a secret's
presence) or plant what it reads back (an index that hides a match, a spill artifact that hands the
model their text under the victim's locator). So a directory the daemon keeps state in is used only
when it is **safe**, as ssh (`StrictModes`) and tmux check theirs:

- it is a directory that belongs to the daemon's (effective) user, and neither its group nor others can
  write it;
- every directory above it (on its real path) belongs to that user or to root, and nobody else can
  write it unless it is sticky (`/tmp`: there nobody can rename or remove another user's entries);
- a symbolic link on the way belongs to that user or to root (nobody else can then point it elsewhere).

`ensure` makes what is missing, mode 0700 (each missing parent too), and checks the rest; `problem` only
checks. On Windows there are no POSIX owners and modes to judge (the OS seam has no `user_id` there): a
user's directories are private by their ACLs, and only the making is done. An unsafe directory raises
`Unsafe` — an `OSError`, so that a spill save that meets it fails as any failed save does — whose
message names the directory, what is wrong and the fix; nothing is read from or written to it. `tighten`
takes group and other permissions off a directory of ours that is safe but readable by others (the
index's folder names are workspaces' names).

Rules of this module: `lstat`, `mkdir` and `chmod` only; what lives in the directories is the callers'.
"""

from __future__ import annotations

import contextlib
import os
import stat

from dsh_search import osdep

PRIVATE = 0o700


class Unsafe(OSError):
    """A directory that another user could read or change: never used."""


def _owner(uid: int) -> str:
    name = osdep.user_name(uid)
    return f"user {name} (uid {uid})" if name is not None else f"uid {uid}"


def _who_writes(st: os.stat_result) -> str:
    writers = [who for bit, who in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "every user")) if st.st_mode & bit]
    return " and ".join(writers)


def _mode(st: os.stat_result) -> str:
    return oct(stat.S_IMODE(st.st_mode))[2:].rjust(4, "0")


def problem(path: str, what: str) -> str | None:
    """Why the existing directory `path` is not safe to keep this user's state in, as one sentence
    naming it and the fix; None when it is safe. A directory that does not exist is not safe either."""
    uid = osdep.user_id()
    if uid is None:
        return None if os.path.isdir(path) else f"the {what} {path} does not exist or is not a directory"
    absolute = os.path.abspath(path)
    try:
        # Every symbolic link on the way: only this user or root can make it lead elsewhere.
        probe = absolute
        while True:
            st = os.lstat(probe)
            if stat.S_ISLNK(st.st_mode) and st.st_uid not in (0, uid):
                return (
                    f"the {what} {path} is reached through the symbolic link {probe}, which belongs to "
                    f"{_owner(st.st_uid)}; use a directory of your own"
                )
            parent = os.path.dirname(probe)
            if parent == probe:
                break
            probe = parent
        real = os.path.realpath(absolute)
        st = os.lstat(real)
    except FileNotFoundError:
        return f"the {what} {path} does not exist"
    except OSError as exc:
        return f"the {what} {path} cannot be checked ({exc.strerror or exc})"
    if not stat.S_ISDIR(st.st_mode):
        return f"the {what} {path} is not a directory; remove it or choose another"
    if st.st_uid != uid:
        return (
            f"the {what} {path} belongs to {_owner(st.st_uid)}, not to this daemon's {_owner(uid)}: another "
            f"user could read or change what it keeps there; use a directory of your own, or remove this one "
            f"so that the daemon makes it anew (mode 0700)"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"the {what} {path} is writable by {_who_writes(st)} (mode {_mode(st)}): another user could "
            f"change what the daemon keeps there; make it private (chmod 700 {real})"
        )
    directory = os.path.dirname(real)
    while True:
        try:
            above = os.lstat(directory)
        except OSError as exc:
            return f"the {what} {path} cannot be checked ({exc.strerror or exc})"
        if above.st_uid not in (0, uid):
            return (
                f"the {what} {path} lies in {directory}, which belongs to {_owner(above.st_uid)}: that user "
                f"could replace it; use a directory under one only you (or root) own"
            )
        if above.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not above.st_mode & stat.S_ISVTX:
            return (
                f"the {what} {path} lies in {directory}, which {_who_writes(above)} can write and which is not "
                f"sticky (mode {_mode(above)}): another user could replace it; make that directory private "
                f"(chmod go-w {directory}) or use another"
            )
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def check(path: str, what: str) -> None:
    """Raise `Unsafe` unless the existing directory `path` is safe."""
    reason = problem(path, what)
    if reason is not None:
        raise Unsafe(reason)


def ensure(path: str, what: str) -> None:
    """Make the directory `path` with mode 0700 — and each of its missing parents, also 0700 — unless it
    exists; then check that it is safe (`Unsafe` otherwise: made by another user first, say)."""
    missing = []
    probe = os.path.abspath(path)
    while not os.path.lexists(probe):
        missing.append(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile: checked below, like any other
            os.mkdir(directory, PRIVATE)
    check(path, what)


def tighten(path: str) -> None:
    """Take group and other permissions off a directory of this user (safe already: checked), so that
    nobody else can list it: directories made by earlier versions, or with a looser mode."""
    with contextlib.suppress(OSError):
        st = os.stat(path)
        if st.st_uid == osdep.user_id() and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)


def private_entry(st: os.stat_result) -> bool:
    """Whether an entry inside a safe directory (its `lstat`) is a directory this user owns and nobody
    else can write: what a session directory or an index set must be, checked without walking up again."""
    uid = osdep.user_id()
    if uid is None:
        return stat.S_ISDIR(st.st_mode)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)

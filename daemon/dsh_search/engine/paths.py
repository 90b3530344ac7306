"""Display paths (upstream's toWorkdirRelative), confinement to allowed roots, and deny globs.

ripgrep prints each result as the root argument as written joined with the rest of the path, so with
no `path` or a relative one the output is already workdir-relative and is shown unchanged. Absolute
output inside the workdir is shown relative to it; outside, it is shown as given.

Path syntax is the platform's, through `os.path` (upstream uses Node's `path`, which is `path.win32` on
Windows): on Windows ripgrep joins names with `\\`, a drive or UNC path is absolute, and a path is inside
the workdir whatever the case of its letters (NTFS is case-insensitive; Node's `relative` compares so).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable

from dsh_search.engine import globsyntax

_SEP = os.sep


def cwd_relative(path: str, workdir: str) -> str:
    if not os.path.isabs(path):
        return path
    try:
        rel = _relative(path, workdir)
    except ValueError:  # Windows: another drive than the workdir's (Node's relative: the path resolved)
        return os.path.normpath(path)
    if rel == ".":
        return "."
    if rel == ".." or rel.startswith(".." + _SEP):
        return path
    return rel


def _relative(path: str, start: str) -> str:
    """`path` relative to `start`, both absolute, by their names alone (Node's `path.relative`): never
    asking the system, which on Windows maps a reserved name such as `nul.txt` to a device. Names compare
    as the platform's file system does (`os.path.normcase`: on Windows regardless of case)."""
    norm = os.path.normcase
    start_drive, start_rest = os.path.splitdrive(os.path.normpath(start))
    path_drive, path_rest = os.path.splitdrive(os.path.normpath(path))
    if bool(start_drive) != bool(path_drive):  # Windows: `\\x` is on the current drive (Node's resolve says so)
        current = os.path.splitdrive(os.path.abspath(os.sep))[0]
        start_drive, path_drive = start_drive or current, path_drive or current
    if norm(start_drive) != norm(path_drive):
        raise ValueError(f"{path} is on another drive than {start}")
    start_parts = [part for part in start_rest.split(_SEP) if part]
    path_parts = [part for part in path_rest.split(_SEP) if part]
    common = 0
    for a, b in zip(start_parts, path_parts, strict=False):
        if norm(a) != norm(b):
            break
        common += 1
    parts = [os.pardir] * (len(start_parts) - common) + path_parts[common:]
    return os.path.join(*parts) if parts else os.curdir


def directory_name(named: str) -> str:
    """A name for the directory the absolute path `named` denotes as the kernel resolves it, spelled as
    `named` wherever that is safe.

    Without `..`, `named` normalised lexically (`.` and repeated `/` dropped) denotes the same directory,
    so it is kept: it is the spelling the host used, and display paths are made relative to it as
    upstream does. A `..` is another matter: the kernel resolves it against where the components before
    it actually lead, through symlinks, which dropping the component before it does not. The part up to
    the last `..` is therefore resolved on the filesystem and the rest appended. Whether the kernel can
    resolve `named` at all is for `same_directory` to say.
    """
    parts = named.split("/")
    if ".." not in parts:
        return os.path.normpath(named)
    last = len(parts) - 1 - parts[::-1].index("..")
    head = os.path.realpath("/".join(parts[: last + 1]) or "/")
    return os.path.normpath(os.path.join(head, *parts[last + 1 :]))


def same_directory(named: str, name: str) -> bool:
    """Whether the kernel resolves `named` to a directory and `name` to that same directory."""
    try:
        named_stat = os.stat(named)
        name_stat = os.stat(name)
    except (OSError, ValueError):
        return False
    return stat.S_ISDIR(named_stat.st_mode) and (named_stat.st_dev, named_stat.st_ino) == (
        name_stat.st_dev,
        name_stat.st_ino,
    )


def decode(raw: bytes) -> str:
    """A file name for display: UTF-8, with U+FFFD for bytes that are not."""
    return raw.decode("utf-8", "replace")


def within(path: str, roots: Iterable[str]) -> bool:
    path = os.path.normcase(path)  # Windows: case-insensitive (and `/` as `\`); POSIX: as it is
    return any(path == (base := os.path.normcase(root)) or path.startswith(base.rstrip(_SEP) + _SEP) for root in roots)


def confined(path: str, roots: tuple[str, ...]) -> bool:
    """Whether path's real location (symlinks resolved) is inside one of the (already real) roots."""
    if not roots:
        return True
    try:
        return within(os.path.realpath(path), roots)
    except (ValueError, OSError):  # a NUL byte: no such file can exist; the search reports it
        return True


class DenyGlobs:
    """`denyGlobs` (docs/behaviour.md, "Confinement and deny globs"): a path is denied when any glob
    matches it the way ripgrep's --glob would.

    A glob without '/' matches the name of any component (file or directory) at any depth; one with
    '/' matches the path relative to the search's cwd. The globs come from configuration, not from the
    model, so a regex translation is safe here.
    """

    def __init__(self, globs: tuple[str, ...]) -> None:
        self.globs = globs
        # ripgrep's own reading of each glob (globsyntax.py); one it rejects fails every search, so it
        # denies everything here.
        any_kind: list[bytes] = []
        dirs_only: list[bytes] = []
        for glob in globs:
            try:
                exclusion = globsyntax.exclusion(glob)
                re.compile(exclusion.regex)
            except (globsyntax.GlobError, re.error):
                any_kind.append(b".*")
                continue
            (dirs_only if exclusion.only_dir else any_kind).append(exclusion.regex)
        self._any = _union(any_kind)
        self._dirs = _union(dirs_only)

    def __bool__(self) -> bool:
        return bool(self.globs)

    def denies(self, display_path: str, is_dir: bool = False) -> bool:
        """Whether ripgrep, walking from the search root, would leave this path out: when a glob matches
        it or any directory on the way to it (`is_dir`: the path itself is a directory)."""
        if _SEP != "/":  # ripgrep's globs are written with `/` on every platform
            display_path = display_path.replace(_SEP, "/")
        path = display_path[2:] if display_path.startswith("./") else display_path
        parts = [_utf8(part) for part in path.split("/") if part]
        for depth in range(1, len(parts) + 1):
            prefix = b"/".join(parts[:depth])
            if self._any is not None and self._any.fullmatch(prefix):
                return True
            if self._dirs is not None and (depth < len(parts) or is_dir) and self._dirs.fullmatch(prefix):
                return True
        return False

    def rg_args(self) -> list[str]:
        """The same globs for ripgrep, so denied subtrees are not even walked."""
        return [f"--glob=!{g}" for g in self.globs]

    def for_search(self, cwd: str, path: str | None) -> DenyCheck | None:
        return DenyCheck(self, cwd, path) if self.globs else None


class DenyCheck:
    """The deny globs applied to one search's results, by every name that reaches a file.

    A result is denied when a glob matches the path ripgrep printed (relative to the search's cwd), or
    the file's real location: relative to the real cwd when it lies inside it, else its absolute path
    (where a glob without '/' still matches any component). ripgrep follows no symlink while it walks,
    only the root it is given, so a result's real location is the root's real path plus the rest of
    the result's path: one `realpath` per search, not per result. That closes `notes.txt -> .env`,
    a symlinked directory into a denied one, and `sub/../.env`; hard links are outside its reach.
    """

    def __init__(self, globs: DenyGlobs, cwd: str, path: str | None) -> None:
        self._globs = globs
        self._cwd = cwd
        self._real_cwd = _realpath(cwd)
        if path is None:
            self._root: str | None = None
            self._real_root = self._real_cwd
        else:
            self._root = cwd_relative(path, cwd)
            self._real_root = _realpath(os.path.join(cwd, path))

    def root_denied(self) -> bool:
        """Whether the search root itself is denied (then nothing under it can be shown)."""
        return self._root is not None and self.denies(self._root, is_dir=os.path.isdir(self._real_root))

    def denies(self, display_path: str, is_dir: bool = False) -> bool:
        """`display_path`: a result as shown, i.e. as ripgrep printed it made workdir-relative."""
        if self._globs.denies(display_path, is_dir):
            return True
        real = self._real_of(display_path)
        inside = within(real, (self._real_cwd,))
        return self._globs.denies(real[len(self._real_cwd) :] if inside else real, is_dir)

    def _real_of(self, display_path: str) -> str:
        root = self._root
        if root is None:
            up = ".." + _SEP
            if not (os.path.isabs(display_path) or display_path.startswith(up)) and _SEP + up not in display_path:
                return os.path.join(self._real_cwd, display_path)
        elif display_path == root:
            return self._real_root
        else:
            prefix = root if root.endswith(_SEP) else root + _SEP
            if display_path.startswith(prefix):
                return os.path.join(self._real_root, display_path[len(prefix) :])
        return _realpath(os.path.join(self._cwd, display_path))  # a spelling we cannot split: ask


def _union(regexes: list[bytes]) -> re.Pattern[bytes] | None:
    return re.compile(b"|".join(b"(?:" + r + b")" for r in regexes), re.DOTALL) if regexes else None


def _utf8(name: str) -> bytes:
    """A name as ripgrep saw it: the bytes a decoded display name came from."""
    try:
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogatepass")


def _realpath(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (ValueError, OSError):  # a NUL byte: nothing real has that name
        return path

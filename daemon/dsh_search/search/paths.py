"""Display paths (upstream's toWorkdirRelative), confinement to allowed roots, and deny globs.

ripgrep prints each result as the root argument as written joined with the rest of the path, so with
no `path` or a relative one the output is already workdir-relative and is shown unchanged. Absolute
output inside the workdir is shown relative to it; outside, it is shown as given.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable


def to_workdir_relative(path: str, workdir: str) -> str:
    if not path.startswith("/"):
        return path
    rel = os.path.relpath(path, workdir)
    if rel == ".":
        return "."
    if rel == ".." or rel.startswith("../"):
        return path
    return rel


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
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def confined(path: str, roots: tuple[str, ...]) -> bool:
    """Whether path's real location (symlinks resolved) is inside one of the (already real) roots."""
    if not roots:
        return True
    try:
        return within(os.path.realpath(path), roots)
    except (ValueError, OSError):  # a NUL byte: no such file can exist; the search reports it
        return True


def _glob_to_regex(glob: str) -> str:
    """ripgrep/gitignore glob syntax to a regex over a '/'-separated path (full match)."""
    out: list[str] = []
    i, n = 0, len(glob)
    depth = 0
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 2)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * depth)
    return "".join(out)


class DenyGlobs:
    """`denyGlobs` (docs/behaviour.md, "Confinement and deny globs"): a path is denied when any glob
    matches it the way ripgrep's --glob would.

    A glob without '/' matches the name of any component (file or directory) at any depth; one with
    '/' matches the path relative to the search's cwd. The globs come from configuration, not from the
    model, so a regex translation is safe here.
    """

    def __init__(self, globs: tuple[str, ...]) -> None:
        self.globs = globs
        names = [_glob_to_regex(g) for g in globs if "/" not in g.rstrip("/")]
        anchored = [_glob_to_regex(g.strip("/")) for g in globs if "/" in g.rstrip("/")]
        self._name = re.compile("|".join(f"(?:{r})" for r in names)) if names else None
        self._path = re.compile("|".join(f"(?:{r})(?:/.*)?" for r in anchored)) if anchored else None

    def __bool__(self) -> bool:
        return bool(self.globs)

    def denies(self, display_path: str) -> bool:
        path = display_path[2:] if display_path.startswith("./") else display_path
        if self._name is not None and any(self._name.fullmatch(part) for part in path.split("/") if part):
            return True
        return self._path is not None and self._path.fullmatch(path.lstrip("/")) is not None

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
            self._root = to_workdir_relative(path, cwd)
            self._real_root = _realpath(os.path.join(cwd, path))

    def root_denied(self) -> bool:
        """Whether the search root itself is denied (then nothing under it can be shown)."""
        return self._root is not None and self.denies(self._root)

    def denies(self, display_path: str) -> bool:
        """`display_path`: a result as shown, i.e. as ripgrep printed it made workdir-relative."""
        if self._globs.denies(display_path):
            return True
        real = self._real_of(display_path)
        inside = real == self._real_cwd or real.startswith(self._real_cwd.rstrip("/") + "/")
        return self._globs.denies(real[len(self._real_cwd) :] if inside else real)

    def _real_of(self, display_path: str) -> str:
        root = self._root
        if root is None:
            if not display_path.startswith(("/", "../")) and "/../" not in display_path:
                return os.path.join(self._real_cwd, display_path)
        elif display_path == root:
            return self._real_root
        else:
            prefix = root if root.endswith("/") else root + "/"
            if display_path.startswith(prefix):
                return os.path.join(self._real_root, display_path[len(prefix) :])
        return _realpath(os.path.join(self._cwd, display_path))  # a spelling we cannot split: ask


def _realpath(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (ValueError, OSError):  # a NUL byte: nothing real has that name
        return path

"""The index's answers spelled as ripgrep prints them: a search's root, glob's listing, grep's files.

The engine takes an answer as exactly what the walk would have produced (engine/source.py), so every
path here is spelled the way ripgrep would print it from the search's cwd and root: relative to the cwd,
behind the root as the caller wrote it (`./src/x.c` for a root `./src`), and an answer is only given
where that spelling is certain (`search_root`: no `..`, no symbolic link on the way, no file as root).

Rules of this module: spelling and filtering only (the include, exclude and deny globs, which ripgrep
ignores for files it is given by name); which files are candidates is planner.py's.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from typing import NamedTuple

from dsh_search import osdep
from dsh_search.engine.jscompat import utf8_growth
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index.files import TEXT
from dsh_search.index.globlist import Matcher

# Naming a third more files than half of ARG_MAX would allow is what lets the index answer greps of words
# in a third of the kernel's files (`file`: 26,000 names) instead of deciding to walk late.
MAX_ARGV_BYTES = osdep.argv_names_budget()  # files named on ripgrep's command line: names, their NULs and pointers
MAX_WALKED_DIRS = 16  # directories walked to for files that hold a NUL; past it, walk everything


class Root(NamedTuple):
    """A search's root as the index spells it."""

    prefix: bytes  # the search's cwd relative to the workspace, with a trailing `/` (b"" at the root)
    under: bytes  # the walked root relative to the cwd, with a trailing `/` (b"": the cwd itself)
    printed: bytes  # what ripgrep puts before a path below the root when it prints it (b"": nothing)

    @property
    def start(self) -> bytes:
        """The walked root relative to the workspace (b"" or ending in `/`)."""
        return self.prefix + self.under


def inside(workspace: str, cwd: str) -> bool:
    """Whether a search's cwd lies in the workspace as written (`search_root` judges the rest)."""
    base = workspace.rstrip("/")
    return cwd in (workspace, base) or cwd.startswith(base + "/")


def search_root(workspace: str, real_workspace: str, cwd: str, path: str | None) -> Root | None:
    """The search's root as the index spells it, or None when it cannot promise ripgrep's spelling."""
    if "\0" in cwd or (path is not None and "\0" in path):
        return None  # no file has such a name: ripgrep says what it says
    base = workspace.rstrip("/")
    if cwd in (workspace, base):
        cwd_rel = ""
    elif cwd.startswith(base + "/"):
        cwd_rel = cwd[len(base) + 1 :]
        if os.path.normpath(cwd_rel) != cwd_rel or cwd_rel.startswith(".."):
            return None
    else:
        return None
    if os.path.realpath(cwd) != os.path.join(real_workspace, cwd_rel).rstrip("/"):
        return None  # a symlink on the way: ripgrep would print names the index does not have
    prefix = os.fsencode(cwd_rel) + b"/" if cwd_rel else b""
    if path is None:
        return Root(prefix, b"", b"")
    if "//" in path:
        return None
    if path.startswith("/"):
        stripped = path.rstrip("/") or "/"
        cwd_base = cwd.rstrip("/")
        if stripped == cwd_base:
            rel = ""
        elif stripped.startswith(cwd_base + "/"):
            rel = stripped[len(cwd_base) + 1 :]
        else:
            return None
    else:
        stripped = path[2:] if path.startswith("./") else path
        rel = "" if stripped in ("", ".") else stripped.rstrip("/")
    if rel and (os.path.normpath(rel) != rel or rel.startswith("..")):
        return None
    target = os.path.join(cwd, rel) if rel else cwd
    if os.path.realpath(target) != os.path.join(real_workspace, cwd_rel, rel).rstrip("/"):
        return None
    try:
        if not stat.S_ISDIR(os.stat(target).st_mode):
            return None  # a file named as the root: ripgrep lists it whatever the glob says
    except OSError:
        return None
    printed = os.fsencode(path.rstrip("/") or path) + b"/"
    return Root(prefix, os.fsencode(rel) + b"/" if rel else b"", printed)


def glob_files(found: list[bytes], root: Root, deny: DenyGlobs) -> GlobFiles:
    """What ripgrep would print for these files (workspace-relative, in order), for glob. Whole-list
    operations where a path needs no work of its own: most listings are the paths as they are."""
    cut = len(root.prefix)
    if cut:
        found = [path[cut:] for path in found]  # relative to the search's cwd
    if deny:
        found = [path for path in found if not deny.denies(os.fsdecode(path))]
    printed = found
    if root.printed:
        keep = len(root.under)
        head = root.printed
        printed = [head + path[keep:] for path in found]
    joined = b"\0".join(printed)  # no name holds a NUL
    size = len(joined) + 1 if printed else 0
    growth = 0 if joined.isascii() else utf8_growth(joined)
    paths = joined.decode("utf-8", "replace").split("\0") if printed else []
    return GlobFiles(paths, size, growth)


def searched(path: bytes, root: Root, included: Matcher | None, deny: DenyGlobs) -> bool:
    """Whether grep's walk would search this file of its list (the include glob's matcher, the deny globs
    with the exclude glob among them)."""
    if included is not None and not included.matches(path):
        return False
    return not (deny and deny.denies(os.fsdecode(path[len(root.prefix) :])))


def any_searched(
    paths: Iterable[bytes], gone: set[bytes], root: Root, included: Matcher | None, deny: DenyGlobs
) -> bool:
    """Whether grep's walk from the root would search at least one of these files (not `gone`)."""
    return any(searched(p, root, included, deny) for p in paths if p not in gone)


def grep_files(root: Root, chosen: dict[bytes, int], included: Matcher | None, deny: DenyGlobs) -> GrepFiles | None:
    """The chosen files (path → kind) as ripgrep must be given them: text files by name, the others
    walked to from their directory; None when that cannot be spelled (too long a command line, too
    many directories, a name a glob cannot carry)."""
    named: list[bytes] = []
    walk_to: dict[bytes, list[bytes]] = {}
    argv_bytes = 0
    cut = len(root.prefix)
    keep = cut + len(root.under)
    check = included is not None or bool(deny)
    for path in sorted(chosen):
        if check and not searched(path, root, included, deny):
            continue
        rel = path[cut:]
        printed = root.printed + path[keep:] if root.printed else rel
        argv_bytes += len(printed) + 9  # the name, its NUL, its pointer
        if argv_bytes > MAX_ARGV_BYTES:
            return None
        if chosen[path] == TEXT:
            named.append(printed)
            continue
        # A NUL in it (or no telling): ripgrep must find it by walking, from its directory.
        if not rel.isascii() or b"/" not in printed:
            return None  # a top-level file with no root to walk from, or a name a glob cannot carry
        walk_to.setdefault(printed.rpartition(b"/")[0], []).append(rel)
    if len(walk_to) > MAX_WALKED_DIRS:
        return None
    return GrepFiles(named, list(walk_to.items()))

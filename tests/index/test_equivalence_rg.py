"""The workspace index answers exactly what a walk answers: random trees, random edits, random calls.

Two engines search the same tree with the real ripgrep: one walks (the index off), one asks a
`Workspace` index first. After every edit — create, rewrite, delete, rename (files and directories),
chmod, symlinks, binary and BOM content, non-UTF-8 names, ignore files, a repository appearing, hard
links made after the build (inside, and from outside) and writes through the other names, rule files
that are hard links edited through another name, a `.git` that links to a repository elsewhere, a
daemon restart with same-size rewrites while none runs, and, as root, mounts: filesystems, directories
and single files bound into the tree, overlays whose lower directory is edited — and right after it
(read-your-writes: no waiting), random glob and grep calls must give the same text, meta, spill
artifact, or the same error, on both. A grep call draws every parameter of `GrepQuery` — the extended
profile's flags, output modes, context lines, globs and pages too (`grep_queries`). As root (mounts),
the tree is on a filesystem whose timestamps tick once a second (ext4 with 128-byte inodes, on a loop
image), where a rewrite within one tick keeps every time. Files are indexed in documents of 1 MiB, or
of a few bytes (so that literals straddle documents). The index may walk whenever it is unsure; the
test also checks it answered a fair share of the calls itself, or the equivalence would say nothing.
And a second daemon may join as a guest that asks the first (peers.py), with the same environment or
another (other global git excludes through `XDG_CONFIG_HOME`, another `HOME`, git's own variables, an
unrelated variable): its answers must be its own walk's.

DSH_INDEX_EXAMPLES sets the number of examples (CI runs a few dozen; run thousands by hand).
"""

from __future__ import annotations

import ast
import asyncio
import ctypes
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_type_hints

import pytest
from hypothesis import HealthCheck, Phase, given, reproduce_failure, settings
from hypothesis import strategies as st

from dsh_search import config as config_mod
from dsh_search.engine.failures import ToolError
from dsh_search.engine.glob import glob
from dsh_search.engine.grep import grep
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import EXTENDED_FIELDS, UPSTREAM_FIELDS, GlobQuery, GrepQuery, OutputMode, check_grep
from dsh_search.engine.ripgrep import Launcher, Limits
from dsh_search.engine.scope import Scope
from dsh_search.engine.searcher import Searcher, Workers
from dsh_search.index import builder, reading, shards
from dsh_search.index.glance import Glancing
from dsh_search.index.lister import GrepLister
from dsh_search.index.manager import IndexManager
from dsh_search.index.peers import Owner, OwnerLock
from dsh_search.index.status import READY, Walk
from dsh_search.index.workspace import Workspace
from tests.support.examples import examples
from tests.support.fakes import FakeSpill
from tests.support.trees import remove_tree
from tests.support.unprivileged import NOBODY, reachable_by_nobody

EXAMPLES = examples(25, "DSH_INDEX_EXAMPLES")

WORDS = ["SUSPEND", "foo", "bar", "ACPI_SUSPEND", "héllo", "static", "x", "a b", "TODO", "\t"]
NAMES = ["a", "b.c", "c.h", "d.txt", ".hid", "e f.c", "日本.c", "x.log", "g.bin", "[k].c", "-dash.c"]
DIRS = ["src", "src/sub", "lib", ".cfg", "build", "docs/deep/er", "node_modules/pkg"]
RULES = ["*.log", "build/", "/lib", "!keep.log", "sub", "*.bin", ".cfg", "d.*", "", "# comment"]
GLOBS = [
    "*",
    "\x00",
    "!*.c",
    "#c",
    "*.c",
    "**/*.c",
    "src/**",
    "*.{c,h}",
    "[ab]*",
    "?.c",
    "/b.c",
    "src/*.c",
    "**/sub/*",
    "*.txt",
    "日本*",
]
GREPS = [
    "SUSPEND",
    "[A-Z]+_SUSPEND",
    "foo|bar",
    "héllo",
    "(?i)suspend",
    "static",
    "nowhere_at_all",
    r"\bfoo\b",
    "TODO.*x",
    "x",
    "(",
    "a b",
    ".",
    "a\nb",
    "x\x00y",
    "(?x) SUS PEND",
    "[[:upper:]]{3}_SUSPEND",
]
INCLUDES = [None, None, "*.c", "*.{c,h}", "src/*", "*.txt"]
EXCLUDES = [None, "*.c", "src", "*.{c,h}", "sub/**", "d.*", "[k].c", "/lib", "{x"]
PATHS = [None, None, None, "src", "./src", "src/", "docs", "lib", "."]
# Beside GREPS, patterns for the extended profile's flags: letters of either case, across lines.
EXTENDED_GREPS = ["Suspend", "HÉLLO", "STATIC", "SUSPEND\\nfoo", "foo\\s+bar", "a b\nfoo", "TODO."]

# The grep parameters whose values are drawn from the lists above; every other field of GrepQuery is
# drawn by its type (grep_queries), so a parameter added to GrepQuery is drawn without a change here —
# and one of a type this table does not know fails the test until it is taught.
GREP_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "pattern": st.sampled_from(GREPS + EXTENDED_GREPS),
    "path": st.sampled_from(PATHS),
    "include": st.sampled_from(INCLUDES),
    "exclude": st.sampled_from(EXCLUDES),
    "offset": st.integers(0, 8),
    "limit": st.none() | st.integers(1, 6),  # at most grepMaxMatches (Pair's: 6)
}
BY_TYPE: dict[Any, st.SearchStrategy[Any]] = {
    bool: st.booleans(),
    int | None: st.none() | st.integers(0, 2),
    OutputMode: st.sampled_from(list(OutputMode)),
}


def grep_queries() -> st.SearchStrategy[GrepQuery]:
    """Every parameter of GrepQuery (the extended profile's), each at its default half the time so that
    upstream's searches stay common."""
    hints = get_type_hints(GrepQuery)
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for name in EXTENDED_FIELDS:
        drawn = GREP_VALUES.get(name)
        if drawn is None:
            assert hints[name] in BY_TYPE, f"no strategy for GrepQuery.{name} ({hints[name]}): add one"
            drawn = BY_TYPE[hints[name]]
        default = GrepQuery._field_defaults.get(name)
        fields[name] = drawn if name in UPSTREAM_FIELDS else st.just(default) | drawn
    return st.fixed_dictionaries(fields).map(lambda values: GrepQuery(**values))


def contents() -> st.SearchStrategy[bytes]:
    words = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(lambda ws: " ".join(ws).encode())
    lines = st.lists(words, min_size=0, max_size=5).map(b"\n".join)
    return st.tuples(lines, st.sampled_from([b"", b"\n", b"\r\n", b"\0", b"\0SUSPEND\n", b"\xff\xfe", b"\xe9"])).map(
        lambda pair: pair[0] + pair[1] if not pair[1].startswith(b"\xff\xfe") else pair[1] + pair[0]
    )


async def run(searcher: Searcher, root: Path, call: GlobQuery | GrepQuery) -> tuple[Any, ...]:
    scope = Scope(workspace=str(root))
    try:
        if isinstance(call, GlobQuery):
            result = await glob(searcher, call, scope)
        else:
            result = await grep(searcher, check_grep(call, searcher.config.grep_max_matches), scope)
    except ToolError as err:
        return ("error", err.kind, err.message)
    spill = searcher.spill
    assert isinstance(spill, FakeSpill)
    saved = spill.saves[-1][2] if result.spill is not None else None
    return (result.text, result.meta, saved)


# What a scenario may do beyond plain edits: "unprivileged" (it runs as a user other than root, so that
# a directory's mode can hide it) or "mounts" (it runs as root in a mount namespace of its own).
MODE = {"now": "plain"}
# Whether the index of the scenario running now is built (edits before it are the tree it starts on), and
# the pair of engines, which the "restart" edit makes again.
NOW: dict[str, Any] = {"built": False, "pair": None}


def _exchange(a: Path, b: Path) -> bool:
    """renameat2(RENAME_EXCHANGE): the two names swap what they lead to, in one step."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    return int(renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2)) == 0


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=False, capture_output=True)


def edit(root: Path, data: st.DataObject) -> str:
    """One random edit of the tree, or part of one: as a user other than root, a chmod edit can leave parts
    of the tree that later edits may not touch, a bind mount shows one file under two names, which a
    second unlink finds gone, and a mount point can be neither removed nor renamed across."""
    try:
        return _edit(root, data)
    except (PermissionError, FileNotFoundError) as exc:
        return f"cut short: {exc}"
    except OSError as exc:
        if exc.errno in (errno.EBUSY, errno.EXDEV, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR):
            return f"cut short: {exc}"
        raise


def _rewrite(path: Path, content: bytes) -> None:
    """Write through this name in place: the same inode, so every other name of it sees the change."""
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(content)


def _remove(directory: Path) -> None:
    """A directory gone with everything in it, or the link that stood for one."""
    if directory.is_symlink():
        directory.unlink()
    else:
        shutil.rmtree(directory)


def _some_file(root: Path, data: st.DataObject, recent: bool = False) -> Path | None:
    """One of the tree's regular files (outside repositories), if it has any; with `recent`, often one
    changed in this second (a rewrite may then fall in the same timestamp tick)."""
    found = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and ".git" not in p.parts)
    if recent and data.draw(st.booleans()):  # drawn whatever the clock says: the draws stay the same
        second = time.time_ns() // 10**9
        found = [p for p in found if p.stat().st_ctime_ns // 10**9 == second] or found
    pick = data.draw(st.integers(0, 1 << 16))  # not sampled_from: how many there are depends on the clock
    return found[pick % len(found)] if found else None


def _rules(data: st.DataObject) -> bytes:
    return ("\n".join(data.draw(st.lists(st.sampled_from(RULES), max_size=3))) + "\n").encode()


def _mounted_under(root: Path) -> list[Path]:
    from dsh_search.index import mounts

    base = str(root.resolve()).rstrip("/") + "/"
    return sorted({Path(m.point) for m in mounts.read() or [] if m.point.startswith(base)})


def _edit(root: Path, data: st.DataObject) -> str:
    extra = {
        "unprivileged": ("chmod-dir", "chmod-dir"),
        "mounts": ("mount", "bind", "umount", *("bind-file", "overlay", "lower-edit") * 3),
    }.get(MODE["now"], ())
    kind = data.draw(
        st.sampled_from(
            [
                *("write", "write", "write", "delete", "rename", "mkdir", "rmdir"),
                *("rules", "link", "git", "touch", "mvdir", "chmod"),
                *("hardlink", "ungit", "exclude", "rules-link", "retarget", "replace", "replace-dir", "exchange"),
                *("root-move", "root-recreate", "parent-rules", "global-rules", "guest"),
                # Other names, other views, time: each kind twice, as a write through the other name
                # needs the name first.
                *("hardlink", "hardlink-in", "hard-write", "rules-hardlink", "git-link", "repo-exclude") * 2,
                *("restart",) * 4,
                *extra,
            ]
        )
    )
    directory = data.draw(st.sampled_from(["", *DIRS]))
    name = data.draw(st.sampled_from(NAMES))
    target = root / directory / name
    base = root.parent
    if kind == "write":
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_file() and not os.access(target, os.W_OK):
            target.chmod(0o644)  # a chmod edit took the right away (the tests do not run as root)
        if not target.is_dir():
            target.write_bytes(data.draw(contents()))
    elif kind == "touch" and target.is_file():
        os.utime(target, ns=(1_700_000_000_000_000_000 + data.draw(st.integers(0, 5)), 1_700_000_000_000_000_000))
    elif kind == "delete" and target.is_file():
        target.unlink()
    elif kind == "rename" and target.is_file():
        other = root / data.draw(st.sampled_from(["", *DIRS])) / data.draw(st.sampled_from(NAMES))
        other.parent.mkdir(parents=True, exist_ok=True)
        if not other.is_dir():
            target.rename(other)
    elif kind == "mkdir":
        (root / directory).mkdir(parents=True, exist_ok=True)
        (root / directory / name).write_bytes(b"SUSPEND in a new directory\n")
    elif kind == "rmdir" and directory and (root / directory).is_dir():
        _remove(root / directory)
    elif kind == "mvdir" and directory and (root / directory).is_dir():
        dest = root / data.draw(st.sampled_from(["moved", "src/moved", "lib"]))
        if not dest.exists() and not str(dest).startswith(str(root / directory)):
            dest.parent.mkdir(parents=True, exist_ok=True)
            (root / directory).rename(dest)
    elif kind == "rules":
        rules = data.draw(st.lists(st.sampled_from(RULES), max_size=4))
        rule_file = root / directory / data.draw(st.sampled_from([".gitignore", ".ignore", ".rgignore"]))
        rule_file.parent.mkdir(parents=True, exist_ok=True)
        if rule_file.is_symlink():
            rule_file.unlink()
        rule_file.write_text("\n".join(rules) + "\n")
    elif kind == "link":
        link = root / directory / ("link-" + name)
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists() and not link.is_symlink():
            link.symlink_to(data.draw(st.sampled_from(["../src", "a", "src/b.c", "/nonexistent"])))
    elif kind == "chmod":
        # A mode change is an attribute event, not a write: the index must neither miss a change nor
        # take one for a new version. Run as a user other than root, 000 also makes it unreadable.
        changed = target if target.exists() else root / directory
        if changed.exists() and changed != root:
            # Directories keep their owner's rights, so that later edits can still write into them.
            modes = [0o644, 0o600, 0o755, 0o000] if changed.is_file() else [0o755, 0o700, 0o711, 0o750]
            changed.chmod(data.draw(st.sampled_from(modes)))
    elif kind == "chmod-dir" and directory and (root / directory).is_dir():
        # As a user other than root: a directory's mode hides what is in it (and a later mode shows it).
        (root / directory).chmod(data.draw(st.sampled_from([0o000, 0o300, 0o500, 0o755])))
    elif kind == "git" and not os.path.lexists(root / directory / ".git"):  # (a `.git` link may dangle)
        (root / directory / ".git").mkdir(parents=True)
    elif kind == "ungit" and (root / directory / ".git").is_dir():
        _remove(root / directory / ".git")
    elif kind == "exclude":
        exclude = root / directory / ".git" / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("\n".join(data.draw(st.lists(st.sampled_from(RULES), max_size=3))) + "\n")
    elif kind == "hardlink" and (linked := _some_file(root, data)) is not None:
        # Another name for the same file: in the tree, or outside it (a write there raises no event here),
        # and maybe a write through it at once. A name given from outside to a file of the tree after the
        # build raises no event at all, and is what the index cannot see (docs/behaviour.md): outside
        # names are given before the build only.
        inside = root / data.draw(st.sampled_from(["", *DIRS])) / "hard.c"
        other = data.draw(st.sampled_from([inside, base / "outside.c"])) if not NOW["built"] else inside
        other.parent.mkdir(parents=True, exist_ok=True)
        if not other.exists():
            os.link(linked, other)
            if data.draw(st.booleans()) and os.access(other, os.W_OK):
                _rewrite(other, data.draw(contents()))
            return f"{kind} {linked.relative_to(root)} {other}"
    elif kind == "hardlink":
        outside = base / "outside.c"  # a write through the other name
        if outside.is_file() and os.access(outside, os.W_OK):
            with open(outside, "r+b") as f:
                f.write(data.draw(contents()) or b"x")
    elif kind == "hardlink-in":
        # A file from outside given a name in the tree (its arrival is an event), written through there.
        source = base / "outside-in.c"
        if not source.exists():
            source.write_bytes(data.draw(contents()))
        name_in = root / directory / ("in-" + name)
        name_in.parent.mkdir(parents=True, exist_ok=True)
        if not name_in.exists() and not name_in.is_symlink():
            os.link(source, name_in)
            if data.draw(st.booleans()):
                _rewrite(source, data.draw(contents()))
    elif kind == "hard-write":
        # A write through one name of a file with others (hard links, a rule file's other names).
        names = [base / "outside.c", base / "outside-in.c", base / "shared-rules", base / "rules-out"]
        names += [root / d / n for d in ["", *DIRS] for n in ("hard.c", "rules-copy.txt")]
        present = [p for p in names if p.is_file() and not p.is_symlink() and os.access(p, os.W_OK)]
        if present:
            chosen = data.draw(st.sampled_from(present))
            _rewrite(chosen, _rules(data) if "rules" in chosen.name else data.draw(contents()) or b"x")
    elif kind == "rules-hardlink":
        # An ignore file that is a hard link: a shared one from outside, an outside name given to one of
        # the tree's (no event at all), or another name in the tree; each edited through the other name.
        rule_file = root / directory / data.draw(st.sampled_from([".gitignore", ".ignore"]))
        rule_file.parent.mkdir(parents=True, exist_ok=True)
        shared = base / "shared-rules"
        how = data.draw(st.sampled_from(["shared", "out", "copy"]))
        through: Path | None = None
        if how == "shared" and not rule_file.exists() and not rule_file.is_symlink():
            if not shared.exists():
                shared.write_bytes(_rules(data))
            os.link(shared, rule_file)
            through = shared
        elif rule_file.is_file() and not rule_file.is_symlink():
            through = base / "rules-out" if how == "out" else root / directory / "rules-copy.txt"
            if not through.exists():
                os.link(rule_file, through)
        if through is not None and data.draw(st.booleans()) and os.access(through, os.W_OK):
            _rewrite(through, _rules(data))
    elif kind == "git-link":
        # `.git` as a symbolic link to a repository elsewhere (made, or pointed at another one).
        git = root / directory / ".git"
        repo = base / data.draw(st.sampled_from(["repo-a", "repo-b"]))
        (repo / "info").mkdir(parents=True, exist_ok=True)
        git.parent.mkdir(parents=True, exist_ok=True)
        if git.is_symlink() or not git.exists():
            staged = git.with_name(".git-new")
            staged.unlink(missing_ok=True)
            staged.symlink_to(repo)
            os.replace(staged, git)
            if data.draw(st.booleans()):
                (repo / "info" / "exclude").write_bytes(_rules(data))
    elif kind == "repo-exclude":
        repo = base / data.draw(st.sampled_from(["repo-a", "repo-b"]))
        if data.draw(st.integers(0, 4)) == 0:
            shutil.rmtree(repo, ignore_errors=True)  # a link to it dangles: no repository there
        else:
            (repo / "info").mkdir(parents=True, exist_ok=True)
            (repo / "info" / "exclude").write_bytes(_rules(data))
    elif kind == "restart":
        # The daemon goes away; a file is rewritten with the same size while none runs (within the same
        # timestamp tick as its last change, on a filesystem with coarse timestamps); the next one starts
        # on the index the first left.
        pair = NOW["pair"]
        if pair is not None and (victim := _some_file(root, data, recent=True)) is not None:
            before = victim.stat()
            size = before.st_size
            pair.restart(lambda: _rewrite(victim, data.draw(contents()).ljust(size, b"y")[:size]))
            after = victim.stat()
            TALLY["within a tick"] += (before.st_mtime_ns, before.st_ctime_ns) == (after.st_mtime_ns, after.st_ctime_ns)
            return f"{kind} {victim.relative_to(root)}"
    elif kind == "rules-link":
        rule_file = root / directory / data.draw(st.sampled_from([".gitignore", ".ignore"]))
        rule_file.parent.mkdir(parents=True, exist_ok=True)
        if not rule_file.exists() and not rule_file.is_symlink():
            rule_file.symlink_to(base / "rules-target")
    elif kind == "retarget":
        (base / "rules-target").write_text("\n".join(data.draw(st.lists(st.sampled_from(RULES), max_size=3))) + "\n")
    elif kind == "replace" and target.is_file():
        other = root / data.draw(st.sampled_from(["", *DIRS])) / data.draw(st.sampled_from(NAMES))
        if other.is_file():
            os.replace(target, other)  # renamed over an existing file
    elif kind == "replace-dir" and directory and (root / directory).is_dir():
        empty = root / data.draw(st.sampled_from(["empty", "src/empty", "lib"]))
        empty.mkdir(parents=True, exist_ok=True)
        if not any(empty.iterdir()) and not str(empty).startswith(str(root / directory) + "/"):
            os.rename(root / directory, empty)  # `mv -T`: over an existing empty directory
    elif kind == "exchange":
        other = root / data.draw(st.sampled_from(["", *DIRS])) / data.draw(st.sampled_from(NAMES))
        pair = (
            (root / directory, root / data.draw(st.sampled_from(DIRS))) if data.draw(st.booleans()) else (target, other)
        )
        a, b = pair
        if (
            a.exists()
            and b.exists()
            and a != b
            and not str(a).startswith(str(b) + "/")
            and not str(b).startswith(str(a) + "/")
        ):
            _exchange(a, b)
    elif kind == "root-move":
        away = base / "away"
        root.rename(away)
        try:
            for victim in sorted(p for p in away.rglob("*.c") if p.is_file() and not os.path.ismount(p))[:3]:
                victim.unlink()  # while it is elsewhere (a file bind-mounted there cannot be: EBUSY)
            (away / "while-away.c").write_bytes(b"SUSPEND while away\n")
        finally:  # the root comes back whatever failed while it was away
            away.rename(root)
    elif kind == "root-recreate":
        _unmount_under(root)
        remove_tree(root)
        root.mkdir()
        (root / "src").mkdir()
        (root / "src" / "b.c").write_bytes(data.draw(contents()))
    elif kind == "parent-rules":
        (base / data.draw(st.sampled_from([".gitignore", ".ignore", ".rgignore"]))).write_text(
            "\n".join(data.draw(st.lists(st.sampled_from(RULES), max_size=3))) + "\n"
        )
        if data.draw(st.booleans()):
            (base / ".git").mkdir(exist_ok=True)  # a repository above the workspace: .gitignore files count
    elif kind == "global-rules":
        # git's global excludes file, in the HOME ripgrep runs with (the index directory here).
        home = base / "index"
        excludes = home / ".config" / "git" / "ignore"
        excludes.parent.mkdir(parents=True, exist_ok=True)
        excludes.write_text("\n".join(data.draw(st.lists(st.sampled_from(RULES), max_size=3))) + "\n")
    elif kind == "guest":
        return _edit_guest(base, data)
    elif kind == "mount" and directory and (root / directory).is_dir():
        _mount("-t", "tmpfs", "none", str(root / directory))
        (root / directory / name).write_bytes(b"SUSPEND on a mounted filesystem\n")
    elif kind == "bind" and directory and (root / directory).is_dir():
        dest = root / data.draw(st.sampled_from(["bound", "src/bound"]))
        dest.mkdir(parents=True, exist_ok=True)
        _mount("--bind", str(root / directory), str(dest))
    elif kind == "umount":
        points = _mounted_under(root)
        if points:
            _mount_off(data.draw(st.sampled_from(points)))
    elif kind == "bind-file" and data.draw(st.booleans()) and (point := _some_file(root, data)) is not None:
        # A single file bound over one of the tree's (its writes raise events in its source's directory),
        # and maybe written at once, through either name.
        source = base / data.draw(st.sampled_from(["bind-src-0.c", "bind-src-1.c"]))
        if not source.exists():
            source.write_bytes(data.draw(contents()))
        _mount("--bind", str(source), str(point))
        if data.draw(st.integers(0, 2)):
            _rewrite(data.draw(st.sampled_from([source, point])), data.draw(contents()))
        return f"{kind} {point.relative_to(root)}"
    elif kind == "bind-file":
        sources = [p for p in (base / "bind-src-0.c", base / "bind-src-1.c") if p.is_file()]
        points = [p for p in _mounted_under(root) if p.is_file()]
        if sources or points:
            _rewrite(data.draw(st.sampled_from(sources + points)), data.draw(contents()))
    elif kind == "overlay" and directory:
        # An overlay mounted in the tree; its lower directory is edited directly later (lower-edit).
        lower = base / "lower"
        (lower / "sub").mkdir(parents=True, exist_ok=True)
        (lower / "sub" / name).write_bytes(data.draw(contents()))
        layers = Path(tempfile.mkdtemp(prefix="layers-", dir=base))
        (layers / "upper").mkdir()
        (layers / "work").mkdir()
        point = root / directory / "ov"
        point.mkdir(parents=True, exist_ok=True)
        _mount(
            "-t",
            "overlay",
            "overlay",
            "-o",
            f"lowerdir={lower},upperdir={layers / 'upper'},workdir={layers / 'work'}",
            str(point),
        )
        if data.draw(st.booleans()):
            _edit_lower(base / "lower", name, data)
    elif kind == "lower-edit":
        _edit_lower(base / "lower", name, data)
    return f"{kind} {directory}/{name}"


def _edit_guest(base: Path, data: st.DataObject) -> str:
    """A second daemon joins as a guest (replacing the last), with this environment for its ripgrep."""
    variant = data.draw(st.sampled_from(list(GUEST_VARIANTS)))
    rules = "\n".join(data.draw(st.lists(st.sampled_from(["*.c", *RULES]), min_size=1, max_size=3))) + "\n"
    write_guest_config(base, variant, rules)
    return f"guest {variant}"


def _edit_lower(lower: Path, name: str, data: st.DataObject) -> None:
    """An overlay's lower directory edited directly: a file added, rewritten or deleted."""
    lower.mkdir(exist_ok=True)
    present = sorted(p for p in lower.rglob("*") if p.is_file())
    if present and data.draw(st.booleans()):
        victim = data.draw(st.sampled_from(present))
        if data.draw(st.booleans()):
            victim.unlink()
        else:
            _rewrite(victim, data.draw(contents()))
    else:
        (lower / "sub").mkdir(exist_ok=True)
        (lower / data.draw(st.sampled_from(["", "sub"])) / name).write_bytes(data.draw(contents()))


def _mount_off(point: Path) -> None:
    subprocess.run(["umount", "-l", str(point)], check=False, capture_output=True)


def _unmount_under(path: Path) -> None:
    """Unmount whatever is mounted below `path` (deepest first), so that it can be removed."""
    if MODE["now"] != "mounts":
        return
    from dsh_search.index import mounts

    table = mounts.read() or []
    base = str(path.resolve()).rstrip("/") + "/"
    for point in sorted((m.point for m in table if m.point.startswith(base)), key=len, reverse=True):
        _mount_off(Path(point))


TALLY = {"calls": 0, "answered": 0, "not held": 0, "rebuilds": 0, "restarts": 0, "within a tick": 0}
TALLY.update(guest_calls=0, guest_asked=0, guest_answered=0, globs=0, glanced=0)

# How a guest's environment differs from the owner's ({"PATH", "HOME": <index dir>}), and whether their
# views of the files are then the same (the guest asks the owner) or not (it walks).
GUEST_VARIANTS = {
    "same": True,
    "unrelated": True,  # a variable that plays no part in what ripgrep reads
    "xdg": False,  # XDG_CONFIG_HOME elsewhere: another global excludes file
    "home": False,  # another HOME: another ~/.gitconfig naming another excludes file
    "git": False,  # git's own variables (ripgrep reads none today; a guest walks all the same)
}


def write_guest_config(base: Path, variant: str, rules: str) -> None:
    if variant == "xdg":
        (base / "xdg" / "git").mkdir(parents=True, exist_ok=True)
        (base / "xdg" / "git" / "ignore").write_text(rules)
    elif variant == "home":
        (base / "home").mkdir(exist_ok=True)
        (base / "home" / ".gitconfig").write_text("[core]\n\texcludesFile = ~/excluded\n")
        (base / "home" / "excluded").write_text(rules)


def guest_environment(base: Path, owner: dict[str, str], variant: str) -> dict[str, str]:
    env = dict(owner)
    if variant == "unrelated":
        env["LANG"] = "C.UTF-8"
    elif variant == "xdg":
        env["XDG_CONFIG_HOME"] = str(base / "xdg")
    elif variant == "home":
        env["HOME"] = str(base / "home")
    elif variant == "git":
        env["GIT_CONFIG_GLOBAL"] = str(base / "home" / ".gitconfig")
    return env


class Counting:
    """The workspace as the indexed engine's file source, counting the calls it answered itself."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def glob(self, *args: Any) -> Any:
        found = await self.workspace.glob(*args)
        TALLY["answered"] += not isinstance(found, Walk)
        return None if isinstance(found, Walk) else found

    async def grep(self, *args: Any) -> Any:
        # As the daemon asks its own index: the rule files are checked while ripgrep runs with the answer
        # (GrepFiles.holds), so an edit no event reports is found after the answer was made.
        found = await self.workspace.grep(*args, rules_later=True)
        if isinstance(found, Walk):
            return None
        TALLY["answered"] += 1
        holds = found.holds
        assert holds is not None

        def counted() -> bool:
            held = holds()
            TALLY["answered"] -= not held
            TALLY["not held"] += not held
            return held

        return found._replace(holds=counted)

    def walk_note(self, cwd: str) -> None:
        return None

    def note_walk(self, cwd: str, seconds: float) -> None:
        pass


class Pair:
    """The two engines over one tree (and, once a guest joins, the guest's two engines)."""

    def __init__(self, root: Path, rg: str, index_dir: Path, deny: tuple[str, ...]) -> None:
        cfg = config_mod.build(
            {"sampleOverCapGlobResults": True, "globMaxResults": 5, "grepMaxMatches": 6, "denyGlobs": list(deny)},
            environ={"XDG_STATE_HOME": "/nonexistent-state"},
        )
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(index_dir)}  # no user config in play
        limits = Limits(cfg.raw_output_max_bytes, cfg.stderr_max_bytes, 3.0)
        self.cfg, self.env, self.limits, self.rg, self.root, self.index_dir = cfg, env, limits, rg, root, index_dir
        self.guest: Guest | None = None
        self.owner: tuple[IndexManager, Owner, OwnerLock] | None = None
        self.pool = pool = Workers.start()
        self._make = lambda: Workspace(str(root), index_dir=str(index_dir), grep_lister=GrepLister.create(rg, env, 3.0))
        self.workspace = self._make()
        self.counting = Counting(self.workspace)
        self.restarts = 0
        self.plain = Searcher(cfg, Launcher(rg, env, limits), FakeSpill(), DenyGlobs(cfg.deny_globs), pool, 2)
        self.indexed = Searcher(
            cfg,
            Launcher(rg, env, limits),
            FakeSpill(),
            DenyGlobs(cfg.deny_globs),
            pool,
            2,
            source=self.counting,
        )
        # And glob without an index: small trees listed in process (index/glance.py), the rest by ripgrep.
        self.glancing = Glancing(None)
        self.glanced = Searcher(
            cfg, Launcher(rg, env, limits), FakeSpill(), DenyGlobs(cfg.deny_globs), pool, 2, source=self.glancing
        )

    def restart(self, meanwhile: Callable[[], None]) -> None:
        """The index's daemon goes away, `meanwhile` happens, and a new one starts on the index it left
        (`compare` waits for it to be ready)."""
        TALLY["rebuilds"] += self.workspace.counts.rebuilds or 0
        self.workspace.close()
        meanwhile()
        self.workspace = self.counting.workspace = self._make()
        self.workspace.start()
        self.restarts += 1
        if self.owner is not None:  # the guest's owner is the new daemon
            self.owner[0]._workspace = self.workspace

    async def join(self, variant: str) -> None:
        """A guest joins (replacing the last one), its ripgrep in the environment of `variant`."""
        if self.owner is None:  # this daemon's index answers guests, as the owner's manager does
            owner = IndexManager(mode="on", index_dir=str(self.index_dir), grep_lister=self.workspace._lister)
            owner._workspace = self.workspace
            lock = OwnerLock(self.workspace.dir)
            assert lock.take()
            listening = Owner(self.workspace.dir, owner.version, owner._serve, owner._view)
            await listening.listen()
            self.owner = (owner, listening, lock)
        if self.guest is not None:
            self.guest.close()
        env = guest_environment(self.index_dir.parent, self.env, variant)
        self.guest = Guest(self, env, GUEST_VARIANTS[variant])

    def close(self) -> None:
        if self.guest is not None:
            self.guest.close()
        if self.owner is not None:
            _manager, listening, lock = self.owner
            listening.close()
            lock.release()
        self.workspace.close()
        self.pool.parse.shutdown()
        self.pool.stat.shutdown()


class Guest:
    """A guest daemon's two engines: one that walks, one that asks the owner first."""

    def __init__(self, pair: Pair, env: dict[str, str], same_view: bool) -> None:
        self.same_view = same_view
        self.manager = IndexManager(
            mode="on",
            index_dir=str(pair.index_dir),
            grep_lister=GrepLister.create(pair.rg, env, 3.0),
            ask_wait_s=10.0,  # a loaded machine's slow answer must not make a same-view guest walk
        )
        self.manager.set_workspace(str(pair.root))
        assert self.manager._guest is not None  # the owner's lock is held: a guest
        deny = DenyGlobs(pair.cfg.deny_globs)
        launch = Launcher(pair.rg, env, pair.limits)
        self.plain = Searcher(pair.cfg, launch, FakeSpill(), deny, pair.pool, 2)
        self.indexed = Searcher(pair.cfg, launch, FakeSpill(), deny, pair.pool, 2, source=self.manager)

    def close(self) -> None:
        self.manager.close()


async def scenario(data: st.DataObject, rg: str) -> None:
    # Files are read in pieces of CHUNK_BYTES: tiny pieces put trigrams across the builder's seams.
    chunk_bytes = data.draw(st.sampled_from([reading.CHUNK_BYTES, 5, 16]))
    # And the content index may be rebuilt whenever any of its documents are old versions.
    rebuild_min = data.draw(st.sampled_from([builder.GARBAGE_REBUILD_MIN, 1]))
    saved = reading.CHUNK_BYTES, builder.GARBAGE_REBUILD_MIN
    reading.CHUNK_BYTES, builder.GARBAGE_REBUILD_MIN = chunk_bytes, rebuild_min
    try:
        await _scenario(data, rg)
    finally:
        reading.CHUNK_BYTES, builder.GARBAGE_REBUILD_MIN = saved


async def _scenario(data: st.DataObject, rg: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="dsh-index-eq-"))
    root = base / "w"
    root.mkdir()
    try:
        for _ in range(data.draw(st.integers(0, 12))):
            edit(root, data)
        deny = tuple(data.draw(st.lists(st.sampled_from(["*.log", "secret*", "lib/"]), max_size=1)))
        pair = Pair(root, rg, base / "index", deny)
        NOW["pair"] = pair
        try:
            await compare(pair, root, data)
        finally:
            NOW["pair"], NOW["built"] = None, False
            TALLY["rebuilds"] += pair.workspace.counts.rebuilds or 0
            TALLY["restarts"] += pair.restarts
            pair.close()
    finally:
        _unmount_under(base)
        remove_tree(base)  # a chmod edit may have left a directory its owner cannot enter


async def compare(pair: Pair, root: Path, data: st.DataObject) -> None:
    """Calls on both engines after the index's first build, then after each edit, at once."""
    pair.workspace.start()
    await asyncio.wait_for(pair.workspace._ready.wait(), 30)
    assert pair.workspace.state == READY, pair.workspace.status("on")
    NOW["built"] = True
    history: list[str] = []
    if data.draw(st.integers(0, 3)) == 0:  # a guest from the start, as well as one that joins as an edit
        history.append(_edit_guest(root.parent, data))
        await pair.join(history[-1].split()[1])
    for _step in range(data.draw(st.integers(1, 8))):
        if not pair.workspace._ready.is_set():  # restarted by the last edit: its build has the tree first
            await asyncio.wait_for(pair.workspace._ready.wait(), 30)
            assert pair.workspace.state == READY, pair.workspace.status("on")
        for _ in range(data.draw(st.integers(1, 3))):
            call: GlobQuery | GrepQuery
            if data.draw(st.sampled_from(["glob", "grep"])) == "glob":
                call = GlobQuery(data.draw(st.sampled_from(GLOBS)), data.draw(st.sampled_from(PATHS)))
            else:
                call = data.draw(grep_queries())
            expected = await run(pair.plain, root, call)
            got = await run(pair.indexed, root, call)
            if got != expected and os.environ.get("DSH_INDEX_DEBUG"):
                debug(pair.workspace, root, call, history)
                print("DEBUG index answered", got, "\nDEBUG the walk answered", expected)
            assert got == expected, (call, history)
            TALLY["calls"] += 1
            if isinstance(call, GlobQuery):
                listed = pair.glancing.listed
                assert await run(pair.glanced, root, call) == expected, ("glance", call, history)
                TALLY["globs"] += 1
                TALLY["glanced"] += pair.glancing.listed - listed
            if pair.guest is not None:  # the guest's answers are its own walk's, whatever the owner's view
                guest = pair.guest
                before = sum(guest.manager.answered.values())
                assert await run(guest.indexed, root, call) == await run(guest.plain, root, call), (call, history)
                TALLY["guest_calls"] += 1
                TALLY["guest_asked"] += guest.same_view
                TALLY["guest_answered"] += sum(guest.manager.answered.values()) - before
                if not guest.same_view:
                    assert sum(guest.manager.answered.values()) == 0, (call, history)
        history.append(edit(root, data))
        if history[-1].startswith("guest "):
            await pair.join(history[-1].split()[1])


def debug(ws: Workspace, root: Path, call: GlobQuery | GrepQuery, history: list[str]) -> None:
    """What the index held when an answer differed (DSH_INDEX_DEBUG=1)."""
    fresh = ws._fresh
    known = (fresh.changed, fresh.stated, fresh.files.overlay, fresh.unknown) if fresh is not None else None
    print("DEBUG", call, history, known, ws.status("on"))
    print("DEBUG tree", sorted(str(p.relative_to(root)) for p in root.rglob("*")))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=EXAMPLES <= 25,
    # A long run by hand looks for failures; shrinking one (each example runs dozens of processes) is
    # left to a rerun with the failing seed and fewer examples.
    phases=[Phase.explicit, Phase.reuse, Phase.generate] if EXAMPLES > 25 else list(Phase),
)
@given(data=st.data())
def test_the_index_answers_what_the_walk_answers(rg_path: str, data: st.DataObject) -> None:
    asyncio.run(scenario(data, rg_path))


def _property(rg: str, max_examples: int, replay: str | None = None) -> Callable[[], None]:
    """The same property, for a child process (no example database: it may not be writable there)."""

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        print_blob=True,  # a failure prints how to replay it (there is no example database here)
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=max_examples <= 25,
        phases=[Phase.explicit, Phase.reuse, Phase.generate] if max_examples > 25 else list(Phase),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        asyncio.run(scenario(data, rg))

    if replay:  # "<hypothesis version> <blob>", as a failure printed them
        version, blob = replay.split(" ", 1)
        return reproduce_failure(version, ast.literal_eval(blob))(run)  # type: ignore[no-any-return]
    return run


def _coarse_filesystem(point: str) -> bool:
    """Mount at `point` a filesystem whose timestamps tick once a second — ext4 with 128-byte inodes, on a
    sparse loop image — in this mount namespace (it goes with the namespace); False when it cannot be."""
    if shutil.which("mkfs.ext4") is None:
        return False
    image = tempfile.NamedTemporaryFile(prefix="dsh-index-eq-", suffix=".img", delete=False)  # noqa: SIM115
    try:
        image.truncate(256 << 20)
        image.close()
        made = subprocess.run(["mkfs.ext4", "-q", "-F", "-I", "128", image.name], capture_output=True, check=False)
        if made.returncode != 0:
            return False
        mounted = subprocess.run(["mount", "-o", "loop", image.name, point], capture_output=True, check=False)
        return mounted.returncode == 0
    finally:
        os.unlink(image.name)  # the loop device holds it while mounted


def in_child(body: Callable[[], None], *, mode: str, user: int | None = None, mount_namespace: bool = False) -> None:
    """Run `body` in a forked child — as `user`, or as root in a mount namespace of its own — and fail here
    with its output if it fails. The child first runs one plain example, so that everything the property
    imports is imported while it may still read anything."""
    coarse = tempfile.mkdtemp(prefix="dsh-index-eq-coarse-")  # the child mounts on it, in its namespace
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read_end)
            os.dup2(write_end, 1)
            os.dup2(write_end, 2)
            sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 (the child's whole life)
            sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
            if mount_namespace:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
                    raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
                subprocess.run(["mount", "--make-rprivate", "/"], check=True)
                if _coarse_filesystem(coarse):
                    tempfile.tempdir = coarse  # every scenario's tree on it
            warm = MODE["now"]
            body_warm = _property(RG_FOR_CHILD["path"], 1)
            body_warm()
            MODE["now"] = mode
            if user is not None:
                os.setgroups([])
                os.setgid(user)
                os.setuid(user)
            try:
                body()
            finally:
                MODE["now"] = warm
            if os.environ.get("DSH_INDEX_DEBUG"):
                print("DEBUG child tally", mode, TALLY, flush=True)
            code = 0
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 1 << 16):
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    os.rmdir(coarse)  # unmounted with the child's namespace
    output = b"".join(chunks).decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0, output[-20000:]
    if os.environ.get("DSH_INDEX_DEBUG"):
        print(output[-2000:])


RG_FOR_CHILD = {"path": ""}


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the property as an unprivileged user")
def test_the_index_answers_what_the_walk_answers_as_an_unprivileged_user(rg_path: str) -> None:
    """Directories whose mode hides them (000, 300: no listing; 500: no writing) from a user who is not
    root, and back: the index walks where the walk reports them, and answers the rest."""
    rg = str(reachable_by_nobody(Path(rg_path)))
    RG_FOR_CHILD["path"] = rg
    in_child(_property(rg, EXAMPLES, os.environ.get("DSH_INDEX_REPLAY")), mode="unprivileged", user=NOBODY)


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root to mount in a namespace of its own"
)
def test_the_index_answers_what_the_walk_answers_across_mounts(rg_path: str) -> None:
    """Filesystems mounted on a directory of the workspace, bind mounts of one directory on another, and
    unmounts: inotify says nothing of them; the mount table does."""
    RG_FOR_CHILD["path"] = rg_path
    in_child(_property(rg_path, EXAMPLES, os.environ.get("DSH_INDEX_REPLAY")), mode="mounts", mount_namespace=True)


@pytest.fixture(autouse=True, scope="module")
def _the_index_answered_a_fair_share() -> Iterator[None]:
    """Equivalence proves nothing if the index always walked: it must have answered calls itself."""
    yield
    if os.environ.get("DSH_INDEX_DEBUG"):
        print("DEBUG tally", TALLY)
    if TALLY["calls"] >= 20:
        # Right after an edit that puts a part or all in doubt (a root moved, rules changed) searches walk
        # until the background has caught up; the calls here come at once, so a share of them walk.
        assert TALLY["answered"] >= TALLY["calls"] // 6, TALLY
    if TALLY["globs"] >= 20:  # and the glance listed most small trees itself
        assert TALLY["glanced"] >= TALLY["globs"] // 3, TALLY
    if TALLY["guest_asked"] >= 20:  # a guest with the owner's view is answered by it, often
        assert TALLY["guest_answered"] >= TALLY["guest_asked"] // 6, TALLY


async def wait_until(condition: Callable[[], bool], timeout_s: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)


def test_a_content_index_mostly_of_old_versions_is_rebuilt_and_answers_the_same(
    rg_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(builder, "GARBAGE_REBUILD_MIN", 1)
    # Segments never merged (merges drop old versions, so a shard is rarely mostly garbage otherwise).
    monkeypatch.setattr(shards.Shard, "merge_plan", lambda self: [])
    root = tmp_path / "w"
    (root / "src").mkdir(parents=True)
    for i in range(20):
        (root / "src" / f"f{i}.c").write_text(f"static int f{i};\n")

    async def rewrite_and_compare() -> str:
        pair = Pair(root, rg_path, tmp_path / "index", ())
        try:
            ws = pair.workspace
            ws.start()
            await asyncio.wait_for(ws._ready.wait(), 30)
            first_set = ws._set.directory if ws._set is not None else ""
            for version in range(3):  # every file rewritten: most documents become old versions
                for i in range(20):
                    (root / "src" / f"f{i}.c").write_text(f"static int f{i}_v{version}; /* SUSPEND */\n")
                await wait_until(lambda: ws._drain() is None and ws._fresh is not None and not ws._fresh.changed)
            await wait_until(lambda: (ws.counts.rebuilds or 0) >= 1)
            assert (ws.counts.rebuilds or 0) >= 1, ws.status("on")
            for call in (GrepQuery("SUSPEND"), GrepQuery("f3_v2", "src", "*.c"), GlobQuery("*.c")):
                assert await run(pair.indexed, root, call) == await run(pair.plain, root, call)
            assert not isinstance(await pair.workspace.grep(str(root), GrepQuery("f3_v2"), DenyGlobs(())), Walk)
            return first_set
        finally:
            pair.workspace.close()
            pair.pool.parse.shutdown()
            pair.pool.stat.shutdown()

    first_set = asyncio.run(rewrite_and_compare())
    assert not Path(first_set).exists()  # the replaced set is gone from disk


def test_a_file_gone_with_its_directory_leaves_no_file_to_search(rg_path: str, tmp_path: Path) -> None:
    """A grep whose include reaches no file left: ripgrep's walk fails "No files were searched", and so
    must the index's answer, right after the directory that held the last such file went (found by the
    property test run as an unprivileged user)."""

    async def scenario() -> None:
        root = tmp_path / "w"
        root.mkdir()
        (root / "x.log").write_text("SUSPEND\n")
        pair = Pair(root, rg_path, tmp_path / "index", ())
        try:
            ws = pair.workspace
            ws.start()
            await asyncio.wait_for(ws._ready.wait(), 30)
            call = GrepQuery("foo|bar", include="*.c")
            (root / "docs" / "deep").mkdir(parents=True)
            (root / "docs" / "deep" / "[k].c").write_text("nothing\n")
            assert await run(pair.indexed, root, call) == await run(pair.plain, root, call)
            await wait_until(lambda: ws._fresh is not None and not ws._fresh.changed)
            shutil.rmtree(root / "docs" / "deep")
            got = await run(pair.indexed, root, call)
            assert got == await run(pair.plain, root, call)
            assert got[0] == "error"
        finally:
            pair.workspace.close()
            pair.pool.parse.shutdown()
            pair.pool.stat.shutdown()

    asyncio.run(scenario())

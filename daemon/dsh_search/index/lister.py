"""Grep's list: which files ripgrep's walk reads with grep's rules, as ripgrep itself says.

The index never re-implements ripgrep's walk (ignore files, hidden files, `.git` detection and every
other rule): it asks `rg --files --null` with grep's flags, run where the workspace is, over some of its
directories or all of it, and keeps the answer as ripgrep printed it — NUL-separated bytes, read path by
path (`paths_of`), never as a list of objects (a list would cost ~70 bytes a file).

Rules of this module: the one place the index starts ripgrep; what the list means is the caller's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from dsh_search.engine.ripgrep import Launcher, Limits


class Listing(NamedTuple):
    """What ripgrep printed: the paths (NUL-separated, as printed) and what it reported it could not
    read or parse — workspace-relative path → ripgrep's words — or None when its complaints could not all
    be attributed to paths (then everything grep reads is in doubt)."""

    paths: bytes
    trouble: dict[bytes, str] | None

    @property
    def clean(self) -> bool:
        return self.trouble == {}


_REPORT = re.compile(rb"^rg: (.+?): (line [0-9]+: error parsing glob .*|[^:]*\(os error [0-9]+\))$")


def trouble_of(stderr: bytes) -> dict[bytes, str] | None:
    """The paths ripgrep's `rg: <path>: <complaint>` lines name, or None when a line is not one."""
    out: dict[bytes, str] = {}
    for line in stderr.splitlines():
        if not line:
            continue
        found = _REPORT.match(line)
        if found is None:
            return None
        path = found.group(1)
        while path.startswith(b"./"):
            path = path[2:]
        out[b"" if path == b"." else path.rstrip(b"/")] = found.group(2).decode("utf-8", "replace")
    return out


class GrepLister:
    """ripgrep's `--files` walk with grep's rules. Called with (cwd, roots — none: the cwd —, depth —
    None: all), it answers a `Listing`."""

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher

    @classmethod
    def create(cls, rg_path: str, env: dict[str, str], grace_s: float, memory_cap: int | None = None) -> GrepLister:
        """A lister with no cap on ripgrep's output but memory (a listing of a large tree is tens of MB),
        under the memory bound of every ripgrep (rgMemoryMaxBytes)."""
        limits = Limits(stdout_cap=1 << 31, stderr_cap=1 << 16, grace_s=grace_s, memory_cap=memory_cap)
        return cls(Launcher(rg_path, env, limits))

    @property
    def environment(self) -> dict[str, str]:
        """The environment ripgrep runs in (where it finds git's global excludes)."""
        return self.launcher.env

    async def __call__(self, cwd: str, roots: Sequence[bytes], depth: int | None) -> Listing:
        args: list[str | bytes] = ["--files", "--null"]
        if depth is not None:
            args.append(f"--max-depth={depth}")
        if roots:
            args += ["--", *(root or b"." for root in roots)]
        outcome = await self.launcher(args, cwd=cwd)
        trouble: dict[bytes, str] | None
        if outcome.exit_code in (0, 1) and not outcome.stdout_overflow and not outcome.stderr.strip():
            trouble = {}
        elif outcome.exit_code not in (0, 1, 2) or outcome.stdout_overflow or outcome.stderr_lossy:
            trouble = None
        else:
            trouble = trouble_of(outcome.stderr)
            if trouble == {} and outcome.exit_code == 2:
                trouble = None  # it failed without saying on what
        return Listing(outcome.stdout, trouble)


_PATH = re.compile(rb"[^\0]+")


def paths_of(listed: bytes) -> Iterator[bytes]:
    """The paths of a NUL-separated listing, one at a time."""
    for match in _PATH.finditer(listed):
        yield match.group()


def parents(paths: Iterable[bytes]) -> set[bytes]:
    """Every directory above the given paths, and b"" (the workspace)."""
    out = {b""}
    for path in paths:
        directory = path.rpartition(b"/")[0]
        while directory not in out:
            out.add(directory)
            directory = directory.rpartition(b"/")[0]
    return out


def facts(listed: bytes) -> tuple[int, set[bytes]]:
    """How many paths a listing holds, and every directory above them (b"": the workspace)."""
    count = 0

    def counted() -> Iterator[bytes]:
        nonlocal count
        for path in paths_of(listed):
            count += 1
            yield path

    above = parents(counted())
    return count, above


def members(listed: bytes, paths: list[bytes]) -> set[bytes]:
    """Which of `paths` a NUL-separated listing holds."""
    wanted = set(paths)
    return {p for p in paths_of(listed) if p in wanted} if wanted else set()

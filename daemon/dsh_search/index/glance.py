"""A glance: a small tree listed for glob in this process, without ripgrep and without an index.

glob of a small directory costs ripgrep's start (~1–1.5 ms: exec, its allocator, its thread pool) more
than its listing, and the daemon's own work comes on top, so a 15-file glob could never cost what
ripgrep's listing does (docs/performance.md, "The small calls"). What glob lists is known exactly — every
regular file under the root, VCS directories left out, ordered by modification time then path — and the
index already answers it from its own walk (walk.py), spelled as ripgrep prints it (answers.py) and
matched with ripgrep's glob reading (globlist.py); a glance is that answer made from a walk of the search's
root alone, for a search no index answers.

It gives up — and ripgrep lists — at the first thing it cannot promise: a root it cannot spell as
ripgrep prints it (a symbolic link or `..` on the way, a file), a glob it does not read exactly (or one
too long for ripgrep's command line, `LONGEST`: whether ripgrep starts at all is its to say), a
directory it cannot list or an entry it cannot look at (ripgrep says what it could not read), more than
`BUDGET` entries (ripgrep's parallel walk is the faster past that; a root found that big is not glanced
at again for `BIG_FOR_S`), and a sidecar other than the ripgrep whose listing this reproduces
(engine/sidecar.LISTING_KNOWN: any other build may list differently, and a test's stand-in must be run).

Rules of this module: a pure walk on a thread, and the index's own spelling; nothing is kept but which
roots were too big.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from array import array
from typing import TYPE_CHECKING

from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GlobQuery, GrepQuery
from dsh_search.engine.source import FileSource, GlobFiles, GrepFiles

if TYPE_CHECKING:  # imported by the first glob, not at every start (ctypes, the glob reading, a pool: ~10 ms)
    from concurrent.futures import ThreadPoolExecutor

    from dsh_search.index.answers import Root

log = logging.getLogger("dsh_search.index")

VCS_NAMES = frozenset((b".git", b".svn", b".hg", b".bzr", b".jj", b".sl"))  # never listed (engine/glob.VCS_DIRS)
BUDGET = 4096  # directory entries a glance reads at most (~2 ms); past it, ripgrep lists
INLINE_BUDGET = 256  # entries read on the event loop (~0.1 ms); past it, the glance goes on on a thread
TOO_BIG_HERE = object()  # a glance on the event loop met more than INLINE_BUDGET entries
BIG_FOR_S = 60.0  # a root found bigger than that is left to ripgrep for this long
MAX_BIG = 256  # roots remembered as too big
PARALLEL_STAT = 1024  # names stat-ed on two threads from this many on
LONGEST = 4096  # characters of a pattern, cwd or path a glance takes; longer ones, ripgrep lists


class Glancing:
    """A `FileSource` (engine/source.py) that asks `inner` (the workspace index, when there is one) first,
    and lists a small tree for glob itself when `inner` says walk (see the module's header)."""

    def __init__(self, inner: FileSource | None) -> None:
        self.inner = inner
        self._big: dict[str, float] = {}  # real root → when it was found bigger than BUDGET
        self.listed = 0  # globs answered by a glance

    async def glob(self, cwd: str, query: GlobQuery, deny: DenyGlobs) -> GlobFiles | None:
        if self.inner is not None:
            found = await self.inner.glob(cwd, query, deny)
            if found is not None:
                return found
        try:
            eligible = self.eligible(cwd, query)
            if eligible is None:
                return None
            # A tree of a few directories is listed here and now: a thread's hand-off and back costs more.
            listed = self.make(cwd, *eligible, deny, INLINE_BUDGET)
            if listed is TOO_BIG_HERE:
                listed = await asyncio.to_thread(self.make, cwd, *eligible, deny, BUDGET)
        except Exception:  # a bug must cost speed, never an answer: ripgrep lists
            log.exception("glob %r in %s: the glance failed; ripgrep lists", query.pattern, cwd)
            return None
        if not isinstance(listed, GlobFiles):
            return None
        self.listed += 1
        return listed

    async def grep(self, cwd: str, query: GrepQuery, deny: DenyGlobs) -> GrepFiles | None:
        return None if self.inner is None else await self.inner.grep(cwd, query, deny)

    def note_walk(self, cwd: str, seconds: float) -> None:
        if self.inner is not None:
            self.inner.note_walk(cwd, seconds)

    def walk_note(self, cwd: str) -> str | None:
        return None if self.inner is None else self.inner.walk_note(cwd)

    def eligible(self, cwd: str, query: GlobQuery) -> tuple[bytes, Root, str] | None:
        """Whether a glance may list this glob (no walk yet): the pattern's regex, the root as ripgrep
        spells it, and the root's real path; None when ripgrep must list."""
        from dsh_search.index import answers
        from dsh_search.index.globlist import Unsupported, glob_regex

        if "\0" in query.pattern or "\0" in cwd or (query.path is not None and "\0" in query.path):
            return None
        if max(len(query.pattern), len(cwd), len(query.path or "")) > LONGEST:
            return None  # ripgrep's argv may not even start (E2BIG): what happens then is its to say
        try:
            regex = glob_regex(query.pattern)
        except Unsupported:
            return None
        real = os.path.realpath(cwd)
        root = answers.search_root(cwd, real, cwd, query.path)
        if root is None or any(part in VCS_NAMES for part in os.fsencode(real).split(b"/") + root.under.split(b"/")):
            return None  # inside a VCS directory, ripgrep's exclusions of them read against the path: its to say
        start = os.path.join(real, os.fsdecode(root.under)).rstrip("/")
        seen = self._big.get(start)
        if seen is not None and time.monotonic() - seen < BIG_FOR_S:
            return None
        return regex, root, start

    def make(
        self, cwd: str, regex: bytes, root: Root, start: str, deny: DenyGlobs, budget: int
    ) -> GlobFiles | object | None:
        """The listing of at most `budget` entries, or None when ripgrep must make it; TOO_BIG_HERE when
        the tree has more than `budget` entries but at most BUDGET may yet be (a thread's glance then)."""
        from dsh_search.engine import native
        from dsh_search.index import answers
        from dsh_search.index.globlist import Matcher

        try:
            names = listing(os.fsencode(cwd), root.under, budget)
        except TooBig:
            if budget < BUDGET:
                return TOO_BIG_HERE
            self._too_big(start)
            return None
        if names is None:
            return None
        names = Matcher(root.prefix, root.under, regex).take(names)
        fields = _stat(cwd, names)
        mtimes = fields[native.MTIME :: native.FIELDS]
        if 0 in fields[native.TYPE :: native.FIELDS]:  # gone since listed (or no longer stat-able): not a result
            kinds = fields[native.TYPE :: native.FIELDS]
            keyed = sorted((m, name) for m, name, kind in zip(mtimes, names, kinds, strict=True) if kind)
        else:
            keyed = sorted(zip(mtimes, names, strict=True))
        return answers.glob_files([name for _mtime, name in keyed], root, deny)

    def _too_big(self, start: str) -> None:
        """`start` (a real root) met more than BUDGET entries (from a thread: one dict store)."""
        if len(self._big) >= MAX_BIG:
            self._big = {}
        self._big[start] = time.monotonic()


class TooBig(Exception):
    """A glance's walk met more entries than its budget."""


def listing(root: bytes, start: bytes, budget: int) -> list[bytes] | None:
    """`walk` below, by the engine's native walk where there is one (one call, no Python step per entry)."""
    from dsh_search.engine import native

    try:
        found = native.walk(os.path.join(root, start.rstrip(b"/")) if start else root, start, VCS_NAMES, budget)
    except native.TooBig:
        raise TooBig from None
    if found is native.NOT_HERE:
        return walk(root, start, budget)
    return found if isinstance(found, list) else None


def walk(root: bytes, start: bytes, budget: int) -> list[bytes] | None:
    """The regular files under `start` (relative to `root`, b"" or ending in `/`) as glob's ripgrep lists
    them — every regular file, hidden and ignored ones too, no symbolic link, no special file, nothing
    under or named as a VCS directory (walk.py's rules, without its watches) — relative to `root`, in no
    order. None when it meets anything it cannot see completely (a directory it cannot list, an entry it
    cannot look at): then ripgrep lists, and says what it could not read. `TooBig` once it has met more
    than `budget` entries."""
    names: list[bytes] = []
    todo = [start.rstrip(b"/")]
    seen = 0
    while todo:
        directory = todo.pop()
        try:
            with os.scandir(os.path.join(root, directory) if directory else root) as found:
                entries = list(found)
        except OSError:
            return None
        seen += len(entries)
        if seen > budget:
            raise TooBig
        prefix = directory + b"/" if directory else b""
        for entry in entries:
            name = entry.name
            if name in VCS_NAMES:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    todo.append(prefix + name)
                elif entry.is_file(follow_symlinks=False):
                    names.append(prefix + name)
            except OSError:
                return None
    return names


def _stat(cwd: str, names: list[bytes]) -> array[int]:
    """Every name's state (links followed, as glob's stat of ripgrep's listing does), relative to cwd."""
    from dsh_search.engine import native

    if not names:
        return array("q")
    fd = os.open(cwd, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if len(names) < PARALLEL_STAT or not native.native():
            return native.stat_many(names, dirfd=fd, follow=True)
        # The stat calls are the glance's largest part, each a system call: two threads (the native call
        # runs without the GIL) halve it on a machine with a CPU to spare, as most have for this moment.
        half = len(names) // 2
        other = _helper().submit(native.stat_many, names[half:], dirfd=fd, follow=True)
        first = native.stat_many(names[:half], dirfd=fd, follow=True)
        return first + other.result()
    finally:
        os.close(fd)


_HELPER: list[ThreadPoolExecutor] = []


def _helper() -> ThreadPoolExecutor:
    from concurrent.futures import ThreadPoolExecutor

    if not _HELPER:
        _HELPER.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="glance-stat"))
    return _HELPER[0]

"""The planner: whether the index answers a search, and with which files — every gate of that decision, in
order, each "no" a named reason (`status.Walk`).

A search is answered from the index only when that is both exact and cheaper than ripgrep's walk. For
grep (`Planner.grep`), in this order:

1. the search must run inside the workspace (`OUTSIDE`);
2. `narrowing`: the query as the index reads it — the pattern's formula (query/analysis.py, with the
   query's flags that change what can match: case folding, fixed strings) must narrow the files at all
   (`NO_LITERALS`), no argument may hold a NUL (`NUL_ARGUMENT`), and the include and exclude globs must
   be ones the index reads exactly as ripgrep does (`GLOB_UNREAD`) — decided before the index is even
   looked at;
3. the index must be usable now, its events drained (`BUILDING`, `FAILED`: the workspace's to say);
4. the root must be spelled as ripgrep prints it (`ROOT_UNSPELLED`), lie in no part in doubt
   (`IN_DOUBT`), hold files grep reads (`ROOT_NOT_LISTED`), with every new file's membership settled
   (`UNSETTLED`), and the include must not reach a file the walk skips without it
   (`INCLUDE_REACHES_SKIPPED`);
5. `choose`, the cost model, simple and measured: ripgrep reading N named files costs about N / (files
   under the root) of its walk, and a lookup a few milliseconds. So the candidates must be at most
   `MAX_CANDIDATE_SHARE` of the files under the root — decided at once, before any lookup, when even the
   formula's rarest trigram is in more files than that (`TOO_COMMON`; document counts, cached across
   searches: microseconds); else measured, by a lookup of every trigram's documents that stops as soon
   as it has found too many (`TOO_MANY_CANDIDATES`). The files changed since indexed are read and judged
   now (at most `MAX_CHANGED_READ` of them: `TOO_MANY_CHANGED`); the answer must be spellable on a
   command line (`CANNOT_NAME`); and when there is no candidate at all the planner checks that ripgrep's
   walk would have searched a file (with none, ripgrep fails "No files were searched", so the search
   walks to let it say so: `NO_FILE_SEARCHED`).

glob (`Planner.glob`) has the gates that apply to a listing: 1, the NUL, 3, the root and its doubt, and
its pattern read exactly (`GLOB_UNREAD`).

Every "no" is a reason and no files: the search walks, and the answer is the walk's. ripgrep decides every
match among the files chosen. What the planner needs of the workspace is `Indexed` (the workspace
satisfies it); the query comes as the method face made it (engine/request.py), unchanged.

Rules of this module: decisions and thresholds; the reading of shards is shards.py's, the spelling of
the answer answers.py's, what changed freshness.py's, the life of the index workspace.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol

from dsh_search.engine import globsyntax
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GlobQuery, GrepQuery
from dsh_search.engine.source import GlobFiles, GrepFiles
from dsh_search.index import answers
from dsh_search.index.answers import Root
from dsh_search.index.freshness import Freshness
from dsh_search.index.globlist import Matcher, Unsupported, glob_regex
from dsh_search.index.lister import GrepLister
from dsh_search.index.query.analysis import required
from dsh_search.index.query.formula import NONE, Query
from dsh_search.index.query.plan import NO_FILE, Plan, narrows, plan
from dsh_search.index.reading import judged
from dsh_search.index.shards import Shard, prefix_range
from dsh_search.index.status import Walk

# More candidates than this share of the files under the root: walk instead. ripgrep reading half the
# files by name costs about half its walk; the index must never cost more than no index.
MAX_CANDIDATE_SHARE = 0.5
MAX_CHANGED_READ = 4000  # changed files a search reads itself; past it, it walks (the writer catches up)
MAX_FREQUENCIES = 200_000  # trigram document counts cached; past it, the cache starts again
# A lookup whose rarest trigram is in at most this many files, with at most this many changed files to
# place, runs on the event loop when no shard is busy: its work (the native AND over short lists) costs
# less than handing it to a thread per shard and back (~0.7 ms; docs/performance.md).
AT_ONCE_ESTIMATE = 2048
AT_ONCE_CHANGED = 64


class Narrowing(NamedTuple):
    """A grep as the index reads it."""

    query: Query  # what every matching file's text satisfies
    include: bytes | None  # the include glob as a regex over cwd-relative paths (None: no include)
    exclude: tuple[str, ...]  # the exclude glob, as one more `--glob=!<glob>` (answers.py applies them)


def narrowing(query: GrepQuery) -> Narrowing | Walk:
    """The grep as the index reads it, or why the index cannot narrow it exactly."""
    if "\0" in query.pattern or any(g is not None and "\0" in g for g in (query.include, query.exclude)):
        return Walk.NUL_ARGUMENT  # no argument can carry a NUL: ripgrep fails to start, as a walk would
    formula = required(query.pattern, fold_case=query.folds_case, fixed=query.fixed_strings)
    if not narrows(formula):
        return Walk.NO_LITERALS  # the pattern's literals narrow nothing: walk, without waiting for a build
    include_regex = None
    if query.include is not None:
        try:
            include_regex = glob_regex(query.include)
        except Unsupported:
            return Walk.GLOB_UNREAD
    exclude: tuple[str, ...] = ()
    if query.exclude is not None:
        if not _exclusion_read(query.exclude):
            return Walk.GLOB_UNREAD
        exclude = (query.exclude,)
    return Narrowing(formula, include_regex, exclude)


def _exclusion_read(glob: str) -> bool:
    """Whether the index reads `--glob=!<glob>` as ripgrep does (engine/globsyntax.py): a glob ripgrep
    accepts, without a character class beside non-ASCII characters (globset matches those as
    characters; the port matches bytes)."""
    if "[" in glob and not glob.isascii():
        return False
    try:
        globsyntax.exclusion(glob)
    except globsyntax.GlobError:
        return False
    return True


class Indexed(Protocol):
    """What the planner asks of the workspace it plans for (workspace.Workspace)."""

    root: str  # the workspace as written
    real_root: str

    @property
    def lister(self) -> GrepLister:
        """grep's list: ripgrep's own --files."""
        ...

    async def usable(self, tool: str, *, rules: bool = True) -> Freshness | Walk:
        """The bookkeeping, checked and drained, when the index may answer a search of `tool` (`rules`:
        grep's rule files checked too, else left to `rules_hold`)."""
        ...

    def rules_hold(self, fresh: Freshness) -> bool:
        """The rule files' check left by `usable("grep", rules=False)`: whether grep's list still holds."""
        ...

    def reading(self) -> AbstractContextManager[tuple[list[Shard], int] | None]:
        """The shards (and the files grep reads) for as long as a search reads them."""
        ...


class Planner:
    def __init__(self) -> None:
        self._frequencies: dict[str, int] = {}  # trigram → documents holding it (planning only)

    def forget(self) -> None:
        """Document counts changed (files re-indexed, a new set): plans may pick other trigrams now
        (their results never depend on it)."""
        self._frequencies.clear()

    # --- glob ----------------------------------------------------------------------------------------

    async def glob(self, ws: Indexed, cwd: str, query: GlobQuery, deny: DenyGlobs) -> GlobFiles | Walk:
        """What glob lists from `cwd`, from the index, or why the search walks."""
        if "\0" in query.pattern:
            return Walk.NUL_ARGUMENT  # no argument can carry a NUL: ripgrep fails to start, as a walk would
        if not answers.inside(ws.root, cwd):
            return Walk.OUTSIDE  # never waits for a build it cannot use
        fresh = await ws.usable("glob")
        if isinstance(fresh, Walk):
            return fresh
        root = answers.search_root(ws.root, ws.real_root, cwd, query.path)
        if root is None:
            return Walk.ROOT_UNSPELLED
        if fresh.in_doubt(root.start, "glob") is not None:
            return Walk.IN_DOUBT
        try:
            regex = glob_regex(query.pattern)
        except Unsupported:
            return Walk.GLOB_UNREAD
        fresh.refresh_stats()
        matcher = Matcher(root.prefix, root.under, regex)
        fresh.refresh_linked(matcher)
        return answers.glob_files(fresh.files.matching(matcher), root, deny)

    # --- grep ----------------------------------------------------------------------------------------

    async def grep(
        self, ws: Indexed, cwd: str, query: GrepQuery, deny: DenyGlobs, *, rules_later: bool = False
    ) -> GrepFiles | Walk:
        """The files ripgrep reads for this grep from `cwd`, or why the search walks. `rules_later`: the
        rule files of grep's walk are not checked first; the answer carries that check (`GrepFiles.holds`)
        for the engine to make while ripgrep reads the files (engine/source.py)."""
        if not answers.inside(ws.root, cwd):
            return Walk.OUTSIDE  # never waits for a build it cannot use
        narrowed = narrowing(query)
        if isinstance(narrowed, Walk):
            return narrowed
        fresh = await ws.usable("grep", rules=not rules_later)
        if isinstance(fresh, Walk):
            return fresh
        root = answers.search_root(ws.root, ws.real_root, cwd, query.path)
        if root is None:
            return Walk.ROOT_UNSPELLED
        under = root.start
        if fresh.in_doubt(under, "grep") is not None:
            return Walk.IN_DOUBT
        if under.rstrip(b"/") not in fresh.grep_dirs:
            return Walk.ROOT_NOT_LISTED  # hidden, ignored, or holding nothing grep reads: ripgrep's walk decides
        if not await fresh.settle(under, ws.lister, ws.root):
            return Walk.UNSETTLED
        if narrowed.include is not None and await fresh.include_reaches_skipped(
            root.prefix, root.under, narrowed.include
        ):
            return Walk.INCLUDE_REACHES_SKIPPED  # it brings back a file grep's walk skips without it
        if narrowed.exclude:
            deny = DenyGlobs(deny.globs + narrowed.exclude)
        with ws.reading() as held:
            if held is None:
                return Walk.FAILED
            shards, grep_files = held
            found = await self.choose(shards, fresh, root, narrowed, deny, grep_files)
        if rules_later and isinstance(found, GrepFiles):
            return found._replace(holds=functools.partial(ws.rules_hold, fresh))
        return found

    def _plan(self, shards: list[Shard], query: Query) -> Plan | None:
        """The lookup for `query`, its literals' rarest trigrams chosen by their document counts; None
        when the pattern constrains nothing. Runs on a thread when a count is not cached (it asks the
        shards, which may read a segment's tables the first time)."""
        frequencies = self._frequencies

        def frequency(gram: str) -> int:
            count = frequencies.get(gram)
            if count is None:
                if len(frequencies) > MAX_FREQUENCIES:
                    frequencies.clear()
                count = frequencies[gram] = sum(shard.doc_frequency(gram) for shard in shards)
            return count

        if query is NONE:
            return NO_FILE
        planned = plan(query, frequency)
        return planned if planned.need is not None else None

    def _plan_cached(self, query: Query) -> tuple[bool, Plan | None]:
        """The same from the cached counts alone, on the event loop (a thread's hand-off and back costs
        more than the plan): (False, None) when a count is not cached."""
        frequencies = self._frequencies

        def frequency(gram: str) -> int:
            count = frequencies.get(gram)
            if count is None:
                raise _Uncached
            return count

        if query is NONE:
            return True, NO_FILE
        try:
            planned = plan(query, frequency)
        except _Uncached:
            return False, None
        return True, (planned if planned.need is not None else None)

    async def choose(
        self,
        shards: list[Shard],
        fresh: Freshness,
        root: Root,
        grep: Narrowing,
        deny: DenyGlobs,
        grep_files: int,
    ) -> GrepFiles | Walk:
        """The files ripgrep reads for this grep under `root` (the gates of the cost model, step 5), or why
        it walks. `deny`: the deny globs and the exclude glob."""
        under = root.start
        # Files changed since indexed, and files with other names (a write through one raises no event
        # for the others): read and judged now, never answered from the index.
        changed = [p for p in fresh.changed if p.startswith(under)]
        changed += [p for p in fresh.linked if p.startswith(under) and p not in fresh.changed]
        if len(changed) > MAX_CHANGED_READ:
            return Walk.TOO_MANY_CHANGED
        low, high = prefix_range(under)
        known, planned = self._plan_cached(grep.query)
        if not known:
            planned = await asyncio.to_thread(self._plan, shards, grep.query)
        limit = int(MAX_CANDIDATE_SHARE * grep_files) + 1  # no lookup reads past this many of one shard
        if planned is None:
            return Walk.NO_LITERALS
        if planned.estimate > limit:
            return Walk.TOO_COMMON  # even the rarest trigram is in too many files: decided without a lookup
        whole = under == b""
        parts = None
        if 0 <= planned.estimate <= AT_ONCE_ESTIMATE and len(changed) <= AT_ONCE_CHANGED:
            parts = _ask_at_once(shards, planned, low, high, changed, whole, limit)
        if parts is None:
            # One thread per shard: the native AND runs without the GIL, so the shards' lookups overlap.
            parts = await asyncio.gather(
                *(asyncio.to_thread(_ask, shard, planned, low, high, changed, whole, limit) for shard in shards)
            )
        if any(part.stopped for part in parts):
            return Walk.TOO_MANY_CANDIDATES  # a lookup stopped at its limit: more candidates than a walk is worth
        total = grep_files if whole else sum(part.files for part in parts)
        found = [hit for part in parts for hit in part.candidates]
        members = set().union(*(part.members for part in parts))
        members |= {p for p in changed if p in fresh.grep_new}
        chosen = {p: kind for p, kind in found if p not in fresh.changed and p not in fresh.linked}
        to_judge = [p for p in changed if p in members]
        if to_judge:
            for p, kind in await asyncio.to_thread(judged, fresh.root, to_judge, grep.query):
                chosen[p] = kind
        if total and len(chosen) > MAX_CANDIDATE_SHARE * total:
            return Walk.TOO_MANY_CANDIDATES
        include = Matcher(root.prefix, b"", grep.include) if grep.include is not None else None
        files = answers.grep_files(root, chosen, include, deny)
        if files is None:
            return Walk.CANNOT_NAME
        if not files.named and not files.walk_to:
            # No candidate. ripgrep's walk fails when it searches no file at all ("No files were
            # searched", exit 2) and finds nothing otherwise: say which, or walk to let it say. Which
            # files are gone is glob's list's to say: its changed entries are made current first.
            fresh.refresh_stats()
            extra = [p for p in fresh.grep_new if p.startswith(under)]
            gone = {p for p, change in fresh.files.overlay.items() if change.mtime is None}

            def any_searched() -> bool:
                every = [extra, *(shard.paths(low, high) for shard in shards)]
                return any(answers.any_searched(paths, gone, root, include, deny) for paths in every)

            if not await asyncio.to_thread(any_searched):
                return Walk.NO_FILE_SEARCHED
        return files


class _Uncached(Exception):
    """A trigram's document count is not cached: the plan is made on a thread."""


class _Part(NamedTuple):
    """One shard's part of a lookup."""

    files: int  # files grep reads under the range (not counted for the whole workspace, which the caller knows)
    candidates: list[tuple[bytes, int]]  # the indexed candidates there, with their kinds
    members: set[bytes]  # which changed paths grep reads
    stopped: bool  # the lookup stopped at its limit of candidates


def _ask_at_once(
    shards: list[Shard], planned: Plan, low: bytes, high: bytes | None, changed: list[bytes], whole: bool, limit: int
) -> list[_Part] | None:
    """Every shard's part of a small lookup, here and now (on the event loop), or None when a shard is
    busy or would read a segment's tables first (then the lookup goes to threads)."""
    with contextlib.ExitStack() as held:
        for shard in shards:
            if not held.enter_context(shard.at_once()):
                return None
        return [_ask(shard, planned, low, high, changed, whole, limit) for shard in shards]


def _ask(
    shard: Shard, planned: Plan, low: bytes, high: bytes | None, changed: list[bytes], whole: bool, limit: int
) -> _Part:
    """One shard's part of the lookup (on a thread)."""
    members = shard.present(changed) if changed else set()
    if planned.need is None:
        return _Part(0, [], members, False)
    found, stopped = shard.candidates(planned.need, low, high, limit)
    if stopped:
        return _Part(0, [], members, True)
    total = 0 if whole else shard.count(low, high)
    return _Part(total, found, members, False)

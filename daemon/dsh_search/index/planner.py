"""The planner: whether the index answers a grep, and with which files.

A grep is answered from the index only when that is both exact and cheaper than ripgrep's walk:

1. `analyse`: the pattern's formula (query/analysis.py) must narrow the files at all, and the include
   glob must be one the index reads exactly as ripgrep does — else the search walks before anything is
   looked up;
2. `Planner.choose`, once the workspace has judged the search's root. The cost model is simple and
   measured: ripgrep reading N named files costs about N / (files under the root) of its walk, and a
   lookup a few milliseconds. So the candidates must be at most `MAX_CANDIDATE_SHARE` of the files
   under the root — decided at once, before any lookup, when even the formula's rarest trigram is in
   more files than that (document counts, cached across searches: microseconds); else measured, by a
   lookup of every trigram's documents that stops as soon as it has found too many. The files changed
   since indexed are read and judged now (at most `MAX_CHANGED_READ` of them), and when there is no
   candidate at all the planner checks that ripgrep's walk would have searched a file (with none,
   ripgrep fails "No files were searched", so the search walks to let it say so).

Every "no" is None: the search walks, and the answer is the walk's. ripgrep decides every match among
the files chosen.

Rules of this module: decisions and thresholds; the reading of shards is shards.py's, the spelling of
the answer answers.py's, what changed freshness.py's.
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.source import GrepFiles
from dsh_search.index import answers
from dsh_search.index.answers import Root
from dsh_search.index.freshness import Freshness
from dsh_search.index.globlist import Matcher, Unsupported, glob_regex
from dsh_search.index.query.analysis import required
from dsh_search.index.query.formula import NONE, Query
from dsh_search.index.query.plan import NO_FILE, Plan, narrows, plan
from dsh_search.index.reading import judged
from dsh_search.index.shards import Shard, prefix_range

# More candidates than this share of the files under the root: walk instead. ripgrep reading half the
# files by name costs about half its walk; the index must never cost more than no index.
MAX_CANDIDATE_SHARE = 0.5
MAX_CHANGED_READ = 4000  # changed files a search reads itself; past it, it walks (the writer catches up)
MAX_FREQUENCIES = 200_000  # trigram document counts cached; past it, the cache starts again


class GrepQuery(NamedTuple):
    query: Query  # what every matching file's text satisfies
    include: bytes | None  # the include glob as a regex over cwd-relative paths (None: no include)


def analyse(pattern: str, include: str | None) -> GrepQuery | None:
    """The grep as the index reads it, or None when the index cannot narrow it exactly."""
    if "\0" in pattern or (include is not None and "\0" in include):
        return None  # no argument can carry a NUL: ripgrep fails to start, as a walk would
    query = required(pattern)
    if not narrows(query):
        return None  # the pattern's literals narrow nothing: walk, without waiting for a build
    include_regex = None
    if include is not None:
        try:
            include_regex = glob_regex(include)
        except Unsupported:
            return None
    return GrepQuery(query, include_regex)


class Planner:
    def __init__(self) -> None:
        self._frequencies: dict[str, int] = {}  # trigram → documents holding it (planning only)

    def forget(self) -> None:
        """Document counts changed (files re-indexed, a new set): plans may pick other trigrams now
        (their results never depend on it)."""
        self._frequencies.clear()

    def _plan(self, shards: list[Shard], query: Query) -> Plan | None:
        """The lookup for `query`, its literals' rarest trigrams chosen by their document counts; None
        when the pattern constrains nothing. Runs on a thread (it asks the shards)."""
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

    async def choose(
        self,
        shards: list[Shard],
        fresh: Freshness,
        root: Root,
        grep: GrepQuery,
        deny: DenyGlobs,
        grep_files: int,
    ) -> GrepFiles | None:
        """The files ripgrep reads for this grep under `root`, or None: walk."""
        under = root.start
        # Files changed since indexed, and files with other names (a write through one raises no event
        # for the others): read and judged now, never answered from the index.
        changed = [p for p in fresh.changed if p.startswith(under)]
        changed += [p for p in fresh.linked if p.startswith(under) and p not in fresh.changed]
        if len(changed) > MAX_CHANGED_READ:
            return None
        low, high = prefix_range(under)
        planned = await asyncio.to_thread(self._plan, shards, grep.query)
        limit = int(MAX_CANDIDATE_SHARE * grep_files) + 1  # no lookup reads past this many of one shard
        if planned is None or planned.estimate > limit:
            return None  # even the rarest trigram is in too many files: decided without a lookup
        whole = under == b""
        parts = await asyncio.gather(
            *(asyncio.to_thread(_ask, shard, planned, low, high, changed, whole, limit) for shard in shards)
        )
        if any(part[3] for part in parts):
            return None  # a lookup stopped at its limit: more candidates than a walk is worth
        total = grep_files if whole else sum(part[0] for part in parts)
        found = [hit for part in parts for hit in part[1]]
        members = set().union(*(part[2] for part in parts))
        members |= {p for p in changed if p in fresh.grep_new}
        chosen = {p: kind for p, kind in found if p not in fresh.changed and p not in fresh.linked}
        for p, kind in await asyncio.to_thread(judged, fresh.root, [p for p in changed if p in members], grep.query):
            chosen[p] = kind
        if total and len(chosen) > MAX_CANDIDATE_SHARE * total:
            return None
        include = Matcher(root.prefix, b"", grep.include) if grep.include is not None else None
        files = answers.grep_files(root, chosen, include, deny)
        if files is not None and not files.named and not files.walk_to:
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
                return None
        return files


def _ask(
    shard: Shard, planned: Plan, low: bytes, high: bytes | None, changed: list[bytes], whole: bool, limit: int
) -> tuple[int, list[tuple[bytes, int]], set[bytes], bool]:
    """One shard's part: (files grep reads under the range — not counted for the whole workspace, which
    the caller knows —, the indexed candidates there, which changed paths grep reads, whether the lookup
    stopped at `limit` candidates)."""
    members = shard.present(changed) if changed else set()
    if planned.need is None:
        return 0, [], members, False
    found, stopped = shard.candidates(planned.need, low, high, limit)
    if stopped:
        return 0, [], members, True
    total = 0 if whole else shard.count(low, high)
    return total, found, members, False

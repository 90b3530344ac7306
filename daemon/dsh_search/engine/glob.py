"""The `glob` tool: find files by glob pattern, oldest first by modification time
(docs/behaviour.md, "Glob").

a `GlobQuery` (engine/request.py, checked at the method face) → argv → rg --files (parallel,
NUL-separated) → stat + sort by (mtime, path) → display paths → the page with its footer + meta + the
complete list handed to the spill store.

Upstream sorts with `--sort=modified`, which makes ripgrep walk single-threaded and leaves ties in
directory order. We let ripgrep list in parallel with `--null` (a newline in a file name stays one
entry), stat the files on a worker thread while ripgrep is still walking, and sort by (mtime, path
bytes): deterministic, and as fast as ripgrep's own sorted listing on large trees (see scripts/bench).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from typing import NamedTuple

from dsh_search import osdep, texts
from dsh_search.engine.batches import Batches
from dsh_search.engine.failures import SEARCH_RAW_OUTPUT_OVERFLOW, ToolError
from dsh_search.engine.jscompat import utf8_growth
from dsh_search.engine.paths import DenyCheck, DenyGlobs, cwd_relative, decode
from dsh_search.engine.presentation import glob_meta
from dsh_search.engine.request import GlobQuery
from dsh_search.engine.run import (
    RgResult,
    SearchResult,
    bounded,
    check_decoded_size,
    preflight,
    problems_suffix,
    run_rg,
)
from dsh_search.engine.sampling import sample_across_top_level
from dsh_search.engine.scope import Scope, Where, locate
from dsh_search.engine.searcher import Searcher, Tally
from dsh_search.engine.source import GlobFiles
from dsh_search.engine.spill import SpillRef, save

TOOL = "glob"
VCS_DIRS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")
# What ripgrep writes after each path it lists (`--null`): what glob's progress counts.
PATH_END = b"\0"


def build_argv(query: GlobQuery, deny: DenyGlobs, walk_threads: int) -> list[str]:
    """Upstream's argv (after `--no-config`), with `--null` in place of `--sort=modified`, and a thread
    count that leaves one CPU to the stat worker: the one place glob's ripgrep flags are spelled."""
    argv = ["--files", f"--glob={query.pattern}", "--null", "--no-ignore", "--hidden", f"--threads={walk_threads}"]
    for name in VCS_DIRS:
        argv += [f"--glob=!**/{name}", f"--glob=!**/{name}/**"]
    argv += deny.rg_args()
    if query.path is not None:
        argv += ["--", query.path]
    return argv


class StatBatch(NamedTuple):
    stats: list[tuple[int, str]]  # (mtime_ns, path)
    utf8: bool  # every name was UTF-8
    growth: int  # bytes the batch gains decoded with U+FFFD replacements (jscompat.utf8_growth)


def _stat_batch(cwd: str, blob: bytes) -> StatBatch:
    """(mtime_ns, path), sorted, for each NUL-separated path of blob that still exists. Paths are decoded
    once per batch; a non-UTF-8 name is kept with surrogate escapes, which stat understands. A file that
    vanished since rg listed it is no longer a result (its name still counted towards the output size)."""
    try:
        text, utf8, growth = blob.decode("utf-8"), True, 0
    except UnicodeDecodeError:
        text, utf8, growth = blob.decode("utf-8", "surrogateescape"), False, utf8_growth(blob)
    out = []
    with osdep.stat_at(cwd) as stat:
        for path in text.split("\0"):
            try:
                out.append((stat(path).st_mtime_ns, path))
            except OSError:
                continue
    if utf8:
        out.sort()  # sorted runs make the final sort a cheap merge
    return StatBatch(out, utf8, growth)


async def ordered_paths(batches: Batches[StatBatch], cwd: str, deny: DenyCheck | None) -> list[str]:
    """Display paths, oldest first, ties broken by path bytes: ripgrep's listing stat-ed and sorted."""
    keyed: list[tuple[int, str]] = []
    all_utf8 = True
    for stats, utf8, _growth in await batches.results():
        keyed.extend(stats)
        all_utf8 = all_utf8 and utf8
    if all_utf8:
        keyed.sort()  # code point order is UTF-8 byte order; the batches are sorted runs
        paths = [path for _, path in keyed]
    else:
        keyed.sort(key=lambda item: (item[0], os.fsencode(item[1])))
        paths = [decode(os.fsencode(path)) for _, path in keyed]
    return shown(paths, cwd, deny)


def shown(paths: list[str], cwd: str, deny: DenyCheck | None) -> list[str]:
    """Listed paths (oldest first) as the model sees them: workdir-relative, denied ones left out."""
    if paths and os.path.isabs(paths[0]):  # rg prefixes every path with the root as written
        paths = [cwd_relative(p, cwd) for p in paths]
    if deny is not None:
        paths = [p for p in paths if not deny.denies(p)]
    return paths


def joined(items: list[str], separator: str, per_piece: int = 4096) -> Iterator[str]:
    """`separator.join(items)`, in pieces of `per_piece` items: a listing of 500,000 paths is written
    without a 15 MB string (and its 15 MB encoding) alongside the list."""
    for start in range(0, len(items), per_piece):
        yield (separator if start else "") + separator.join(items[start : start + per_piece])


class Page(NamedTuple):
    text: str
    shown: list[str]
    truncated: bool


class Selection(NamedTuple):
    """The paths a page shows, and how they were chosen (what the footer says)."""

    shown: list[str]
    total: int
    groups: tuple[int, int] | None  # (groups shown, groups in all) when sampled across top-level entries


def select(paths: list[str], *, root: str, max_results: int, sample: bool) -> Selection:
    """The page's paths: all of them, the first `max_results`, or a sample across top-level entries."""
    if len(paths) <= max_results:
        return Selection(paths, len(paths), None)
    if sample:
        sampled = sample_across_top_level(paths, max_results, root, os.sep)
        if sampled.total_groups != len(paths):  # not "flat": every path its own group
            return Selection(sampled.items, len(paths), (sampled.shown_groups, sampled.total_groups))
    return Selection(paths[:max_results], len(paths), None)


def page_of(selection: Selection, spill: SpillRef | None) -> Page:
    """The page's text: its paths and, when capped, the footer naming the saved complete list."""
    shown, total = selection.shown, selection.total
    if not total:
        return Page(texts.GLOB_NO_FILES, [], False)
    if len(shown) == total:
        return Page("\n".join(shown), shown, False)
    recovery = texts.glob_recovery_saved(spill.locator, spill.retrieval_hint) if spill else texts.GLOB_RECOVERY_UNSAVED
    if selection.groups is None:
        footer = texts.glob_footer_plain(len(shown), total, recovery)
    else:
        footer = texts.glob_footer_sampled(len(shown), total, *selection.groups, recovery)
    return Page("\n".join(shown) + "\n\n" + footer, shown, True)


def render(paths: list[str], *, root: str, max_results: int, sample: bool, spill: SpillRef | None) -> Page:
    return page_of(select(paths, root=root, max_results=max_results, sample=sample), spill)


async def _list(searcher: Searcher, query: GlobQuery, where: Where, tally: Tally | None) -> tuple[list[str], RgResult]:
    if searcher.source is not None:
        listing = await searcher.source.glob(where.cwd, query, searcher.deny_globs)
        if listing is not None:
            return _listed(searcher, listing, where, tally)
        if tally is not None:
            tally.note = searcher.source.walk_note(where.cwd)
    cwd = where.cwd
    # Batches of 16 KiB (about 500 paths), not the default 64 KiB: a listing of a few thousand paths
    # would otherwise be stat-ed only once rg has exited (glob `*` in the kernel's fs/: 18 -> 12 ms).
    batches = Batches(
        b"\0",
        lambda blob: _stat_batch(cwd, blob),
        searcher.workers.stat,
        growth=lambda batch: batch.growth,
        min_bytes=1 << 14,
    )
    sink = batches.feed if tally is None else tally.counting(batches.feed, PATH_END)
    argv = build_argv(query, searcher.deny_globs, searcher.walk_threads)
    started = time.monotonic()
    try:
        result = await run_rg(
            searcher, TOOL, argv, where, lambda _: batches.any_data(), sink=sink, tally=tally,
            on_overflow=batches.cancel,
        )  # fmt: skip
        if searcher.source is not None:
            searcher.source.note_walk(where.cwd, time.monotonic() - started)
        await check_decoded_size(TOOL, result, batches, searcher.config.raw_output_max_bytes)
    except BaseException:  # failed, over the cap, timed out or cancelled: nothing will read the batches
        batches.cancel()
        raise
    if result.no_matches:
        return [], result
    return await ordered_paths(batches, cwd, where.deny), result


def _listed(searcher: Searcher, listing: GlobFiles, where: Where, tally: Tally | None) -> tuple[list[str], RgResult]:
    """A listing the file source made, judged as ripgrep's own would be: the same launch checks, the same
    raw-output caps, the same display paths — without ripgrep walking the tree."""
    if tally is not None:
        tally.searching = True
    if preflight(TOOL, where):
        return [], RgResult(b"", no_matches=True, unreadable=0)
    cap = searcher.config.raw_output_max_bytes
    if listing.stdout_bytes > cap:  # ripgrep would have been stopped at the cap
        raise ToolError(SEARCH_RAW_OUTPUT_OVERFLOW, texts.raw_output_overflow(TOOL, cap))
    if listing.stdout_bytes + listing.growth > cap:
        raise ToolError(
            SEARCH_RAW_OUTPUT_OVERFLOW, texts.raw_output_over_cap(TOOL, listing.stdout_bytes + listing.growth, cap)
        )
    if tally is not None:
        tally.items = len(listing.paths)
    result = RgResult(b"", no_matches=not listing.paths, unreadable=0, stdout_bytes=listing.stdout_bytes)
    return shown(listing.paths, where.cwd, where.deny), result


async def glob(searcher: Searcher, query: GlobQuery, scope: Scope, tally: Tally | None = None) -> SearchResult:
    """Files matching the query's pattern, oldest first: the page, its meta, and the complete list saved
    when it is over globMaxResults. `query` was checked at the method face (request.check_glob)."""
    where = locate(searcher, scope, query.cwd, query.path)
    config = searcher.config
    paths, result = await bounded(config, TOOL, _list(searcher, query, where, tally))
    root = "." if query.path is None else cwd_relative(query.path, where.cwd)
    saving = None
    if len(paths) > config.glob_max_results:
        # The complete list is written (and synced) on a thread while the page's paths are chosen here.
        saving = asyncio.ensure_future(
            save(searcher.spill, query.session_id, texts.GLOB_SPILL_NAME, joined(paths, "\n"))
        )
    selection = select(
        paths, root=root, max_results=config.glob_max_results, sample=config.sample_over_cap_glob_results
    )
    spill = await saving if saving is not None else None
    page = page_of(selection, spill)
    meta = glob_meta(page.shown, page.truncated, len(paths), config.search_meta_max_bytes)
    partial = len(paths) > config.glob_max_results
    return SearchResult(page.text + problems_suffix(result), meta, spill, found=len(paths), partial=partial)

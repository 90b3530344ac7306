"""The `grep` tool: ripgrep regex search grouped by file as `Line N: …` (docs/behaviour.md, "Grep").

A `GrepQuery` (engine/request.py), checked at the method face, goes along grep's jobs, one module each:

    locate (scope.py) → the files: the source's (the index) or ripgrep's walk
      → argv.py: the query as ripgrep's argv, the one place its flags are spelled
      → matching lines (outputMode content, upstream's):
          standard.py: ripgrep's standard printer, read by standard_parse.py on a worker while it searches
          └─ unsure of anything → json.py: upstream's --json, read by json_parse.py
        with context lines or multiline matches (extended): json.py, read by json_parse.parse_blocks
        files or counts (extended): listing.py
      → page.py: files by display path, lines by number; the page (offset, limit), its header and footer,
        the spill artifact's pieces
      → presentation.py: the meta; the complete result handed to the spill store when it is not all shown

ripgrep decides every match; whichever printer was read, the result is what upstream's --json reading
gives (the standard printer's reading says Unsure whenever it cannot promise that).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from dsh_search import texts
from dsh_search.engine.grep import argv, json, json_parse, listing, page, standard
from dsh_search.engine.grep.page import Section
from dsh_search.engine.presentation import count_meta, glob_meta, grep_meta
from dsh_search.engine.request import GrepQuery, OutputMode
from dsh_search.engine.run import RgResult, SearchResult, bounded, problems_suffix
from dsh_search.engine.scope import Scope, Where, locate
from dsh_search.engine.searcher import Searcher, Tally
from dsh_search.engine.source import GrepFiles
from dsh_search.engine.spill import save

log = logging.getLogger("dsh_search.search")

TOOL = "grep"


async def grep(searcher: Searcher, query: GrepQuery, scope: Scope, tally: Tally | None = None) -> SearchResult:
    """The query's page — matching lines grouped by file (outputMode content, upstream's), the files that
    match (files), or each with its count (count) — its meta, and the complete result saved when the
    page does not show all of it. `query` was checked at the method face (request.check_grep)."""
    where = locate(searcher, scope, query.cwd, query.path)
    config = searcher.config
    if query.output_mode != OutputMode.CONTENT:
        listed, result = await bounded(config, TOOL, _search(searcher, query, where, tally, _listing))
        return await _listing_result(searcher, query, listed, result)
    if query.multiline or any(query.context_lines):
        blocks, result = await bounded(config, TOOL, _search(searcher, query, where, tally, _blocks))
        return await _blocks_result(searcher, query, blocks, result)
    files, result = await bounded(config, TOOL, _search(searcher, query, where, tally, _lines))
    total = sum(f.matches for f in files)
    count = config.grep_max_matches if query.limit is None else query.limit
    spill = None
    partial = total > count or 0 < query.offset < total  # the page does not hold the complete result
    if partial:
        spill = await save(
            searcher.spill, query.session_id, texts.GREP_SPILL_NAME, page.spill_pieces(texts.grep_found(total), files)
        )
    shown = page.render(files, max_matches=config.grep_max_matches, spill=spill, offset=query.offset, limit=query.limit)
    meta = grep_meta(shown.shown, shown.truncated, total, config.search_meta_max_bytes)
    text = shown.text + problems_suffix(result)
    return SearchResult(text, meta, spill, found=total, files=len(files), partial=partial)


async def _blocks_result(
    searcher: Searcher, query: GrepQuery, blocks: list[page.Block], result: RgResult
) -> SearchResult:
    """Matches with their context lines, or spanning lines: paged by match, each with the lines of context
    ripgrep printed around it."""
    config = searcher.config
    total = sum(len(b.starts) for b in blocks)
    count = config.grep_max_matches if query.limit is None else query.limit
    spill = None
    partial = total > count or 0 < query.offset < total
    if partial:
        spill = await save(
            searcher.spill,
            query.session_id,
            texts.GREP_SPILL_NAME,
            page.spill_pieces(texts.grep_found(total), page.block_sections(blocks)),
        )
    sections, shown = page.block_page(blocks, query.offset, count, query.context_lines)
    text = page.compose(
        sections,
        shown,
        total,
        len(shown),
        spill=spill,
        offset=query.offset,
        limit=query.limit,
        cap=config.grep_max_matches,
    )
    meta = grep_meta(text.shown, text.truncated, total, config.search_meta_max_bytes)
    files = len({b.path for b in blocks if b.starts})
    return SearchResult(text.text + problems_suffix(result), meta, spill, found=total, files=files, partial=partial)


async def _listing_result(
    searcher: Searcher, query: GrepQuery, listed: listing.Listed, result: RgResult
) -> SearchResult:
    """The files that match, or each with its count: one entry a file, paged by file."""
    config = searcher.config
    files = listed.files
    total = len(files)
    count = config.grep_max_matches if query.limit is None else query.limit
    counts = listed.counts
    header = texts.grep_found_files(total) if counts is None else texts.grep_found_counts(listed.matches, total)
    spill = None
    partial = total > count or 0 < query.offset < total
    if partial:
        pieces = page.spill_pieces(header, files, separator="\n")
        spill = await save(searcher.spill, query.session_id, texts.GREP_SPILL_NAME, pieces)
    shown_files = files[query.offset : query.offset + count]
    text = page.compose(
        shown_files,
        [],
        total,
        len(shown_files),
        spill=spill,
        offset=query.offset,
        limit=query.limit,
        cap=config.grep_max_matches,
        unit=page.FILE,
        matches=None if counts is None else listed.matches,
    )
    paths = [f.path for f in shown_files]
    cap = config.search_meta_max_bytes
    if counts is None:
        meta = glob_meta(paths, text.truncated, total, cap)
    else:
        meta = count_meta(
            paths, counts[query.offset : query.offset + count], text.truncated, total, listed.matches, cap
        )
    found = None if counts is None else listed.matches  # outputMode files: ripgrep stops at a file's first match
    return SearchResult(text.text + problems_suffix(result), meta, spill, found=found, files=total, partial=partial)


Found = TypeVar("Found")
# One way of running ripgrep for a grep: (searcher, query, the source's files or None, where, tally).
Runner = Callable[[Searcher, GrepQuery, GrepFiles | None, Where, Tally | None], Awaitable[tuple[Found, RgResult]]]


async def _search(
    searcher: Searcher, query: GrepQuery, where: Where, tally: Tally | None, runner: Runner[Found]
) -> tuple[Found, RgResult]:
    """Ask the file source which files ripgrep reads (None: it walks), then run ripgrep with `runner`.
    The source learns how long a walk took."""
    source = searcher.source
    chosen = None if source is None else await source.grep(where.cwd, query, searcher.deny_globs)
    if chosen is not None and chosen.holds is not None:
        held = await _held(chosen.holds, runner(searcher, query, chosen, where, tally))
        if held is not None:
            return held
        log.debug("grep: the file source's answer no longer held once ripgrep ran with it; ripgrep walks")
        if tally is not None:
            tally.items = tally.files = 0
        return await runner(searcher, query, None, where, tally)
    if chosen is None and tally is not None and source is not None:
        tally.note = source.walk_note(where.cwd)  # ripgrep walks; a progress note says why
    started = time.monotonic()
    found, result = await runner(searcher, query, chosen, where, tally)
    if chosen is None and source is not None:
        source.note_walk(where.cwd, time.monotonic() - started)
    return found, result


async def _held(holds: Callable[[], bool], run: Awaitable[tuple[Found, RgResult]]) -> tuple[Found, RgResult] | None:
    """`run` (ripgrep over the source's files), with the source's last check made while it runs: its
    result, or None when the check said the files no longer hold (the run is stopped, its ripgrep ended)."""
    task = asyncio.ensure_future(run)
    await asyncio.sleep(0)  # the run starts: it hands ripgrep's spawn to the thread that owns the child
    try:
        ok = holds()
    except Exception:  # a bug of the source's must cost speed, never an answer: ripgrep walks
        log.exception("grep: the file source's last check failed; ripgrep walks")
        ok = False
    except BaseException:
        task.cancel()
        await asyncio.wait([task])
        raise
    if ok:
        return await task  # a cancel of this search cancels the run with it
    task.cancel()
    await asyncio.wait([task])  # never raises what the run raised; a cancel of this search still ends here
    if not task.cancelled():
        task.exception()  # retrieved: the run's own failure does not matter, its answer is not read
    return None


async def _lines(
    searcher: Searcher, query: GrepQuery, chosen: GrepFiles | None, where: Where, tally: Tally | None
) -> tuple[list[Section], RgResult]:
    """Matching lines: ripgrep's standard printer first, --json when that reading is unsure."""
    deny = searcher.deny_globs
    threads = searcher.walk_threads + 1
    if standard.reads_standard_output(searcher.config):
        run = standard.StandardRun(searcher, query, where, tally)
        try:
            files, result = await run.run(argv.search(query, argv.STANDARD, deny, chosen, threads=threads))
            if run.straddled is not None and not await run.measure(
                lambda named: argv.search(query, argv.JSON, deny, named, threads=threads), walked=chosen is None
            ):
                raise standard.Unsure("the raw-output cap lies within a few bytes of --json's size, or it moved")
        except standard.Unsure as why:  # ripgrep searched; --json must say what it found
            log.debug("grep: reading ripgrep's --json instead of its standard output: %s", why)
            if tally is not None:
                tally.items = tally.files = 0
        else:
            return _allowed(files, where), result
    files, result = await json.run(searcher, argv.search(query, argv.JSON, deny, chosen, threads=threads), where, tally)
    return _allowed(files, where), result


async def _blocks(
    searcher: Searcher, query: GrepQuery, chosen: GrepFiles | None, where: Where, tally: Tally | None
) -> tuple[list[page.Block], RgResult]:
    """Matches with context lines, or spanning lines: --json's match and context records."""
    cwd, cap = where.cwd, searcher.config.grep_max_line_bytes
    blocks, result = await json.run(
        searcher,
        argv.search(query, argv.JSON, searcher.deny_globs, chosen, threads=searcher.walk_threads + 1),
        where,
        tally,
        parse=lambda blob: json_parse.parse_blocks(blob, cwd, cap),
        collect=lambda parts: page.ordered_blocks([part.blocks for part in parts]),
    )
    deny = where.deny
    return ([b for b in blocks if not deny.denies(b.path)] if deny is not None else blocks), result


async def _listing(
    searcher: Searcher, query: GrepQuery, chosen: GrepFiles | None, where: Where, tally: Tally | None
) -> tuple[listing.Listed, RgResult]:
    """The files with matches (and their counts)."""
    printer = argv.LISTINGS[query.output_mode]
    listed, result = await listing.run(
        searcher,
        argv.search(query, printer, searcher.deny_globs, chosen, threads=searcher.walk_threads + 1),
        where,
        tally,
        query.output_mode == OutputMode.COUNT,
    )
    deny = where.deny
    if deny is None:
        return listed, result
    kept = [i for i, f in enumerate(listed.files) if not deny.denies(f.path)]
    counts = None if listed.counts is None else [listed.counts[i] for i in kept]
    files = [listed.files[i] for i in kept]
    return listing.Listed(files, counts, len(files) if counts is None else sum(counts)), result


def _allowed(files: list[Section], where: Where) -> list[Section]:
    if where.deny is None:
        return files
    deny = where.deny
    return [f for f in files if not deny.denies(f.path)]

"""The `grep` tool: ripgrep regex search grouped by file as `Line N: …` (docs/behaviour.md, "Grep").

A `GrepQuery` (engine/request.py), checked at the method face, goes along grep's jobs, one module each:

    locate (scope.py) → the files: the source's (the index) or ripgrep's walk
      → argv.py: the query as ripgrep's argv, the one place its flags are spelled
      → standard.py: ripgrep's standard printer, read by standard_parse.py on a worker while it searches
          └─ unsure of anything → json.py: upstream's --json, read by json_parse.py
      → page.py: files by display path, lines by number; the page, its footer, the spill artifact's pieces
      → presentation.py: the meta; the complete result handed to the spill store when it is not all shown

ripgrep decides every match; whichever printer was read, the result is what upstream's --json reading
gives (the standard printer's reading says Unsure whenever it cannot promise that).
"""

from __future__ import annotations

import logging
import time

from dsh_search import texts
from dsh_search.engine.grep import argv, json, page, standard
from dsh_search.engine.grep.page import Section
from dsh_search.engine.presentation import grep_meta
from dsh_search.engine.request import GrepQuery
from dsh_search.engine.run import RgResult, SearchResult, bounded, problems_suffix
from dsh_search.engine.scope import Scope, Where, locate
from dsh_search.engine.searcher import Searcher, Tally
from dsh_search.engine.spill import save

log = logging.getLogger("dsh_search.search")

TOOL = "grep"


async def grep(searcher: Searcher, query: GrepQuery, scope: Scope, tally: Tally | None = None) -> SearchResult:
    """Lines matching the query, grouped by file: the page, its meta, and the complete result saved when
    the page does not show all of it. `query` was checked at the method face (request.check_grep)."""
    where = locate(searcher, scope, query.cwd, query.path)
    config = searcher.config
    files, result = await bounded(config, TOOL, _search(searcher, query, where, tally))
    total = sum(f.matches for f in files)
    spill = None
    if total > config.grep_max_matches:
        spill = await save(
            searcher.spill, query.session_id, texts.GREP_SPILL_NAME, page.spill_pieces(texts.grep_found(total), files)
        )
    shown = page.render(files, max_matches=config.grep_max_matches, spill=spill)
    meta = grep_meta(shown.shown, shown.truncated, total, config.search_meta_max_bytes)
    return SearchResult(shown.text + problems_suffix(result), meta, spill)


async def _search(
    searcher: Searcher, query: GrepQuery, where: Where, tally: Tally | None
) -> tuple[list[Section], RgResult]:
    """The files with matches, sorted, and ripgrep's result: from the files the source chose, or from
    ripgrep's walk. ripgrep's standard printer is read first, --json when that reading is unsure."""
    source = searcher.source
    chosen = None if source is None else await source.grep(where.cwd, query, searcher.deny_globs)
    if chosen is None and tally is not None and source is not None:
        tally.note = source.walk_note(where.cwd)  # ripgrep walks; a progress note says why
    started = time.monotonic()

    def walked() -> None:
        """The source learns how long a walk took (ripgrep's first run: its search)."""
        nonlocal source
        if chosen is None and source is not None:
            source.note_walk(where.cwd, time.monotonic() - started)
        source = None

    deny = searcher.deny_globs
    if standard.reads_standard_output(searcher.config):
        try:
            files, result = await standard.StandardRun(searcher, query, where, tally).run(
                argv.search(query, argv.STANDARD, deny, chosen)
            )
        except standard.Unsure as why:  # ripgrep searched; --json must say what it found
            walked()
            log.debug("grep: reading ripgrep's --json instead of its standard output: %s", why)
            if tally is not None:
                tally.items = tally.files = 0
        else:
            walked()
            return _allowed(files, where), result
    files, result = await json.run(searcher, argv.search(query, argv.JSON, deny, chosen), where, tally)
    walked()
    return _allowed(files, where), result


def _allowed(files: list[Section], where: Where) -> list[Section]:
    if where.deny is None:
        return files
    deny = where.deny
    return [f for f in files if not deny.denies(f.path)]

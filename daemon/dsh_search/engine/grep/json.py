"""grep reading ripgrep's `--json`, upstream's own reading: the fallback when the standard printer's reading
is unsure (standard.py), and the way of an extended search whose lines the standard printer does not
print as standard_parse.py reads them (context lines, multiline matches: json_parse.py's `Records`).

Batches of whole records are parsed on the worker while ripgrep searches (`Batches`); once the stream
is complete, upstream's second raw-output check judges its decoded size (run.check_decoded_size).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsh_search.engine.batches import Batches
from dsh_search.engine.grep.json_parse import MATCH_TYPE, parse_batch, sections
from dsh_search.engine.grep.page import ordered
from dsh_search.engine.run import RgResult, check_decoded_size, run_rg
from dsh_search.engine.scope import Where
from dsh_search.engine.searcher import Searcher, Tally

TOOL = "grep"
# The --json records grep's progress counts: one per matching line, and one `begin` per file with matches.
MATCH_RECORD = b'{"type":"match"'
BEGIN_RECORD = b'{"type":"begin"'


async def run(
    searcher: Searcher,
    argv: list[str | bytes],
    where: Where,
    tally: Tally | None,
    parse: Callable[[bytes], Any] | None = None,
    collect: Callable[[list[Any]], Any] | None = None,
) -> tuple[Any, RgResult]:
    """One grep run reading --json: the files' sections, in order, and the run's result. `parse` reads a
    batch on the worker (json_parse.parse_batch by default: matches only), `collect` turns the parsed
    batches into the result (sorted sections by default)."""
    cwd = where.cwd
    cap = searcher.config.grep_max_line_bytes
    batches = Batches(
        b"\n",
        parse or (lambda blob: parse_batch(blob, cwd, cap)),
        searcher.workers.parse,
        growth=lambda batch: batch.growth,
    )
    batches.watch(MATCH_TYPE)
    sink = batches.feed if tally is None else tally.counting(batches.feed, MATCH_RECORD, BEGIN_RECORD)
    try:
        result = await run_rg(
            searcher, TOOL, argv, where, lambda _: batches.saw(MATCH_TYPE), sink=sink, tally=tally,
            on_overflow=batches.cancel,
        )  # fmt: skip
        await check_decoded_size(TOOL, result, batches, searcher.config.raw_output_max_bytes)
    except BaseException:  # failed, over the cap, timed out or cancelled: nothing will read the batches
        batches.cancel()
        raise
    if result.no_matches:
        return (collect([]) if collect is not None else []), result
    parts = await batches.results()
    if collect is not None:
        return collect(parts), result
    return ordered([sections(part.files, cap) for part in parts]), result

"""The extended profile's listings: `outputMode` files (ripgrep's `--files-with-matches`) and count
(ripgrep's `--count`), each path ended by a NUL, so that a name holding a newline stays one entry.

ripgrep decides which files match and how many matches each holds (`--count`: matching lines; in
multiline mode, ripgrep counts its matches); a file is one entry of the listing, shown as its display
path (`files`) or `<path>: <count>` (`count`), sorted by display path. The raw-output cap is judged on
ripgrep's own output (no `--json` is read): past it, ripgrep is stopped and the search fails as any
other does.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from dsh_search import texts
from dsh_search.engine.failures import SEARCH_FAILED, ToolError
from dsh_search.engine.grep.page import Section
from dsh_search.engine.paths import cwd_relative, decode
from dsh_search.engine.run import RgResult, run_rg
from dsh_search.engine.scope import Where
from dsh_search.engine.searcher import Searcher, Tally

TOOL = "grep"
PATH_END = b"\0"  # after each path ripgrep lists: what progress counts
_COUNTED = re.compile(rb"([^\0]*)\0([0-9]+)\n")


class Listed(NamedTuple):
    """A listing, sorted: one section per file (its text the line shown), and the matches they hold."""

    files: list[Section]
    counts: list[int] | None  # each file's count (count mode), else None
    matches: int  # the sum of the counts (count mode), else the number of files


async def run(
    searcher: Searcher, argv: list[str | bytes], where: Where, tally: Tally | None, counted: bool
) -> tuple[Listed, RgResult]:
    """One run of ripgrep listing files (`counted`: with their counts), read once it has ended."""
    chunks: list[bytes] = []
    sink = chunks.append if tally is None else tally.counting(chunks.append, PATH_END, PATH_END)
    result = await run_rg(searcher, TOOL, argv, where, lambda _: bool(chunks), sink=sink, tally=tally)
    stdout = b"".join(chunks)
    if result.no_matches or not stdout:
        return Listed([], [] if counted else None, 0), result
    return (read_counts(stdout, where.cwd) if counted else read_files(stdout, where.cwd)), result


def read_files(stdout: bytes, cwd: str) -> Listed:
    """`<path>\\0…` → the files, sorted by display path."""
    if not stdout.endswith(PATH_END):
        raise ToolError(SEARCH_FAILED, texts.malformed_listing(TOOL))
    paths = sorted({cwd_relative(decode(raw), cwd) for raw in stdout[:-1].split(PATH_END)})
    return Listed([Section(path, 1, path) for path in paths], None, len(paths))


def read_counts(stdout: bytes, cwd: str) -> Listed:
    """`<path>\\0<count>\\n…` → the files and their counts, sorted by display path."""
    found: dict[str, int] = {}
    end = 0
    for record in _COUNTED.finditer(stdout):
        if record.start() != end:
            break
        path = cwd_relative(decode(record.group(1)), cwd)
        found[path] = found.get(path, 0) + int(record.group(2))
        end = record.end()
    if end != len(stdout):
        raise ToolError(SEARCH_FAILED, texts.malformed_listing(TOOL))
    paths = sorted(found)
    counts = [found[p] for p in paths]
    return Listed(
        [Section(p, 1, texts.count_line(p, n)) for p, n in zip(paths, counts, strict=True)], counts, sum(counts)
    )

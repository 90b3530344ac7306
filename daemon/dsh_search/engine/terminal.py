"""The `terminal_search` tool: find lines in a terminal's retained output, newest first.

A literal search (the default) is a substring scan of the buffer in the daemon; a regex search
(`regex: true`) runs the ripgrep sidecar over the retained text on stdin, so a model's pattern is only
ever matched by ripgrep's linear-time engine, within timeoutMs and a search slot like every rg run.
Matches carry terminal_read's newest-relative offsets (docs/terminal.md). The search runs over a
snapshot taken before the first `await`, so it sees every append sent before it.
"""

from __future__ import annotations

from array import array
from typing import Any, NamedTuple, Protocol

from dsh_search import texts
from dsh_search.engine.failures import invalid_args
from dsh_search.engine.run import bounded, run_rg
from dsh_search.engine.scope import Where
from dsh_search.engine.searcher import Searcher, Tally

TOOL = "terminal_search"


class Retained(Protocol):
    """A terminal's retained output as of one moment (store/scrollback.py's `Snapshot`)."""

    @property
    def data(self) -> bytes:
        """The retained text, UTF-8, lines separated by `\\n`."""
        ...

    @property
    def breaks(self) -> array[int]:
        """The position of each line break in `data`."""
        ...

    @property
    def truncated(self) -> bool:
        """Older output was dropped."""
        ...

    @property
    def total_lines(self) -> int: ...

    def line(self, index: int) -> str: ...

    def line_at(self, position: int) -> int: ...


# --- matching over a snapshot (pure) ---------------------------------------------------------------------


def literal_matches(snap: Retained, pattern: str) -> list[int]:
    """Chronological indices of the lines containing `pattern` (non-empty, no line break), oldest first."""
    needle = pattern.encode("utf-8")
    data, breaks = snap.data, snap.breaks
    found: list[int] = []
    at = data.find(needle)
    while at != -1:
        index = snap.line_at(at)
        found.append(index)
        if index >= len(breaks):
            break
        at = data.find(needle, breaks[index] + 1)
    return found


def rg_args(pattern: str) -> list[str]:
    """ripgrep argv (after `--no-config`) that reports the numbers of matching lines of stdin."""
    return [
        "--text",
        "--line-number",
        "--no-filename",
        "--color=never",
        "--max-columns=1",  # print "N:[Omitted long matching line]" rather than the line itself
        f"--regexp={pattern}",
        "-",
    ]


def rg_stdin(snap: Retained) -> bytes:
    """The text for ripgrep: every segment, the empty newest one included, is one line to rg."""
    return snap.data + b"\n"


def rg_matches(stdout: bytes, total_lines: int) -> list[int]:
    """Chronological indices from ripgrep's `N:…` lines (1-based N), oldest first."""
    found = []
    for row in stdout.split(b"\n"):
        number, colon, _ = row.partition(b":")
        if colon and number.isdigit() and 1 <= int(number) <= total_lines:
            found.append(int(number) - 1)
    return found


class SearchPage(NamedTuple):
    text: str
    matches: list[dict[str, Any]]  # {offset, line}, newest first, as shown in text
    match_count: int
    total_lines: int
    truncated: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "matches": self.matches,
            "matchCount": self.match_count,
            "totalLines": self.total_lines,
            "truncated": self.truncated,
        }


def render_search(snap: Retained, indices: list[int], offset: int, limit: int, max_bytes: int) -> SearchPage:
    """One page of matches, newest first, as `[offset N] <line>` lines and the summary line.

    `indices` are the matching lines' chronological indices, oldest first. The text is kept within
    `max_bytes` (UTF-8) by dropping whole match lines from the end of the page; the summary line is
    always there, even when it alone is over the bound.
    """
    total = snap.total_lines
    count = len(indices)
    page = (indices[count - 1 - k] for k in range(offset, min(count, offset + limit)))
    shown: list[dict[str, Any]] = []
    rendered: list[str] = []
    used = 0  # bytes of the rendered match lines, each with its "\n"
    for index in page:
        line = snap.line(index)
        row = texts.terminal_match_line(total - 1 - index, line)
        size = len(row.encode("utf-8")) + 1
        summary = texts.terminal_summary(len(shown) + 1, count, total)
        if used + size + len(summary.encode("utf-8")) > max_bytes:
            break
        used += size
        rendered.append(row)
        shown.append({"offset": total - 1 - index, "line": line})
    summary = texts.terminal_summary(len(shown), count, total)
    if count == 0:
        rendered.append(texts.TERMINAL_NO_MATCHES)
    rendered.append(summary)
    return SearchPage(
        text="\n".join(rendered),
        matches=shown,
        match_count=count,
        total_lines=total,
        truncated=offset + len(shown) < count or snap.truncated,
    )


# --- the search ------------------------------------------------------------------------------------------


class TerminalArgs(NamedTuple):
    pattern: str
    regex: bool = False
    offset: int = 0  # matches to skip, newest first
    limit: int = 100  # matches to show


def validate(args: TerminalArgs) -> None:
    pattern = args.pattern
    if not pattern:
        raise invalid_args(texts.PATTERN_EMPTY)
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid_args(texts.PATTERN_NOT_UNICODE) from None
    if not args.regex and ("\n" in pattern or "\r" in pattern):
        raise invalid_args(texts.PATTERN_MULTILINE)  # no retained line can contain one
    if args.regex and "\0" in pattern:
        raise invalid_args(texts.PATTERN_NUL)  # an argv element cannot carry it


async def _regex_matches(searcher: Searcher, snap: Retained, pattern: str, tally: Tally | None) -> list[int]:
    # rg reads only stdin; "/" is a cwd that always exists.
    where = Where(cwd="/", path=None)
    args = rg_args(pattern)
    result = await run_rg(searcher, TOOL, args, where, lambda _: False, stdin_data=rg_stdin(snap), tally=tally)
    return [] if result.no_matches else rg_matches(result.stdout, snap.total_lines)


async def terminal_search(
    searcher: Searcher, snap: Retained, args: TerminalArgs, tally: Tally | None = None
) -> SearchPage:
    """The page of matches of `args.pattern` in `snap`, once `validate` has accepted the pattern (the
    caller checks it first: it comes before the other arguments and the session)."""
    if snap.total_lines == 0:
        indices: list[int] = []
    elif args.regex:
        indices = await bounded(searcher.config, TOOL, _regex_matches(searcher, snap, args.pattern, tally))
    else:
        indices = literal_matches(snap, args.pattern)
    return render_search(snap, indices, args.offset, args.limit, searcher.config.terminal_search_max_result_bytes)

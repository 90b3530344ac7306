"""read: a text file's lines, numbered, from `offset` for `limit` lines — for hosts without a file reader.

Not an upstream tool: upstream's texts tell the model to "use read" on a matched file and on a capped
result's saved artifact, and hosts that have no such tool (most MCP hosts) can turn this one on
(`readTool`). It is confined exactly as a search is: `locate` (the workspace, a relative path, the
allowed roots and the client's roots, the spill directory always readable) and the deny globs, which
make a denied file absent (docs/behaviour.md, "read").

Lines are numbered as `cat -n` numbers them (the number right-aligned in six columns, a tab, the line),
each cut to `grepMaxLineBytes` as grep cuts matched lines; a page that ends before the file does says
how to read on. A file that holds a NUL byte in its first 8 KiB is binary (as ripgrep judges it) and is
refused, as are directories and anything that is not a regular file (a FIFO would block the read).
"""

from __future__ import annotations

import asyncio
import os
import stat
from typing import Any, NamedTuple

from dsh_search import texts
from dsh_search.engine import failures
from dsh_search.engine.failures import ToolError
from dsh_search.engine.scope import Scope, locate
from dsh_search.engine.searcher import Searcher

DEFAULT_LIMIT = 2000
_BINARY_PROBE = 8192
_CHUNK = 1 << 20


class ReadArgs(NamedTuple):
    path: str
    offset: int = 1
    limit: int = DEFAULT_LIMIT
    cwd: str | None = None


class ReadResult(NamedTuple):
    text: str
    path: str  # the file read, absolute (as the caller's cwd and path name it)
    start_line: int
    end_line: int  # the last line shown (start_line - 1 when none was)
    total_lines: int
    next_offset: int | None  # the offset of the next page, or None at the end

    def as_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "path": self.path,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "totalLines": self.total_lines,
            "nextOffset": self.next_offset,
        }


def validate(args: ReadArgs) -> None:
    if not args.path:
        raise failures.invalid_args(texts.READ_PATH_EMPTY)
    if args.offset < 1:
        raise failures.invalid_args(texts.positive_safe_integer("offset"))
    if args.limit < 1:
        raise failures.invalid_args(texts.positive_safe_integer("limit"))


async def read(searcher: Searcher, args: ReadArgs, scope: Scope) -> ReadResult:
    validate(args)
    where = locate(searcher, scope, args.cwd, args.path)
    path = os.path.join(where.cwd, args.path)
    if where.deny is not None and where.deny.root_denied():
        raise ToolError(failures.SEARCH_FAILED, texts.read_not_found(args.path))  # denied: absent
    max_line = searcher.config.grep_max_line_bytes
    return await asyncio.to_thread(_read, path, args, max_line)


def _read(path: str, args: ReadArgs, max_line_bytes: int) -> ReadResult:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ToolError(failures.SEARCH_FAILED, texts.read_not_found(args.path)) from None
    except (OSError, ValueError) as exc:
        raise ToolError(failures.SEARCH_FAILED, texts.read_unreadable(args.path, _reason(exc))) from None
    if stat.S_ISDIR(info.st_mode):
        raise failures.invalid_args(texts.read_is_directory(args.path))
    if not stat.S_ISREG(info.st_mode):
        raise failures.invalid_args(texts.read_not_a_file(args.path))
    try:
        with open(path, "rb") as f:
            head = f.read(_BINARY_PROBE)
            if b"\0" in head:
                raise failures.invalid_args(texts.read_binary(args.path))
            f.seek(0)
            shown, total = _lines(f, args.offset, args.limit, max_line_bytes)
    except OSError as exc:
        raise ToolError(failures.SEARCH_FAILED, texts.read_unreadable(args.path, _reason(exc))) from None
    if total == 0:
        return ReadResult(texts.READ_EMPTY, path, 1, 0, 0, None)
    if args.offset > total:
        raise failures.invalid_args(texts.read_past_end(args.offset, total))
    end = args.offset + len(shown) - 1
    text = "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(shown, args.offset))
    next_offset = end + 1 if end < total else None
    if next_offset is not None:
        text += "\n\n" + texts.read_footer(args.offset, end, total)
    return ReadResult(text, path, args.offset, end, total, next_offset)


def _lines(f: Any, offset: int, limit: int, max_line_bytes: int) -> tuple[list[str], int]:
    """The lines offset..offset+limit-1 (decoded, cut to max_line_bytes) and the file's line count. A
    final newline ends the last line (it does not start an empty one), as `cat -n` and `wc -l` count;
    a last line without one is a line all the same."""
    # Imported here: grep's module is not loaded before the first search (a cold start's imports).
    from dsh_search.engine.grep.page import preview_line

    shown: list[str] = []
    count = 0
    last = offset + limit - 1
    while count < last:
        raw = f.readline()
        if not raw:
            return shown, count
        count += 1
        if count >= offset:
            line = raw.rstrip(b"\n").removesuffix(b"\r").decode("utf-8", "replace")
            shown.append(preview_line(line, max_line_bytes))
    # The rest is only counted, a chunk at a time.
    tail = b""
    while chunk := f.read(_CHUNK):
        count += chunk.count(b"\n")
        tail = chunk
    if tail and not tail.endswith(b"\n"):
        count += 1
    return shown, count


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)

"""read: a text file's lines, numbered, from `offset` for `limit` lines — for hosts without a file reader.

Not an upstream tool: upstream's texts tell the model to "use read" on a matched file and on a capped
result's saved artifact, and hosts that have no such tool (most MCP hosts) can turn this one on
(`readTool`). It is confined exactly as a search is: `locate` (the workspace, a relative path, the
allowed roots and the client's roots, the spill directory always readable) and the deny globs, which
make a denied file absent (docs/behaviour.md, "read").

Lines are numbered as `cat -n` numbers them (the number right-aligned in six columns, a tab, the line),
each cut to `grepMaxLineBytes` as grep cuts matched lines; a page that ends before the file does says
how to read on. A file that holds a NUL byte in its first 8 KiB is binary (as ripgrep judges it) and is
refused, as are directories and anything that is not a regular file — judged on the opened descriptor,
which is opened without blocking, so a path swapped for a FIFO or a device after its check is refused
too (engine/files.py). Lines are read with a bound: a shown line keeps only the bytes its cut needs, a
page stops at `files.PAGE_MAX_BYTES`, and the rest of the file is only counted.
"""

from __future__ import annotations

import os
import stat
from typing import Any, NamedTuple

from dsh_search import osdep, texts
from dsh_search.engine import failures, files
from dsh_search.engine.failures import ToolError
from dsh_search.engine.scope import Scope, locate
from dsh_search.engine.searcher import Searcher

DEFAULT_LIMIT = 2000
_BINARY_PROBE = 8192
_CUT_MARGIN = 4  # a line kept this much past its cut is cut as the whole line would be


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
    # On a thread of its own: a read that blocks all the same (a hung network filesystem) holds no shared
    # worker, and the daemon's exit does not wait for it.
    return await files.detached(_read, path, args, max_line)


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
        # The path may lead elsewhere by now (swapped for a FIFO or a device): the opened file is judged.
        fd = files.open_regular(path)
    except files.NotRegular as exc:
        if exc.directory:
            raise failures.invalid_args(texts.read_is_directory(args.path)) from None
        raise failures.invalid_args(texts.read_not_a_file(args.path)) from None
    except FileNotFoundError:
        raise ToolError(failures.SEARCH_FAILED, texts.read_not_found(args.path)) from None
    except OSError as exc:
        raise ToolError(failures.SEARCH_FAILED, texts.read_unreadable(args.path, _reason(exc))) from None
    try:
        if b"\0" in osdep.pread(fd, _BINARY_PROBE, 0):
            raise failures.invalid_args(texts.read_binary(args.path))
        # A shown line keeps a few bytes more than its cut: enough to cut it exactly as the whole line
        # would be (grep.preview_line), never more, whatever the line's length.
        found = files.page(fd, args.offset, args.limit, keep=max_line_bytes + _CUT_MARGIN)
    except OSError as exc:
        raise ToolError(failures.SEARCH_FAILED, texts.read_unreadable(args.path, _reason(exc))) from None
    finally:
        os.close(fd)
    total = found.newlines + found.ends_open
    if total == 0:
        return ReadResult(texts.READ_EMPTY, path, 1, 0, 0, None)
    if args.offset > total:
        raise failures.invalid_args(texts.read_past_end(args.offset, total))
    shown = _shown(found.lines, max_line_bytes)
    end = args.offset + len(shown) - 1
    text = "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(shown, args.offset))
    next_offset = end + 1 if end < total else None
    if next_offset is not None:
        text += "\n\n" + texts.read_footer(args.offset, end, total)
    return ReadResult(text, path, args.offset, end, total, next_offset)


def _shown(lines: list[bytes], max_line_bytes: int) -> list[str]:
    """The lines as shown: without a `\\r` before their line break, decoded (U+FFFD for what is not
    UTF-8) and cut to max_line_bytes on a character boundary. A line kept cut short (`page`'s `keep`)
    is longer than the cut in any case: each byte kept decodes to one byte or more."""
    # Imported here: grep's module is not loaded before the first search (a cold start's imports).
    from dsh_search.engine.grep.page import preview_line

    keep = max_line_bytes + _CUT_MARGIN
    shown = []
    for raw in lines:
        line = raw if len(raw) >= keep else raw.removesuffix(b"\r")
        shown.append(preview_line(line.decode("utf-8", "replace"), max_line_bytes))
    return shown


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)

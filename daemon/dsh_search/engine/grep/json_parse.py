"""ripgrep's `--json` as grep reads it: a batch of whole records → the files it holds matches
of, each with its section formatted, and the batch's decoded growth.

The fast path reads a batch as ripgrep writes it with one msgspec call that builds only the fields grep
uses (json_records.py) and a few list operations: no Python step per record beyond one filter. Anything
that path does not recognise — a record that is not JSON or not UTF-8, a match without the fields and
types ripgrep always writes, a path or a line in base64 — sends the batch to the strict parser, which
applies upstream's checks record by record and raises upstream's errors (docs/behaviour.md, "Grep").
Formatting here, on the worker, overlaps it with the search too.
"""

from __future__ import annotations

import base64
from itertools import groupby
from operator import add
from typing import Any, NamedTuple

import orjson

from dsh_search import texts
from dsh_search.engine.failures import SEARCH_FAILED, ToolError
from dsh_search.engine.grep.page import (
    Block,
    Entry,
    Section,
    format_section,
    joined_section,
    line_prefixes,
    line_text,
    preview_line,
)
from dsh_search.engine.jscompat import utf8_growth
from dsh_search.engine.paths import cwd_relative, decode

# ripgrep's own non-match records, recognised without parsing them (they are ~40% of the output).
_OTHER_RECORDS = (b'{"type":"begin",', b'{"type":"end",', b'{"type":"context",', b'{"type":"summary",')
_NOT_LINES = (b'{"type":"begin",', b'{"type":"end",', b'{"type":"summary",')  # no line of a file
MATCH_TYPE = b'"type":"match"'  # in any record a match is (exit 2 with results needs to know)


def malformed(detail: str) -> ToolError:
    return ToolError(SEARCH_FAILED, texts.malformed_json("grep", detail))


class FileMatches(NamedTuple):
    """One file's matches, in line order: the unit a batch's records become.

    A line is kept as ripgrep gave it, terminator included (`\\n`, `\\r\\n`, or none for a file's last
    line): removing the terminators of a whole file at once, when it is formatted, is one string
    operation instead of one per match.
    """

    path: str  # as displayed (workdir-relative where upstream shows it so)
    numbers: list[int]
    raw_lines: list[str]
    section: str | None = None  # `<path>\\nLine N: <previewed line>…`, when formatted already

    @property
    def lines(self) -> list[str]:
        """The lines as the model sees them before previews: one trailing `\\n` or `\\r\\n` removed."""
        return [line_text(raw) for raw in self.raw_lines]


def raw_line(text: str) -> str:
    """A line as ripgrep would give it, from the line without its terminator (`line_text` undoes it)."""
    return text + ("\r\n" if text.endswith("\r") else "\n")


def section(f: FileMatches, max_line_bytes: int | None) -> str:
    """`<path>\\nLine N: <line>…`, each line previewed to `max_line_bytes` (None: as it is)."""
    return format_section(f.path, f.numbers, f.raw_lines, max_line_bytes)


def sections(files: list[FileMatches], max_line_bytes: int | None) -> list[Section]:
    """Parsed --json matches as sections (formatted already by `parse_batch` when they have one)."""
    return [
        Section(f.path, len(f.numbers), f.section if f.section is not None else section(f, max_line_bytes))
        for f in files
        if f.numbers
    ]


class ParsedBatch(NamedTuple):
    files: list[FileMatches]  # in stream order; a file may continue into the next batch
    growth: int  # bytes the batch gains decoded with U+FFFD replacements (jscompat.utf8_growth)


def parse_batch(stdout: bytes, cwd: str, max_line_bytes: int | None = None) -> ParsedBatch:
    """A batch of whole --json records → the files it holds matches of (each with its section formatted,
    lines previewed to `max_line_bytes`), and the batch's decoded growth."""
    from dsh_search.engine.grep import json_records  # msgspec: imported on the first --json read

    found = json_records.matches(stdout)
    if found is None:  # not as ripgrep writes it: the strict parser says why
        files, growth = parse_strict(stdout, cwd)
        return ParsedBatch([f._replace(section=section(f, max_line_bytes)) for f in files], growth)
    return ParsedBatch(_files(*found, cwd, max_line_bytes), 0)


def _files(paths: list[str], numbers: list[int], raws: list[str], cwd: str, cap: int | None) -> list[FileMatches]:
    """A batch's matches (in stream order, three parallel lists) as files, each with its section. When
    no line of the batch can be over the preview cap and every line number has its prefix, the lines
    are formatted for the whole batch at once; each file's section then only joins its slice."""
    prefixes = line_prefixes(numbers)
    formatted = None
    if prefixes is not None and (cap is None or max(map(len, raws), default=0) * 4 <= cap):
        formatted = list(map(add, map(prefixes.__getitem__, numbers), raws))
    files: list[FileMatches] = []
    start = 0
    for path, run in groupby(paths):  # a file's matches come together
        end = start + len(list(run))
        f = FileMatches(cwd_relative(path, cwd), numbers[start:end], raws[start:end])
        if files and files[-1].path == f.path:
            # Two spellings of one displayed path, one after the other (`x` and `<cwd>/x`): one file, in
            # stream order, as the strict parser groups them.
            last = files[-1]
            f = FileMatches(f.path, last.numbers + f.numbers, last.raw_lines + f.raw_lines)
            files[-1] = f._replace(section=section(f, cap))
        else:
            text = None if formatted is None else joined_section(f.path, formatted[start:end], raws[end - 1])
            files.append(f._replace(section=text if text is not None else section(f, cap)))
        start = end
    return files


def _loads_replacing(raw: bytes) -> Any:
    """A line orjson refused, parsed as upstream parses it: decoded with U+FFFD replacements first, which
    only makes a difference when the line is not valid UTF-8."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        try:
            return orjson.loads(raw.decode("utf-8", "replace"))
        except orjson.JSONDecodeError:
            pass
    raise malformed("a line is not JSON")


def parse_strict(stdout: bytes, cwd: str) -> tuple[list[FileMatches], int]:
    """Record by record, as upstream parses: its checks, its errors, and the batch's decoded growth.

    Upstream decodes the whole output with U+FFFD replacements and then parses each line. ripgrep's
    --json is valid UTF-8 (names and lines that are not go into base64 `bytes` fields), so this is
    defensive: every line is either ASCII or validated by orjson, and only a line orjson refuses is
    decoded with replacements (and counted) before it is parsed again.
    """
    files: list[FileMatches] = []
    growth = 0
    for raw in stdout.split(b"\n"):
        if not raw:
            continue
        if raw.startswith(_OTHER_RECORDS) and raw.endswith(b"}") and raw.isascii():
            continue  # begin/end/context/summary: not needed, and ripgrep writes them whole
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            record = _loads_replacing(raw)
            growth += utf8_growth(raw)
        if not isinstance(record, dict | list):
            raise malformed("a record is not an object")
        if not isinstance(record, dict) or record.get("type") != "match":
            continue
        path, number, line = _match_fields(record)
        shown = cwd_relative(path, cwd)
        if not files or files[-1].path != shown:  # ripgrep writes a file's matches together
            files.append(FileMatches(shown, [], []))
        files[-1].numbers.append(number)
        files[-1].raw_lines.append(line)
    return files, growth


def _match_fields(record: dict[str, Any]) -> tuple[str, int, str]:
    """(path, line number, line as ripgrep gave it) of a match record, with upstream's checks."""
    data = record.get("data")
    if not isinstance(data, dict):
        raise malformed("a match record has no data")
    path_obj = data.get("path")
    if not isinstance(path_obj, dict):
        raise malformed("a match record has no path text")
    if isinstance(path_obj.get("text"), str):
        path = path_obj["text"]
    elif isinstance(path_obj.get("bytes"), str):  # fix: a non-UTF-8 file name keeps its match
        path = decode(base64.b64decode(path_obj["bytes"]))
    else:
        raise malformed("a match record has no path text")
    line_number = data.get("line_number")
    if not isinstance(line_number, int | float) or isinstance(line_number, bool):
        raise malformed("a match record has no line number")
    lines = data.get("lines")
    if not isinstance(lines, dict):
        raise malformed("a match record has no line content")
    text = lines.get("text")
    if isinstance(text, str):
        line = text
    elif isinstance(lines.get("bytes"), str):
        line = raw_line(texts.LINE_NOT_UTF8)
    else:
        raise malformed("a match record has neither line text nor bytes")
    return path, int(line_number), line


# --- matches with their context lines, or spanning lines (the extended profile) -------------------------------


class BlockBatch(NamedTuple):
    blocks: list[Block]  # in stream order; a file may continue into the next batch
    growth: int  # bytes the batch gains decoded with U+FFFD replacements


def parse_blocks(stdout: bytes, cwd: str, max_line_bytes: int | None = None) -> BlockBatch:
    """A batch of whole --json records → each file's match and context lines (page.Block), every line of a
    match that spans lines (--multiline) its own, previewed to `max_line_bytes`. Record by record, with
    upstream's checks of a match record (a context record has the same fields)."""
    blocks: list[Block] = []
    growth = 0
    for raw in stdout.split(b"\n"):
        if not raw:
            continue
        if raw.startswith(_NOT_LINES) and raw.endswith(b"}") and raw.isascii():
            continue  # begin/end/summary
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            record = _loads_replacing(raw)
            growth += utf8_growth(raw)
        if not isinstance(record, dict | list):
            raise malformed("a record is not an object")
        kind = record.get("type") if isinstance(record, dict) else None
        if kind not in ("match", "context"):
            continue
        assert isinstance(record, dict)
        path, number, _ = _match_fields(record)
        shown = cwd_relative(path, cwd)
        if not blocks or blocks[-1].path != shown:
            blocks.append(Block(shown, []))
        start = number if kind == "match" else 0
        for i, line in enumerate(_record_lines(record)):
            blocks[-1].entries.append(Entry(number + i, start, preview_line(line, max_line_bytes)))
    return BlockBatch(blocks, growth)


def _record_lines(record: dict[str, Any]) -> list[str]:
    """A record's lines, each without its terminator (`\\n` or `\\r\\n`; a bare `\\r` at the very end stays,
    as upstream keeps it); a line that is not UTF-8 is upstream's placeholder."""
    lines = record["data"]["lines"]
    text = lines.get("text")
    if isinstance(text, str):
        pieces = text.split("\n")
        terminated = len(pieces) - 1
        return [p[:-1] if i < terminated and p.endswith("\r") else p for i, p in enumerate(pieces[:terminated])] + (
            [pieces[-1]] if pieces[-1] else []
        )
    raw = base64.b64decode(lines["bytes"])
    out = []
    for piece in raw.split(b"\n")[: raw.count(b"\n") + (not raw.endswith(b"\n"))]:
        try:
            out.append(piece.removesuffix(b"\r").decode("utf-8"))
        except UnicodeDecodeError:
            out.append(texts.LINE_NOT_UTF8)
    return out

"""grep's parsing as the previous release did it, kept as the reference the current parser must agree with.

The fast path was one orjson call per batch after a regex had cut each match record's unused tail, then
per-record lists and a per-line f-string for each file's section; anything it did not recognise went to
the strict parser (which the current code still has, unchanged). tests/engine/test_grep_parse_properties.py
checks that the current parser gives the same files, sections, decoded growth and errors on generated
streams, and the same pages and spill artifacts downstream.
"""

from __future__ import annotations

import re

import orjson

from dsh_search.engine.grep.json_parse import FileMatches, ParsedBatch
from dsh_search.engine.grep.json_parse import parse_strict as _parse_strict
from dsh_search.engine.grep.page import line_text, preview_line
from dsh_search.engine.paths import cwd_relative

_MATCH_TAIL = re.compile(rb',"absolute_offset":[^\n]*')


def parse_batch(stdout: bytes, cwd: str, max_line_bytes: int | None = None) -> ParsedBatch:
    files = _parse_fast(stdout, cwd)
    growth = 0
    if files is None:
        files, growth = _parse_strict(stdout, cwd)
    return ParsedBatch([f._replace(section=section(f, max_line_bytes)) for f in files], growth)


def parse_batch_strictly(stdout: bytes, cwd: str, max_line_bytes: int | None = None) -> ParsedBatch:
    """The strict parser alone: upstream's checks, record by record."""
    files, growth = _parse_strict(stdout, cwd)
    return ParsedBatch([f._replace(section=section(f, max_line_bytes)) for f in files], growth)


def _parse_fast(stdout: bytes, cwd: str) -> list[FileMatches] | None:
    try:
        records = orjson.loads(b"[" + _MATCH_TAIL.sub(b"}}", stdout).replace(b"\n", b",") + b"]")
        found = [r["data"] for r in records if r["type"] == "match"]
        paths = [d["path"]["text"] for d in found]
        raw_lines = [d["lines"]["text"] for d in found]
        numbers = [d["line_number"] for d in found]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if found and not (set(map(type, paths)) == set(map(type, raw_lines)) == {str} and set(map(type, numbers)) == {int}):
        return None
    files = []
    start = 0
    for end in [*(i for i in range(1, len(paths)) if paths[i] != paths[i - 1]), len(paths)]:
        if end > start:
            files.append(FileMatches(cwd_relative(paths[start], cwd), numbers[start:end], raw_lines[start:end]))
        start = end
    return files


def section(f: FileMatches, max_line_bytes: int | None) -> str:
    raws = f.raw_lines
    if max_line_bytes is None or max(map(len, raws), default=0) * 4 <= max_line_bytes:
        body = "".join([f"Line {n}: {raw}" for n, raw in zip(f.numbers, raws, strict=True)])
        terminated = body.count("\n")
        if terminated == len(raws) or (terminated == len(raws) - 1 and not raws[-1].endswith("\n")):
            body = body.replace("\r\n", "\n")
            if body.endswith("\n"):
                body = body[:-1]
            return f"{f.path}\n{body}"
    lines = [line_text(raw) for raw in raws]
    if max_line_bytes is not None:
        lines = [preview_line(line, max_line_bytes) for line in lines]
    return f.path + "\n" + "\n".join([f"Line {n}: {line}" for n, line in zip(f.numbers, lines, strict=True)])

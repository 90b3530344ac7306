"""ripgrep's `--json` records, decoded into only the fields grep reads (msgspec).

A match record is `{"type":"match","data":{"path":{"text":…},"lines":{"text":…},"line_number":N,
"absolute_offset":…,"submatches":[…]}}`; grep reads its path, line and line number. Typed decoding
builds those three values and skips everything else without building it (the offsets and submatches
are most of the bytes), and the other records (`begin`, `end`, `context`, `summary`) are recognised by
their tag and skipped whole. On 14.9 MB of output (52,849 matches) that is ~25 ms where the regex cut and
orjson's dicts cost ~60.

Imported on the first grep rather than at start-up: msgspec and what it imports (decimal among them)
cost ~5 ms on top of the daemon's own imports, which the cold start does not pay.
"""

from __future__ import annotations

from operator import attrgetter
from typing import NamedTuple

import msgspec


class _Text(msgspec.Struct, gc=False):
    text: str


class _MatchData(msgspec.Struct, gc=False):
    path: _Text
    lines: _Text
    line_number: int


class _Match(msgspec.Struct, tag="match", tag_field="type", gc=False):
    data: _MatchData


class _Begin(msgspec.Struct, tag="begin", tag_field="type", gc=False):
    pass


class _End(msgspec.Struct, tag="end", tag_field="type", gc=False):
    pass


class _Context(msgspec.Struct, tag="context", tag_field="type", gc=False):
    pass


class _Summary(msgspec.Struct, tag="summary", tag_field="type", gc=False):
    pass


_BATCH = msgspec.json.Decoder(list[_Match | _Begin | _End | _Context | _Summary])
_PATH = attrgetter("data.path.text")
_LINE = attrgetter("data.lines.text")
_NUMBER = attrgetter("data.line_number")


class Matches(NamedTuple):
    """The match records of a batch, in stream order, as three parallel lists."""

    paths: list[str]
    numbers: list[int]
    lines: list[str]


def matches(batch: bytes) -> Matches | None:
    """Every match record of `batch` (whole `--json` records, one per line), or None when the batch is
    not exactly as ripgrep writes it: a line that is not one JSON record, a record that is not valid
    UTF-8 (anywhere, skipped fields included), an unknown record type, a match without a text path, a
    text line or an integer line number. The caller's strict parser then says what is wrong, as
    upstream would.

    The batch is read as one JSON array, its newlines turned into commas: that holds msgspec to one
    record per line (its own newline-delimited reading skips blank lines and allows two records on one
    line). msgspec does not check the UTF-8 of strings it skips, so a batch that is not ASCII is checked
    whole: upstream counts the replacement characters of invalid sequences anywhere in the output.
    """
    batch = batch.rstrip(b"\n")
    if batch[:1] not in (b"{", b""):  # ripgrep starts every record with `{`; a line of blanks is no record
        return None
    if not batch.isascii():
        try:
            batch.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        records = _BATCH.decode(b"[" + batch.replace(b"\n", b",") + b"]")
    except msgspec.MsgspecError:
        return None
    found = [record for record in records if record.__class__ is _Match]
    return Matches(list(map(_PATH, found)), list(map(_NUMBER, found)), list(map(_LINE, found)))

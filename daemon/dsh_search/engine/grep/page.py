"""grep's result as the model reads it (sans IO): each file's section, the order, the page, the spill
artifact's pieces, and the one preview of a line.

A file's matches are kept formatted — `Section(path, matches, text)`, `text` being `<path>\\nLine <N>:
<line>…` (texts.match_line) — from the moment a worker has parsed them: sorting, joining the pieces of a
file cut by batches, cutting the page and writing the spill artifact then handle strings, never a
match at a time. Upstream keeps ripgrep's parallel completion order, which differs run to run; here
files are sorted by display path and matches by line number, so the page and the spill artifact are
stable and agree.

Pages (`render`): upstream's texts word for word for upstream's parameters (`Found N matches`, `Found K
of N matches` and its footer); a page that starts past the first match, or a `limit` below the cap
(the extended profile), says where it starts and names the next page's offset.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from operator import add, itemgetter
from typing import NamedTuple, Protocol

from dsh_search import texts


class SpillRef(Protocol):
    """Where the complete result was saved (engine/spill.py's SpillRef)."""

    @property
    def locator(self) -> str: ...
    @property
    def retrieval_hint(self) -> str: ...


HEAD = texts.LINE_HEAD
SEPARATOR = texts.MATCH_SEPARATOR
_NUMBER_AT = len(HEAD)  # where a line's number starts, after `Line `


def preview_line(line: str, max_bytes: int | None) -> str:
    """A line cut to `max_bytes` bytes of UTF-8 on a character boundary, then marked ` (line truncated)`
    (None: as it is). Upstream's previewLine; read's lines are previewed the same way."""
    if max_bytes is None or len(line) * 4 <= max_bytes:  # cannot be over the cap: skip the encode
        return line
    data = line.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return line
    return data[:max_bytes].decode("utf-8", "ignore") + texts.LINE_TRUNCATED_SUFFIX


def line_text(raw: str) -> str:
    """Upstream drops one trailing `\\n` or `\\r\\n`; a bare trailing `\\r` stays."""
    return raw[:-2] if raw.endswith("\r\n") else raw[:-1] if raw.endswith("\n") else raw


# --- formatting a file's matches -----------------------------------------------------------------------


def format_section(path: str, numbers: list[int], raws: list[str], max_line_bytes: int | None) -> str:
    """`<path>\\nLine N: <line>…`, from lines as ripgrep gave them (terminators included), each previewed
    to `max_line_bytes` (None: as it is)."""
    if max_line_bytes is None or max(map(len, raws), default=0) * 4 <= max_line_bytes:
        prefixes = line_prefixes(numbers)
        if prefixes is None:
            pieces = [texts.match_line(n, raw) for n, raw in zip(numbers, raws, strict=True)]
        else:
            pieces = list(map(add, map(prefixes.__getitem__, numbers), raws))
        text = joined_section(path, pieces, raws[-1] if raws else "")
        if text is not None:
            return text
    lines = [preview_line(line_text(raw), max_line_bytes) for raw in raws]
    return path + "\n" + "\n".join([texts.match_line(n, line) for n, line in zip(numbers, lines, strict=True)])


def joined_section(path: str, pieces: list[str], last: str) -> str | None:
    """A section from its lines formatted with their terminators (`Line N: ` + the line as ripgrep gave
    it; `last` is the last line as ripgrep gave it), or None when they cannot simply be joined: when a
    line other than the last has no newline, or one has more than its terminator. Joined, they need no
    separator, and one replace removes every CR upstream strips (a CRLF can only be a terminator). The
    last line's terminator goes before the join, so the text is copied once. `pieces` is consumed."""
    if not pieces:
        return f"{path}\n"
    ends = last.endswith("\n")
    if ends:
        tail = pieces[-1]
        pieces[-1] = tail[:-2] if tail.endswith("\r\n") else tail[:-1]
    body = "".join(pieces)
    terminated = body.count("\n") + ends  # as counted before the last terminator went
    lines = len(pieces)
    if terminated == lines or (terminated == lines - 1 and not ends):
        body = body.replace("\r\n", "\n")
        return f"{path}\n{body}"
    return None


# `Line N: ` for N below the table's length, made once: formatting a section then takes no Python step per
# line (52,849 lines: 11 -> 6 ms). Grown on demand, up to line 65,535 (~4 MB); beyond that, f-strings. A
# grown table replaces the old one whole (a worker and the event loop's thread may both format): whoever
# holds either has a table that is right as far as it goes.
_PREFIXES: list[list[str]] = [[]]  # the current table, replaced whole
_PREFIXES_MAX = 1 << 16


def line_prefixes(numbers: list[int]) -> list[str] | None:
    """The table of `Line N: ` prefixes, covering every number of `numbers`; None when one is out of its
    range."""
    table = _PREFIXES[0]
    if not numbers:
        return table
    highest = max(numbers)
    if highest >= len(table):
        if highest >= _PREFIXES_MAX:
            return None
        size = min(_PREFIXES_MAX, max(1 << 10, 1 << highest.bit_length()))
        table = table + [texts.match_line(n, "") for n in range(len(table), size)]
        _PREFIXES[0] = table
    return table if min(numbers) >= 0 else None


# --- a file's matches as the model reads them ------------------------------------------------------------


class Section(NamedTuple):
    """One file's entries as formatted, what grep sorts, counts, cuts and saves: `text` is `<path>\\n`
    and its lines, in line order. `matches` counts the entries a page counts (matches; a files or count
    listing's section is one entry)."""

    path: str  # as displayed
    matches: int
    text: str


def _number(line: str) -> int:
    """The number of a `Line <N>: …` (or `Line <N>- …`) line."""
    end = _NUMBER_AT
    while line[end].isdigit():
        end += 1
    return int(line[_NUMBER_AT:end])


def first_number(f: Section) -> int:
    """The line number of `f`'s first line."""
    return _number(f.text[len(f.path) + 1 :])


def last_number(f: Section) -> int:
    """The line number of `f`'s last line."""
    start = max(f.text.rfind("\n" + HEAD, len(f.path)), len(f.path)) + 1
    return _number(f.text[start:])


def numbered(f: Section, count: int | None = None) -> list[tuple[int, str]]:
    """(line number, line as shown) of `f`'s first `count` lines (all of them: None), for a section of
    matches only."""
    body = f.text[len(f.path) + 1 :]
    lines = body.split("\n") if count is None else body.split("\n", count)[:count]
    out = []
    for line in lines:
        number, _, shown = line[_NUMBER_AT:].partition(SEPARATOR)
        out.append((int(number), shown))
    return out


def from_lines(path: str, lines: list[tuple[int, str]]) -> Section:
    return Section(path, len(lines), path + "\n" + "\n".join([texts.match_line(n, line) for n, line in lines]))


def in_stream_order(files: list[Section]) -> list[Section]:
    """Two spellings of one displayed path, one after the other (`x` and `<cwd>/x`): one file, its lines
    in stream order, as the strict parser groups them."""
    out: list[Section] = []
    for f in files:
        if out and out[-1].path == f.path:
            last = out[-1]
            out[-1] = Section(f.path, last.matches + f.matches, last.text + f.text[len(f.path) :])
        else:
            out.append(f)
    return out


def ordered(parts: list[list[Section]]) -> list[Section]:
    """The files of every batch, by display path (byte order), each file's matches by line number.

    ripgrep writes a file's matches together and in order, so a file cut by batch boundaries comes as
    consecutive pieces whose lines follow on: their sections are joined. Should the same path come in
    pieces out of line order anyway, its lines are put in line order (a stable sort).
    """
    pieces: dict[str, list[Section]] = {}
    for part in parts:
        for f in part:
            pieces.setdefault(f.path, []).append(f)
    return sorted((_joined(ps) if len(ps) > 1 else ps[0] for ps in pieces.values()), key=lambda f: f.path)


def _joined(pieces: list[Section]) -> Section:
    """One file's matches from its pieces, in line order."""
    path = pieces[0].path
    if all(last_number(a) < first_number(b) for a, b in pairwise(pieces)):  # each piece's after the first's
        text = "".join([pieces[0].text, *(p.text[len(path) :] for p in pieces[1:])])
        return Section(path, sum(p.matches for p in pieces), text)
    lines = sorted((line for p in pieces for line in numbered(p)), key=itemgetter(0))
    return from_lines(path, lines)


# --- the page ------------------------------------------------------------------------------------------


def format_files(files: list[Section]) -> str:
    """The sections of `files` joined by blank lines."""
    return "\n\n".join([f.text for f in files])


def spill_pieces(header: str, files: list[Section], separator: str = "\n\n") -> Iterator[str]:
    """The spill artifact, its header line and every file's section, in pieces (never joined whole)."""
    yield f"{header}\n\n"
    for i, f in enumerate(files):
        yield (separator if i else "") + f.text


def head(files: list[Section], count: int) -> list[Section]:
    """The first `count` matches, file by file."""
    out = []
    for f in files:
        if count <= 0:
            break
        out.append(from_lines(f.path, numbered(f, count)) if f.matches > count else f)
        count -= f.matches
    return out


def skip(files: list[Section], count: int) -> list[Section]:
    """All but the first `count` matches, file by file."""
    if count <= 0:
        return files
    out = []
    for f in files:
        if count >= f.matches:
            count -= f.matches
            continue
        out.append(from_lines(f.path, numbered(f)[count:]) if count else f)
        count = 0
    return out


class Page(NamedTuple):
    text: str
    shown: list[tuple[str, int, str]]  # (path, line number, previewed line) of each match shown, for the meta
    truncated: bool  # the page does not hold every entry from its first on


# What a page counts, per output mode: matches (content), files (files, count).
MATCH, FILE = "match", "file"


def render(
    files: list[Section], *, max_matches: int, spill: SpillRef | None, offset: int = 0, limit: int | None = None
) -> Page:
    """The page of matching lines (`files`, sorted) that starts after `offset` matches and holds at most
    `limit` of them (None: max_matches). With neither given, upstream's page."""
    total = sum(f.matches for f in files)
    page = head(skip(files, offset), max_matches if limit is None else limit)
    shown = [(f.path, n, line) for f in page for n, line in numbered(f)]
    return compose(page, shown, total, len(shown), spill=spill, offset=offset, limit=limit, cap=max_matches)


def compose(
    page: list[Section],
    shown: list[tuple[str, int, str]],
    total: int,
    count: int,
    *,
    spill: SpillRef | None,
    offset: int,
    limit: int | None,
    cap: int,
    unit: str = MATCH,
    matches: int | None = None,
) -> Page:
    """A page's text: its header, its sections and its footer. `total` entries in all, `count` of them on
    this page (`unit`: matches, or files; a count listing also says its `matches`). Upstream's texts for
    upstream's page of matches; the page of an extended search (an offset, a limit, a listing of files)
    says which entries it shows and where the next page starts."""
    if total == 0:
        return Page(texts.GREP_NO_MATCHES, [], False)
    if offset >= total:
        return Page(texts.grep_past_the_end(total, offset, unit), [], False)
    separator = "\n\n" if unit == MATCH else "\n"
    body = separator.join([f.text for f in page])
    if unit == MATCH:
        header = texts.grep_found(total)
    elif matches is None:
        header = texts.grep_found_files(total)
    else:
        header = texts.grep_found_counts(matches, total)
    if offset == 0 and total <= (cap if limit is None else limit):  # the page holds it all
        return Page(f"{header}\n\n{body}", shown, False)
    end = offset + count
    if unit == MATCH and offset == 0 and limit is None:  # upstream's page and footer
        recovery = (
            texts.grep_recovery_saved(spill.locator, spill.retrieval_hint) if spill else texts.GREP_RECOVERY_UNSAVED
        )
        return Page(f"{texts.grep_found_capped(count, total)}\n\n{body}\n\n({recovery})", shown, True)
    header = texts.grep_showing(header, offset + 1, end, "files " if matches is not None else "")
    return Page(f"{header}\n\n{body}{paging_footer(end, total, spill)}", shown, end < total)


def paging_footer(end: int, total: int, spill: SpillRef | None) -> str:
    """The footer of an extended page that ends after `end` entries of `total`: the next page's offset
    while one is left, and where the complete result is (or that it could not be saved)."""
    notes = []
    if end < total:
        notes.append(texts.grep_next_page(end))
    if spill is not None:
        notes.append(texts.grep_recovery_saved(spill.locator, spill.retrieval_hint))
    elif end < total:
        notes.append(texts.GREP_RECOVERY_UNSAVED_EXTENDED)
    return f"\n\n({' '.join(notes)})" if notes else ""


# --- matches with their context lines, or spanning lines (extended profile) ---------------------------------


class Entry(NamedTuple):
    """A line ripgrep printed: part of a match (`start`: the line its match starts on) or of the context
    around one (`start` 0)."""

    number: int
    start: int
    text: str  # as shown: previewed, its terminator removed


class Block(NamedTuple):
    """One file's matches and context lines (--json's records), the unit the extended content pages cut."""

    path: str
    entries: list[Entry]  # in line order

    @property
    def starts(self) -> list[int]:
        """The line each match starts on, in order."""
        return [e.number for e in self.entries if e.start == e.number]


def ordered_blocks(parts: list[list[Block]]) -> list[Block]:
    """The blocks of every batch, by display path, each one's lines in order (a file cut by batches
    comes in pieces)."""
    entries: dict[str, list[Entry]] = {}
    for part in parts:
        for block in part:
            entries.setdefault(block.path, []).extend(block.entries)
    return [Block(path, sorted(entries[path], key=itemgetter(0))) for path in sorted(entries)]


def block_section(path: str, entries: list[Entry], matches: int) -> Section:
    lines = [
        texts.context_line(e.number, e.text) if e.start == 0 else texts.match_line(e.number, e.text) for e in entries
    ]
    return Section(path, matches, path + "\n" + "\n".join(lines))


def block_sections(blocks: list[Block]) -> list[Section]:
    """Every block whole (the spill artifact's sections)."""
    return [block_section(b.path, b.entries, len(b.starts)) for b in blocks]


def block_page(
    blocks: list[Block], offset: int, count: int, around: tuple[int, int]
) -> tuple[list[Section], list[tuple[str, int, str]]]:
    """The sections of the matches `offset` to `offset + count` (in path, then line order) with the lines
    of context ripgrep printed around them (`around`: lines before and after a match) — never past a
    match of another page — and each match shown, for the meta (its lines joined)."""
    before, after = around
    sections: list[Section] = []
    shown: list[tuple[str, int, str]] = []
    skipped = 0
    for block in blocks:
        starts = block.starts
        first = max(0, offset - skipped)
        last = min(len(starts), offset + count - skipped)  # exclusive
        skipped += len(starts)
        if first >= last:
            continue
        picked = set(starts[first:last])
        ends: dict[int, int] = {}
        for e in block.entries:
            if e.start:
                ends[e.start] = e.number
        low = starts[first] - before
        if first:
            low = max(low, ends[starts[first - 1]] + 1)
        high = ends[starts[last - 1]] + after
        if last < len(starts):
            high = min(high, starts[last] - 1)
        entries = [e for e in block.entries if low <= e.number <= high and (e.start == 0 or e.start in picked)]
        sections.append(block_section(block.path, entries, len(picked)))
        texts_of: dict[int, list[str]] = {}
        for e in entries:
            if e.start:
                texts_of.setdefault(e.start, []).append(e.text)
        shown += [(block.path, start, "\n".join(texts_of[start])) for start in starts[first:last]]
        if skipped >= offset + count:
            break
    return sections, shown

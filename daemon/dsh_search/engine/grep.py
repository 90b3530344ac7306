"""The `grep` tool: ripgrep regex search grouped by file as `Line N: …` (docs/behaviour.md,
"Grep").

validated args → argv → rg --json, parsed in batches on a worker while rg runs (`parse_batch`) →
files sorted by display path, matches by line (`ordered`) → previewed lines → the page (`render`) +
meta + the complete result handed to the spill store.

Upstream keeps ripgrep's parallel completion order, which differs run to run; we sort files by display
path and matches by line number, so the inline page and the spill artifact are stable and agree.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from itertools import chain, groupby, pairwise
from operator import add
from typing import Any, NamedTuple

import orjson

from dsh_search import texts
from dsh_search.engine import source
from dsh_search.engine.batches import Batches
from dsh_search.engine.failures import SEARCH_FAILED, ToolError, invalid_args
from dsh_search.engine.jscompat import js_trim, utf8_growth
from dsh_search.engine.paths import DenyGlobs, cwd_relative, decode
from dsh_search.engine.presentation import grep_meta
from dsh_search.engine.run import RgResult, SearchResult, bounded, check_decoded_size, problems_suffix, run_rg
from dsh_search.engine.scope import Scope, Where, locate
from dsh_search.engine.searcher import Searcher, Tally
from dsh_search.engine.spill import SpillRef, save

TOOL = "grep"
# The --json records grep's progress counts: one per matching line, and one `begin` per file with matches.
MATCH_RECORD = b'{"type":"match"'
BEGIN_RECORD = b'{"type":"begin"'


class GrepArgs(NamedTuple):
    pattern: str
    path: str | None = None  # the file or directory searched, as the caller wrote it
    include: str | None = None  # one glob filter of the files searched
    cwd: str | None = None  # the session's directory (host only); None: the scope's home
    session_id: str = "default"  # the spill session of the complete result


def build_argv(pattern: str, path: str | None, include: str | None, deny: DenyGlobs) -> list[str]:
    argv = ["--json", f"--regexp={pattern}"]
    if include is not None:
        argv.append(f"--glob={include}")
    argv += deny.rg_args()
    if path is not None:
        argv += ["--", path]
    return argv


def validate(args: GrepArgs) -> None:
    if not args.pattern:
        raise invalid_args(texts.PATTERN_EMPTY)
    if args.path is not None and not js_trim(args.path):
        raise invalid_args(texts.PATH_EMPTY)
    include = args.include
    if include is not None:
        if not js_trim(include):
            raise invalid_args(texts.INCLUDE_EMPTY)
        if include.startswith("!"):
            raise invalid_args(texts.INCLUDE_NEGATED)
        depth = 0
        for ch in include:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth = max(0, depth - 1)
            elif ch == "," and depth == 0:
                raise invalid_args(texts.INCLUDE_LIST)


def _malformed(detail: str) -> ToolError:
    return ToolError(SEARCH_FAILED, texts.malformed_json("grep", detail))


# ripgrep's own non-match records, recognised without parsing them (they are ~40% of the output).
_OTHER_RECORDS = (b'{"type":"begin",', b'{"type":"end",', b'{"type":"context",', b'{"type":"summary",')


class FileMatches(NamedTuple):
    """One file's matches, in line order: the unit grep sorts, filters, counts and formats.

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


def line_text(raw: str) -> str:
    """Upstream drops one trailing `\\n` or `\\r\\n`; a bare trailing `\\r` stays."""
    return raw[:-2] if raw.endswith("\r\n") else raw[:-1] if raw.endswith("\n") else raw


def raw_line(text: str) -> str:
    """A line as ripgrep would give it, from the line without its terminator (`line_text` undoes it)."""
    return text + ("\r\n" if text.endswith("\r") else "\n")


def section(f: FileMatches, max_line_bytes: int | None) -> str:
    """`<path>\\nLine N: <line>…`, each line previewed to `max_line_bytes` (None: as it is)."""
    path, numbers, raws = f.path, f.numbers, f.raw_lines
    if max_line_bytes is None or max(map(len, raws), default=0) * 4 <= max_line_bytes:
        prefixes = _line_prefixes(numbers)
        if prefixes is None:
            pieces = [f"Line {n}: {raw}" for n, raw in zip(numbers, raws, strict=True)]
        else:
            pieces = list(map(add, map(prefixes.__getitem__, numbers), raws))
        text = _section_of(path, pieces, raws[-1] if raws else "")
        if text is not None:
            return text
    lines = [line_text(raw) for raw in raws]
    if max_line_bytes is not None:
        lines = [preview_line(line, max_line_bytes) for line in lines]
    return path + "\n" + "\n".join([f"Line {n}: {line}" for n, line in zip(numbers, lines, strict=True)])


def _section_of(path: str, pieces: list[str], last: str) -> str | None:
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
# line (52,849 lines: 11 -> 6 ms). Grown on demand, up to line 65,535 (~4 MB); beyond that, f-strings.
_PREFIXES: list[str] = []
_PREFIXES_MAX = 1 << 16
_PREFIXES_GROWING = threading.Lock()


def _line_prefixes(numbers: list[int]) -> list[str] | None:
    """The table of `Line N: ` prefixes, covering every number of `numbers`; None when one is out of its
    range."""
    if not numbers:
        return _PREFIXES
    highest = max(numbers)
    if highest >= len(_PREFIXES):
        if highest >= _PREFIXES_MAX:
            return None
        with _PREFIXES_GROWING:  # a worker and the event loop's thread may both format
            size = min(_PREFIXES_MAX, max(1 << 10, 1 << highest.bit_length()))
            _PREFIXES.extend([f"Line {n}: " for n in range(len(_PREFIXES), size)])
    return _PREFIXES if min(numbers) >= 0 else None


class ParsedBatch(NamedTuple):
    files: list[FileMatches]  # in stream order; a file may continue into the next batch
    growth: int  # bytes the batch gains decoded with U+FFFD replacements (jscompat.utf8_growth)


def parse_batch(stdout: bytes, cwd: str, max_line_bytes: int | None = None) -> ParsedBatch:
    """A batch of whole --json records → the files it holds matches of (each with its section formatted,
    lines previewed to `max_line_bytes`), and the batch's decoded growth.

    The fast path reads a batch as ripgrep writes it with one msgspec call that builds only the fields
    grep uses (engine/rgjson.py) and a few list operations: no Python step per record beyond one filter.
    Anything that path does not recognise — a record that is not JSON or not UTF-8, a match without the
    fields and types ripgrep always writes, a path or a line in base64 — sends the batch to the strict
    parser, which applies upstream's checks record by record and raises upstream's errors. Formatting
    here, on the worker, overlaps it with the search too.
    """
    from dsh_search.engine import rgjson  # msgspec: imported on the first grep, not at start-up

    found = rgjson.matches(stdout)
    if found is None:  # not as ripgrep writes it: the strict parser says why
        files, growth = _parse_strict(stdout, cwd)
        return ParsedBatch([f._replace(section=section(f, max_line_bytes)) for f in files], growth)
    return ParsedBatch(_files(*found, cwd, max_line_bytes), 0)


def _files(paths: list[str], numbers: list[int], raws: list[str], cwd: str, cap: int | None) -> list[FileMatches]:
    """A batch's matches (in stream order, three parallel lists) as files, each with its section. When
    no line of the batch can be over the preview cap and every line number has its prefix, the lines
    are formatted for the whole batch at once; each file's section then only joins its slice."""
    prefixes = _line_prefixes(numbers)
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
            text = None if formatted is None else _section_of(f.path, formatted[start:end], raws[end - 1])
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
    raise _malformed("a line is not JSON")


def _parse_strict(stdout: bytes, cwd: str) -> tuple[list[FileMatches], int]:
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
            raise _malformed("a record is not an object")
        if not isinstance(record, dict) or record.get("type") != "match":
            continue
        data = record.get("data")
        if not isinstance(data, dict):
            raise _malformed("a match record has no data")
        path_obj = data.get("path")
        if not isinstance(path_obj, dict):
            raise _malformed("a match record has no path text")
        if isinstance(path_obj.get("text"), str):
            path = path_obj["text"]
        elif isinstance(path_obj.get("bytes"), str):  # fix: a non-UTF-8 file name keeps its match
            path = decode(base64.b64decode(path_obj["bytes"]))
        else:
            raise _malformed("a match record has no path text")
        line_number = data.get("line_number")
        if not isinstance(line_number, int | float) or isinstance(line_number, bool):
            raise _malformed("a match record has no line number")
        lines = data.get("lines")
        if not isinstance(lines, dict):
            raise _malformed("a match record has no line content")
        text = lines.get("text")
        if isinstance(text, str):
            line = text
        elif isinstance(lines.get("bytes"), str):
            line = raw_line(texts.LINE_NOT_UTF8)
        else:
            raise _malformed("a match record has neither line text nor bytes")
        shown = cwd_relative(path, cwd)
        if not files or files[-1].path != shown:  # ripgrep writes a file's matches together
            files.append(FileMatches(shown, [], []))
        files[-1].numbers.append(int(line_number))
        files[-1].raw_lines.append(line)
    return files, growth


def preview_line(line: str, max_bytes: int) -> str:
    if len(line) * 4 <= max_bytes:  # cannot be over the cap: skip the encode
        return line
    data = line.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return line
    return data[:max_bytes].decode("utf-8", "ignore") + texts.LINE_TRUNCATED_SUFFIX


def format_files(files: list[FileMatches], max_line_bytes: int | None) -> str:
    """The sections of `files` joined by blank lines; a section formatted already (by `parse_batch`,
    with the same cap) is used as it is."""
    return "\n\n".join([f.section if f.section is not None else section(f, max_line_bytes) for f in files])


def spill_pieces(files: list[FileMatches], total: int, max_line_bytes: int) -> Iterator[str]:
    """The spill artifact, `Found N matches` and every file's section, in pieces (never joined whole)."""
    yield f"{texts.grep_found(total)}\n\n"
    for i, f in enumerate(files):
        yield ("\n\n" if i else "") + (f.section if f.section is not None else section(f, max_line_bytes))


def head(files: list[FileMatches], count: int) -> list[FileMatches]:
    """The first `count` matches, file by file."""
    out = []
    for f in files:
        if count <= 0:
            break
        out.append(FileMatches(f.path, f.numbers[:count], f.raw_lines[:count]) if len(f.numbers) > count else f)
        count -= len(f.numbers)
    return out


class Page(NamedTuple):
    text: str
    shown: list[tuple[str, int, str]]  # (path, line number, previewed line) of each match shown, for the meta
    truncated: bool


def render(files: list[FileMatches], *, max_matches: int, max_line_bytes: int, spill: SpillRef | None) -> Page:
    total = sum(len(f.numbers) for f in files)
    if total == 0:
        return Page(texts.GREP_NO_MATCHES, [], False)
    page = head(files, max_matches)
    shown = [
        (f.path, n, preview_line(line, max_line_bytes))
        for f in page
        for n, line in zip(f.numbers, f.lines, strict=True)
    ]
    body = format_files(page, max_line_bytes)
    if total <= max_matches:
        return Page(f"{texts.grep_found(total)}\n\n{body}", shown, False)
    recovery = texts.grep_recovery_saved(spill.locator, spill.retrieval_hint) if spill else texts.GREP_RECOVERY_UNSAVED
    return Page(f"{texts.grep_found_capped(len(shown), total)}\n\n{body}\n\n({recovery})", shown, True)


def ordered(parts: list[list[FileMatches]]) -> list[FileMatches]:
    """The files of every batch, by display path (byte order), each file's matches by line number.

    ripgrep writes a file's matches together and in order, so a file cut by batch boundaries comes as
    consecutive pieces whose lines follow on: they are joined, and so are their sections (formatted
    with the same cap, one line per match), which saves formatting the file again. Should the same path
    come in pieces out of line order anyway, they are merged, put in line order and formatted again.
    """
    pieces: dict[str, list[FileMatches]] = {}
    for part in parts:
        for f in part:
            pieces.setdefault(f.path, []).append(f)
    return sorted((_joined(ps) if len(ps) > 1 else ps[0] for ps in pieces.values()), key=lambda f: f.path)


def _joined(pieces: list[FileMatches]) -> FileMatches:
    """One file's matches from its pieces, in line order."""
    path = pieces[0].path
    numbers = list(chain.from_iterable(p.numbers for p in pieces))
    raw_lines = list(chain.from_iterable(p.raw_lines for p in pieces))
    follow_on = all(a.numbers[-1] < b.numbers[0] for a, b in pairwise(pieces))
    if not follow_on:
        pairs = sorted(zip(numbers, raw_lines, strict=True), key=lambda pair: pair[0])
        return FileMatches(path, [n for n, _ in pairs], [raw for _, raw in pairs])
    sections = [p.section for p in pieces if p.section is not None]
    text = None
    if len(sections) == len(pieces):  # each piece's lines after the first's, without their path line
        text = "".join([sections[0], *(t[len(path) :] for t in sections[1:])])
    return FileMatches(path, numbers, raw_lines, text)


async def _search(
    searcher: Searcher, pattern: str, include: str | None, where: Where, tally: Tally | None
) -> tuple[list[FileMatches], RgResult]:
    cwd = where.cwd
    cap = searcher.config.grep_max_line_bytes
    batches = Batches(
        b"\n", lambda blob: parse_batch(blob, cwd, cap), searcher.workers.parse, growth=lambda batch: batch.growth
    )
    batches.watch(_MATCH_TYPE)
    sink = batches.feed if tally is None else tally.counting(batches.feed, MATCH_RECORD, BEGIN_RECORD)
    chosen = None
    if searcher.source is not None:
        chosen = await searcher.source.grep(where.cwd, where.path, pattern, include, searcher.deny_globs)
    argv: list[str | bytes]
    if chosen is None:  # ripgrep walks
        argv = [*build_argv(pattern, where.path, include, searcher.deny_globs)]
        if tally is not None and searcher.source is not None:
            tally.note = searcher.source.walk_note(where.cwd)
    else:  # ripgrep reads the files the source chose: the same records, the same result
        argv = ["--json", f"--regexp={pattern}", *source.argv(chosen)]
    started = time.monotonic()
    try:
        result = await run_rg(
            searcher, TOOL, argv, where, lambda _: batches.saw(_MATCH_TYPE), sink=sink, tally=tally,
            on_overflow=batches.cancel,
        )  # fmt: skip
        if chosen is None and searcher.source is not None:
            searcher.source.note_walk(where.cwd, time.monotonic() - started)
        await check_decoded_size(TOOL, result, batches, searcher.config.raw_output_max_bytes)
    except BaseException:  # failed, over the cap, timed out or cancelled: nothing will read the batches
        batches.cancel()
        raise
    if result.no_matches:
        return [], result
    files = ordered([part.files for part in await batches.results()])
    if where.deny is not None:
        deny = where.deny
        files = [f for f in files if not deny.denies(f.path)]
    return files, result


_MATCH_TYPE = b'"type":"match"'  # in any record a match is (exit 2 with results needs to know)


async def grep(searcher: Searcher, args: GrepArgs, scope: Scope, tally: Tally | None = None) -> SearchResult:
    """Lines matching `args.pattern`, grouped by file: the page, its meta, and the complete result saved
    when it is over grepMaxMatches."""
    validate(args)
    where = locate(searcher, scope, args.cwd, args.path)
    config = searcher.config
    files, result = await bounded(config, TOOL, _search(searcher, args.pattern, args.include, where, tally))
    total = sum(len(f.numbers) for f in files)
    spill = None
    if total > config.grep_max_matches:
        content = spill_pieces(files, total, config.grep_max_line_bytes)
        spill = await save(searcher.spill, args.session_id, texts.GREP_SPILL_NAME, content)
    page = render(files, max_matches=config.grep_max_matches, max_line_bytes=config.grep_max_line_bytes, spill=spill)
    meta = grep_meta(page.shown, page.truncated, total, config.search_meta_max_bytes)
    return SearchResult(page.text + problems_suffix(result), meta, spill)

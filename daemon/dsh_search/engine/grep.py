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
import logging
import os
import stat
import threading
import time
from collections.abc import Iterator
from itertools import groupby, pairwise
from operator import add, itemgetter
from typing import Any, NamedTuple

import orjson

from dsh_search import osdep, texts
from dsh_search.config import Config, rg_memory_default
from dsh_search.engine import rgstd, ripgrep, source
from dsh_search.engine.batches import Batches, BlockBatches
from dsh_search.engine.failures import SEARCH_FAILED, SEARCH_RAW_OUTPUT_OVERFLOW, ToolError, invalid_args
from dsh_search.engine.jscompat import js_trim, utf8_growth
from dsh_search.engine.paths import DenyGlobs, cwd_relative, decode
from dsh_search.engine.presentation import grep_meta
from dsh_search.engine.run import RgResult, SearchResult, bounded, check_decoded_size, problems_suffix, run_rg
from dsh_search.engine.scope import Scope, Where, locate
from dsh_search.engine.searcher import Searcher, Tally
from dsh_search.engine.spill import SpillRef, save

log = logging.getLogger("dsh_search.search")

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


# --- a file's matches as the model reads them ------------------------------------------------------------


class Section(NamedTuple):
    """One file's matches as formatted, what grep sorts, counts, cuts and saves: `text` is
    `<path>\nLine <N>: <line>…`, one previewed line per match, in the order ripgrep gave them."""

    path: str  # as displayed
    matches: int
    text: str


def first_number(f: Section) -> int:
    """The line number of `f`'s first match."""
    start = len(f.path) + 6  # `<path>\nLine `
    return int(f.text[start : f.text.index(":", start)])


def last_number(f: Section) -> int:
    """The line number of `f`'s last match."""
    start = max(f.text.rfind("\nLine ", len(f.path)), len(f.path)) + 6
    return int(f.text[start : f.text.index(":", start)])


def sections(files: list[FileMatches], max_line_bytes: int | None) -> list[Section]:
    """Parsed --json matches as sections (formatted already by `parse_batch` when they have one)."""
    return [
        Section(f.path, len(f.numbers), f.section if f.section is not None else section(f, max_line_bytes))
        for f in files
        if f.numbers
    ]


def numbered(f: Section, count: int | None = None) -> list[tuple[int, str]]:
    """(line number, line as shown) of `f`'s first `count` matches (all of them: None)."""
    body = f.text[len(f.path) + 1 :]
    lines = body.split("\n") if count is None else body.split("\n", count)[:count]
    out = []
    for line in lines:
        number, _, shown = line[5:].partition(": ")  # `Line <N>: <line>`
        out.append((int(number), shown))
    return out


def _from_lines(path: str, lines: list[tuple[int, str]]) -> Section:
    return Section(path, len(lines), path + "\n" + "\n".join([f"Line {n}: {line}" for n, line in lines]))


def format_files(files: list[Section]) -> str:
    """The sections of `files` joined by blank lines."""
    return "\n\n".join([f.text for f in files])


def spill_pieces(files: list[Section], total: int) -> Iterator[str]:
    """The spill artifact, `Found N matches` and every file's section, in pieces (never joined whole)."""
    yield f"{texts.grep_found(total)}\n\n"
    for i, f in enumerate(files):
        yield ("\n\n" if i else "") + f.text


def head(files: list[Section], count: int) -> list[Section]:
    """The first `count` matches, file by file."""
    out = []
    for f in files:
        if count <= 0:
            break
        out.append(_from_lines(f.path, numbered(f, count)) if f.matches > count else f)
        count -= f.matches
    return out


class Page(NamedTuple):
    text: str
    shown: list[tuple[str, int, str]]  # (path, line number, previewed line) of each match shown, for the meta
    truncated: bool


def render(files: list[Section], *, max_matches: int, spill: SpillRef | None) -> Page:
    total = sum(f.matches for f in files)
    if total == 0:
        return Page(texts.GREP_NO_MATCHES, [], False)
    page = head(files, max_matches)
    shown = [(f.path, n, line) for f in page for n, line in numbered(f)]
    body = format_files(page)
    if total <= max_matches:
        return Page(f"{texts.grep_found(total)}\n\n{body}", shown, False)
    recovery = texts.grep_recovery_saved(spill.locator, spill.retrieval_hint) if spill else texts.GREP_RECOVERY_UNSAVED
    return Page(f"{texts.grep_found_capped(len(shown), total)}\n\n{body}\n\n({recovery})", shown, True)


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
    return _from_lines(path, lines)


def _in_stream_order(files: list[Section]) -> list[Section]:
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


# --- the search ------------------------------------------------------------------------------------------

_MATCH_TYPE = b'"type":"match"'  # in any record a match is (exit 2 with results needs to know)


class _Overflow(Exception):
    """ripgrep's output as --json would pass the raw-output cap: stop it."""


class _Account:
    """What the parsed batches of ripgrep's standard output add up to as --json, while it still runs
    (batches are parsed in order on one worker; the last may be parsed on the caller's thread)."""

    def __init__(self, cap: int, submatch_bytes: bool, literal: bytes | None = None) -> None:
        self.cap = cap
        self.submatch_bytes = submatch_bytes
        self.literal = literal
        self.sizes = rgstd.Sizes()
        self.over = False
        self._lock = threading.Lock()

    def add(self, sizes: rgstd.Sizes) -> None:
        with self._lock:
            self.sizes = self.sizes.plus(sizes)
            size = rgstd.json_size(self.sizes, None, seconds=0, submatch_bytes=False, literal=self.literal)
            if size.lower > self.cap:
                self.over = True


def _lone_cr_at_end(cwd: str, raw_path: bytes, last: int) -> bool:
    """Whether a file's line `last`, printed with `\r\n`, is in fact its last line ending in a lone `\r`
    (ripgrep's printer terminates a last line, and upstream keeps that `\r`); raises Unsure when the file
    cannot tell (gone, not a regular file, UTF-16 that ripgrep transcoded)."""
    raw = raw_path if os.path.isabs(raw_path) else os.path.join(os.fsencode(cwd), raw_path)
    try:
        fd = os.open(raw, os.O_RDONLY | osdep.O_NONBLOCK | osdep.O_CLOEXEC | getattr(os, "O_BINARY", 0))
    except OSError:
        raise rgstd.Unsure("a file whose last line may end in a lone CR cannot be read") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            raise rgstd.Unsure("a file whose last line may end in a lone CR is not a regular file")
        if osdep.pread(fd, 2, 0) in (b"\xff\xfe", b"\xfe\xff"):
            raise rgstd.Unsure("a UTF-16 file whose last line may end in a lone CR")
        if osdep.pread(fd, 1, info.st_size - 1) != b"\r":
            return False
        newlines = 0
        offset = 0
        while chunk := osdep.pread(fd, 1 << 20, offset):
            newlines += chunk.count(b"\n")
            offset += len(chunk)
        return newlines + 1 == last
    except OSError:
        raise rgstd.Unsure("a file whose last line may end in a lone CR cannot be read") from None
    finally:
        os.close(fd)


def _std_batch(blob: bytes, cwd: str, cap: int, account: _Account) -> list[Section]:
    """A batch of ripgrep's standard output → its sections (on the parse worker)."""
    batch = rgstd.parse(blob, cap, account.literal)
    paths, texts = batch.paths, batch.texts
    for i, raw_path in batch.ends_in_cr:
        if _lone_cr_at_end(cwd, raw_path, rgstd.last_line(paths[i], texts[i])):
            raise rgstd.Unsure("a last line ending in a lone CR")  # rare enough for --json to show it
    account.add(batch.sizes)
    if any(map(os.path.isabs, paths)):  # shown relative to the workdir where inside it
        shown = [cwd_relative(path, cwd) for path in paths]
        texts = [text if a == b else a + text[len(b) :] for a, b, text in zip(shown, paths, texts, strict=True)]
        paths = shown
    return _in_stream_order(list(map(Section._make, zip(paths, batch.lines, texts, strict=True))))


def _reads_standard_output(config: Config) -> bool:
    """Whether grep may read ripgrep's standard output: not when ripgrep's memory is bounded below what
    --json's buffers within the raw-output cap may need (a run that --json would end out of memory, the
    standard output would not)."""
    return config.rg_memory_max_bytes >= rg_memory_default(config.raw_output_max_bytes)


async def _search_std(
    searcher: Searcher, pattern: str, tail: list[str | bytes], where: Where, tally: Tally | None
) -> tuple[list[Section], RgResult]:
    """grep reading ripgrep's standard output (engine/rgstd.py). Raises rgstd.Unsure when --json must decide."""
    cwd = where.cwd
    config = searcher.config
    cap = config.raw_output_max_bytes
    account = _Account(cap, rgstd.may_match_bytes(pattern), rgstd.literal_of(pattern))
    batches = BlockBatches(
        lambda blob: _std_batch(blob, cwd, config.grep_max_line_bytes, account), searcher.workers.parse
    )
    batches.watch(b"\0")
    counted = batches.feed if tally is None else tally.counting_blocks(batches.feed)

    def sink(chunk: bytes) -> None:
        if account.over:
            raise _Overflow
        counted(chunk)

    capped = False

    def on_overflow() -> None:
        nonlocal capped
        capped = True
        batches.cancel()

    started = time.monotonic()

    async def settle(outcome: ripgrep.Outcome) -> None:
        """Before the run is classified: the --json size decides first, as --json's cap would have."""
        if capped or outcome.exit_code is None:
            return  # over the cap already (no --json is smaller), or killed: classified as such
        if outcome.out_of_memory:
            raise rgstd.Unsure("ripgrep ran out of memory")  # would --json have? Only a --json run says
        await batches.finish()
        parts = await batches.results()
        sizes = account.sizes
        if batches.stats is None and (any(parts) or outcome.exit_code in (0, 1)):
            raise rgstd.Unsure("no statistics at the end of the output")
        if batches.stats is not None and (
            batches.stats.matched_lines != sizes.lines
            or batches.stats.files_with_matches != sizes.files
            or (account.literal is not None and batches.stats.matches != sizes.submatches)
        ):
            raise rgstd.Unsure("statistics that disagree with the blocks")
        if batches.stats is None:
            return  # ripgrep stopped before searching (a pattern or glob it rejects): --json printed nothing
        size = rgstd.json_size(
            sizes,
            batches.stats,
            seconds=time.monotonic() - started,
            submatch_bytes=account.submatch_bytes,
            literal=account.literal,
        )
        if size.lower > cap:
            raise ToolError(SEARCH_RAW_OUTPUT_OVERFLOW, texts.raw_output_overflow(TOOL, cap))
        if size.upper > cap:
            raise rgstd.Unsure("the raw-output cap lies between the bounds of --json's size")

    argv: list[str | bytes] = [*rgstd.ARGS, f"--regexp={pattern}", *tail]
    try:
        result = await run_rg(
            searcher, TOOL, argv, where, lambda _: batches.saw(b"\0"), sink=sink, tally=tally,
            on_overflow=on_overflow, settle=settle,
        )  # fmt: skip
    except _Overflow:
        batches.cancel()
        raise ToolError(SEARCH_RAW_OUTPUT_OVERFLOW, texts.raw_output_overflow(TOOL, cap)) from None
    except BaseException:
        batches.cancel()
        raise
    if result.no_matches:
        return [], result
    return ordered(await batches.results()), result


async def _search_json(
    searcher: Searcher, pattern: str, tail: list[str | bytes], where: Where, tally: Tally | None
) -> tuple[list[Section], RgResult]:
    """grep reading ripgrep's --json, upstream's argv: the fallback of the standard output's reading."""
    cwd = where.cwd
    cap = searcher.config.grep_max_line_bytes
    batches = Batches(
        b"\n", lambda blob: parse_batch(blob, cwd, cap), searcher.workers.parse, growth=lambda batch: batch.growth
    )
    batches.watch(_MATCH_TYPE)
    sink = batches.feed if tally is None else tally.counting(batches.feed, MATCH_RECORD, BEGIN_RECORD)
    try:
        result = await run_rg(
            searcher, TOOL, ["--json", f"--regexp={pattern}", *tail], where, lambda _: batches.saw(_MATCH_TYPE),
            sink=sink, tally=tally, on_overflow=batches.cancel,
        )  # fmt: skip
        await check_decoded_size(TOOL, result, batches, searcher.config.raw_output_max_bytes)
    except BaseException:  # failed, over the cap, timed out or cancelled: nothing will read the batches
        batches.cancel()
        raise
    if result.no_matches:
        return [], result
    return ordered([sections(part.files, cap) for part in await batches.results()]), result


async def _search(
    searcher: Searcher, pattern: str, include: str | None, where: Where, tally: Tally | None
) -> tuple[list[Section], RgResult]:
    chosen = None
    if searcher.source is not None:
        chosen = await searcher.source.grep(where.cwd, where.path, pattern, include, searcher.deny_globs)
    tail: list[str | bytes]
    if chosen is None:  # ripgrep walks; a progress note says why, when the index is on its way
        tail = [*build_argv(pattern, where.path, include, searcher.deny_globs)[2:]]
        if tally is not None and searcher.source is not None:
            tally.note = searcher.source.walk_note(where.cwd)
    else:  # ripgrep reads the files the source chose: the same records, the same result
        tail = source.argv(chosen)
    started = time.monotonic()
    walked = chosen is None and searcher.source is not None  # the source learns how long walks take

    def noted() -> None:
        nonlocal walked
        if walked and searcher.source is not None:
            searcher.source.note_walk(where.cwd, time.monotonic() - started)
        walked = False

    if _reads_standard_output(searcher.config):
        try:
            files, result = await _search_std(searcher, pattern, tail, where, tally)
        except rgstd.Unsure as why:  # ripgrep searched; --json must say what it found
            noted()
            log.debug("grep: reading ripgrep's --json instead of its standard output: %s", why)
            if tally is not None:
                tally.items = tally.files = 0
        else:
            noted()
            return _allowed(files, where), result
    files, result = await _search_json(searcher, pattern, tail, where, tally)
    noted()
    return _allowed(files, where), result


def _allowed(files: list[Section], where: Where) -> list[Section]:
    if where.deny is None:
        return files
    deny = where.deny
    return [f for f in files if not deny.denies(f.path)]


async def grep(searcher: Searcher, args: GrepArgs, scope: Scope, tally: Tally | None = None) -> SearchResult:
    """Lines matching `args.pattern`, grouped by file: the page, its meta, and the complete result saved
    when it is over grepMaxMatches."""
    validate(args)
    where = locate(searcher, scope, args.cwd, args.path)
    config = searcher.config
    files, result = await bounded(config, TOOL, _search(searcher, args.pattern, args.include, where, tally))
    total = sum(f.matches for f in files)
    spill = None
    if total > config.grep_max_matches:
        spill = await save(searcher.spill, args.session_id, texts.GREP_SPILL_NAME, spill_pieces(files, total))
    page = render(files, max_matches=config.grep_max_matches, spill=spill)
    meta = grep_meta(page.shown, page.truncated, total, config.search_meta_max_bytes)
    return SearchResult(page.text + problems_suffix(result), meta, spill)

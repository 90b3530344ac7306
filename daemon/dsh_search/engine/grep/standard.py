"""grep reading ripgrep's standard printer (standard_parse.py reads it), the way a grep is run first.

`StandardRun` is one such run: ripgrep's blocks are cut into batches (`BlockBatches`) and parsed on the
worker while it searches, each batch's share of what `--json` would have printed is added up
(`Account`), and a run whose `--json` would have passed the raw-output cap is stopped as upstream's cap
would have stopped it. When the run is over, `settle` judges it before it is classified. Whenever this
reading cannot promise what upstream's `--json` reading would have shown, it raises `Unsure` (the
reasons, each a rule of `settle` or of the reading) and the search runs again with `--json` (json.py).

Only content searches without context lines or multiline matches read the standard printer: those
print what standard_parse.py knows (grep/__init__.py chooses).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

import orjson

from dsh_search import osdep, texts
from dsh_search.config import Config, rg_memory_default
from dsh_search.engine import ripgrep
from dsh_search.engine.batches import Batches
from dsh_search.engine.failures import SEARCH_RAW_OUTPUT_OVERFLOW, ToolError
from dsh_search.engine.grep import standard_parse as parse
from dsh_search.engine.grep.page import Section, in_stream_order, ordered
from dsh_search.engine.jscompat import utf8_growth
from dsh_search.engine.paths import cwd_relative
from dsh_search.engine.request import GrepQuery
from dsh_search.engine.run import RgResult, run_rg
from dsh_search.engine.scope import Where
from dsh_search.engine.searcher import Searcher, Tally
from dsh_search.engine.source import GrepFiles

TOOL = "grep"
Unsure = parse.Unsure
T = TypeVar("T")
# A final batch of at most this many bytes (a whole output of a hundred matches or so) is read on the event
# loop when ripgrep's output ends: ~20 µs a KiB (`alloc_chrdev_region` in the Linux tree, 9 KiB: 0.19 ms),
# where the hand-off to the worker and back took 0.3-0.7 ms.
INLINE_MAX = 16 << 10
# Bytes of file names a measuring run may put on ripgrep's command line (0 on Windows: it never does).
NAMES_BUDGET = osdep.argv_names_budget()


def reads_standard_output(config: Config) -> bool:
    """Whether grep may read ripgrep's standard output: not when ripgrep's memory is bounded below what
    --json's buffers within the raw-output cap may need (a run that --json would end out of memory, the
    standard output would not)."""
    return config.rg_memory_max_bytes >= rg_memory_default(config.raw_output_max_bytes)


class BlockBatches(Batches[T]):
    """ripgrep's standard output (standard_parse.py) in batches of whole blocks, each parsed on its own: a
    block too long for one batch goes on in the next, which then starts with `parse.CONTINUED` and the
    block's header. The statistics that end the stream are kept apart (`stats`), once it has ended."""

    def __init__(
        self, work: Callable[[bytes], T], pool: Executor, *, min_bytes: int = 1 << 16, max_bytes: int = 1 << 17
    ) -> None:
        super().__init__(
            b"\n", work, pool, growth=lambda _: 0, min_bytes=min_bytes, max_bytes=max_bytes, inline_max=INLINE_MAX
        )
        self._open: bytes | None = None  # the header of the block the next batch continues
        self.stats: parse.Stats | None = None

    def _next(self, buf: bytearray, start: int) -> tuple[bytes, int] | None:
        inside = self._open is not None
        found = parse.cut(buf, start, start + self._max, inside=inside) or parse.cut(
            buf, start, len(buf), inside=inside
        )
        if found is None:
            return None
        end, resume, continues = found
        prefix = b"" if self._open is None else parse.CONTINUED + self._open
        self._open = parse.header_before(buf, start, end, self._open) if continues else None
        if continues and self._open is None:  # not ripgrep's blocks: the parse says so, in order
            self._open = b""
        return prefix + bytes(buf[start:end]), resume

    def _rest(self, rest: bytes) -> bytes:
        if not rest:  # flushed again
            return rest
        blocks, self.stats = parse.split_stats(rest)
        return blocks if self._open is None or not blocks else parse.CONTINUED + self._open + blocks


class _Overflow(Exception):
    """ripgrep's output as --json would pass the raw-output cap: stop it."""


class Account:
    """What the parsed batches of ripgrep's standard output add up to as --json, while it still runs
    (batches are parsed in order on one worker; the last may be parsed on the caller's thread)."""

    def __init__(self, cap: int, submatch_bytes: bool, literal: bytes | None = None) -> None:
        self.cap = cap
        self.submatch_bytes = submatch_bytes
        self.literal = literal
        self.sizes = parse.Sizes()
        self.over = False
        self.names: list[list[str]] = []  # each batch's files as ripgrep printed them (decoded), in order
        self._lock = threading.Lock()

    def add(self, sizes: parse.Sizes, names: list[str]) -> None:
        with self._lock:
            self.sizes = self.sizes.plus(sizes)
            self.names.append(names)
            size = parse.json_size(self.sizes, None, seconds=0, submatch_bytes=False, literal=self.literal)
            if size.lower > self.cap:
                self.over = True


def lone_cr_at_end(cwd: str, raw_path: bytes, last: int) -> bool:
    """Whether a file's line `last`, printed with `\\r\\n`, is in fact its last line ending in a lone `\\r`
    (ripgrep's printer terminates a last line, and upstream keeps that `\\r`); raises Unsure when the file
    cannot tell (gone, not a regular file, UTF-16 that ripgrep transcoded)."""
    raw = raw_path if os.path.isabs(raw_path) else os.path.join(os.fsencode(cwd), raw_path)
    try:
        fd = os.open(raw, os.O_RDONLY | osdep.O_NONBLOCK | osdep.O_CLOEXEC | getattr(os, "O_BINARY", 0))
    except OSError:
        raise Unsure("a file whose last line may end in a lone CR cannot be read") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            raise Unsure("a file whose last line may end in a lone CR is not a regular file")
        if osdep.pread(fd, 2, 0) in (b"\xff\xfe", b"\xfe\xff"):
            raise Unsure("a UTF-16 file whose last line may end in a lone CR")
        if osdep.pread(fd, 1, info.st_size - 1) != b"\r":
            return False
        newlines = 0
        offset = 0
        while chunk := osdep.pread(fd, 1 << 20, offset):
            newlines += chunk.count(b"\n")
            offset += len(chunk)
        return newlines + 1 == last
    except OSError:
        raise Unsure("a file whose last line may end in a lone CR cannot be read") from None
    finally:
        os.close(fd)


def parse_batch(blob: bytes, cwd: str, cap: int, account: Account) -> list[Section]:
    """A batch of ripgrep's standard output → its sections (on the parse worker)."""
    batch = parse.parse(blob, cap, account.literal)
    paths, bodies = batch.paths, batch.texts
    for i, raw_path in batch.ends_in_cr:
        if lone_cr_at_end(cwd, raw_path, parse.last_line(paths[i], bodies[i])):
            raise Unsure("a last line ending in a lone CR")  # rare enough for --json to show it
    account.add(batch.sizes, paths)
    if any(map(os.path.isabs, paths)):  # shown relative to the workdir where inside it
        shown = [cwd_relative(path, cwd) for path in paths]
        bodies = [text if a == b else a + text[len(b) :] for a, b, text in zip(shown, paths, bodies, strict=True)]
        paths = shown
    return in_stream_order(list(map(Section._make, zip(paths, batch.lines, bodies, strict=True))))


class StandardRun:
    """One grep run reading ripgrep's standard printer. `run` returns the sections and the run's result,
    or raises Unsure when --json must decide."""

    def __init__(self, searcher: Searcher, query: GrepQuery, where: Where, tally: Tally | None) -> None:
        self.searcher = searcher
        self.where = where
        self.tally = tally
        config = searcher.config
        self.cap = config.raw_output_max_bytes
        literal = None if query.folds_case else parse.literal_of(query.pattern)
        self.account = Account(self.cap, parse.may_match_bytes(query.pattern), literal)
        cwd, line_cap, account = where.cwd, config.grep_max_line_bytes, self.account
        self.batches = BlockBatches(lambda blob: parse_batch(blob, cwd, line_cap, account), searcher.workers.parse)
        self.batches.watch(b"\0")
        self.counted = self.batches.feed if tally is None else tally.counting_blocks(self.batches.feed)
        self.capped = False  # ripgrep's own output passed the cap
        self.started = time.monotonic()
        # --json's size bounds straddled the cap after a clean run: `measure` decides (None: they did not)
        self.straddled: parse.Stats | None = None

    async def run(self, argv: list[str | bytes]) -> tuple[list[Section], RgResult]:
        batches = self.batches
        try:
            result = await run_rg(
                self.searcher, TOOL, argv, self.where, lambda _: batches.saw(b"\0"), sink=self.sink,
                tally=self.tally, on_overflow=self.on_overflow, settle=self.settle,
            )  # fmt: skip
        except _Overflow:
            batches.cancel()
            raise self._overflow() from None
        except BaseException:
            batches.cancel()
            raise
        if result.no_matches:
            return [], result
        return ordered(await batches.results()), result

    def sink(self, chunk: bytes) -> None:
        """ripgrep's output, on the thread that reads it: stopped as soon as --json would pass the cap."""
        if self.account.over:
            raise _Overflow
        self.counted(chunk)

    def on_overflow(self) -> None:
        self.capped = True
        self.batches.cancel()

    async def settle(self, outcome: ripgrep.Outcome) -> None:
        """Before the run is classified: the --json size decides first, as --json's cap would have."""
        if self.capped or outcome.exit_code is None:
            return  # over the cap already (no --json is smaller), or killed: classified as such
        if outcome.out_of_memory:
            raise Unsure("ripgrep ran out of memory")  # would --json have? Only a --json run says
        batches = self.batches
        await batches.finish()
        parts = await batches.results()
        stats = batches.stats
        if stats is None:
            if any(parts) or outcome.exit_code in (0, 1):
                raise Unsure("no statistics at the end of the output")
            return  # ripgrep stopped before searching (a pattern or glob it rejects): --json printed nothing
        self._check_stats(stats)
        account = self.account
        size = parse.json_size(
            account.sizes,
            stats,
            seconds=time.monotonic() - self.started,
            submatch_bytes=account.submatch_bytes,
            literal=account.literal,
        )
        if size.lower > self.cap:
            raise self._overflow()
        if size.upper > self.cap:
            if outcome.exit_code == 0 and not account.sizes.not_utf8 and not account.sizes.binary:
                self.straddled = stats  # the sections are kept; `measure` counts --json's bytes
                return
            raise Unsure("the raw-output cap lies between the bounds of --json's size")

    async def measure(self, json_argv: Callable[[GrepFiles], list[str | bytes]], *, walked: bool) -> bool:
        """After a clean run whose --json size straddled the cap (`straddled`): ripgrep runs again with
        --json over the files with matches alone (`json_argv` makes its argv), its bytes counted, not
        parsed. A file's records do not depend on the files searched around it, and a file without
        matches prints none, so they are the walk's; the summary, the one record that differs, is
        bounded from the first run's statistics (`walked`: those are a walk's). True when --json stays
        within the cap (the sections stand); raises the overflow when it passes it; False when this
        cannot tell (a search whose --json is within a few bytes of the cap, a file changed between
        the runs, more names than the command line takes): then the whole --json run decides. Never
        asked when a name or a line was not UTF-8, or a NUL stopped a file's search after matches: a
        file named on the command line is searched as a binary one is not in a walk (settle)."""
        stats = self.straddled
        if stats is None:
            return False
        names = list(dict.fromkeys(name for batch in self.account.names for name in batch))
        if len(names) != stats.files_with_matches:
            return False
        named = [name.encode("utf-8") for name in names]  # as printed: UTF-8 (sizes.not_utf8 is False)
        if sum(len(name) + 9 for name in named) > NAMES_BUDGET:  # each name, its NUL, its pointer
            return False
        count = JsonCount()
        try:
            result = await run_rg(self.searcher, TOOL, json_argv(GrepFiles(named, [])), self.where, bool, count.feed)
        except ToolError as exc:
            if exc.kind == SEARCH_RAW_OUTPUT_OVERFLOW:
                raise  # the files' records alone passed the cap, as the walk's would have
            return False
        summary = count.summary()
        if result.no_matches or result.unreadable or summary is None:
            return False
        data, summary_bytes = summary
        counted = data.get("stats")
        if (
            not isinstance(counted, dict)
            or counted.get("matched_lines") != stats.matched_lines
            or counted.get("matches") != stats.matches
            or counted.get("searches_with_match") != stats.files_with_matches
            or counted.get("searches") != len(named)
        ):
            return False  # a file changed between the two runs
        if count.growth:
            return False  # not UTF-8 after all: the --json reading counts what decoding adds
        records = count.bytes - summary_bytes
        bounds = parse.summary_size(stats, records, seconds=time.monotonic() - self.started, walked=walked)
        if records + bounds.lower > self.cap:
            raise self._overflow()
        return records + bounds.upper <= self.cap

    def _overflow(self) -> ToolError:
        """The raw-output overflow, as upstream's cap on --json would have reported it."""
        return ToolError(SEARCH_RAW_OUTPUT_OVERFLOW, texts.raw_output_overflow(TOOL, self.cap))

    def _check_stats(self, stats: parse.Stats) -> None:
        """ripgrep's statistics agree with the blocks read (each line a matched line, each block a file;
        for a literal, its occurrences the submatches)."""
        sizes, literal = self.account.sizes, self.account.literal
        if (
            stats.matched_lines != sizes.lines
            or stats.files_with_matches != sizes.files
            or (literal is not None and stats.matches != sizes.submatches)
        ):
            raise Unsure("statistics that disagree with the blocks")


class JsonCount:
    """ripgrep's --json output counted as it comes, not kept: its bytes, what decoding it as UTF-8 with
    replacements adds (jscompat.utf8_growth, over whole lines: a cut at a newline does not change it),
    and its last line, the summary."""

    LONGEST = 1 << 20  # a line longer than this is no summary, and its growth is not worked out here

    def __init__(self) -> None:
        self.bytes = 0
        self.growth = 0
        self.whole = True  # every line's growth was counted
        self._tail = b""  # the output's last line, from its start (complete or not)

    def feed(self, chunk: bytes) -> None:
        self.bytes += len(chunk)
        if not self.whole:
            return
        data = self._tail + chunk
        start = data.rfind(b"\n", 0, len(data) - 1) + 1  # where the last line starts
        done = data[:start]
        if done and not done.isascii():
            self.growth += utf8_growth(done)
        self._tail = data[start:]
        if len(self._tail) > self.LONGEST:
            self.whole, self._tail = False, b""

    def summary(self) -> tuple[dict[str, object], int] | None:
        """The summary record's data and its size, when the output ends with it and every line before it
        was counted."""
        line = self._tail
        if not self.whole or not line.endswith(b'"type":"summary"}\n') or not line.isascii():
            return None
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(record, dict) or record.get("type") != "summary":
            return None
        data = record.get("data")
        return (data, len(line)) if isinstance(data, dict) else None

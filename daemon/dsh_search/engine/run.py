"""One ripgrep run for a search: a slot, the launch, the outcome classified; the timeout; the result.

An rg run waits for a slot (maxConcurrentSearches) and the whole search is bounded by timeoutMs
(`bounded`). The outcome follows upstream's decision sequence (docs/behaviour.md, "Failures") with our
fixes: raw output past the cap was already stopped by the runner; exit 2 with results keeps the results
and counts the paths rg complained about; every syntax rejection is SEARCH_INVALID_PATTERN.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import stat
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple, NoReturn, TypeVar

from dsh_search import texts
from dsh_search.config import Config
from dsh_search.engine import failures, ripgrep
from dsh_search.engine.batches import Batches
from dsh_search.engine.failures import ToolError
from dsh_search.engine.jscompat import js_trim
from dsh_search.engine.paths import same_directory
from dsh_search.engine.scope import Where
from dsh_search.engine.searcher import Searcher, Sink, Tally
from dsh_search.engine.spill import SpillRef

log = logging.getLogger("dsh_search.search")

T = TypeVar("T")

# What ripgrep says when it rejects a regex or a glob for its syntax (not for a path problem).
_SYNTAX_REJECTION = re.compile(
    r"regex parse error|error parsing glob|is not allowed in a regex|regex exceeds size limit|impossible to match",
    re.IGNORECASE,
)


class RgResult(NamedTuple):
    stdout: bytes
    no_matches: bool  # exit 1: a successful empty search
    unreadable: int  # exit 2 with results: paths ripgrep reported errors for
    stdout_bytes: int = 0  # the size of rg's stdout
    bad_ignore_files: int = 0  # exit 2 with results: ignore files with rules ripgrep could not parse


async def bounded(config: Config, tool: str, work: Awaitable[T]) -> T:
    """Run a search within timeoutMs; past it, the search (and its rg group) is terminated."""
    try:
        async with asyncio.timeout(config.timeout_ms / 1000):
            return await work
    except TimeoutError:
        raise ToolError(failures.SEARCH_ABORTED, texts.timed_out(tool, config.timeout_ms)) from None


def preflight(tool: str, where: Where) -> bool:
    """Before a search reads anything: raises SEARCH_FAILED when its cwd cannot be entered (ripgrep would
    not start there); True when its root is denied (nothing under it exists as far as searches go)."""
    if where.named is not None and not same_directory(where.named, where.cwd):
        # The name leads nowhere the kernel can go (missing, not a directory, a component it may not
        # search), or it changed under us: rg would not start there either.
        if where.explain:  # a model's call through MCP: its text names the directory and what is wrong
            reason = unenterable(where.named)
            log.warning("%s: ripgrep was not started: the directory %s %s", tool, where.named, reason)
            raise ToolError(failures.SEARCH_FAILED, texts.cannot_enter(tool, where.named, reason))
        _could_not_start(tool, f"cwd {where.named} is not a directory the daemon can enter")
    # A denied file named directly (or through a symlink), or a denied directory: it does not exist as
    # far as searches go, so rg is not even started on it.
    return where.deny is not None and where.deny.root_denied()


def unenterable(directory: str) -> str:
    """Why a directory cannot be a search's cwd, as the end of a sentence that names it."""
    try:
        info = os.stat(directory)
    except FileNotFoundError:
        return "does not exist where dsh-search runs"
    except PermissionError:
        return "cannot be reached: permission denied"
    except (OSError, ValueError) as exc:
        return f"cannot be reached: {getattr(exc, 'strerror', None) or exc}"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if not os.access(directory, os.X_OK):
        return "cannot be entered: permission denied"
    return "changed while the search started"


def _could_not_start(tool: str, cause: object) -> NoReturn:
    # The model is shown upstream's words; the host, whose mistake or machine it usually is (a cwd that
    # does not exist, a ripgrep gone missing), is told the cause: on stderr and, for an MCP client, as a
    # notifications/message warning.
    log.warning("%s: ripgrep was not started: %s", tool, cause)
    raise ToolError(failures.SEARCH_FAILED, texts.could_not_start(tool)) from None


async def run_rg(
    searcher: Searcher,
    tool: str,
    args: Sequence[str | bytes],
    where: Where,
    has_results: Callable[[bytes], bool],
    sink: Sink | None = None,
    stdin_data: bytes | None = None,
    tally: Tally | None = None,
    on_overflow: Callable[[], None] | None = None,
    settle: Callable[[ripgrep.Outcome], Awaitable[None]] | None = None,
) -> RgResult:
    """One rg run for `tool`: a slot, the launch, the outcome classified. `has_results` tells, at exit 2,
    whether rg found anything (then its complaints become a note, not a failure). `on_overflow` is told,
    on the thread reading rg's output, the moment that output passes the raw-output cap. `settle` sees
    the outcome before it is classified, and may raise instead (grep's judgement of the raw-output cap on
    ripgrep's standard output comes first, as the cap's own does)."""
    async with searcher.slots:
        if tally is not None:
            tally.searching = True
        if preflight(tool, where):
            return RgResult(b"", no_matches=True, unreadable=0, stdout_bytes=0)
        try:
            outcome = await searcher.launch(
                args, cwd=where.cwd, stdin_data=stdin_data, sink=sink, on_overflow=on_overflow
            )
        except ripgrep.LaunchError as exc:
            _could_not_start(tool, exc)
    if settle is not None:
        await settle(outcome)
    return classify(tool, outcome, searcher.config.raw_output_max_bytes, has_results)


def classify(tool: str, outcome: ripgrep.Outcome, cap: int, has_results: Callable[[bytes], bool]) -> RgResult:
    # Past its memory bound rg aborts; only output it was buffering can get it there (its memory is
    # otherwise small and fixed), so this is the raw-output overflow, reported quickly.
    if outcome.stdout_overflow or outcome.out_of_memory:
        raise ToolError(failures.SEARCH_RAW_OUTPUT_OVERFLOW, texts.raw_output_overflow(tool, cap))
    code = outcome.exit_code
    if code is None:
        name = _signal_name(outcome.signal)
        raise ToolError(failures.SEARCH_FAILED, texts.killed_by_signal(tool, name))
    size = outcome.stdout_bytes
    if code in (0, 1):
        return RgResult(outcome.stdout, no_matches=code == 1, unreadable=0, stdout_bytes=size)
    stderr = outcome.stderr.decode("utf-8", "replace")
    if code == 2 and has_results(outcome.stdout):
        unreadable, bad_ignore_files = outcome.reported_paths, outcome.bad_ignore_files
        if not unreadable and not bad_ignore_files:
            unreadable = 1  # rg failed without saying on what: at least one path went unsearched
        # Also told to the client (as an MCP log message), with ripgrep's first complaint, which the
        # text leaves out.
        first = stderr_excerpt(stderr, False).split("\n", 1)[0]
        if unreadable:
            log.warning(
                "%s: ripgrep could not read %d path(s) of a search that found results: %s", tool, unreadable, first
            )
        return RgResult(outcome.stdout, False, unreadable, size, bad_ignore_files)
    excerpt = stderr_excerpt(stderr, outcome.stderr_lossy)
    if _SYNTAX_REJECTION.search(excerpt):
        raise ToolError(failures.SEARCH_INVALID_PATTERN, texts.pattern_rejected(tool, excerpt))
    raise ToolError(failures.SEARCH_FAILED, texts.search_failed(tool, code, excerpt))


async def check_decoded_size(tool: str, result: RgResult, batches: Batches[Any], cap: int) -> None:
    """Upstream's second raw-output check, once the stream is complete.

    Upstream decodes rg's stdout as UTF-8 with replacements and fails when the decoded text is over the
    cap in UTF-8 bytes, although the raw bytes were not: each replaced sequence counts 3 bytes. glob's
    output has the same size as upstream's (one separator per path; NUL here, newline there), and grep's
    is the same `--json` stream, so the decoded size is rg's byte count plus the batches' growth.
    """
    await batches.finish()
    size = result.stdout_bytes + batches.decoded_growth()
    if size > cap:
        raise ToolError(failures.SEARCH_RAW_OUTPUT_OVERFLOW, texts.raw_output_over_cap(tool, size, cap))


def stderr_excerpt(stderr: str, lossy: bool) -> str:
    """Upstream's excerpt of the retained stderr: trimmed as JavaScript trims, marked when its head was
    lost. Nothing left after trimming is no excerpt at all, marker included."""
    excerpt = js_trim(stderr)
    if excerpt and lossy:
        excerpt += texts.STDERR_TRUNCATED
    return excerpt


def _signal_name(number: int | None) -> str:
    if number is None:
        return "(unknown)"
    try:
        return signal.Signals(number).name
    except ValueError:
        return "(unknown)"


# --- the result -------------------------------------------------------------------------------------


class SearchResult(NamedTuple):
    """What glob and grep answer: the model's text, the card's meta, the saved complete result — and the
    counts of the complete result, which the native result does not carry (upstream's shape) and an MCP
    result does (methods/tools.py: each tool's structured content)."""

    text: str
    meta: dict[str, Any]
    spill: SpillRef | None
    found: int | None = None  # glob: paths found; grep: matches found (None where ripgrep does not count them)
    files: int | None = None  # grep: files with a match (glob: None)
    partial: bool = False  # the text shows part of the result: the rest is saved (or could not be) or on other pages

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text, "meta": self.meta, "spill": self.spill.as_json() if self.spill else None}


def problems_suffix(result: RgResult) -> str:
    """The paragraphs added after the results when ripgrep also reported problems (exit 2)."""
    notes = []
    if result.unreadable:
        notes.append(texts.unreadable_paths_note(result.unreadable))
    if result.bad_ignore_files:
        notes.append(texts.bad_ignore_files_note(result.bad_ignore_files))
    return "".join("\n\n" + note for note in notes)

"""What glob and grep share: where a search runs, one rg run within the limits, its outcome classified.

Order of checks: arguments (`INVALID_ARGS`, in each tool), then confinement, then the search
itself. An rg run waits for a slot (maxConcurrentSearches) and the whole search is bounded by
timeoutMs. The outcome follows upstream's decision sequence (docs/behaviour.md, "Failures") with the fixes:
raw output past the cap was already stopped by the runner; exit 2 with results keeps the results and
counts the paths rg complained about; every syntax rejection is SEARCH_INVALID_PATTERN.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

from dsh_search import texts
from dsh_search.config import Config
from dsh_search.methods import errors
from dsh_search.methods.context import Context
from dsh_search.methods.errors import ToolError
from dsh_search.methods.params import object_schema
from dsh_search.methods.progress import counting_sink
from dsh_search.methods.registry import ToolFace
from dsh_search.methods.roots import workspace_roots
from dsh_search.search import ripgrep
from dsh_search.search.batches import Batches
from dsh_search.search.jscompat import js_trim
from dsh_search.search.paths import DenyCheck, confined, directory_name, same_directory
from dsh_search.store.spill import SpillRef, SpillStore

log = logging.getLogger("dsh_search.search")

T = TypeVar("T")

# What ripgrep says when it rejects a regex or a glob for its syntax (not for a path problem).
_SYNTAX_REJECTION = re.compile(
    r"regex parse error|error parsing glob|is not allowed in a regex|regex exceeds size limit|impossible to match",
    re.IGNORECASE,
)


# The result of glob and grep, as rpc.discover and MCP's outputSchema describe it. `meta` has one of two
# shapes (presentation.py): glob's paths, grep's matches grouped by file; `spill` is null when nothing was
# saved.
SPILL_REF: dict[str, Any] = object_schema(
    {"locator": {"type": "string"}, "bytes": {"type": "integer"}, "retrievalHint": {"type": "string"}},
    ["locator", "bytes", "retrievalHint"],
)
PATHS_META: dict[str, Any] = object_schema(
    {
        "shape": {"type": "string", "enum": ["paths"]},
        "paths": {"type": "array", "items": {"type": "string"}},
        "truncated": {"type": "boolean"},
        "total": {"type": "integer"},
    },
    ["shape", "paths", "truncated", "total"],
)
MATCHES_META: dict[str, Any] = object_schema(
    {
        "shape": {"type": "string", "enum": ["matches"]},
        "files": {
            "type": "array",
            "items": object_schema(
                {
                    "path": {"type": "string"},
                    "matches": {
                        "type": "array",
                        "items": object_schema(
                            {"lineNumber": {"type": "integer"}, "line": {"type": "string"}}, ["lineNumber", "line"]
                        ),
                    },
                },
                ["path", "matches"],
            ),
        },
        "truncated": {"type": "boolean"},
        "total": {"type": "integer"},
    },
    ["shape", "files", "truncated", "total"],
)
SEARCH_RESULT: dict[str, Any] = object_schema(
    {
        "text": {"type": "string"},
        "meta": {"oneOf": [PATHS_META, MATCHES_META]},
        "spill": {"oneOf": [SPILL_REF, {"type": "null"}]},
    },
    ["text", "meta", "spill"],
)
SEARCH_ERRORS = errors.openrpc_errors(
    errors.INVALID_ARGS,
    errors.SEARCH_INVALID_PATTERN,
    errors.SEARCH_FAILED,
    errors.SEARCH_RAW_OUTPUT_OVERFLOW,
    errors.SEARCH_ABORTED,
    cancellable=True,
)


# Host-only fields of glob and grep: never in the model-facing schema; MCP callers pass them in `_meta`.
HOST_FIELDS: dict[str, dict[str, Any]] = {
    "cwd": {"type": "string", "description": "Host only: the session's working directory."},
    "sessionId": {"type": "string", "description": "Host only: groups spill artifacts."},
}

# The spill session of a call that names none. Only an absent sessionId means it: "" is a session id
# like any other (its artifacts go to session-<sha256("")[:12]>, as upstream's).
DEFAULT_SESSION = "default"


def search_tool(
    describe: Callable[[Config], str], model_properties: dict[str, dict[str, Any]]
) -> tuple[dict[str, Any], ToolFace]:
    """A search tool's native params schema (the model's params plus the host-only fields) and its
    model-facing face (the model's params only; MCP clients pass the host fields in `_meta`)."""
    native = object_schema({**model_properties, **HOST_FIELDS}, ["pattern"])
    face = ToolFace(describe, object_schema(model_properties, ["pattern"]), host_fields=tuple(HOST_FIELDS))
    return native, face


class Where(NamedTuple):
    cwd: str  # absolute; rg's cwd and the base of display paths (see paths.directory_name)
    path: str | None  # the search root as the caller wrote it
    named: str | None = None  # the directory as the host named it, when it must be checked against cwd
    deny: DenyCheck | None = None  # denyGlobs for this search's results, when configured


class RgResult(NamedTuple):
    stdout: bytes
    no_matches: bool  # exit 1: a successful empty search
    unreadable: int  # exit 2 with results: paths ripgrep reported errors for
    stdout_bytes: int = 0  # the size of rg's stdout
    bad_ignore_files: int = 0  # exit 2 with results: ignore files with rules ripgrep could not parse


def resolve(ctx: Context, params: dict[str, Any]) -> Where:
    """The cwd and path of a search, confined to the allowed roots and the client's roots when set.

    rg runs in the directory the host named, as the kernel resolves that name: with `w/x/link/..` and
    `link -> ../a/b`, that is `w/a`, not the `w/x` a lexical normalisation gives. Display paths are
    relative to the same directory and confinement looks at its real path, so all three agree.

    The workspace (the default cwd, and what a relative cwd joins) is --workdir; without it, the MCP
    client's first root when it shared roots (methods/roots.py), else the daemon's own directory — which
    is refused when it is `/` and neither cwd nor path is absolute (texts.NO_WORKSPACE). Whatever the
    confinement, a search inside the spill directory is allowed: the footers tell the model to grep there.
    """
    cwd = params.get("cwd")
    path = params.get("path")
    client_roots = workspace_roots(ctx)
    home = client_roots[0].path if client_roots else ctx.workdir
    if (
        not client_roots
        and not ctx.workdir_given
        and home == "/"
        and not (cwd or "").startswith("/")
        and not (path or "").startswith("/")
    ):
        raise errors.invalid_args(texts.NO_WORKSPACE)
    named = home if cwd is None else os.path.join(home, cwd)
    base = directory_name(named)
    allowed = ctx.config.allowed_roots
    confinements = [roots for roots in (allowed, tuple(r.real for r in client_roots)) if roots]
    if confinements:
        spill = (os.path.realpath(ctx.spill.root),)

        def permitted(where: str) -> bool:
            return all(confined(where, roots) for roots in confinements) or confined(where, spill)

        if not permitted(base) or (path is not None and not permitted(os.path.join(base, path))):
            raise errors.invalid_args(texts.OUTSIDE_ALLOWED_ROOTS)
    return Where(cwd=base, path=path, named=named, deny=ctx.deny_globs.for_search(base, path))


async def bounded(ctx: Context, tool: str, work: Awaitable[T]) -> T:
    """Run a search within timeoutMs; past it, the search (and its rg group) is terminated."""
    try:
        async with asyncio.timeout(ctx.config.timeout_ms / 1000):
            return await work
    except TimeoutError:
        raise ToolError(errors.SEARCH_ABORTED, texts.timed_out(tool, ctx.config.timeout_ms)) from None


async def run_rg(
    ctx: Context,
    tool: str,
    args: Sequence[str],
    where: Where,
    has_results: Callable[[bytes], bool],
    sink: Callable[[bytes], None] | None = None,
    stdin_data: bytes | None = None,
) -> RgResult:
    config = ctx.config
    async with ctx.search_slots:
        try:
            if where.named is not None and not same_directory(where.named, where.cwd):
                # The name leads nowhere the kernel can go (missing, not a directory, a component it may
                # not search), or it changed under us: rg would not start there either.
                raise ripgrep.LaunchError(f"{where.named!r} does not lead to the directory {where.cwd!r}")
            if where.deny is not None and where.deny.root_denied():
                # A denied file named directly (or through a symlink), or a denied directory: it does
                # not exist as far as searches go, so rg is not even started on it.
                return RgResult(b"", no_matches=True, unreadable=0, stdout_bytes=0)
            outcome = await ripgrep.run(
                ctx.rg.path,
                args,
                cwd=where.cwd,
                env=ctx.rg_env,
                limits=ctx.rg_limits,
                groups=ctx.groups,
                stdout_sink=counting_sink(sink),  # the progress hook: `sink` itself unless progress was asked
                stdin_data=stdin_data,
            )
        except ripgrep.LaunchError as exc:
            log.info("%s: rg could not start: %s", tool, exc)
            raise ToolError(errors.SEARCH_FAILED, texts.could_not_start(tool)) from None
    return classify(tool, outcome, config.raw_output_max_bytes, has_results)


def classify(tool: str, outcome: ripgrep.Outcome, cap: int, has_results: Callable[[bytes], bool]) -> RgResult:
    # Past its memory bound rg aborts; only output it was buffering can get it there (its memory is
    # otherwise small and fixed), so this is the raw-output overflow, reported quickly.
    if outcome.stdout_overflow or outcome.out_of_memory:
        raise ToolError(errors.SEARCH_RAW_OUTPUT_OVERFLOW, texts.raw_output_overflow(tool, cap))
    code = outcome.exit_code
    if code is None:
        name = _signal_name(outcome.signal)
        raise ToolError(errors.SEARCH_FAILED, texts.killed_by_signal(tool, name))
    size = outcome.stdout_bytes
    if code in (0, 1):
        return RgResult(outcome.stdout, no_matches=code == 1, unreadable=0, stdout_bytes=size)
    stderr = outcome.stderr.decode("utf-8", "replace")
    if code == 2 and has_results(outcome.stdout):
        unreadable, bad_ignore_files = outcome.reported_paths, outcome.bad_ignore_files
        if not unreadable and not bad_ignore_files:
            unreadable = 1  # rg failed without saying on what: at least one path went unsearched
        # Also told to the client (methods/logs.py), with ripgrep's first complaint, which the text leaves out.
        first = stderr_excerpt(stderr, False).split("\n", 1)[0]
        if unreadable:
            log.warning(
                "%s: ripgrep could not read %d path(s) of a search that found results: %s", tool, unreadable, first
            )
        return RgResult(outcome.stdout, False, unreadable, size, bad_ignore_files)
    excerpt = stderr_excerpt(stderr, outcome.stderr_lossy)
    if _SYNTAX_REJECTION.search(excerpt):
        raise ToolError(errors.SEARCH_INVALID_PATTERN, texts.pattern_rejected(tool, excerpt))
    raise ToolError(errors.SEARCH_FAILED, texts.search_failed(tool, code, excerpt))


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
        raise ToolError(errors.SEARCH_RAW_OUTPUT_OVERFLOW, texts.raw_output_over_cap(tool, size, cap))


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


async def save_spill(store: SpillStore, session_id: str, name: str, content: str | Iterable[str]) -> SpillRef | None:
    """Best effort: a spill that fails is logged and reported as unsaved, never as an error."""
    try:
        return await asyncio.to_thread(store.save_text, session_id, name, content)
    except OSError as exc:
        log.warning("could not save %s: %s", name, exc)
        return None


def problems_suffix(result: RgResult) -> str:
    """The paragraphs added after the results when ripgrep also reported problems (exit 2)."""
    notes = []
    if result.unreadable:
        notes.append(texts.unreadable_paths_note(result.unreadable))
    if result.bad_ignore_files:
        notes.append(texts.bad_ignore_files_note(result.bad_ignore_files))
    return "".join("\n\n" + note for note in notes)

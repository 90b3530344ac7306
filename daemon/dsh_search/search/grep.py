"""The `grep` tool: ripgrep regex search grouped by file as `Line N: …` (docs/behaviour.md,
"Grep").

request → validated args → argv → rg --json → match records → sorted by (display path, line)
→ previewed lines → rendered page + meta + the complete result in the spill store.

Upstream keeps ripgrep's parallel completion order, which differs run to run; we sort files by display
path and matches by line number, so the inline page and the spill artifact are stable and agree.
"""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from dsh_search import texts
from dsh_search.methods.context import Context
from dsh_search.methods.errors import SEARCH_FAILED, ToolError, invalid_args
from dsh_search.methods.registry import MethodSpec
from dsh_search.search.batches import Batches
from dsh_search.search.core import (
    DEFAULT_SESSION,
    SEARCH_ERRORS,
    SEARCH_RESULT,
    RgResult,
    Where,
    bounded,
    check_decoded_size,
    problems_suffix,
    resolve,
    run_rg,
    save_spill,
    search_tool,
)
from dsh_search.search.jscompat import js_trim, utf8_growth
from dsh_search.search.paths import DenyGlobs, decode, to_workdir_relative
from dsh_search.search.presentation import grep_meta
from dsh_search.store.spill import SpillRef

Match = tuple[str, int, str]  # (display path, line number, full line)


def build_argv(pattern: str, path: str | None, include: str | None, deny: DenyGlobs) -> list[str]:
    argv = ["--json", f"--regexp={pattern}"]
    if include is not None:
        argv.append(f"--glob={include}")
    argv += deny.rg_args()
    if path is not None:
        argv += ["--", path]
    return argv


def validate(params: dict[str, Any]) -> tuple[str, str | None, str | None]:
    pattern: str = params["pattern"]
    if not pattern:
        raise invalid_args(texts.PATTERN_EMPTY)
    path: str | None = params.get("path")
    if path is not None and not js_trim(path):
        raise invalid_args(texts.PATH_EMPTY)
    include: str | None = params.get("include")
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
    return pattern, path, include


def _malformed(detail: str) -> ToolError:
    return ToolError(SEARCH_FAILED, texts.malformed_json("grep", detail))


# ripgrep's own non-match records, recognised without parsing them (they are ~40% of the output).
_OTHER_RECORDS = (b'{"type":"begin",', b'{"type":"end",', b'{"type":"context",', b'{"type":"summary",')


def parse_matches(stdout: bytes, cwd: str) -> list[Match]:
    """ripgrep --json records → matches, with upstream's strictness about malformed records."""
    return parse_batch(stdout, cwd).matches


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


class ParsedBatch(NamedTuple):
    matches: list[Match]
    growth: int  # bytes the batch gains decoded with U+FFFD replacements (jscompat.utf8_growth)


def parse_batch(stdout: bytes, cwd: str) -> ParsedBatch:
    """parse_matches, and the batch's growth when decoded as upstream decodes it.

    Upstream decodes the whole output with U+FFFD replacements and then parses each line. ripgrep's
    --json is valid UTF-8 (names and lines that are not go into base64 `bytes` fields), so this is
    defensive: every line is either ASCII or validated by orjson, and only a line orjson refuses is
    decoded with replacements (and counted) before it is parsed again.
    """
    matches: list[Match] = []
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
            line = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
        elif isinstance(lines.get("bytes"), str):
            line = texts.LINE_NOT_UTF8
        else:
            raise _malformed("a match record has neither line text nor bytes")
        matches.append((to_workdir_relative(path, cwd), int(line_number), line))
    return ParsedBatch(matches, growth)


def preview_line(line: str, max_bytes: int) -> str:
    if len(line) * 4 <= max_bytes:  # cannot be over the cap: skip the encode
        return line
    data = line.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return line
    return data[:max_bytes].decode("utf-8", "ignore") + texts.LINE_TRUNCATED_SUFFIX


def previewed(matches: list[Match], max_line_bytes: int) -> list[Match]:
    return [(path, number, preview_line(line, max_line_bytes)) for path, number, line in matches]


def format_matches(matches: list[Match]) -> str:
    """Sections `<path>\\nLine N: <line>…` joined by blank lines, files in first-seen order."""
    sections: list[str] = []
    current: str | None = None
    lines: list[str] = []
    for path, number, line in matches:
        if path != current:
            if current is not None:
                sections.append(current + "\n" + "\n".join(lines))
            current, lines = path, []
        lines.append(f"Line {number}: {line}")
    if current is not None:
        sections.append(current + "\n" + "\n".join(lines))
    return "\n\n".join(sections)


@dataclass(frozen=True)
class Page:
    text: str
    shown: list[Match]  # previewed
    truncated: bool


def render(matches: list[Match], *, max_matches: int, max_line_bytes: int, spill: SpillRef | None) -> Page:
    total = len(matches)
    if total == 0:
        return Page(texts.GREP_NO_MATCHES, [], False)
    shown = previewed(matches[:max_matches], max_line_bytes)
    body = format_matches(shown)
    if total <= max_matches:
        return Page(f"{texts.grep_found(total)}\n\n{body}", shown, False)
    recovery = texts.grep_recovery_saved(spill.locator, spill.retrieval_hint) if spill else texts.GREP_RECOVERY_UNSAVED
    return Page(f"{texts.grep_found_capped(len(shown), total)}\n\n{body}\n\n({recovery})", shown, True)


# Parsing --json output while rg still runs; one worker, as the work is GIL-bound.
_PARSE_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grep-parse")


async def _search(ctx: Context, pattern: str, include: str | None, where: Where) -> tuple[list[Match], RgResult]:
    cwd = where.cwd
    batches = Batches(b"\n", lambda blob: parse_batch(blob, cwd), _PARSE_POOL, growth=lambda batch: batch.growth)
    argv = build_argv(pattern, where.path, include, ctx.deny_globs)
    result = await run_rg(ctx, "grep", argv, where, lambda _: batches.contains(b'"type":"match"'), sink=batches.feed)
    await check_decoded_size("grep", result, batches, ctx.config.raw_output_max_bytes)
    if result.no_matches:
        return [], result
    matches = [m for part in await batches.results() for m in part.matches]
    if where.deny is not None:
        deny = where.deny
        matches = [m for m in matches if not deny.denies(m[0])]
    matches.sort(key=lambda m: (m[0], m[1]))
    return matches, result


GREP_PARAMS, GREP_FACE = search_tool(
    lambda c: texts.grep_description(c.grep_max_matches),
    {
        "pattern": {"type": "string", "description": texts.GREP_PATTERN_DESCRIPTION},
        "path": {"type": "string", "description": texts.GREP_PATH_DESCRIPTION},
        "include": {"type": "string", "description": texts.GREP_INCLUDE_DESCRIPTION},
    },
)


async def grep(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    pattern, _path, include = validate(params)
    where = resolve(ctx, params)
    config = ctx.config
    matches, result = await bounded(ctx, "grep", _search(ctx, pattern, include, where))
    spill = None
    if len(matches) > config.grep_max_matches:
        full = format_matches(previewed(matches, config.grep_max_line_bytes))
        content = f"{texts.grep_found(len(matches))}\n\n{full}"
        spill = await save_spill(ctx.spill, params.get("sessionId", DEFAULT_SESSION), texts.GREP_SPILL_NAME, content)
    page = render(matches, max_matches=config.grep_max_matches, max_line_bytes=config.grep_max_line_bytes, spill=spill)
    return {
        "text": page.text + problems_suffix(result),
        "meta": grep_meta(page.shown, page.truncated, len(matches), config.search_meta_max_bytes),
        "spill": spill.as_json() if spill else None,
    }


SPEC = MethodSpec(
    "grep",
    summary="Search file contents with a ripgrep regex; matches grouped by file as `Line N: …`.",
    handler=grep,
    params=GREP_PARAMS,
    result=SEARCH_RESULT,
    errors=SEARCH_ERRORS,
    tool=GREP_FACE,
)

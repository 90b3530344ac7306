"""The model-facing tools — glob, grep, terminal_search, read — each declared once.

A declaration says everything the protocol needs to know about a tool: its native params (the model's
params plus the host-only fields), the model-facing input schema and description, its result schema
(also its MCP outputSchema), the error kinds it answers, how its progress reads, and `run`, which turns
checked params into the engine's arguments and the engine's value into the result. The engine does the
work (engine/glob.py, engine/grep/, engine/terminal.py, engine/read.py); the dispatcher runs a tool the same
way whether it is called natively or through `tools/call` (methods/dispatch.py). `read` is an MCP tool
only with `readTool` (its native method is always served).

glob's and grep's params become one typed value here (engine/request.py: `GlobQuery`, `GrepQuery`),
read by field name once and checked once; below this face nothing reads them from a dict. grep's
schema is made from that value's fields (`grep_spec`): each field's type is its schema type, its
description is texts.GREP_PARAMETERS's, and the profile (`grepProfile`) says which fields a model sees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, get_args, get_type_hints

from dsh_search import texts
from dsh_search.config import Config
from dsh_search.engine import failures
from dsh_search.engine.read import DEFAULT_LIMIT, ReadResult
from dsh_search.engine.request import (
    EXTENDED,
    MAX_CONTEXT,
    UPSTREAM,
    GlobQuery,
    GrepQuery,
    OutputMode,
    check_glob,
    check_grep,
    grep_fields,
    wire_name,
)
from dsh_search.engine.scope import Scope
from dsh_search.engine.searcher import Tally
from dsh_search.methods import resources
from dsh_search.methods.context import Context
from dsh_search.methods.errors import openrpc_errors
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec, Tool
from dsh_search.methods.roots import scope
from dsh_search.methods.scrollback import SESSION_PARAM, integer_param, snapshot_of, terminal_search_listed

if TYPE_CHECKING:  # the engine's search modules are imported when a search first runs (start-up time)
    from dsh_search.engine.run import SearchResult
    from dsh_search.engine.terminal import SearchPage

# The results of glob and grep, as rpc.discover describes them. `meta` has the tool's own shape
# (engine/presentation.py): glob's paths, grep's matches grouped by file; `spill` is null when nothing
# was saved.
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


def search_result(meta: dict[str, Any]) -> dict[str, Any]:
    return object_schema(
        {"text": {"type": "string"}, "meta": meta, "spill": {"oneOf": [SPILL_REF, {"type": "null"}]}},
        ["text", "meta", "spill"],
    )


# The extended grep's listings (outputMode files, count) are paths, as glob's; a count listing adds each
# path's count and their sum.
LISTING_META: dict[str, Any] = {
    **PATHS_META,
    "properties": {
        **PATHS_META["properties"],
        "counts": {"type": "array", "items": {"type": "integer"}},
        "matches": {"type": "integer"},
    },
}
GLOB_RESULT = search_result(PATHS_META)
GREP_RESULT = search_result(MATCHES_META)
GREP_EXTENDED_RESULT = search_result({"oneOf": [MATCHES_META, LISTING_META]})


# --- what an MCP result carries as structuredContent ---------------------------------------------------------
#
# The text (exactly the content's) and a few counts a host can show beside it, never the native meta or
# spill: frameworks that hand their model the structuredContent (pydantic-ai) must not be handed more than
# the text (docs/decisions.md, "What a model is given"). Each schema is closed and has a required field the
# other tools' lack, so glob's admits glob's results only, grep's grep's.


def closed(properties: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A structuredContent schema: every property required, no other allowed."""
    return {**object_schema(properties, list(properties)), "additionalProperties": False}


TEXT = {"type": "string", "description": "The tool's text, exactly the text content's."}
PARTIAL = {
    "type": "boolean",
    "description": "The text shows part of the result; its footer says where the rest is.",
}
GLOB_STRUCTURED = closed(
    {"text": TEXT, "pathCount": {"type": "integer", "description": "Paths found."}, "truncated": PARTIAL}
)


def grep_structured_schema(profile: str) -> dict[str, Any]:
    """grep's: matchCount is null only for the extended profile's outputMode files, which does not count."""
    matches: dict[str, Any] = {"type": "integer", "description": "Matches found."}
    if profile == EXTENDED:
        matches = {"type": ["integer", "null"], "description": "Matches found (null for outputMode files)."}
    files = {"type": "integer", "description": "Files with a match."}
    return closed({"text": TEXT, "matchCount": matches, "fileCount": files, "truncated": PARTIAL})


def glob_structured(result: SearchResult) -> dict[str, Any]:
    return {"text": result.text, "pathCount": result.found, "truncated": result.partial}


def grep_structured(result: SearchResult) -> dict[str, Any]:
    return {"text": result.text, "matchCount": result.found, "fileCount": result.files, "truncated": result.partial}


SEARCH_ERRORS = openrpc_errors(*failures.KIND_NAMES, cancellable=True)

# Host-only fields of glob and grep: never in the model-facing schema; MCP callers pass them in `_meta`.
HOST_FIELDS: dict[str, dict[str, Any]] = {
    "cwd": {"type": "string", "description": "Host only: the session's working directory."},
    "sessionId": {"type": "string", "description": "Host only: groups spill artifacts."},
}

# The spill session of a call that names none (request.DEFAULT_SESSION). Only an absent sessionId means
# it: "" is a session id like any other (its artifacts go to session-<sha256("")[:12]>, as upstream's).


def model_schema(properties: dict[str, dict[str, Any]], required: tuple[str, ...]) -> dict[str, Any]:
    """A tool's model-facing input schema: each optional property says `nullable` (a keyword JSON Schema
    ignores), which frameworks that otherwise make every property required read (smolagents); a null
    they send is taken as absent (methods/mcp.py)."""
    marked = {name: prop if name in required else {**prop, "nullable": True} for name, prop in properties.items()}
    return object_schema(marked, list(required))


def _file_tool(
    name: str,
    summary: str,
    describe: Callable[[Config], str],
    model_properties: dict[str, dict[str, Any]],
    result: dict[str, Any],
    run: Callable[[Context, dict[str, Any], Tally | None], Any],
    progress: Callable[[Tally], str],
    structured: Callable[[Any], dict[str, Any]],
    output_schema: dict[str, Any],
    *,
    required: tuple[str, ...] = ("pattern",),
    errors: tuple[dict[str, Any], ...] = SEARCH_ERRORS,
    listed: Callable[[Context], bool] | None = None,
    host_fields: tuple[str, ...] = tuple(HOST_FIELDS),
) -> MethodSpec[Context]:
    """glob, grep or read: the native params are the model's plus the host-only fields; the model's input
    schema has the model's only (MCP clients pass the host fields in `_meta`)."""
    return MethodSpec(
        name,
        summary=summary,
        params=object_schema({**model_properties, **{f: HOST_FIELDS[f] for f in host_fields}}, list(required)),
        result=result,
        errors=errors,
        tool=Tool(
            describe=describe,
            input_schema=model_schema(model_properties, required),
            run=run,
            progress=progress,
            structured=structured,
            output_schema=output_schema,
            host_fields=host_fields,
            listed=listed,
            workspace=True,
        ),
    )


# --- glob ------------------------------------------------------------------------------------------------


def search_scope(ctx: Context) -> Scope:
    """Where a search may run now. The workspace index follows the workspace it names, and the first
    search starts what a daemon does for searches (`Context.first_search`): a daemon asked nothing but
    `initialize` or `server/discover` starts none of it."""
    if ctx.first_search is not None:
        start, ctx.first_search = ctx.first_search, None
        start()
    where = scope(ctx)
    if ctx.index is not None:
        ctx.index.set_workspace(None if where.workspace_is_fallback else where.workspace)
    return where


def glob_query(params: dict[str, Any]) -> GlobQuery:
    """glob's params (checked against its schema) as the engine's value, checked."""
    fields = {field: params[wire_name(field)] for field in GlobQuery._fields if wire_name(field) in params}
    return check_glob(GlobQuery(**fields))


async def run_glob(ctx: Context, params: dict[str, Any], tally: Tally | None) -> SearchResult:
    from dsh_search.engine.glob import glob

    return await glob(ctx.searcher, glob_query(params), search_scope(ctx), tally)


GLOB = _file_tool(
    "glob",
    "Find files whose paths match a glob pattern, oldest modification first.",
    lambda c: texts.glob_description(c.sample_over_cap_glob_results, c.glob_max_results),
    {
        "pattern": {"type": "string", "description": texts.GLOB_PATTERN_DESCRIPTION},
        "path": {"type": "string", "description": texts.GLOB_PATH_DESCRIPTION},
    },
    GLOB_RESULT,
    run_glob,
    lambda tally: f"glob: {tally.items} files found so far",
    glob_structured,
    GLOB_STRUCTURED,
)

# --- grep ------------------------------------------------------------------------------------------------

_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", OutputMode: "string"}
_HINTS = get_type_hints(GrepQuery)


def _field_schema(field: str, max_matches: int | None) -> dict[str, Any]:
    """A grep field's model-facing schema: its type from GrepQuery's annotation, its description, and
    the bounds request.check_grep enforces."""
    kind = _HINTS[field]
    base = next((t for t in get_args(kind) if t is not type(None)), kind)  # `int | None`: int
    schema: dict[str, Any] = {"type": _JSON_TYPES[base], "description": texts.GREP_PARAMETERS[field]}
    if base is OutputMode:
        schema["enum"] = [mode.value for mode in OutputMode]
    if field in ("before", "after", "context"):
        schema.update(minimum=0, maximum=MAX_CONTEXT)
    elif field == "offset":
        schema["minimum"] = 0
    elif field == "limit":
        schema["minimum"] = 1
        if max_matches is not None:
            schema["maximum"] = max_matches
    return schema


def grep_query(params: dict[str, Any], profile: str, max_matches: int) -> GrepQuery:
    """grep's params (checked against its schema) as the engine's value, checked: the profile's fields
    and the host's, each by its name; every other field keeps its default."""
    names = (*grep_fields(profile), "cwd", "session_id")
    fields = {field: params[wire_name(field)] for field in names if wire_name(field) in params}
    return check_grep(GrepQuery(**fields), max_matches)


async def run_grep(ctx: Context, params: dict[str, Any], tally: Tally | None) -> SearchResult:
    from dsh_search.engine.grep import grep

    query = grep_query(params, ctx.config.grep_profile, ctx.config.grep_max_matches)
    return await grep(ctx.searcher, query, search_scope(ctx), tally)


def grep_spec(profile: str) -> MethodSpec[Context]:
    """grep as a profile offers it: upstream's three parameters, or every field (grepProfile: extended)."""
    describe: Callable[[Config], str] = (
        (lambda c: texts.grep_description_extended(c.grep_max_matches))
        if profile == EXTENDED
        else (lambda c: texts.grep_description(c.grep_max_matches))
    )
    return _file_tool(
        "grep",
        "Search file contents with a ripgrep regex; matches grouped by file as `Line N: …`.",
        describe,
        {wire_name(field): _field_schema(field, None) for field in grep_fields(profile)},
        GREP_EXTENDED_RESULT if profile == EXTENDED else GREP_RESULT,
        run_grep,
        lambda tally: f"grep: {tally.items} matches in {tally.files} files so far",
        grep_structured,
        grep_structured_schema(profile),
    )


GREP = grep_spec(UPSTREAM)
GREP_EXTENDED = grep_spec(EXTENDED)

# --- terminal_search ---------------------------------------------------------------------------------------

TERMINAL_SEARCH_PARAMS: dict[str, Any] = object_schema(
    {
        "sessionId": SESSION_PARAM,
        "pattern": {"type": "string", "description": texts.TERMINAL_PATTERN_DESCRIPTION},
        "regex": {"type": "boolean", "description": texts.TERMINAL_REGEX_DESCRIPTION},
        "offset": {"type": "integer", "description": texts.TERMINAL_OFFSET_DESCRIPTION},
        "limit": {"type": "integer", "description": texts.TERMINAL_LIMIT_DESCRIPTION},
    },
    ["sessionId", "pattern"],
)


async def run_terminal_search(ctx: Context, params: dict[str, Any], tally: Tally | None) -> SearchPage:
    """Checks in upstream's order: the pattern, then offset and limit, then the session. The snapshot is
    taken before the first `await`, so the search sees every append sent before it."""
    from dsh_search.engine.terminal import TerminalArgs, terminal_search
    from dsh_search.engine.terminal import validate as validate_terminal

    args = TerminalArgs(params["pattern"], params.get("regex", False))
    validate_terminal(args)
    args = args._replace(
        offset=integer_param(params, "offset", 0, 0),
        limit=integer_param(params, "limit", 100, 1),
    )
    snap = snapshot_of(ctx, params)
    return await terminal_search(ctx.searcher, snap, args, tally)


def terminal_search_structured(page: SearchPage) -> dict[str, Any]:
    """The native result without its `matches` list, which repeats the text."""
    counts = {"matchCount": page.match_count, "totalLines": page.total_lines, "truncated": page.truncated}
    return {"text": page.text, **counts}


TERMINAL_SEARCH_STRUCTURED = closed(
    {
        "text": TEXT,
        "matchCount": {"type": "integer", "description": "Lines that match, in the whole retained output."},
        "totalLines": {"type": "integer", "description": "Lines retained."},
        "truncated": {
            "type": "boolean",
            "description": "More matches exist past this page, the byte bound dropped lines, or the buffer "
            "dropped old output.",
        },
    }
)


TERMINAL_SEARCH = MethodSpec[Context](
    "terminal_search",
    summary="Find lines in a terminal's retained output (literal or ripgrep regex), newest first, "
    "with terminal_read offsets.",
    params=TERMINAL_SEARCH_PARAMS,
    result=object_schema(
        {
            "text": {"type": "string"},
            "matches": {
                "type": "array",
                "items": object_schema({"offset": {"type": "integer"}, "line": {"type": "string"}}, ["offset", "line"]),
            },
            "matchCount": {"type": "integer"},
            "totalLines": {"type": "integer"},
            "truncated": {"type": "boolean"},
        },
        ["text", "matches", "matchCount", "totalLines", "truncated"],
    ),
    errors=SEARCH_ERRORS,
    wellformed=False,  # session ids are keys, compared as sent; engine/terminal.py refuses lone surrogates
    tool=Tool(
        describe=lambda _config: texts.TERMINAL_SEARCH_DESCRIPTION,
        input_schema=model_schema(TERMINAL_SEARCH_PARAMS["properties"], tuple(TERMINAL_SEARCH_PARAMS["required"])),
        run=run_terminal_search,
        progress=lambda _tally: "terminal_search: searching",
        structured=terminal_search_structured,
        output_schema=TERMINAL_SEARCH_STRUCTURED,
        listed=terminal_search_listed,
    ),
)

# --- read ----------------------------------------------------------------------------------------------------


async def run_read(ctx: Context, params: dict[str, Any], tally: Tally | None) -> ReadResult:
    """A path, or the dsh-search:// link of a spill artifact (whose page, when it names one, is the
    default offset and limit)."""
    from dsh_search.engine.read import ReadArgs, read

    path: str = params["path"]
    offset, limit = params.get("offset"), params.get("limit")
    if path.startswith(resources.PREFIX):
        page = resources.parse(ctx.spill.root, path)
        path = page.locator
        offset = page.offset if offset is None else offset
        limit = page.limit if limit is None else limit
    args = ReadArgs(path, 1 if offset is None else offset, DEFAULT_LIMIT if limit is None else limit, params.get("cwd"))
    return await read(ctx.searcher, args, search_scope(ctx))


def read_listed(ctx: Context) -> bool:
    """The read tool is an MCP tool only when the deployment asks for it (`readTool`)."""
    return ctx.config.read_tool


READ_RESULT_PROPERTIES: dict[str, dict[str, Any]] = {
    "text": {"type": "string", "description": "The lines, numbered, and a note when more follow."},
    "path": {"type": "string", "description": "The file read, absolute."},
    "startLine": {"type": "integer", "description": "The first line shown (1-based)."},
    "endLine": {"type": "integer", "description": "The last line shown (startLine - 1 when none was)."},
    "totalLines": {"type": "integer", "description": "Lines in the file."},
    "nextOffset": {"type": ["integer", "null"], "description": "The offset of the next page; null at the end."},
}

READ = _file_tool(
    "read",
    "Read a text file's lines, numbered, from offset for limit lines; confined as glob and grep, spill "
    "artifacts included. An MCP tool only with readTool.",
    lambda _config: texts.READ_DESCRIPTION,
    {
        "path": {"type": "string", "description": texts.READ_PATH_DESCRIPTION},
        "offset": {"type": "integer", "description": texts.READ_OFFSET_DESCRIPTION},
        "limit": {"type": "integer", "description": texts.READ_LIMIT_DESCRIPTION},
    },
    object_schema(READ_RESULT_PROPERTIES, list(READ_RESULT_PROPERTIES)),
    run_read,
    lambda _tally: "read: reading",
    ReadResult.as_json,  # small already: the page's text, where it lies, and the file's path
    closed(READ_RESULT_PROPERTIES),
    required=("path",),
    errors=openrpc_errors(failures.INVALID_ARGS, failures.SEARCH_FAILED, cancellable=True),
    listed=read_listed,
    host_fields=("cwd",),
)

SPECS = (GLOB, GREP, TERMINAL_SEARCH, READ)

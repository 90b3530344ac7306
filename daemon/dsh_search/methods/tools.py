"""The model-facing tools — glob, grep, terminal_search, read — each declared once.

A declaration says everything the protocol needs to know about a tool: its native params (the model's
params plus the host-only fields), the model-facing input schema and description, its result schema
(also its MCP outputSchema), the error kinds it answers, how its progress reads, and `run`, which turns
checked params into the engine's arguments and the engine's value into the result. The engine does the
work (engine/glob.py, engine/grep.py, engine/terminal.py, engine/read.py); the dispatcher runs a tool the same
way whether it is called natively or through `tools/call` (methods/dispatch.py). `read` is an MCP tool
only with `readTool` (its native method is always served).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsh_search import texts
from dsh_search.config import Config
from dsh_search.engine import failures
from dsh_search.engine.read import DEFAULT_LIMIT
from dsh_search.engine.scope import Scope
from dsh_search.engine.searcher import Tally
from dsh_search.methods import resources
from dsh_search.methods.context import Context
from dsh_search.methods.errors import openrpc_errors
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec, Tool
from dsh_search.methods.roots import scope
from dsh_search.methods.scrollback import SESSION_PARAM, integer_param, snapshot_of, terminal_search_listed

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


GLOB_RESULT = search_result(PATHS_META)
GREP_RESULT = search_result(MATCHES_META)
SEARCH_ERRORS = openrpc_errors(*failures.KIND_NAMES, cancellable=True)

# Host-only fields of glob and grep: never in the model-facing schema; MCP callers pass them in `_meta`.
HOST_FIELDS: dict[str, dict[str, Any]] = {
    "cwd": {"type": "string", "description": "Host only: the session's working directory."},
    "sessionId": {"type": "string", "description": "Host only: groups spill artifacts."},
}

# The spill session of a call that names none. Only an absent sessionId means it: "" is a session id
# like any other (its artifacts go to session-<sha256("")[:12]>, as upstream's).
DEFAULT_SESSION = "default"


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


async def run_glob(ctx: Context, params: dict[str, Any], tally: Tally | None) -> dict[str, Any]:
    from dsh_search.engine.glob import GlobArgs, glob

    args = GlobArgs(params["pattern"], params.get("path"), params.get("cwd"), params.get("sessionId", DEFAULT_SESSION))
    return (await glob(ctx.searcher, args, search_scope(ctx), tally)).as_json()


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
)

# --- grep ------------------------------------------------------------------------------------------------


async def run_grep(ctx: Context, params: dict[str, Any], tally: Tally | None) -> dict[str, Any]:
    from dsh_search.engine.grep import GrepArgs, grep

    args = GrepArgs(
        params["pattern"],
        params.get("path"),
        params.get("include"),
        params.get("cwd"),
        params.get("sessionId", DEFAULT_SESSION),
    )
    return (await grep(ctx.searcher, args, search_scope(ctx), tally)).as_json()


GREP = _file_tool(
    "grep",
    "Search file contents with a ripgrep regex; matches grouped by file as `Line N: …`.",
    lambda c: texts.grep_description(c.grep_max_matches),
    {
        "pattern": {"type": "string", "description": texts.GREP_PATTERN_DESCRIPTION},
        "path": {"type": "string", "description": texts.GREP_PATH_DESCRIPTION},
        "include": {"type": "string", "description": texts.GREP_INCLUDE_DESCRIPTION},
    },
    GREP_RESULT,
    run_grep,
    lambda tally: f"grep: {tally.items} matches in {tally.files} files so far",
)

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


async def run_terminal_search(ctx: Context, params: dict[str, Any], tally: Tally | None) -> dict[str, Any]:
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
    return (await terminal_search(ctx.searcher, snap, args, tally)).as_json()


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
        listed=terminal_search_listed,
    ),
)

# --- read ----------------------------------------------------------------------------------------------------


async def run_read(ctx: Context, params: dict[str, Any], tally: Tally | None) -> dict[str, Any]:
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
    return (await read(ctx.searcher, args, search_scope(ctx))).as_json()


def read_listed(ctx: Context) -> bool:
    """The read tool is an MCP tool only when the deployment asks for it (`readTool`)."""
    return ctx.config.read_tool


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
    object_schema(
        {
            "text": {"type": "string"},
            "path": {"type": "string"},
            "startLine": {"type": "integer"},
            "endLine": {"type": "integer"},
            "totalLines": {"type": "integer"},
            "nextOffset": {"type": ["integer", "null"]},
        },
        ["text", "path", "startLine", "endLine", "totalLines", "nextOffset"],
    ),
    run_read,
    lambda _tally: "read: reading",
    required=("path",),
    errors=openrpc_errors(failures.INVALID_ARGS, failures.SEARCH_FAILED, cancellable=True),
    listed=read_listed,
    host_fields=("cwd",),
)

SPECS = (GLOB, GREP, TERMINAL_SEARCH, READ)

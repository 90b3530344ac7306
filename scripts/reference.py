"""Render the generated parts of docs/reference.md from the code, and check that the file is in sync.

    scripts/reference            show what would change (exit 1 if anything would)
    scripts/reference --check    the same, quietly: exit 1 when docs/reference.md is out of date
    scripts/reference --write    rewrite the generated parts of docs/reference.md

docs/reference.md is hand-written prose with generated blocks between `<!-- generated:NAME -->` and
`<!-- /generated:NAME -->` lines. Each block is rendered from the same objects the daemon runs on:

- methods: `wiring.METHODS` through `MethodTable` (what `rpc.discover` and `tools/list` publish): summary,
  params, result schema, errors; plus the example exchanges of `EXAMPLES` below;
- host-fields: `methods.tools.HOST_FIELDS` and the tool declarations' `host_fields`;
- errors: `methods.errors.KINDS` and the envelope codes of `transport.jsonrpc`;
- config: `config.KEYS` (name, flag, values, default, help text);
- cli: the argparse parser of `__main__` (the flags that are not configuration keys);
- exit: the exit statuses of `__main__`;
- grep-extended: grep's parameters in the extended profile (`methods.tools.GREP_EXTENDED`'s schema, the
  defaults of `engine.request.GrepQuery`).

The examples are written by hand but they are real: tests/server/test_reference_examples_e2e.py sends every
one, in order, to the frozen daemon on `EXAMPLE_TREE` and checks each answer against the documented one
with `matches` (values written `<like this>` stand for what varies between runs and installations).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "daemon"))

from dsh_search import __main__ as cli  # noqa: E402
from dsh_search.config import KEYS  # noqa: E402
from dsh_search.engine.request import UPSTREAM_FIELDS, GrepQuery, grep_fields, wire_name  # noqa: E402
from dsh_search.methods.era import UNSUPPORTED_PROTOCOL_VERSION  # noqa: E402
from dsh_search.methods.errors import KINDS, REQUEST_CANCELLED, RESOURCE_NOT_FOUND  # noqa: E402
from dsh_search.methods.registry import MethodSpec, MethodTable  # noqa: E402
from dsh_search.methods.tools import (  # noqa: E402
    GLOB,
    GLOB_RESULT,
    GREP,
    GREP_EXTENDED,
    GREP_RESULT,
    HOST_FIELDS,
    READ,
    TERMINAL_SEARCH,
)
from dsh_search.transport import jsonrpc  # noqa: E402
from dsh_search.wiring import METHODS  # noqa: E402

DOC = ROOT / "docs" / "reference.md"

# --- the example session ------------------------------------------------------------------------------

# The tree the examples search: path → (content, modification time in seconds since the epoch).
EXAMPLE_TREE: dict[str, tuple[str, int]] = {
    "src/app.py": ("import os\n\n\ndef main():\n    # TODO: parse args\n    return os.getcwd()\n", 1_700_000_001),
    "src/util.py": ("def helper():\n    return 42  # TODO: cache\n", 1_700_000_002),
    "docs/notes.md": ("# Notes\n\nNothing to do.\n", 1_700_000_003),
    "README.md": ("Example project\n", 1_700_000_004),
    "tests/test_app.py": ("from src.app import main\n\n\ndef test_main():\n    assert main()\n", 1_700_000_005),
}
# The daemon the examples ran against (the test puts real directories in place of <tree> and <spill-dir>).
EXAMPLE_ARGS = (
    "--sample-over-cap-glob-results",
    "true",
    "--glob-max-results",
    "3",
    "--workdir",
    "<tree>",
    "--spill-dir",
    "<spill-dir>",
)
# A request param written like this is replaced by the locator of the latest spilled result, and one
# written like SPILL_URI by the URI of that artifact (what a resource_link, in mcpResult full, gives).
SPILL_LOCATOR = "<spill-dir>/session-<12 hex>/<12 hex>-glob-results.txt"
SPILL_URI = "dsh-search://spill/session-<12 hex>/<12 hex>-glob-results.txt"
RETRIEVAL_HINT = "Use read with offset/limit, or grep this path to search within it."
# The per-request fields of a 2026-07-28 request, and what every modern result carries in its _meta.
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "example-client", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "dsh-search", "version": "<version>"}}


@dataclass(frozen=True)
class Example:
    """One exchange: a request (or notification, or raw bytes) and the answer documented for it."""

    section: str  # a method name, or "errors"
    method: str | None  # None: `raw` is sent as it is
    params: Any = None  # None: no params member
    response: Any = None  # the whole answer (without jsonrpc and id); None: no answer
    notification: bool = False
    raw: str | None = None
    title: str = ""


_TERMINAL = "$ make\r\ncc -c main.c\r\nmain.c:3: error: expected ';'\r\nmake: *** [main.o] Error 1\r\n$ "

# In the order they are sent: one session, one daemon. Ids are assigned in this order.
EXAMPLES: tuple[Example, ...] = (
    Example(
        "server/discover",
        "server/discover",
        {"_meta": ENVELOPE},
        {
            "result": {
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": True}, "resources": {}},
                "instructions": "<the glob guidance, a blank line, the grep guidance>",
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": SERVER_INFO,
            }
        },
        title="A 2026-07-28 client's probe, here the first message of the session: answered at once, and "
        "nothing is started for it. The same connection then opens a legacy session with `initialize`: each "
        "message is served in the era it arrives in.",
    ),
    Example(
        "initialize",
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "example-host", "version": "1"}},
        {
            "result": {
                "protocolVersion": "2025-06-18",
                "serverInfo": {"name": "dsh-search", "version": "<version>"},
                "capabilities": {"tools": {"listChanged": True}, "logging": {}, "resources": {}},
                "instructions": "<the glob guidance, a blank line, the grep guidance>",
                "guidance": {"glob": "<…>", "grep": "<…>", "terminal_search": "<…>"},
                "ripgrep": {"path": "<installation>/dsh-search-rg", "version": "15.2.0"},
                "config": "<the effective configuration: every key of Configuration>",
            }
        },
    ),
    Example(
        "notifications/initialized",
        "notifications/initialized",
        None,
        None,
        notification=True,
        title="An MCP client's notification after initialize; a client that declared `roots` is then asked "
        "for them (`roots/list`), unless --workdir was given.",
    ),
    Example("ping", "ping", None, {"result": {}}),
    Example("logging/setLevel", "logging/setLevel", {"level": "error"}, {"result": {}}),
    Example(
        "notifications/roots/list_changed",
        "notifications/roots/list_changed",
        None,
        None,
        notification=True,
        title="The client's roots changed: they are fetched again (here the client declared no roots).",
    ),
    Example(
        "tools/list",
        "tools/list",
        None,
        {
            "result": {
                "tools": [
                    {
                        "name": name,
                        "description": f"<{name}'s description>",
                        "inputSchema": f"<{name}'s model-facing params>",
                        "outputSchema": f"<{name}'s structuredContent>",
                        "annotations": {"readOnlyHint": True},
                    }
                    for name in ("glob", "grep")
                ]
            }
        },
        title="`terminal_search` joins the list once a scrollback producer exists (the first "
        "`scrollback/append`, announced with `notifications/tools/list_changed`) or with "
        "--terminal-search always. Each `outputSchema` is in [Results of glob and grep](#results-of-glob-and-grep).",
    ),
    Example(
        "glob",
        "glob",
        {"pattern": "**/*.py"},
        {
            "result": {
                "text": "src/app.py\nsrc/util.py\ntests/test_app.py",
                "meta": {
                    "shape": "paths",
                    "paths": ["src/app.py", "src/util.py", "tests/test_app.py"],
                    "truncated": False,
                    "total": 3,
                },
                "spill": None,
            }
        },
        title="Three paths fit the cap of 3: oldest first, no footer.",
    ),
    Example(
        "glob",
        "glob",
        {"pattern": "*"},
        {
            "result": {
                "text": "src/app.py\ndocs/notes.md\nREADME.md\n\n(Showing 3 of 5 paths, sampled across 3 of the 4 "
                "top-level entries this pattern matched instead of taken in modification-time order. Narrow "
                f"path to inspect a specific subtree. Full sorted result stored at: {SPILL_LOCATOR}. "
                f"{RETRIEVAL_HINT})",
                "meta": {
                    "shape": "paths",
                    "paths": ["src/app.py", "docs/notes.md", "README.md"],
                    "truncated": True,
                    "total": 5,
                },
                "spill": {"locator": SPILL_LOCATOR, "bytes": 64, "retrievalHint": RETRIEVAL_HINT},
            }
        },
        title="Five paths over the cap of 3, sampled across top-level entries; the complete list is spilled.",
    ),
    Example(
        "spill/read",
        "spill/read",
        {"locator": SPILL_LOCATOR, "offset": 2, "limit": 2},
        {
            "result": {
                "text": "src/util.py\ndocs/notes.md",
                "startLine": 2,
                "endLine": 3,
                "totalLines": 5,
                "nextOffset": 4,
            }
        },
        title="Lines 2 and 3 of the artifact the previous glob saved.",
    ),
    Example(
        "spill/read",
        "spill/read",
        {"locator": "/etc/passwd"},
        {
            "error": {
                "code": -32602,
                "message": "locator is outside the spill store",
                "data": {"code": "INVALID_ARGS", "text": "Error: locator is outside the spill store"},
            }
        },
        title="A locator that is not a spill artifact.",
    ),
    Example(
        "read",
        "read",
        {"path": "src/util.py", "limit": 1},
        {
            "result": {
                "text": "     1\tdef helper():\n\n(Showing lines 1-1 of 2. Use offset 2 to read more.)",
                "path": "<tree>/src/util.py",
                "startLine": 1,
                "endLine": 1,
                "totalLines": 2,
                "nextOffset": 2,
            }
        },
        title="A file's first line, numbered; with `--read-tool true` it is also an MCP tool.",
    ),
    Example(
        "glob",
        "glob",
        {"pattern": " "},
        {
            "error": {
                "code": -32602,
                "message": "pattern must be a non-empty string",
                "data": {"code": "INVALID_ARGS", "text": "Error: pattern must be a non-empty string"},
            }
        },
        title="An argument error.",
    ),
    Example(
        "grep",
        "grep",
        {"pattern": "TODO", "include": "*.py"},
        {
            "result": {
                "text": "Found 2 matches\n\nsrc/app.py\nLine 5:     # TODO: parse args\n\n"
                "src/util.py\nLine 2:     return 42  # TODO: cache",
                "meta": {
                    "shape": "matches",
                    "files": [
                        {"path": "src/app.py", "matches": [{"lineNumber": 5, "line": "    # TODO: parse args"}]},
                        {"path": "src/util.py", "matches": [{"lineNumber": 2, "line": "    return 42  # TODO: cache"}]},
                    ],
                    "truncated": False,
                    "total": 2,
                },
                "spill": None,
            }
        },
    ),
    Example(
        "grep",
        "grep",
        {"pattern": "(unclosed"},
        {
            "error": {
                "code": 1001,
                "message": "grep pattern rejected by ripgrep: rg: regex parse error:\n    (?:(unclosed)\n    ^\n"
                "error: unclosed group",
                "data": {
                    "code": "SEARCH_INVALID_PATTERN",
                    "text": "Error: grep pattern rejected by ripgrep: rg: regex parse error:\n    (?:(unclosed)\n"
                    "    ^\nerror: unclosed group",
                },
            }
        },
        title="A regex ripgrep rejects.",
    ),
    Example(
        "tools/call",
        "tools/call",
        {"name": "grep", "arguments": {"pattern": "TODO"}, "_meta": {"cwd": "src", "sessionId": "chat-7"}},
        {
            "result": {
                "content": [
                    {
                        "type": "text",
                        "text": "Found 2 matches\n\napp.py\nLine 5:     # TODO: parse args\n\n"
                        "util.py\nLine 2:     return 42  # TODO: cache",
                    }
                ],
                "structuredContent": {"text": "<the text above>", "matchCount": 2, "fileCount": 2, "truncated": False},
                "isError": False,
            }
        },
        title="grep through MCP, in the session directory `src` given in `_meta` (paths are relative to it): "
        "the text, and as structuredContent the same text with its counts (`mcpResult`).",
    ),
    Example(
        "tools/call",
        "tools/call",
        {"name": "glob", "arguments": {"pattern": "[", "cwd": "/"}},
        {
            "result": {
                "content": [{"type": "text", "text": "Error: glob pattern rejected by ripgrep: <ripgrep's message>"}],
                "isError": True,
                "_meta": {
                    "dsh-search/error": {
                        "code": "SEARCH_INVALID_PATTERN",
                        "text": "Error: glob pattern rejected by ripgrep: <ripgrep's message>",
                    }
                },
            }
        },
        title="A failing tool is an error result with its text alone, not a JSON-RPC error; the failure's kind is "
        "in `_meta`. (A `cwd` among the arguments is ignored: host-only fields come from `_meta`.)",
    ),
    Example(
        "tools/list",
        "tools/list",
        {"_meta": ENVELOPE},
        {
            "result": {
                "resultType": "complete",
                "tools": "<the same tools as above>",
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": SERVER_INFO,
            }
        },
        title="The same list for a 2026-07-28 request: that revision's result fields around it.",
    ),
    Example(
        "tools/call",
        "tools/call",
        {"name": "glob", "arguments": {"pattern": "*"}, "_meta": ENVELOPE},
        {
            "result": {
                "resultType": "complete",
                "content": [
                    {
                        "type": "text",
                        "text": "src/app.py\ndocs/notes.md\nREADME.md\n\n(Showing 3 of 5 paths, sampled across 3 of "
                        "the 4 top-level entries this pattern matched instead of taken in modification-time order. "
                        f"Narrow path to inspect a specific subtree. Full sorted result stored at: {SPILL_LOCATOR}. "
                        f"{RETRIEVAL_HINT})",
                    }
                ],
                "structuredContent": {"text": "<the text above>", "pathCount": 5, "truncated": True},
                "isError": False,
                "_meta": SERVER_INFO,
            }
        },
        title="A capped glob from a 2026-07-28 client: the text names the saved result. (With `mcpResult: full` "
        "a `resource_link` to it follows the text, and the structuredContent is glob's native result.)",
    ),
    Example(
        "resources/read",
        "resources/read",
        {"uri": SPILL_URI + "?offset=4&limit=2", "_meta": ENVELOPE},
        {
            "result": {
                "resultType": "complete",
                "contents": [
                    {
                        "uri": SPILL_URI + "?offset=4&limit=2",
                        "mimeType": "text/plain",
                        "text": "README.md\ntests/test_app.py",
                        "_meta": {
                            "dsh-search/lines": {"startLine": 4, "endLine": 5, "totalLines": 5, "nextOffset": None}
                        },
                    }
                ],
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": SERVER_INFO,
            }
        },
        title="Lines 4 and 5 of the artifact that link names (without `?offset&limit`: all of it).",
    ),
    Example(
        "resources/read",
        "resources/read",
        {"uri": "dsh-search://spill/session-000000000000/000000000000-gone.txt"},
        {
            "error": {
                "code": -32002,
                "message": "Resource not found",
                "data": {"uri": "dsh-search://spill/session-000000000000/000000000000-gone.txt"},
            }
        },
        title="No such artifact, for a legacy client (-32602 for a 2026-07-28 request; a URI that is not a "
        "spill artifact's is -32602 in both).",
    ),
    Example(
        "resources/templates/list",
        "resources/templates/list",
        None,
        {
            "result": {
                "resourceTemplates": [
                    {
                        "uriTemplate": "dsh-search://spill/{session}/{artifact}{?offset,limit}",
                        "name": "spill-artifact",
                        "title": "Saved search result",
                        "description": "<what it is, and what offset and limit do>",
                        "mimeType": "text/plain",
                    }
                ]
            }
        },
    ),
    Example(
        "resources/list",
        "resources/list",
        {"_meta": ENVELOPE},
        {
            "result": {
                "resultType": "complete",
                "resources": [],
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": SERVER_INFO,
            }
        },
        title="Nothing is listed: artifacts are reached through their links.",
    ),
    Example(
        "subscriptions/listen",
        "subscriptions/listen",
        {"notifications": {"toolsListChanged": True}, "_meta": ENVELOPE},
        None,
        title="Answered only when the stream ends (with `{resultType, _meta}` when the daemon's input ends). "
        "First comes `notifications/subscriptions/acknowledged {_meta: {io.modelcontextprotocol/subscriptionId: "
        "<this id>}, notifications: {toolsListChanged: true}}`; then a `notifications/tools/list_changed` with "
        "the same `_meta` when terminal_search joins the tools.",
    ),
    Example(
        "subscriptions/listen",
        "notifications/cancelled",
        {"requestId": "<the listen request's id>", "_meta": ENVELOPE},
        None,
        notification=True,
        title="The client ends the stream; the listen request is not answered.",
    ),
    Example(
        "scrollback/append",
        "scrollback/append",
        {"sessionId": "term-1", "data": _TERMINAL},
        {"result": {"totalLines": 5, "truncated": False}},
    ),
    Example(
        "terminal_search",
        "terminal_search",
        {"sessionId": "term-1", "pattern": "(?i)error", "regex": True},
        {
            "result": {
                "text": "[offset 1] make: *** [main.o] Error 1\n[offset 2] main.c:3: error: expected ';'\n"
                "[search: 2 of 2 matches, 5 retained lines]",
                "matches": [
                    {"offset": 1, "line": "make: *** [main.o] Error 1"},
                    {"offset": 2, "line": "main.c:3: error: expected ';'"},
                ],
                "matchCount": 2,
                "totalLines": 5,
                "truncated": False,
            }
        },
    ),
    Example(
        "terminal_search",
        "terminal_search",
        {"sessionId": "term-9", "pattern": "error"},
        {
            "error": {
                "code": -32602,
                "message": "unknown terminal session: term-9",
                "data": {"code": "INVALID_ARGS", "text": "Error: unknown terminal session: term-9"},
            }
        },
        title="A terminal the daemon has no scrollback for.",
    ),
    Example(
        "scrollback/read",
        "scrollback/read",
        {"sessionId": "term-1", "offset": 1, "count": 2},
        {
            "result": {
                "text": "main.c:3: error: expected ';'\nmake: *** [main.o] Error 1",
                "lineBegin": 1,
                "lineEnd": 3,
                "totalLines": 5,
                "truncated": False,
            }
        },
        title="The page that ends at the match with offset 1.",
    ),
    Example("scrollback/close", "scrollback/close", {"sessionId": "term-1"}, {"result": {"closed": True}}),
    Example(
        "index/status",
        "index/status",
        None,
        {
            "result": {
                "state": "off",
                "files": 0,
                "bytes": 0,
                "mode": "auto",
                "root": "<tree>",
                "answered": {"glob": 0, "grep": 0},
                "walked": 7,
                "walkedBecause": {"no-index": 7},
                "reason": "waiting for a search that walks for 0.2 s or more",
            }
        },
        title="With the default `--index auto` on a small tree: every walk was quick, so no index was built "
        "and the seven searches so far walked (`walkedBecause`: the planner's reasons).",
    ),
    Example(
        "rpc.discover",
        "rpc.discover",
        None,
        {
            "result": {
                "openrpc": "1.3.2",
                "info": {"title": "dsh-search", "version": "<version>", "description": "<…>"},
                "methods": "<one entry per method of this page: name, summary, params, result, errors>",
            }
        },
    ),
    Example(
        "errors",
        None,
        raw='{"jsonrpc": "2.0", "method": "ping", "id": 1',
        response={"error": {"code": -32700, "message": "Parse error: <where the JSON breaks>"}},
        title="Invalid JSON: answered with id null.",
    ),
    Example(
        "errors",
        "no/such/method",
        None,
        {"error": {"code": -32601, "message": "Method not found", "data": "no/such/method"}},
        title="An unknown method (`data` is the method's name, a string).",
    ),
    Example(
        "errors",
        "grep",
        {"pattern": 42},
        {
            "error": {
                "code": -32602,
                "message": 'invalid arguments: "pattern" must be a string',
                "data": {"code": "INVALID_ARGS", "text": 'Error: invalid arguments: "pattern" must be a string'},
            }
        },
        title="Params that do not fit the method's schema.",
    ),
    Example(
        "errors",
        "server/discover",
        {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
        {
            "error": {
                "code": -32602,
                "message": "params._meta is missing the required envelope key(s): "
                "io.modelcontextprotocol/clientCapabilities",
            }
        },
        title="A 2026-07-28 request without a required field of its envelope.",
    ),
    Example(
        "errors",
        "tools/list",
        {"_meta": {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2027-01-01"}},
        {
            "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {
                    "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
                    "requested": "2027-01-01",
                },
            }
        },
        title="A revision the daemon does not speak: the ones it does (2025-11-25 and older through `initialize`).",
    ),
    Example(
        "errors",
        "ping",
        {"_meta": ENVELOPE},
        {"error": {"code": -32601, "message": "Method not found", "data": "ping"}},
        title="A method 2026-07-28 removed (`ping`, `logging/setLevel`), asked with that revision's envelope.",
    ),
    Example("shutdown", "shutdown", None, {"result": None}),
    Example(
        "shutdown",
        "ping",
        None,
        {"error": {"code": -32600, "message": "server is shutting down"}},
        title="After `shutdown`, every request but `exit` is refused.",
    ),
    Example("exit", "exit", None, None, notification=True, title="No answer; the daemon exits with status 0."),
)


def example_ids() -> list[Any]:
    """The id each example is sent with (None for notifications and raw messages)."""
    ids: list[Any] = []
    for n, ex in enumerate(EXAMPLES, 1):
        ids.append(None if ex.notification else n)
    return ids


def request_of(ex: Example, id_: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if not ex.notification:
        msg["id"] = id_
    msg["method"] = ex.method
    if ex.params is not None:
        msg["params"] = ex.params
    return msg


def response_of(ex: Example, id_: Any) -> dict[str, Any] | None:
    if ex.response is None:
        return None
    return {"jsonrpc": "2.0", "id": None if ex.raw is not None else id_, **ex.response}


_PLACEHOLDER = re.compile(r"<[^<>\n]+>")


def matches(documented: Any, actual: Any) -> bool:
    """Whether an answer is the documented one. A documented string that is one `<placeholder>` stands
    for any value; placeholders inside a string stand for any text. Everything else must be equal,
    objects with exactly the same keys."""
    if isinstance(documented, str):
        if _PLACEHOLDER.fullmatch(documented):
            return True
        if not isinstance(actual, str):
            return False
        parts = _PLACEHOLDER.split(documented)
        return re.fullmatch(".+?".join(re.escape(p) for p in parts), actual, re.DOTALL) is not None
    if isinstance(documented, dict):
        return (
            isinstance(actual, dict)
            and documented.keys() == actual.keys()
            and all(matches(v, actual[k]) for k, v in documented.items())
        )
    if isinstance(documented, list):
        return (
            isinstance(actual, list)
            and len(documented) == len(actual)
            and all(matches(d, a) for d, a in zip(documented, actual, strict=True))
        )
    return type(documented) is type(actual) and documented == actual


# --- rendering ----------------------------------------------------------------------------------------


def _json(value: Any, width: int = 100, indent: str = "") -> str:
    """JSON as compact as fits: a value that fits the width on one line stays on it."""
    compact = json.dumps(value, ensure_ascii=False)
    if len(indent) + len(compact) <= width or not isinstance(value, dict | list) or not value:
        return compact
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {_json(v, width, inner).lstrip()}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    items = [inner + _json(v, width, inner).lstrip() for v in value]
    return "[\n" + ",\n".join(items) + f"\n{indent}]"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _type_of(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "any")
    return " \\| ".join(kind) if isinstance(kind, list) else str(kind)


# Params whose schema carries no description (MCP's own request shapes): what they are.
PARAM_NOTES: dict[tuple[str, str], str] = {
    ("initialize", "protocolVersion"): "The MCP revision the client speaks; answered with it when supported, "
    "else with the newest one the daemon speaks.",
    ("initialize", "capabilities"): "The client's MCP capabilities (ignored).",
    ("initialize", "clientInfo"): "The client's name and version (ignored).",
    ("tools/call", "name"): "The tool: `glob`, `grep` or `terminal_search`.",
    ("tools/call", "arguments"): "The tool's model-facing params (see the tool's method).",
    ("tools/call", "_meta"): "Host-only fields: `cwd` and `sessionId` for glob and grep (see "
    "[Host-only fields](#host-only-fields)); for a 2026-07-28 request also its envelope and `progressToken`.",
    ("tools/call", "inputResponses"): "2026-07-28: the answers to an `input_required` result (the client's "
    "roots, as `roots`).",
    ("tools/call", "requestState"): "2026-07-28: echoed from an `input_required` result (the daemon sends none).",
    ("tools/list", "cursor"): "The list has one page: any cursor is -32602.",
    ("tools/list", "_meta"): "A 2026-07-28 request's envelope (then the result has that revision's fields).",
    ("server/discover", "_meta"): "The 2026-07-28 envelope: `io.modelcontextprotocol/protocolVersion`, "
    "`…/clientCapabilities` (required), `…/clientInfo`, `…/logLevel`.",
    ("resources/list", "cursor"): "The list has one page: any cursor is -32602.",
    ("resources/list", "_meta"): "A 2026-07-28 request's envelope.",
    ("resources/templates/list", "cursor"): "The list has one page: any cursor is -32602.",
    ("resources/templates/list", "_meta"): "A 2026-07-28 request's envelope.",
    ("resources/read", "uri"): "`dsh-search://spill/<session>/<artifact>`, a saved result's locator relative "
    "to the spill directory (as a capped result's `resource_link` gives it with `mcpResult: full`), optionally "
    "with `?offset=N&limit=M` (1-based lines).",
    ("resources/read", "_meta"): "A 2026-07-28 request's envelope.",
    ("subscriptions/listen", "notifications"): "What to hear: `toolsListChanged` is honoured; "
    "`promptsListChanged`, `resourcesListChanged` and `resourceSubscriptions` are accepted and not honoured.",
    ("subscriptions/listen", "_meta"): "The 2026-07-28 envelope (required).",
}


def _example_lines(ex: Example, id_: Any) -> list[str]:
    out = []
    if ex.title:
        out += [ex.title, ""]
    sent = ex.raw if ex.raw is not None else _json(request_of(ex, id_))
    out += ["→", "```json", sent, "```"]
    answer = response_of(ex, id_)
    if answer is not None:
        out += ["←", "```json", _json(answer), "```"]
    out.append("")
    return out


def _examples_for(section: str) -> list[str]:
    out: list[str] = []
    for ex, id_ in zip(EXAMPLES, example_ids(), strict=True):
        if ex.section == section:
            out += _example_lines(ex, id_)
    return out


def _method(spec: MethodSpec) -> list[str]:
    out = [f"### `{spec.name}`", "", spec.summary, ""]
    host_only = set(spec.tool.host_fields) if spec.tool else set()
    if spec.tool is not None:
        model = ", ".join(f"`{n}`" for n in spec.tool.input_schema.get("properties", {}))
        out += [f"Also an MCP tool (`tools/list`, `tools/call`); the model sees the params {model}.", ""]
    props: dict[str, Any] = spec.params.get("properties", {})
    required = set(spec.params.get("required", ()))
    if props:
        out += ["| param | type | required | description |", "|---|---|---|---|"]
        for name, schema in props.items():
            note = schema.get("description") or PARAM_NOTES.get((spec.name, name), "")
            label = f"`{name}` (host only)" if name in host_only else f"`{name}`"
            out.append(f"| {label} | {_type_of(schema)} | {'yes' if name in required else 'no'} | {_cell(note)} |")
        out.append("")
    else:
        out += ["Params: none (omit `params`, or send `null`, `{}` or `[]`).", ""]
    out += ["Result:", "", "```json", _json(spec.result), "```", ""]
    if spec.result is GLOB_RESULT or spec.result is GREP_RESULT:
        out += ["`meta` and `spill` are described in [Results of glob and grep](#results-of-glob-and-grep).", ""]
    if spec.errors:
        listed = ", ".join(f"{e['code']} `{e['message']}`" for e in spec.errors)
        out += [f"Errors: {listed} (see [Errors](#errors)).", ""]
    else:
        out += ["Errors: only the envelope's (see [Errors](#errors)).", ""]
    out += ["Example:" if sum(ex.section == spec.name for ex in EXAMPLES) == 1 else "Examples:", ""]
    out += _examples_for(spec.name)
    return out


def block_methods() -> list[str]:
    table = MethodTable(METHODS)
    out = ["| method | summary |", "|---|---|"]
    for spec in table:
        anchor = re.sub(r"[^a-z0-9_ -]", "", spec.name.lower()).replace(" ", "-")
        out.append(f"| [`{spec.name}`](#{anchor}) | {_cell(spec.summary)} |")
    out.append("")
    for spec in table:
        out += _method(spec)
    return out


def block_example_setup() -> list[str]:
    out = ["| file | modification time | content |", "|---|---|---|"]
    for path, (content, mtime) in EXAMPLE_TREE.items():
        out.append(f"| `{path}` | {mtime} | `{_cell(json.dumps(content))}` |")
    out += ["", "```sh", "dsh-search " + " ".join(EXAMPLE_ARGS), "```"]
    return out


def block_host_fields() -> list[str]:
    specs = MethodTable(METHODS).tools()
    out = [
        "| field | type | in | meaning |",
        "|---|---|---|---|",
    ]
    for name, schema in HOST_FIELDS.items():
        where = ", ".join(f"`{s.name}`" for s in specs if s.tool is not None and name in s.tool.host_fields)
        out.append(f"| `{name}` | {_type_of(schema)} | {where} | {_cell(schema.get('description', ''))} |")
    return out


ENVELOPE: tuple[tuple[int, str, str], ...] = (
    (jsonrpc.PARSE_ERROR, "`Parse error: …`", "the message is not JSON (or a bad LSP header); the answer's id is null"),
    (
        jsonrpc.INVALID_REQUEST,
        "`Invalid request: …`",
        "not a JSON-RPC 2.0 request (id echoed when it could be read, else null); an empty batch; a message "
        "over `maxMessageBytes` (id null)",
    ),
    (jsonrpc.INVALID_REQUEST, "`server is shutting down`", "any request but `exit` after `shutdown`"),
    (
        jsonrpc.METHOD_NOT_FOUND,
        "`Method not found`",
        "no such method, or one 2026-07-28 removed asked with its envelope; `data` is the method name (a string)",
    ),
    (jsonrpc.INVALID_PARAMS, "the argument error", "`INVALID_ARGS` above, always with `data`"),
    (
        jsonrpc.INVALID_PARAMS,
        "`params._meta is missing the required envelope key(s): …` (or a field's type)",
        "a 2026-07-28 request whose envelope lacks a required field or has one of the wrong type; "
        "`server/discover` or `subscriptions/listen` without the envelope",
    ),
    (
        jsonrpc.INVALID_PARAMS,
        "`Invalid resource URI: …`, `Invalid cursor: …`, `Resource not found`",
        "`resources/read` of a URI that is not a spill artifact's (`data: {uri}`), or of a missing one from a "
        "2026-07-28 client; a list asked for a page it never gave",
    ),
    (
        RESOURCE_NOT_FOUND,
        "`Resource not found`",
        "`resources/read` of a missing artifact, legacy clients (`data: {uri}`)",
    ),
    (
        UNSUPPORTED_PROTOCOL_VERSION,
        "`Unsupported protocol version`",
        "a request whose envelope names a revision the daemon does not speak; `data: {supported, requested}`",
    ),
    (jsonrpc.INTERNAL_ERROR, "`Internal error`", "a bug in the daemon; no details (they go to stderr)"),
    (
        REQUEST_CANCELLED,
        "`Request cancelled`",
        "cancelled by `$/cancelRequest`; a tool's answer has `data` with `SEARCH_ABORTED` and its abort text",
    ),
    (
        REQUEST_CANCELLED,
        "`Request cancelled: the server is exiting`",
        "a method other than a tool still running when the daemon exits (a tool gets `SEARCH_ABORTED`)",
    ),
)


def block_errors() -> list[str]:
    out = ["| data.code | error.code | when |", "|---|---|---|"]
    for kind in KINDS:
        out.append(f"| `{kind.name}` | {kind.code} | {_cell(kind.when)} |")
    out += ["", "| error.code | message | when |", "|---|---|---|"]
    for code, message, when in ENVELOPE:
        out.append(f"| {code} | {message} | {_cell(when)} |")
    out += ["", "Examples:", ""]
    out += _examples_for("errors")
    return out[:-1]


def block_config() -> list[str]:
    out = ["| key | flag | values | default | meaning |", "|---|---|---|---|---|"]
    for key in KEYS:
        default = "**required**" if key.required else _cell(key.default_description)
        out.append(f"| `{key.name}` | `{key.flag}` | {key.values} | {default} | {_cell(key.help)} |")
    return out


def _cli_actions() -> Iterable[argparse.Action]:
    keys = {key.name for key in KEYS}
    for action in cli._parser()._actions:
        if action.dest not in keys and action.option_strings:
            yield action


def block_cli() -> list[str]:
    out = ["| flag | meaning |", "|---|---|"]
    for action in _cli_actions():
        flag = ", ".join(f"`{o}`" for o in action.option_strings)
        if action.choices:
            flag += " `" + "\\|".join(str(c) for c in action.choices) + "`"
        elif action.metavar:
            flag += f" `{action.metavar}`"
        out.append(f"| {flag} | {_cell(str(action.help))} |")
    return out


EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (
        0,
        "a normal end: `exit`, SIGTERM/SIGINT/SIGHUP, or stdin closed (after answering what it had); "
        "also `--help`, `--version` and a successful `--check`",
    ),
    (cli.EXIT_USAGE, "invalid configuration or usage; one stderr line names the key, flag or file"),
    (cli.EXIT_SIDECAR, "the ripgrep sidecar is unusable; one stderr line names its path and the problem"),
    (
        127,
        "not the daemon's own: the onefile launcher could not run the runtime it unpacked into `$TMPDIR` "
        "(typically a `noexec` mount; see [troubleshooting.md](troubleshooting.md))",
    ),
)


def block_exit() -> list[str]:
    out = ["| status | meaning |", "|---|---|"]
    out += [f"| {status} | {meaning} |" for status, meaning in EXIT_STATUSES]
    return out


def block_grep_extended() -> list[str]:
    assert GREP_EXTENDED.tool is not None
    properties = GREP_EXTENDED.tool.input_schema["properties"]
    out = ["| param | type | values | default | meaning |", "|---|---|---|---|---|"]
    for field in grep_fields("extended"):
        if field in UPSTREAM_FIELDS:
            continue
        schema = properties[wire_name(field)]
        if "enum" in schema:
            values = ", ".join(f"`{v}`" for v in schema["enum"])
        elif "maximum" in schema:
            values = f"{schema['minimum']} to {schema['maximum']}"
        elif "minimum" in schema:
            values = f"{schema['minimum']} or more" + (" (at most grepMaxMatches)" if field == "limit" else "")
        else:
            values = "true or false" if schema["type"] == "boolean" else "one glob"
        default = GrepQuery._field_defaults[field]
        shown = "none" if default is None else json.dumps(default.value if hasattr(default, "value") else default)
        out.append(f"| `{wire_name(field)}` | {schema['type']} | {values} | {shown} | {_cell(schema['description'])} |")
    return out


def block_mcp_results() -> list[str]:
    """Each tool's structuredContent (mcpResult auto or structured): the fields its outputSchema lists."""
    out = ["| tool | field | type | meaning |", "|---|---|---|---|"]
    for spec in (GLOB, GREP, TERMINAL_SEARCH, READ):
        assert spec.tool is not None
        for field, schema in spec.tool.output_schema["properties"].items():
            kind = schema["type"] if isinstance(schema["type"], str) else " or ".join(schema["type"])
            out.append(f"| {spec.name} | `{field}` | {kind} | {_cell(schema.get('description', ''))} |")
    assert GREP_EXTENDED.tool is not None
    extended = GREP_EXTENDED.tool.output_schema["properties"]["matchCount"]
    out += [
        "",
        f"With `grepProfile: extended`, grep's `matchCount` is {' or '.join(extended['type'])}: "
        f"{extended['description']}",
    ]
    return out


BLOCKS = {
    "mcp-results": block_mcp_results,
    "grep-extended": block_grep_extended,
    "methods": block_methods,
    "example-setup": block_example_setup,
    "host-fields": block_host_fields,
    "errors": block_errors,
    "config": block_config,
    "cli": block_cli,
    "exit": block_exit,
}


def render(text: str) -> str:
    """`text` with every generated block rendered afresh; every block must be present exactly once."""
    for name, make in BLOCKS.items():
        begin, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
        if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
            raise SystemExit(f"reference: {DOC.name} needs exactly one {begin} … {end} block")
        head, rest = text.split(begin + "\n", 1)
        _, tail = rest.split(end, 1)
        body = "\n".join(make()).rstrip("\n")
        text = f"{head}{begin}\n{body}\n{end}{tail}"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description="Render docs/reference.md's generated blocks from the code.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if docs/reference.md is out of date")
    mode.add_argument("--write", action="store_true", help="rewrite docs/reference.md")
    args = parser.parse_args()
    current = DOC.read_text()
    fresh = render(current)
    if args.write:
        if fresh != current:
            DOC.write_text(fresh)
            print(f"reference: rewrote {DOC.relative_to(ROOT)}")
        return 0
    if fresh == current:
        return 0
    if not args.check:
        diff = difflib.unified_diff(
            current.splitlines(keepends=True), fresh.splitlines(keepends=True), "docs/reference.md", "generated"
        )
        sys.stdout.writelines(diff)
    print("reference: docs/reference.md is out of date; run scripts/reference --write", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

"""`index/status`: the workspace index's state, for hosts and for people (docs/reference.md).

The index reports a `Status` in Python's names; this face spells it for the wire (`FIELDS`, one row per
field: the wire's key, the Status attribute, the schema), leaving out what does not apply.
"""

from __future__ import annotations

from typing import Any

from dsh_search.config import INDEX_MODES
from dsh_search.index.status import OFF, STATES, WALK_REASONS, Status
from dsh_search.methods.context import Context
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec
from dsh_search.methods.tools import search_scope


def _integer(description: str) -> dict[str, Any]:
    return {"type": "integer", "description": description}


STATE_TEXT = "; ".join(f"{name}: {meaning}" for name, meaning in STATES.items())
# (wire key, Status attribute, schema)
FIELDS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("state", "state", {"type": "string", "enum": list(STATES), "description": STATE_TEXT + "."}),
    ("files", "files", _integer("Files glob lists in the workspace, at its last full listing.")),
    ("bytes", "bytes", _integer("Bytes of text indexed for grep.")),
    ("grepFiles", "grep_files", _integer("Files grep reads in the workspace.")),
    ("mode", "mode", {"type": "string", "enum": list(INDEX_MODES)}),
    ("root", "root", {"type": ["string", "null"], "description": "The workspace directory indexed."}),
    ("dir", "dir", {"type": "string", "description": "Where its index lives on disk."}),
    ("changed", "changed", _integer("Files changed since they were indexed.")),
    ("indexed", "indexed", _integer("While building: files read so far, of grepFiles.")),
    ("builtInMs", "built_in_ms", _integer("How long the first build took.")),
    ("indexBytes", "index_bytes", _integer("The index's size on disk after its last build.")),
    ("watches", "watches", _integer("Directories watched for changes.")),
    ("rescans", "rescans", _integer("Times every file was listed again after lost events.")),
    (
        "rebuilds",
        "rebuilds",
        _integer("Times the content index was rebuilt because most of it was old versions of files."),
    ),
    ("reason", "reason", {"type": "string", "description": "Why it is off or failed."}),
    (
        "inDoubt",
        "in_doubt",
        {
            "type": "array",
            "description": "The parts of the workspace searches walk instead of answering from the index, and why "
            "(path relative to the workspace, '.' for all of it; tools: glob and grep, or grep).",
            "items": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "reason": {"type": "string"}, "tools": {"type": "string"}},
                "required": ["path", "reason", "tools"],
            },
        },
    ),
    ("inDoubtCount", "in_doubt_count", _integer("How many parts are in doubt (inDoubt lists the first 20).")),
    (
        "evicted",
        "evicted",
        {
            "type": "array",
            "description": "Other workspaces' indexes this daemon removed to keep indexDir within indexMaxBytes.",
            "items": {
                "type": "object",
                "properties": {"dir": {"type": "string"}, "bytes": {"type": "integer"}},
                "required": ["dir", "bytes"],
            },
        },
    ),
    (
        "answered",
        "answered",
        {"type": "object", "description": "Searches the index answered since the daemon started, by tool."},
    ),
    ("walked", "walked", _integer("Searches that walked the tree instead.")),
    (
        "walkedBecause",
        "walked_because",
        {
            "type": "object",
            "description": "Searches that walked, by why (the planner's reasons): "
            + "; ".join(f"{reason.value}: {meaning}" for reason, meaning in WALK_REASONS.items())
            + ".",
            "propertyNames": {"enum": [reason.value for reason in WALK_REASONS]},
            "additionalProperties": {"type": "integer"},
        },
    ),
    (
        "role",
        "role",
        {
            "type": "string",
            "enum": ["owner", "guest"],
            "description": "owner: this daemon keeps the workspace's index (and answers other daemons on it); "
            "guest: another daemon does, and this one asks it.",
        },
    ),
    ("served", "served", _integer("Owner: questions of other daemons on this workspace it answered.")),
    (
        "guests",
        "guests",
        {
            "type": "string",
            "description": "Owner: why other daemons on this workspace cannot ask it now (they walk meanwhile; it "
            "tries again), e.g. its socket could not be opened.",
        },
    ),
)
ALWAYS = ("state", "files", "bytes", "mode", "root")  # on the wire even when null


def wire(status: Status) -> dict[str, Any]:
    """A `Status` as `index/status` answers it: absent fields left out, `root` kept even when null."""
    out: dict[str, Any] = {}
    for key, attr, _schema in FIELDS:
        value = getattr(status, attr)
        if key == "inDoubt" and value is not None:
            value = [{"path": path or ".", "reason": reason, "tools": tools} for path, reason, tools in value]
        elif key == "evicted" and value is not None:
            value = [{"dir": directory, "bytes": size} for directory, size in value]
        if value is not None or key in ALWAYS:
            out[key] = value
    return out


async def status(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """The index as a search would find it now: asking starts it for the workspace, as a search does."""
    if ctx.index is None:
        return {"state": OFF, "files": 0, "bytes": 0, "mode": "off"}
    search_scope(ctx)
    return wire(await ctx.index.status())


SPEC = MethodSpec[Context](
    "index/status",
    summary="The workspace index: off, building, ready or failed; the files it knows and the bytes of text "
    "it indexed; its mode, workspace and directory, and why it is off or failed.",
    handler=status,
    result=object_schema({key: schema for key, _attr, schema in FIELDS}, ["state", "files", "bytes"]),
)

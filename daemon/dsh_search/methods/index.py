"""`index/status`: the workspace index's state, for hosts and for people (docs/reference.md)."""

from __future__ import annotations

from typing import Any

from dsh_search.methods.context import Context
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec


async def status(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    if ctx.index is None:
        return {"state": "off", "files": 0, "bytes": 0, "mode": "off"}
    return ctx.index.status()


SPEC = MethodSpec[Context](
    "index/status",
    summary="The workspace index: off, building, ready or failed; the files it knows and the bytes of text "
    "it indexed; its mode, workspace and directory, and why it is off or failed.",
    handler=status,
    result=object_schema(
        {
            "state": {"type": "string", "enum": ["off", "building", "ready", "failed"]},
            "files": {"type": "integer", "description": "Files glob lists in the workspace, at its last full listing."},
            "bytes": {"type": "integer", "description": "Bytes of text indexed for grep."},
            "grepFiles": {"type": "integer", "description": "Files grep reads in the workspace."},
            "mode": {"type": "string", "enum": ["auto", "on", "off"]},
            "root": {"type": ["string", "null"], "description": "The workspace directory indexed."},
            "dir": {"type": "string", "description": "Where its index lives on disk."},
            "changed": {"type": "integer", "description": "Files changed since they were indexed."},
            "indexed": {"type": "integer", "description": "While building: files read so far, of grepFiles."},
            "builtInMs": {"type": "integer", "description": "How long the first build took."},
            "indexBytes": {"type": "integer", "description": "The index's size on disk after its last build."},
            "watches": {"type": "integer", "description": "Directories watched for changes."},
            "rescans": {"type": "integer", "description": "Times every file was listed again after lost events."},
            "rebuilds": {
                "type": "integer",
                "description": "Times the content index was rebuilt because most of it was old versions of files.",
            },
            "reason": {"type": "string", "description": "Why it is off or failed."},
            "answered": {
                "type": "object",
                "description": "Searches the index answered since the daemon started, by tool.",
            },
            "walked": {"type": "integer", "description": "Searches that walked the tree instead."},
        },
        ["state", "files", "bytes"],
    ),
)

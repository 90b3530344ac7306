"""`spill/read`: page through a saved artifact by lines."""

from __future__ import annotations

from typing import Any

from dsh_search.engine import files
from dsh_search.engine.failures import INVALID_ARGS, invalid_args
from dsh_search.methods.context import Context
from dsh_search.methods.errors import openrpc_errors
from dsh_search.methods.params import object_schema
from dsh_search.methods.registry import MethodSpec
from dsh_search.store.spill import SpillReadError


async def spill_read(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    offset = params.get("offset", 1)
    limit = params.get("limit", 2000)
    if offset < 1:
        raise invalid_args("offset must be a positive integer")
    if limit < 1:
        raise invalid_args("limit must be a positive integer")
    try:
        return await files.detached(ctx.spill.read, params["locator"], offset, limit)
    except SpillReadError as err:
        raise invalid_args(str(err)) from None


SPEC = MethodSpec(
    "spill/read",
    summary="Read lines offset..offset+limit-1 (1-based) of a spill artifact named by its locator.",
    params=object_schema(
        {
            "locator": {"type": "string", "description": "The artifact's absolute path, as a search returned it."},
            "offset": {"type": "integer", "description": "First line, 1-based (default 1)."},
            "limit": {"type": "integer", "description": "Number of lines (default 2000)."},
        },
        ["locator"],
    ),
    result=object_schema(
        {
            "text": {"type": "string"},
            "startLine": {"type": "integer"},
            "endLine": {"type": "integer"},
            "totalLines": {"type": "integer"},
            "nextOffset": {"type": ["integer", "null"]},
        },
        ["text", "startLine", "endLine", "totalLines", "nextOffset"],
    ),
    errors=openrpc_errors(INVALID_ARGS),
    handler=spill_read,
)

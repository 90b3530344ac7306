"""`spill/read`: page through a saved artifact by lines (SPEC §7)."""

from __future__ import annotations

import asyncio
from typing import Any

from .app import App
from .errors import invalid_args
from .params import object_schema
from .registry import method
from .spill import SpillReadError


@method(
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
    errors=((-32602, "INVALID_ARGS"),),
)
async def spill_read(app: App, params: dict[str, Any]) -> dict[str, Any]:
    offset = params.get("offset", 1)
    limit = params.get("limit", 2000)
    if offset < 1:
        raise invalid_args("offset must be a positive integer")
    if limit < 1:
        raise invalid_args("limit must be a positive integer")
    try:
        return await asyncio.to_thread(app.spill.read, params["locator"], offset, limit)
    except SpillReadError as err:
        raise invalid_args(str(err)) from None

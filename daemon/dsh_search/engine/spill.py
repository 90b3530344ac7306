"""The hand-off of a complete result to a spill store, as the engine sees it.

A capped search keeps its page inline and saves the complete result where the model can page through
it; the footer then names the saved artifact (`SpillRef`). Any object with `root` and `save_text` will
do (store/spill.py is the daemon's); the engine only asks it to save and never fails a search because a
save failed: the footer then says the result could not be saved.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

log = logging.getLogger("dsh_search.search")


class SpillRef(NamedTuple):
    locator: str
    bytes: int
    retrieval_hint: str

    def as_json(self) -> dict[str, Any]:
        return {"locator": self.locator, "bytes": self.bytes, "retrievalHint": self.retrieval_hint}


class Spill(Protocol):
    @property
    def root(self) -> str:
        """The directory artifacts live under (searches inside it are always allowed)."""
        ...

    def save_text(self, session_id: str, suggested_name: str, content: str | Iterable[str]) -> SpillRef:
        """Save `content` (whole, or in pieces written in order); raises OSError when it cannot."""
        ...


async def save(store: Spill, session_id: str, name: str, content: str | Iterable[str]) -> SpillRef | None:
    """Best effort, on a worker thread: a save that fails is logged and reported as unsaved, never as an
    error."""
    try:
        return await asyncio.to_thread(store.save_text, session_id, name, content)
    except OSError as exc:
        log.warning("could not save %s: %s", name, exc)
        return None

"""The index's states and what it reports of itself: the one table of states, and `Status` (sans IO).

`index/status` (methods/index.py) spells a `Status` for the wire; the index itself knows nothing of the
protocol, so every field here is a plain Python name.
"""

from __future__ import annotations

from typing import NamedTuple

OFF, BUILDING, READY, FAILED = "off", "building", "ready", "failed"

# Every state, with what it means for a search. The wire's enum and its description come from here.
STATES: dict[str, str] = {
    OFF: "no index: searches walk the tree",
    BUILDING: "the first build runs: searches walk the tree until it is ready",
    READY: "searches the index can answer exactly are answered from it; those that reach a part in doubt "
    "(inDoubt) walk",
    FAILED: "the index failed (its reason says why): searches walk, and it is built afresh after a pause",
}


DOUBTS_LISTED = 20


class Status(NamedTuple):
    state: str
    mode: str
    root: str | None  # the workspace directory indexed (None: none)
    files: int = 0  # files glob lists, at the last full listing
    bytes: int = 0  # bytes of text indexed for grep
    grep_files: int | None = None  # files grep reads
    dir: str | None = None  # the workspace's index directory
    changed: int | None = None  # files changed since they were indexed
    indexed: int | None = None  # while building: files read so far
    built_in_ms: int | None = None
    index_bytes: int | None = None  # the index's size on disk after its last build
    watches: int | None = None  # directories watched
    rescans: int | None = None  # full listings after lost events
    rebuilds: int | None = None  # content rebuilds (most documents were old versions)
    reason: str | None = None  # why it is off or failed
    in_doubt: list[tuple[str, str, str]] | None = None  # (path relative to root, why, the tools it bears on)
    in_doubt_count: int | None = None  # parts in doubt in all (in_doubt lists the first DOUBTS_LISTED)
    evicted: list[tuple[str, int]] | None = None  # other workspaces' indexes removed to keep the cache bound
    answered: dict[str, int] | None = None  # searches answered from the index, by tool
    walked: int | None = None  # searches that walked
    role: str | None = None  # "owner" (this daemon keeps the index) or "guest" (another daemon does)
    served: int | None = None  # owner: other daemons' questions it answered
    guests: str | None = None  # owner: why other daemons cannot ask it now (they walk meanwhile)

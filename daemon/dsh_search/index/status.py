"""The index's states and what it reports of itself: the one table of states, and `Status` (sans IO).

`index/status` (methods/index.py) spells a `Status` for the wire; the index itself knows nothing of the
protocol, so every field here is a plain Python name.
"""

from __future__ import annotations

from enum import StrEnum
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


class Walk(StrEnum):
    """Why a search walked instead of being answered from the index: every gate of the answer-or-walk
    decision (index/planner.py, and the manager's before it), by name. `index/status` counts searches by
    them (`walked_because`), the log names them, tests assert them."""

    NO_INDEX = "no-index"
    BUILDING = "building"
    FAILED = "failed"
    OWNER_SILENT = "owner-silent"
    OWNER_VIEW = "owner-view"
    OUTSIDE = "outside"
    NUL_ARGUMENT = "nul-argument"
    NO_LITERALS = "no-literals"
    GLOB_UNREAD = "glob-unread"
    ROOT_UNSPELLED = "root-unspelled"
    IN_DOUBT = "in-doubt"
    ROOT_NOT_LISTED = "root-not-listed"
    UNSETTLED = "unsettled"
    INCLUDE_REACHES_SKIPPED = "include-reaches-skipped"
    TOO_MANY_CHANGED = "too-many-changed"
    TOO_COMMON = "too-common"
    TOO_MANY_CANDIDATES = "too-many-candidates"
    CANNOT_NAME = "cannot-name"
    NO_FILE_SEARCHED = "no-file-searched"
    INDEX_ERROR = "index-error"


# Every reason, with what it means. index/status's schema and docs/behaviour.md come from here.
WALK_REASONS: dict[Walk, str] = {
    Walk.NO_INDEX: "no index of the workspace yet (auto: no slow walk yet; or it cannot be kept exact here)",
    Walk.BUILDING: "the index is being built",
    Walk.FAILED: "the index failed and waits to be built again, or its files were changed by another process",
    Walk.OWNER_SILENT: "another daemon owns the index and did not answer in time",
    Walk.OWNER_VIEW: "another daemon owns the index and sees the files otherwise (another user, groups or "
    "environment where ripgrep finds git's rules)",
    Walk.OUTSIDE: "the search runs outside the indexed workspace",
    Walk.NUL_ARGUMENT: "an argument holds a NUL byte (ripgrep refuses to start, as the walk shows)",
    Walk.NO_LITERALS: "the pattern requires no literal of three characters or more: no file can be ruled out",
    Walk.GLOB_UNREAD: "a glob the index does not read exactly as ripgrep does",
    Walk.ROOT_UNSPELLED: "the search root cannot be spelled as ripgrep prints it (a symbolic link or `..` on "
    "the way, a file as the root)",
    Walk.IN_DOUBT: "the part of the workspace searched is in doubt (inDoubt says why)",
    Walk.ROOT_NOT_LISTED: "the search root holds no file grep reads (hidden, ignored or empty)",
    Walk.UNSETTLED: "whether grep reads some new files is not settled yet",
    Walk.INCLUDE_REACHES_SKIPPED: "the include glob reaches files grep's walk skips without it (hidden, ignored)",
    Walk.TOO_MANY_CHANGED: "too many files changed since indexed for a search to read them itself",
    Walk.TOO_COMMON: "the pattern's rarest trigram is in more than half of the files: a walk costs no more",
    Walk.TOO_MANY_CANDIDATES: "more than half of the files under the root can match: a walk costs no more",
    Walk.CANNOT_NAME: "the candidates cannot be handed to ripgrep (command line too long, too many "
    "directories to walk, a name a glob cannot carry)",
    Walk.NO_FILE_SEARCHED: "no candidate: the walk decides whether it searched a file at all",
    Walk.INDEX_ERROR: "the index raised an error (it is built again after a pause)",
}


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
    walked_because: dict[str, int] | None = None  # searches that walked, by reason (Walk)
    role: str | None = None  # "owner" (this daemon keeps the index) or "guest" (another daemon does)
    served: int | None = None  # owner: other daemons' questions it answered
    guests: str | None = None  # owner: why other daemons cannot ask it now (they walk meanwhile)

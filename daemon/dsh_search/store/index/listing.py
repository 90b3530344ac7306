"""The workspace's files as glob lists them, kept in memory: what `rg --files --no-ignore --hidden` minus
the VCS directories would print, oldest first, ready to be matched against a glob without a walk.

Layout. A `Snapshot` holds every file once, ordered by (modification time, path bytes) — glob's own
order — as one byte string of NUL-separated paths relative to the workspace root (`blob`, which starts
and ends with a NUL) with each path's start offset and modification time in arrays beside it. About 75
bytes a file: 500,000 files are ~38 MB. A glob is one regex search over the blob (`re.finditer`, in C),
whose matches come out already in order. Changes since the snapshot (created, modified, deleted,
renamed files) sit in a small overlay that shadows the snapshot's entries for the same path; when the
overlay grows, a new snapshot is made from both.

Glob semantics (checked against ripgrep by tests/integration/test_index_equivalence.py): ripgrep matches
`--glob`s against a path relative to its cwd — not to the root it walks — with the leading `./` and the
cwd's own absolute prefix stripped; a path is listed when the glob (a whitelist) matches it, and no
later blacklist (the VCS directories, the deny globs) matches it or a directory above it.
"""

from __future__ import annotations

import heapq
import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from dsh_search.engine.globsyntax import GlobError, inclusion


class Snapshot:
    """Every file at one moment, in glob's order (see the module's header)."""

    def __init__(self, entries: Iterable[tuple[int, bytes]]) -> None:
        ordered = sorted(entries)
        parts = [b""]
        starts = array("q")
        mtimes = array("q")
        offset = 1
        for mtime, path in ordered:
            parts.append(path)
            starts.append(offset)
            mtimes.append(mtime)
            offset += len(path) + 1
        parts.append(b"")
        self.blob = b"\0".join(parts)
        self.starts = starts
        self.mtimes = mtimes

    def __len__(self) -> int:
        return len(self.starts)

    def entries(self) -> Iterator[tuple[int, bytes]]:
        blob = self.blob
        for i, start in enumerate(self.starts):
            yield self.mtimes[i], blob[start : blob.index(b"\0", start)]

    def matching(self, record: re.Pattern[bytes]) -> Iterator[tuple[int, bytes]]:
        """(mtime, path) of the entries `record` matches, in order. `record` matches one whole entry
        between NULs (see `record_regex`)."""
        starts, mtimes = self.starts, self.mtimes
        for found in record.finditer(self.blob):
            yield mtimes[bisect_right(starts, found.start()) - 1], found.group()


class Change(NamedTuple):
    mtime: int | None  # None: the file is gone


class FileList:
    """The snapshot and the overlay of changes made since; `apply` and `files` are the whole interface."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.overlay: dict[bytes, Change] = {}

    def apply(self, path: bytes, mtime: int | None) -> None:
        """`path` now has this modification time, or is gone (None)."""
        self.overlay[path] = Change(mtime)

    def matching(self, record: re.Pattern[bytes]) -> Iterator[tuple[int, bytes]]:
        """Every current file `record` matches, in glob's order."""
        overlay = self.overlay
        base: Iterable[tuple[int, bytes]] = self.snapshot.matching(record)
        if overlay:
            base = (entry for entry in base if entry[1] not in overlay)
            changed = sorted(
                (change.mtime, path)
                for path, change in overlay.items()
                if change.mtime is not None and record.search(b"\0" + path + b"\0")
            )
            return heapq.merge(base, changed)
        return iter(base)

    def compacted(self) -> FileList:
        """A new list whose snapshot includes the overlay (made off the event loop: it sorts every file)."""
        overlay = dict(self.overlay)
        entries = [entry for entry in self.snapshot.entries() if entry[1] not in overlay]
        entries += [(change.mtime, path) for path, change in overlay.items() if change.mtime is not None]
        return FileList(Snapshot(entries))

    def __len__(self) -> int:
        return len(self.snapshot) + sum(1 if c.mtime is not None else 0 for c in self.overlay.values())


# --- globs as regexes over the blob --------------------------------------------------------------------------


class Unsupported(Exception):
    """A glob (or root) this module does not promise to read as ripgrep does: the search walks instead."""


def whitelist(glob: str) -> bytes:
    """The regex of a `--glob=<glob>` whitelist over a cwd-relative path (bytes); raises `Unsupported`
    for what is no plain whitelist (negated, a comment, blank, directories only) or uses a character
    class with non-ASCII members (globset matches those as characters; the port matches bytes)."""
    if "[" in glob and not glob.isascii():
        raise Unsupported("a character class beside non-ASCII characters")
    try:
        compiled = inclusion(glob)
    except GlobError as exc:  # ripgrep rejects it: let the walk fail as it fails
        raise Unsupported(str(exc)) from None
    if compiled is None or compiled.only_dir:
        raise Unsupported("not a whitelist of files")
    return compiled.regex


def within_records(regex: bytes) -> bytes:
    """A path regex that cannot run past a NUL: its wildcards (`.` and negated classes, the only places a
    NUL could match — literals are escaped) exclude it."""
    return regex.replace(b".*", b"[^\\x00]*").replace(b"[^", b"[^\\x00")


def record_regex(prefix: bytes, under: bytes, glob_regex: bytes) -> re.Pattern[bytes]:
    """Entries (workspace-relative, between NULs) that lie under `prefix + under` and whose path with
    `prefix` taken off fully matches `glob_regex`: `prefix` turns a workspace path into a cwd-relative
    one, `under` (cwd-relative, ending in `/`, or empty) is the root the search walks."""
    lookahead = b"(?=" + re.escape(under) + b")" if under else b""
    body = within_records(glob_regex)
    return re.compile(b"(?<=\\x00)" + re.escape(prefix) + lookahead + b"(?:" + body + b")(?=\\x00)", re.DOTALL)

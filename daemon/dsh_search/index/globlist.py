"""Glob's list: the workspace's files as glob lists them, kept in memory — what `rg --files --no-ignore
--hidden` minus the VCS directories would print, oldest first — ready to be matched against a glob
without a walk (sans IO).

Layout. A `Snapshot` holds every file once, ordered by (modification time, path bytes) — glob's own
order — as one byte string of NUL-separated paths relative to the workspace root (`blob`, which starts
and ends with a NUL) with each path's start offset, modification time and inode (`inode_key`: which
other paths name the same file, `named`) in arrays beside it. About 83 bytes a file: 500,000 files are
~42 MB. A glob is one regex search over the blob (`re.finditer`, in C),
whose matches come out already in order. Changes since the snapshot (created, modified, deleted,
renamed files) sit in a small overlay that shadows the snapshot's entries for the same path; when the
overlay grows, a new snapshot is made from both.

Glob semantics (checked against ripgrep by the index's equivalence test): ripgrep matches
`--glob`s against a path relative to its cwd — not to the root it walks — with the leading `./` and the
cwd's own absolute prefix stripped; a path is listed when the glob (a whitelist) matches it, and no
later blacklist (the VCS directories, the deny globs) matches it or a directory above it.

Rules of this module: values in memory only — what is on disk, and when it changed, is the caller's.
"""

from __future__ import annotations

import heapq
import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import NamedTuple

from dsh_search.engine.globsyntax import GlobError, inclusion

_MTIME_BIAS = 1 << 63  # an mtime plus this is never negative: big-endian bytes then sort as the times do
NO_INODE = 0  # an entry whose inode is not known: `named` never finds it


def inode_key(dev: int, ino: int) -> int:
    """One file's identity (device and inode) as one 64-bit integer. Two files may share one (a hash):
    then each is taken for the other's other name, which costs a stat or a read, never an answer."""
    key = hash((dev, ino))
    return key if key != NO_INODE else 1


def entry_key(mtime: int, path: bytes, inode: int = NO_INODE) -> bytes:
    """One file as a byte string that sorts in glob's order — its modification time (8 bytes), its path,
    then a NUL (no path holds one: a path sorts before the paths it is a prefix of, as alone) and its
    `inode_key` (8 bytes) — and costs one object instead of a tuple of four (500,000 files: 40 MB instead
    of 90)."""
    return (mtime + _MTIME_BIAS).to_bytes(8, "big") + path + b"\0" + inode.to_bytes(8, "big", signed=True)


def split_key(key: bytes) -> tuple[int, bytes, int]:
    """(mtime, path, inode) of an `entry_key`."""
    return (
        int.from_bytes(key[:8], "big") - _MTIME_BIAS,
        key[8:-9],
        int.from_bytes(key[-8:], "big", signed=True),
    )


class Snapshot:
    """Every file at one moment, in glob's order (see the module's header)."""

    def __init__(self, keys: list[bytes]) -> None:
        """From `entry_key`s, which it takes over: the list is sorted in place and emptied."""
        keys.sort()
        blob = bytearray(b"\0")
        starts = array("q")
        mtimes = array("q")
        inodes = array("q")
        hashes = array("q")
        for key in keys:
            mtime, path, inode = split_key(key)
            starts.append(len(blob))
            mtimes.append(mtime)
            inodes.append(inode)
            hashes.append(hash(path))
            blob += path
            blob += b"\0"
        keys.clear()
        self.blob = bytes(blob)
        self.starts = starts
        self.mtimes = mtimes
        self.inodes = inodes
        # Every path's hash, sorted (8 bytes a file): whether a path is in the snapshot, without a walk of
        # the blob — for counting the files as changes come (a collision costs a count, never an answer).
        self._hashes = array("q", sorted(hashes))

    def holds(self, path: bytes) -> bool:
        """Whether `path` is (as far as its hash tells) one of the snapshot's files."""
        h = hash(path)
        i = bisect_left(self._hashes, h)
        return i < len(self._hashes) and self._hashes[i] == h

    def __len__(self) -> int:
        return len(self.starts)

    def entries(self) -> Iterator[tuple[int, bytes, int]]:
        """(mtime, path, inode) of every file, in order."""
        blob = self.blob
        for i, start in enumerate(self.starts):
            yield self.mtimes[i], blob[start : blob.index(b"\0", start)], self.inodes[i]

    def named(self, inodes: set[int]) -> list[bytes]:
        """The paths of the files whose `inode_key` is one of `inodes`: a scan of the inode array, in C
        for a few (a byte search for each), else one pass."""
        found: list[int] = []
        if len(inodes) <= 16:
            raw = self.inodes.tobytes()
            size = self.inodes.itemsize
            for inode in inodes:
                needle = array("q", [inode]).tobytes()
                at = raw.find(needle)
                while at >= 0:
                    if at % size == 0:
                        found.append(at // size)
                    at = raw.find(needle, at + 1)
        else:
            found = [i for i, inode in enumerate(self.inodes) if inode in inodes]
        blob = self.blob
        return [blob[self.starts[i] : blob.index(b"\0", self.starts[i])] for i in sorted(found)]

    def matching(self, matcher: Matcher) -> list[bytes]:
        """The paths `matcher` takes, in order."""
        return matcher.select(self.blob)

    def matching_timed(self, matcher: Matcher) -> Iterator[tuple[int, bytes]]:
        """(mtime, path) of the paths `matcher` takes, in order (for merging with changes)."""
        starts, mtimes = self.starts, self.mtimes
        for offset, path in matcher.positions(self.blob):
            yield mtimes[bisect_right(starts, offset) - 1], path


class Change(NamedTuple):
    mtime: int | None  # None: the file is gone
    inode: int = NO_INODE  # its inode_key, when known


class GlobList:
    """The snapshot and the overlay of changes made since; `apply` and `files` are the whole interface."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.overlay: dict[bytes, Change] = {}
        self._count = len(snapshot)  # current files: kept as changes come

    @classmethod
    def from_keys(cls, keys: list[bytes]) -> GlobList:
        """From a walk's `entry_key`s, which the snapshot takes over and empties (the walk's list and the
        snapshot are never in memory at full size together)."""
        return cls(Snapshot(keys))

    def frozen(self) -> GlobList:
        """A copy whose changes are a copy too: safe to read on a thread while the live one changes."""
        copy = GlobList(self.snapshot)
        copy.overlay = dict(self.overlay)
        copy._count = self._count
        return copy

    def apply(self, path: bytes, mtime: int | None, inode: int = NO_INODE) -> None:
        """`path` now has this modification time (and this `inode_key`), or is gone (None)."""
        old = self.overlay.get(path)
        was = old.mtime is not None if old is not None else self.snapshot.holds(path)
        self._count += (mtime is not None) - was
        self.overlay[path] = Change(mtime, inode)

    def named(self, inodes: set[int]) -> list[bytes]:
        """Every current file whose `inode_key` is one of `inodes` (its names, as far as glob's list knows)."""
        overlay = self.overlay
        found = [p for p in self.snapshot.named(inodes) if p not in overlay]
        return found + [p for p, c in overlay.items() if c.mtime is not None and c.inode in inodes]

    def paths(self) -> Iterator[bytes]:
        """Every current file, one at a time (the snapshot's not changed since, then the changed ones)."""
        overlay = self.overlay
        for _mtime, path, _inode in self.snapshot.entries():
            if path not in overlay:
                yield path
        yield from [path for path, change in overlay.items() if change.mtime is not None]

    def matching(self, matcher: Matcher) -> list[bytes]:
        """Every current file `matcher` takes, in glob's order. Without changes that match, the
        snapshot's answer as it is; with some, merged with it by (mtime, path)."""
        overlay = self.overlay
        if not overlay:
            return self.snapshot.matching(matcher)
        changed = sorted(
            (change.mtime, path)
            for path, change in overlay.items()
            if change.mtime is not None and matcher.matches(path)
        )
        if not changed:
            return [path for path in self.snapshot.matching(matcher) if path not in overlay]
        base = ((m, p) for m, p in self.snapshot.matching_timed(matcher) if p not in overlay)
        return [path for _mtime, path in heapq.merge(base, changed)]

    def compacted(self) -> GlobList:
        """A new list whose snapshot includes the overlay (made off the event loop: it sorts every file)."""
        overlay = dict(self.overlay)
        keys = [entry_key(m, path, inode) for m, path, inode in self.snapshot.entries() if path not in overlay]
        keys += [entry_key(c.mtime, path, c.inode) for path, c in overlay.items() if c.mtime is not None]
        return GlobList(Snapshot(keys))

    def __len__(self) -> int:
        return self._count


# --- globs as regexes over the blob --------------------------------------------------------------------------


class Unsupported(Exception):
    """A glob (or root) this module does not promise to read as ripgrep does: the search walks instead."""


def glob_regex(glob: str) -> bytes:
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


class Matcher:
    """The workspace paths a glob matches for one search: those that lie under `prefix + under` and whose
    cwd-relative part (the path with `prefix`, the cwd's own, taken off) the glob regex fully matches.
    `under` (cwd-relative, ending in `/`, or empty) is the root the search walks.

    Over the snapshot's blob it is one regex search in C: with a literal start (a search below the
    workspace's top) a fast literal scan picks the entries under it and the glob judges only those;
    without, the glob itself scans, its wildcards kept from running past an entry's NUL."""

    def __init__(self, prefix: bytes, under: bytes, glob_regex: bytes) -> None:
        self.start = prefix + under
        self.cut = len(prefix)
        self._path = re.compile(glob_regex, re.DOTALL)
        self._shape = _shape(glob_regex) if not self.start else None
        if self.start:
            self._scan = re.compile(b"\\x00(" + re.escape(self.start) + b"[^\\x00]*)")
        elif self._shape is not None and self._shape[0] != ALL:
            # The glob's literal tail, wherever it ends an entry: a literal search (fast in C even over
            # millions of paths), then each hit checked and widened to its entry.
            self._scan = re.compile(re.escape(self._shape[1]) + b"(?=\\x00)")
        else:
            self._scan = re.compile(b"\\x00(" + within_records(glob_regex) + b")(?=\\x00)", re.DOTALL)

    def matches(self, path: bytes) -> bool:
        return path.startswith(self.start) and self._path.fullmatch(path, self.cut) is not None

    def take(self, paths: list[bytes]) -> list[bytes]:
        """Those of `paths`, every one under the search's root, that the glob matches: for the common
        shapes (`*`, `*lit`, `lit` at any depth) without a regex per path."""
        shape = _shape(self._path.pattern)
        cut = self.cut
        if shape is None:
            full = self._path.fullmatch
            return [p for p in paths if full(p, cut) is not None]
        kind, literal = shape
        if kind == ALL:
            return [p for p in paths if len(p) > cut]
        n = len(literal)
        if kind == SUFFIX:
            return [p for p in paths if p.endswith(literal) and len(p) - cut >= n]
        return [p for p in paths if p.endswith(literal) and (len(p) - cut == n or p[-n - 1] == 0x2F)]  # NAME

    def select(self, blob: bytes) -> list[bytes]:
        """The matching entries of a NUL-separated blob (starting and ending with a NUL), in order."""
        if self._shape is not None:
            if self._shape[0] == ALL:
                return blob[1:-1].split(b"\0") if len(blob) > 1 else []
            return [path for _start, path in self._literal_hits(blob)]
        found: list[bytes] = self._scan.findall(blob)
        if not self.start:
            return found
        path, cut = self._path, self.cut
        return [p for p in found if path.fullmatch(p, cut)]

    def positions(self, blob: bytes) -> Iterator[tuple[int, bytes]]:
        """(offset, path) of the matching entries, in order."""
        if self._shape is not None and self._shape[0] != ALL:
            yield from self._literal_hits(blob)
            return
        for found in (_ENTRY if self._shape is not None else self._scan).finditer(blob):
            if not self.start or self._path.fullmatch(found.group(1), self.cut):
                yield found.start(1), found.group(1)

    def _literal_hits(self, blob: bytes) -> Iterator[tuple[int, bytes]]:
        """(offset, path) of the entries that end with the shape's literal (SUFFIX), or whose last segment
        is it (NAME)."""
        assert self._shape is not None
        name = self._shape[0] == NAME
        entry_start = blob.rfind
        for hit in self._scan.finditer(blob):
            at = hit.start()
            if name and blob[at - 1] not in _NAME_BEFORE:
                continue
            start = entry_start(b"\0", 0, at) + 1
            yield start, blob[start : hit.end()]


ALL, SUFFIX, NAME = "all", "suffix", "name"
_ANYWHERE = b"(?:/?|.*/)"  # how globsyntax begins a glob that matches at any depth
_LITERAL = re.compile(rb"(?:\\x[0-9a-f]{2})+")
_ENTRY = re.compile(rb"\x00([^\x00]+)(?=\x00)")
_NAME_BEFORE = frozenset(b"/\0")


def _shape(glob_regex: bytes) -> tuple[str, bytes] | None:
    """The common globs that need no regex over every path: (ALL, b"") for `*` and `**`; (SUFFIX, lit)
    for `*lit` and `**/*lit` — a path matches when it ends with lit; (NAME, lit) for `lit` and `**/lit` —
    when its last segment is lit; lit holds no `/` and no wildcard. None for any other glob."""
    if glob_regex in (_ANYWHERE + b"[^/]*", b".*"):
        return ALL, b""
    if not glob_regex.startswith(_ANYWHERE):
        return None
    rest = glob_regex[len(_ANYWHERE) :]
    kind = NAME
    if rest.startswith(b"[^/]*"):
        kind, rest = SUFFIX, rest[len(b"[^/]*") :]
    if not _LITERAL.fullmatch(rest):
        return None
    literal = bytes.fromhex(rest.replace(b"\\x", b"").decode())
    if not literal or b"/" in literal or b"\0" in literal:
        return None
    return kind, literal

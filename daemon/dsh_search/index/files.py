"""One file as the index sees it: which version it is, what kind, and its text as ripgrep reads it (sans IO).

- `Signature`: what identifies one version of a file (size, mtime, ctime, inode). Equal signatures are
  taken as equal content — the index serves a file from its rows only while the signature indexed is
  the file's current one — except for a version read while it was **racily clean** (`racy`), as git
  calls it: changed so shortly before it was read that another write within the same timestamp tick
  (a second on some filesystems, a jiffy on others) could leave every field equal. Such a version's
  row is recorded `smudged` (git smudges its index entries the same way), so that the next daemon,
  which saw no event in between, reads the file again before it trusts it.
- The kinds: `TEXT`; `BINARY` (holds a NUL: only the text before the first NUL is indexed, because
  ripgrep's walk abandons a file at its first NUL and never reports a match past it); `OPAQUE` (not
  indexed — UTF-16, unreadable, or changing while read — so every search hands it to ripgrep).
- `Content`: the bytes the content index takes a file's trigrams from, piece by piece (a large file
  costs a bounded amount of memory): up to the first NUL, without a UTF-8 byte-order mark.
- `Text`: the bytes decoded as ripgrep searches them, piece by piece, each piece starting with the
  last two characters of the one before, so that no character is lost at a seam (a changed file is
  judged by its text: reading.py).

Rules of this module: bytes and stat values in, values out; no file is opened here (reading.py reads).
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import Iterable, Iterator
from typing import NamedTuple, Protocol

TEXT, BINARY, OPAQUE = 0, 1, 2
CHUNK_BYTES = 1 << 20  # a file is read this much at a time


class _Stat(Protocol):
    @property
    def st_size(self) -> int: ...
    @property
    def st_mtime_ns(self) -> int: ...
    @property
    def st_ctime_ns(self) -> int: ...
    @property
    def st_ino(self) -> int: ...


class Signature(NamedTuple):
    """What identifies one version of a file: equal signatures, same content (as far as stat can tell)."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    @classmethod
    def of(cls, st: _Stat) -> Signature:
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


NO_SIGNATURE = Signature(-1, 0, 0, 0)  # matches no file's

# How long after a change another change may still leave the same timestamps: the coarsest timestamp
# tick of a local filesystem (FAT's two seconds) plus the lag of the kernel's coarse clock, with room.
RACY_NS = 3 * 10**9


def racy(mtime_ns: int, ctime_ns: int, read_ns: int) -> bool:
    """Whether a version with these times, whose reading began at `read_ns` (the wall clock, taken before
    its signature), is racily clean: a later write could leave the same times (any write after `read_ns`
    gets a change time past `read_ns - RACY_NS`)."""
    return max(mtime_ns, ctime_ns) > read_ns - RACY_NS


def smudged(sig: Signature, read_ns: int) -> Signature:
    """The signature to record for a version read from `read_ns` on: itself, or, when it was racily clean,
    one no file has (size -1), so that whoever compares it next reads the file again."""
    return sig._replace(size=-1) if racy(sig.mtime_ns, sig.ctime_ns, read_ns) else sig


def _sniff(chunk: bytes) -> tuple[bool, bytes]:
    """(whether the file is UTF-16 by its byte-order mark, its first chunk without a UTF-8 one)."""
    if chunk.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True, b""
    return False, chunk[3:] if chunk.startswith(b"\xef\xbb\xbf") else chunk


class Content:
    """A file's bytes as the content index reads them, from its chunks. A UTF-16 byte-order mark makes it
    OPAQUE (ripgrep transcodes such a file; the index does not try) and yields nothing; a UTF-8 one is
    dropped, as ripgrep drops it; a NUL ends it and makes it BINARY. `kind` is final once the iteration is
    over. A match ripgrep reports is a run of these bytes, so their trigrams are all a lookup needs."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.kind = TEXT
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        first = True
        for raw in self._chunks:
            chunk = raw
            if first:
                first = False
                wide, chunk = _sniff(chunk)
                if wide:
                    self.kind = OPAQUE
                    return
            nul = chunk.find(b"\0")
            if nul >= 0:
                self.kind = BINARY
                if nul:
                    yield chunk[:nul]
                return
            if chunk:
                yield chunk


class Text:
    """A file's text as ripgrep would search it, decoded piece by piece from its chunks of bytes.

    A UTF-16 byte-order mark makes it OPAQUE (ripgrep transcodes such a file; the index does not try);
    a UTF-8 one is dropped, as ripgrep drops it; a NUL ends it and makes it BINARY. Iterating yields the
    pieces to index (each beginning with the previous one's last two characters); `kind` is final once
    the iteration is over."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.kind = TEXT
        self._chunks = chunks

    def __iter__(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        first = True
        tail = ""
        for raw in self._chunks:
            chunk = raw
            if first:
                first = False
                wide, chunk = _sniff(chunk)
                if wide:
                    self.kind = OPAQUE
                    return
            nul = chunk.find(b"\0")
            if nul >= 0:
                chunk = chunk[:nul]
                self.kind = BINARY
            piece = tail + decoder.decode(chunk, final=nul >= 0)
            if len(piece) > len(tail):
                yield piece
            tail = piece[-2:]
            if nul >= 0:
                return
        rest = decoder.decode(b"", final=True)
        if rest:
            yield tail + rest


def joined(text: Iterable[str], limit: int | None = None) -> str | None:
    """`Text`'s pieces as one string again (each overlaps the text before it by up to two characters);
    None when it is longer than `limit` characters."""
    parts: list[str] = []
    total = 0
    for piece in text:
        new = piece[min(2, total) :]
        parts.append(new)
        total += len(new)
        if limit is not None and total > limit:
            return None
    return "".join(parts)


def shard_of(path: bytes, shards: int) -> int:
    """The shard a file's rows live in: chosen by its path, so every daemon agrees."""
    return zlib.crc32(path) % shards

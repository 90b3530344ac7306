"""Reading the workspace's files for the index: one version opened, read whole, checked still that version.

Both the builder (indexing a file) and a search (judging a file changed since it was indexed) read
files the same way: opened without following a symbolic link and without blocking (a FIFO is not
read), its signature taken from the open file, its bytes read in chunks, and at the end the open file's
signature compared with the first — a file that changed while it was read may hold a mix of two
versions, so it is not trusted.

Rules of this module: reads only; never writes the index, never decides what a result is.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator

from dsh_search.index.files import CHUNK_BYTES, NO_SIGNATURE, OPAQUE, Signature, Text, joined, smudged
from dsh_search.index.query.formula import Query

MAX_JUDGED_CHARS = 16 << 20  # a changed file with more text than this is a candidate unread


class Opened:
    """One file opened to be read for the index: its signature when opened, its bytes chunk by chunk,
    and whether it is still that version once read (else what was read may be a mix of two)."""

    def __init__(self, root: bytes, path: bytes) -> None:
        self.fd = -1
        self.sig: Signature | None = None  # None: not a regular file that could be opened
        self.failed = False
        self.read_ns = time.time_ns()  # before the signature: what a racily clean version is judged by
        try:
            self.fd = os.open(os.path.join(root, path), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
            st = os.fstat(self.fd)
        except OSError:
            return
        if stat.S_ISREG(st.st_mode):
            self.sig = Signature.of(st)

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)

    def chunks(self) -> Iterator[bytes]:
        try:
            while chunk := os.read(self.fd, CHUNK_BYTES):
                yield chunk
        except OSError:
            self.failed = True

    def recorded(self) -> Signature:
        """The signature to record for what was read (`files.smudged`: racily clean versions are not
        trusted by the next daemon)."""
        assert self.sig is not None
        return smudged(self.sig, self.read_ns)

    def intact(self) -> bool:
        """Whether everything was read, of the version opened."""
        if self.failed or self.sig is None:
            return False
        try:
            return Signature.of(os.fstat(self.fd)) == self.sig
        except OSError:
            return False


def signature_of(root: bytes, path: bytes) -> Signature:
    """The current signature of a path (not following a symbolic link); NO_SIGNATURE when it is gone."""
    try:
        return Signature.of(os.stat(os.path.join(root, path), follow_symlinks=False))
    except OSError:
        return NO_SIGNATURE


def judged(root: bytes, paths: list[bytes], query: Query) -> list[tuple[bytes, int]]:
    """Changed files grep reads, as (path, kind) candidates: each read now and judged by the pattern's
    formula. A file that cannot be judged (unreadable, changing as it is read, too large) is a candidate
    that ripgrep finds by walking (OPAQUE), so it reads the file as its walk would."""
    out = []
    for path in paths:
        with Opened(root, path) as opened:
            if opened.sig is None:
                if os.path.isfile(os.path.join(root, path)):
                    out.append((path, OPAQUE))
                continue
            text = Text(opened.chunks())
            whole = joined(text, MAX_JUDGED_CHARS)
            if whole is None or text.kind == OPAQUE or not opened.intact():
                out.append((path, OPAQUE))
            elif query.holds(whole):
                out.append((path, text.kind))
    return out

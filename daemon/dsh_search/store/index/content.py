"""The text of the workspace's grep files as trigrams, on disk: which files can hold a literal.

Storage is SQLite's FTS5 with its trigram tokenizer (case-sensitive, `detail=none`: document lists
only, no positions), contentless — the text itself is not kept, only which documents hold which
trigrams. docs/decisions.md has the measurements behind the choice. The index is split into shards
(one SQLite file each, written by threads of their own: SQLite works without the GIL), a file's shard
chosen by its path.

Each shard has a `files` table: a file's path (workspace-relative bytes), its kind (`TEXT`; `BINARY`:
holds a NUL, so only the text before its first NUL is indexed — ripgrep's walk never reports a match
past it; `OPAQUE`: not indexed, every search reads it), and the stat signature of the version indexed;
and a `docs` table: the documents that hold a file's text (with its kind, so a lookup reads no other
table), one per `CHUNK_BYTES` of it (each starting with the last two characters of the one before, so
no trigram is lost at a seam), which bounds the memory a large file costs to index. A file of one
document — nearly every file — is in the `grams` table, where one MATCH finds the documents that hold
all of a query's trigrams; a file of several is in `big_grams`, looked up trigram by trigram and judged
per file, since a literal can straddle a seam. A search serves a file from here only if that signature
is the file's current one (the workspace's business, store/index/workspace.py); anything else it reads
itself.

A contentless FTS5 table cannot forget a document (SQLite ≥ 3.43's contentless_delete is not assumed),
so a re-indexed file gets new documents and the old ones become garbage that no file points to (its
`docs` rows go).
"""

from __future__ import annotations

import codecs
import os
import sqlite3
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from dsh_search.store.index.regex import And, Lit, Or, Query

SCHEMA_VERSION = 3
TEXT, BINARY, OPAQUE = 0, 1, 2
TRIGRAMS_PER_LITERAL = 12  # a long literal asks for this many of its trigrams, spread over it


class Signature(NamedTuple):
    """What identifies one version of a file: equal signatures, same content (as far as stat can tell)."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    @classmethod
    def of(cls, st: os.stat_result) -> Signature:
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


CHUNK_BYTES = 1 << 20  # a document holds at most this much of a file's text


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
                if chunk.startswith((b"\xff\xfe", b"\xfe\xff")):
                    self.kind = OPAQUE
                    return
                if chunk.startswith(b"\xef\xbb\xbf"):
                    chunk = chunk[3:]
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


def extract(data: bytes) -> tuple[int, str]:
    """A whole file's kind and indexable text (for tests and small files): see `Text`."""
    text = Text([data])
    whole = joined(text)
    assert whole is not None
    return text.kind, whole


def shard_of(path: bytes, shards: int) -> int:
    return zlib.crc32(path) % shards


# --- queries -------------------------------------------------------------------------------------------------


def trigrams(literal: str) -> list[str]:
    """Up to TRIGRAMS_PER_LITERAL distinct trigrams of `literal`, spread along it (any subset is sound)."""
    grams = list(dict.fromkeys(literal[i : i + 3] for i in range(len(literal) - 2)))
    if len(grams) <= TRIGRAMS_PER_LITERAL:
        return grams
    step = (len(grams) - 1) / (TRIGRAMS_PER_LITERAL - 1)
    return list(dict.fromkeys(grams[round(i * step)] for i in range(TRIGRAMS_PER_LITERAL)))


def _quoted(gram: str) -> str:
    return '"' + gram.replace('"', '""') + '"'


def match_expression(query: Query) -> str | None:
    """An FTS5 MATCH expression true of every file `query` is true of; None when it constrains nothing
    (literals shorter than three characters constrain nothing). NONE is the caller's: nothing matches."""
    return plan(query, None).expression


# Which trigrams a file must hold, as a tree: a trigram, or ("and" | "or", the subtrees).
Need = str | tuple[str, tuple["Need", ...]]


class Plan(NamedTuple):
    expression: str | None  # None: no constraint
    estimate: int  # at most this many documents can satisfy it (by document frequencies; -1: unknown)
    need: Need | None = None  # the same constraint as a tree (None: no constraint)


RAREST_PER_LITERAL = 3  # with document frequencies known, a literal asks for its rarest trigrams only


def plan(query: Query, frequency: Callable[[str], int] | None) -> Plan:
    """The MATCH expression for `query` and an upper bound on the documents it can match. With
    `frequency` (a trigram's document count), each literal asks only for its rarest trigrams: FTS5
    intersects document lists, so a rare one decides and a common one only costs (sound: fewer ANDed
    trigrams match more files, never fewer)."""
    if isinstance(query, Lit):
        grams = trigrams(query.text)
        if not grams:
            return Plan(None, -1)
        if frequency is None:
            return Plan(" AND ".join(_quoted(g) for g in grams), -1, ("and", tuple(grams)))
        counted = sorted((frequency(g), g) for g in grams)[:RAREST_PER_LITERAL]
        chosen = tuple(g for _, g in counted)
        return Plan(" AND ".join(_quoted(g) for g in chosen), counted[0][0], ("and", chosen))
    if isinstance(query, And):
        parts = [p for p in (plan(q, frequency) for q in query.args) if p.expression is not None]
        if not parts:
            return Plan(None, -1)
        known = [p.estimate for p in parts if p.estimate >= 0]
        return Plan(
            " AND ".join(f"({p.expression})" for p in parts),
            min(known) if known else -1,
            ("and", tuple(p.need for p in parts if p.need is not None)),
        )
    if isinstance(query, Or):
        alternatives: list[Plan] = []
        for q in query.args:
            part = plan(q, frequency)
            if part.expression is None:  # one alternative unconstrained: the whole OR is
                return Plan(None, -1)
            alternatives.append(part)
        if not alternatives:
            return Plan(None, -1)
        unknown = any(p.estimate < 0 for p in alternatives)
        return Plan(
            " OR ".join(f"({p.expression})" for p in alternatives),
            -1 if unknown else sum(p.estimate for p in alternatives),
            ("or", tuple(p.need for p in alternatives if p.need is not None)),
        )
    return Plan(None, -1)  # ANY, or anything not understood: no constraint


def _grams_of(need: Need) -> set[str]:
    if isinstance(need, str):
        return {need}
    return set().union(*(_grams_of(part) for part in need[1]))


def _holders(need: Need, holding: dict[str, set[bytes]]) -> set[bytes]:
    """The files that satisfy `need`, given which files hold each trigram."""
    if isinstance(need, str):
        return holding[need]
    sets = [_holders(part, holding) for part in need[1]]
    if need[0] == "and":
        return set.intersection(*sets) if sets else set()
    return set().union(*sets)


# --- a shard ---------------------------------------------------------------------------------------------------


class Shard:
    def __init__(self, path: str, *, writable: bool) -> None:
        self.path = path
        self.writable = writable
        uri = f"file:{path}?mode={'rwc' if writable else 'ro'}"
        self.db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()  # one statement at a time on this connection
        self.db.execute("PRAGMA busy_timeout = 5000")
        if writable:
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.executescript(
                """
                CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value);
                CREATE TABLE IF NOT EXISTS files (
                    path BLOB PRIMARY KEY, kind INTEGER,
                    size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS docs (doc INTEGER PRIMARY KEY, path BLOB NOT NULL, kind INTEGER NOT NULL);
                CREATE INDEX IF NOT EXISTS docs_path ON docs (path);
                CREATE INDEX IF NOT EXISTS files_opaque ON files (path) WHERE kind = 2;
                CREATE VIRTUAL TABLE IF NOT EXISTS grams USING fts5 (
                    body, tokenize = 'trigram case_sensitive 1', detail = none, content = ''
                );
                CREATE VIRTUAL TABLE IF NOT EXISTS grams_vocab USING fts5vocab (grams, 'row');
                CREATE VIRTUAL TABLE IF NOT EXISTS big_grams USING fts5 (
                    body, tokenize = 'trigram case_sensitive 1', detail = none, content = ''
                );
                """
            )
            self.db.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema', ?), ('docs', 0), ('garbage', 0)", (SCHEMA_VERSION,)
            )
        schema = self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if schema is None or schema[0] != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"{path}: not a content index of schema {SCHEMA_VERSION}")
        self.identity = _identity(path)  # the file opened: a shard replaced or deleted is no longer intact
        # Searches read through a connection of their own: in WAL mode they never wait for the writer.
        self.reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
        self.reader.execute("PRAGMA busy_timeout = 5000")
        self.read_lock = threading.Lock()

    def intact(self) -> bool:
        """Whether the file this shard opened is still there under its name (not deleted or replaced)."""
        return _identity(self.path) == self.identity

    def close(self) -> None:
        with self.read_lock:
            self.reader.close()
        with self.lock:
            self.db.close()

    # -- reading -----------------------------------------------------------------------------------------

    def signatures(self) -> Iterator[tuple[bytes, Signature]]:
        """(path, signature) of every file, by path, read a page at a time as they are asked for."""
        after = b""
        while True:
            with self.read_lock:
                page = self.reader.execute(_PAGE_SQL, (after, PAGE_ROWS)).fetchall()
            for path, *sig in page:
                yield path, Signature(*sig)
            if len(page) < PAGE_ROWS:
                return
            after = page[-1][0]

    def signature(self, path: bytes) -> tuple[Signature, int] | None:
        with self.read_lock:
            row = self.reader.execute(
                "SELECT size, mtime_ns, ctime_ns, ino, kind FROM files WHERE path = ?", (path,)
            ).fetchone()
        return None if row is None else (Signature(*row[:4]), row[4])

    def doc_frequency(self, gram: str) -> int:
        with self.read_lock:
            row = self.reader.execute("SELECT doc FROM grams_vocab WHERE term = ?", (gram,)).fetchone()
        return 0 if row is None else int(row[0])

    def live_count(self, expression: str) -> int:
        """How many current documents (not old versions) of single-document files satisfy `expression`."""
        with self.read_lock:
            row = self.reader.execute(
                "SELECT count(*) FROM grams JOIN docs d ON d.doc = grams.rowid WHERE grams MATCH ?", (expression,)
            ).fetchone()
        return int(row[0])

    def documents(self) -> int:
        with self.lock:
            row = self.db.execute("SELECT value FROM meta WHERE key = 'docs'").fetchone()
        return int(row[0])

    def garbage(self) -> int:
        with self.lock:
            row = self.db.execute("SELECT value FROM meta WHERE key = 'garbage'").fetchone()
        return int(row[0])

    def count(self, low: bytes, high: bytes | None) -> int:
        """Files with paths in [low, high) (high None: no upper bound)."""
        sql, args = _range("SELECT count(*) FROM files WHERE", low, high)
        with self.read_lock:
            return int(self.reader.execute(sql, args).fetchone()[0])

    def paths(self, low: bytes, high: bytes | None) -> Iterator[bytes]:
        """The paths in [low, high), in order, read as they are asked for."""
        after = low
        while True:
            sql, args = _range("SELECT path FROM files WHERE", after, high)
            with self.read_lock:
                rows = self.reader.execute(sql + " AND path != ? ORDER BY path LIMIT 512", (*args, after)).fetchall()
            if not rows:
                return
            for (path,) in rows:
                yield path
            after = rows[-1][0]

    def present(self, paths: list[bytes]) -> set[bytes]:
        """Which of `paths` are files grep reads (have a row here)."""
        found: set[bytes] = set()
        with self.read_lock:
            for start in range(0, len(paths), 500):
                chunk = paths[start : start + 500]
                marks = ",".join("?" * len(chunk))  # placeholders only: the values are bound
                query = "SELECT path FROM files WHERE path IN (" + marks + ")"  # noqa: S608 (placeholders)
                found.update(row[0] for row in self.reader.execute(query, chunk))
        return found

    def candidates(self, planned: Plan, low: bytes, high: bytes | None) -> list[tuple[bytes, int]]:
        """(path, kind) of the files in [low, high) whose indexed text satisfies the plan, and of every
        OPAQUE file there. A file of one document is looked up by the MATCH expression; a file of several
        (`big_grams`) by which of its documents hold each trigram, the plan's tree judged per file: its
        literals may straddle documents."""
        assert planned.expression is not None and planned.need is not None
        sql, args = _range(
            "SELECT d.path, d.kind FROM grams JOIN docs d ON d.doc = grams.rowid WHERE grams MATCH ? AND",
            low,
            high,
            "d.path",
        )
        big_sql, _ = _range(
            "SELECT DISTINCT d.path, d.kind FROM big_grams JOIN docs d ON d.doc = big_grams.rowid "
            "WHERE big_grams MATCH ? AND",
            low,
            high,
            "d.path",
        )
        opaque_sql, opaque_args = _range("SELECT path, kind FROM files WHERE kind = 2 AND", low, high)
        with self.read_lock:
            found = self.reader.execute(sql, (planned.expression, *args)).fetchall()
            found += self.reader.execute(opaque_sql, opaque_args).fetchall()
            if self.reader.execute("SELECT EXISTS (SELECT 1 FROM big_grams)").fetchone()[0]:
                kinds: dict[bytes, int] = {}
                holding: dict[str, set[bytes]] = {}
                for gram in _grams_of(planned.need):
                    rows = self.reader.execute(big_sql, (_quoted(gram), *args)).fetchall()
                    kinds.update(rows)
                    holding[gram] = {path for path, _kind in rows}
                found += [(path, kinds[path]) for path in _holders(planned.need, holding)]
        return found

    # -- writing (one writer thread) ------------------------------------------------------------------------

    def batch(self, commit_bytes: int | None = None) -> Batch:
        """A transaction of writes (`with shard.batch() as batch: batch.put(...)`); with `commit_bytes`,
        committed (and a new one begun) whenever that much text has been put since the last commit."""
        return Batch(self, commit_bytes)

    def remove_many(self, paths: Iterable[bytes]) -> None:
        with self.batch() as batch:
            for path in paths:
                batch.remove(path)


PAGE_ROWS = 1000
_PAGE_SQL = "SELECT path, size, mtime_ns, ctime_ns, ino FROM files WHERE path > ? ORDER BY path LIMIT ?"


class Batch:
    """Writes to one shard in one transaction, by its writer thread."""

    __slots__ = ("_commit_bytes", "_db", "_docs", "_garbage", "_pending", "_shard")

    def __init__(self, shard: Shard, commit_bytes: int | None) -> None:
        self._shard = shard
        self._db = shard.db
        self._docs = 0
        self._garbage = 0
        self._commit_bytes = commit_bytes
        self._pending = 0  # text put since the last commit

    def __enter__(self) -> Batch:
        self._shard.lock.acquire()
        try:
            self._db.execute("BEGIN")
            self._docs = int(self._db.execute("SELECT value FROM meta WHERE key = 'docs'").fetchone()[0])
        except BaseException:
            self._shard.lock.release()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: object) -> None:
        try:
            if kind is None:
                self._commit()
            else:
                self._db.execute("ROLLBACK")
        finally:
            self._shard.lock.release()

    def _commit(self) -> None:
        self._db.execute("UPDATE meta SET value = ? WHERE key = 'docs'", (self._docs,))
        self._db.execute("UPDATE meta SET value = value + ? WHERE key = 'garbage'", (self._garbage,))
        self._db.execute("COMMIT")
        self._garbage = self._pending = 0

    def _forget_docs(self, path: bytes) -> None:
        gone = self._db.execute("DELETE FROM docs WHERE path = ?", (path,)).rowcount
        self._garbage += max(0, gone)

    def put(self, path: bytes, sig: Signature, text: Text) -> int:
        """Index this version of this file (replacing any indexed before); returns its text's length. Its
        first piece waits: a file of one piece is one document of `grams`, a file of more goes to
        `big_grams`, where a lookup judges it per file (see `candidates`)."""
        self._forget_docs(path)
        size = 0
        first: str | None = None
        big = False
        for piece in text:
            size += len(piece)
            if first is None and not big:
                first = piece
                continue
            if first is not None:
                self._document(path, first, "big_grams", TEXT)
                first, big = None, True
            self._document(path, piece, "big_grams", TEXT)
        if first is not None:
            self._document(path, first, "grams", text.kind)
        if text.kind == OPAQUE:
            self._forget_docs(path)
        elif big and text.kind != TEXT:  # a NUL in a later piece: the file's documents say so too
            self._db.execute("UPDATE docs SET kind = ? WHERE path = ?", (text.kind, path))
        self._row(path, sig, text.kind)
        self._pending += size
        return size

    def _document(self, path: bytes, body: str, table: str, kind: int) -> None:
        self._docs += 1
        self._db.execute(f"INSERT INTO {table} (rowid, body) VALUES (?, ?)", (self._docs, body))  # noqa: S608 (two names of ours)
        self._db.execute("INSERT INTO docs VALUES (?, ?, ?)", (self._docs, path, kind))

    def checkpoint(self) -> None:
        """Commit, and go on in a new transaction, if `commit_bytes` of text were put since the last
        commit (FTS5 holds a transaction's terms in memory until it commits: a build commits as it goes).
        The caller calls it between files, never while a file's rows are half written."""
        if self._commit_bytes is not None and self._pending >= self._commit_bytes:
            self._commit()
            self._db.execute("BEGIN")

    def indexed(self) -> Indexed:
        """The files indexed so far, in path order, as this batch sees them (see `Indexed`)."""
        return Indexed(self._db)

    def opaque(self, path: bytes, sig: Signature) -> None:
        """This file is not indexed: every search reads it (it changed while it was read, say)."""
        self._forget_docs(path)
        self._row(path, sig, OPAQUE)

    def remove(self, path: bytes) -> None:
        self._forget_docs(path)
        self._db.execute("DELETE FROM files WHERE path = ?", (path,))

    def _row(self, path: bytes, sig: Signature, kind: int) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
            (path, kind, sig.size, sig.mtime_ns, sig.ctime_ns, sig.ino),
        )


class Indexed:
    """A shard's indexed files in path order, read a page at a time through the connection that writes
    them, for a merge with a sorted list of paths: `before(p)` yields (and passes) the files before p,
    `take(p)` passes p and returns its signature if it is indexed. The writer may write any path once it
    was the argument of `take`: a page is read only past the last row of the one before, and every row
    of the next page is past the paths already taken, so no write is read back as an indexed file."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._rows: deque[tuple[bytes, int, int, int, int]] = deque()
        self._after = b""
        self._done = False

    def _fill(self) -> None:
        if self._rows or self._done:
            return
        page = self._db.execute(_PAGE_SQL, (self._after, PAGE_ROWS)).fetchall()
        self._rows.extend(page)
        self._done = len(page) < PAGE_ROWS
        if page:
            self._after = page[-1][0]

    def before(self, path: bytes | None) -> Iterator[bytes]:
        """The indexed paths before `path` (None: all that are left), passed."""
        while True:
            self._fill()
            if not self._rows or (path is not None and self._rows[0][0] >= path):
                return
            yield self._rows.popleft()[0]

    def take(self, path: bytes) -> Signature | None:
        for _ in self.before(path):
            raise AssertionError("take() follows before() of the same path")
        if self._rows and self._rows[0][0] == path:
            return Signature(*self._rows.popleft()[1:])
        return None


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _range(head: str, low: bytes, high: bytes | None, column: str = "path") -> tuple[str, tuple[bytes, ...]]:
    if high is None:
        return f"{head} {column} >= ?", (low,)
    return f"{head} {column} >= ? AND {column} < ?", (low, high)


def prefix_range(prefix: bytes) -> tuple[bytes, bytes | None]:
    """[low, high) of the paths that start with `prefix` (byte order)."""
    if not prefix:
        return b"", None
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return prefix, None
    return prefix, stripped[:-1] + bytes([stripped[-1] + 1])

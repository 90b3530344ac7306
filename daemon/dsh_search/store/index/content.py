"""The text of the workspace's grep files as trigrams, on disk: which files can hold a literal.

Storage is SQLite's FTS5 with its trigram tokenizer (case-sensitive, `detail=none`: document lists
only, no positions), contentless — the text itself is not kept, only which documents hold which
trigrams. docs/decisions.md has the measurements behind the choice. The index is split into shards
(one SQLite file each, written by threads of their own: SQLite works without the GIL), a file's shard
chosen by its path.

Each shard has a `files` table: a file's path (workspace-relative bytes), the document that holds its
text, its kind (`TEXT`; `BINARY`: holds a NUL, so only the text before its first NUL is indexed —
ripgrep's walk never reports a match past it; `OPAQUE`: not indexed, every search reads it), and the
stat signature of the version indexed. A search serves a file from here only if that signature is the
file's current one (the workspace's business, store/index/workspace.py); anything else it reads itself.

A contentless FTS5 table cannot forget a document (SQLite ≥ 3.43's contentless_delete is not assumed),
so a re-indexed file gets a new document and the old one becomes garbage that no file points to; a
shard whose garbage passes a quarter of its documents is rebuilt.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from dsh_search.store.index.regex import And, Lit, Or, Query

SCHEMA_VERSION = 1
TEXT, BINARY, OPAQUE = 0, 1, 2
MAX_INDEXED_BYTES = 16 << 20  # a file larger than this is OPAQUE: every search reads it
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


class Extract(NamedTuple):
    kind: int
    text: str | None  # what the trigrams are taken from (None for OPAQUE)


def extract(data: bytes) -> Extract:
    """A file's indexable text, as ripgrep would search it (see the module's header)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with a BOM: ripgrep transcodes it
        return Extract(OPAQUE, None)
    if data.startswith(b"\xef\xbb\xbf"):  # ripgrep drops a UTF-8 BOM
        data = data[3:]
    nul = data.find(b"\0")
    if nul >= 0:
        return Extract(BINARY, data[:nul].decode("utf-8", "replace"))
    return Extract(TEXT, data.decode("utf-8", "replace"))


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


class Plan(NamedTuple):
    expression: str | None  # None: no constraint
    estimate: int  # at most this many documents can satisfy it (by document frequencies; -1: unknown)


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
            return Plan(" AND ".join(_quoted(g) for g in grams), -1)
        counted = sorted((frequency(g), g) for g in grams)[:RAREST_PER_LITERAL]
        return Plan(" AND ".join(_quoted(g) for _, g in counted), counted[0][0])
    if isinstance(query, And):
        parts = [p for p in (plan(q, frequency) for q in query.args) if p.expression is not None]
        if not parts:
            return Plan(None, -1)
        known = [p.estimate for p in parts if p.estimate >= 0]
        return Plan(" AND ".join(f"({p.expression})" for p in parts), min(known) if known else -1)
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
        )
    return Plan(None, -1)  # ANY, or anything not understood: no constraint


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
                    path BLOB PRIMARY KEY, doc INTEGER, kind INTEGER,
                    size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER
                ) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS files_doc ON files (doc);
                CREATE VIRTUAL TABLE IF NOT EXISTS grams USING fts5 (
                    body, tokenize = 'trigram case_sensitive 1', detail = none, content = ''
                );
                CREATE VIRTUAL TABLE IF NOT EXISTS grams_vocab USING fts5vocab (grams, 'row');
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

    def signatures(self) -> Iterator[tuple[bytes, Signature, int]]:
        """(path, signature, kind) of every file, by path."""
        with self.lock:
            rows = self.db.execute(
                "SELECT path, size, mtime_ns, ctime_ns, ino, kind FROM files ORDER BY path"
            ).fetchall()
        for path, size, mtime, ctime, ino, kind in rows:
            yield path, Signature(size, mtime, ctime, ino), kind

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

    def candidates(self, expression: str, low: bytes, high: bytes | None) -> list[tuple[bytes, int]]:
        """(path, kind) of the files in [low, high) whose indexed text satisfies `expression`, and of every
        OPAQUE file there."""
        sql, args = _range(
            "SELECT f.path, f.kind FROM grams JOIN files f ON f.doc = grams.rowid WHERE grams MATCH ? AND",
            low,
            high,
            "f.path",
        )
        opaque_sql, opaque_args = _range("SELECT path, kind FROM files WHERE kind = 2 AND", low, high)
        with self.read_lock:
            found = self.reader.execute(sql, (expression, *args)).fetchall()
            found += self.reader.execute(opaque_sql, opaque_args).fetchall()
        return found

    # -- writing (one writer thread) ------------------------------------------------------------------------

    def put_many(self, items: Iterable[tuple[bytes, Signature, Extract]]) -> int:
        """Index these versions of these files (each replacing any version indexed before), in one
        transaction; returns how many."""
        done = 0
        with self.lock:
            db = self.db
            db.execute("BEGIN")
            try:
                docs = int(db.execute("SELECT value FROM meta WHERE key = 'docs'").fetchone()[0])
                garbage = 0
                for path, sig, extracted in items:
                    old = db.execute("SELECT doc FROM files WHERE path = ?", (path,)).fetchone()
                    if old is not None and old[0] is not None:
                        garbage += 1
                    doc = None
                    if extracted.text is not None:
                        docs += 1
                        doc = docs
                        db.execute("INSERT INTO grams (rowid, body) VALUES (?, ?)", (doc, extracted.text))
                    db.execute(
                        "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (path, doc, extracted.kind, sig.size, sig.mtime_ns, sig.ctime_ns, sig.ino),
                    )
                    done += 1
                db.execute("UPDATE meta SET value = ? WHERE key = 'docs'", (docs,))
                db.execute("UPDATE meta SET value = value + ? WHERE key = 'garbage'", (garbage,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return done

    def remove_many(self, paths: Iterable[bytes]) -> None:
        with self.lock:
            db = self.db
            db.execute("BEGIN")
            try:
                garbage = 0
                for path in paths:
                    old = db.execute("SELECT doc FROM files WHERE path = ?", (path,)).fetchone()
                    if old is None:
                        continue
                    garbage += old[0] is not None
                    db.execute("DELETE FROM files WHERE path = ?", (path,))
                db.execute("UPDATE meta SET value = value + ? WHERE key = 'garbage'", (garbage,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise


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

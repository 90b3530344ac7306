"""The content index on disk: shards of SQLite FTS5 trigram postings. The only module that uses SQLite.

Which files can hold a literal, as codesearch's `read.go`/`write.go` keep it: the format is stated
here, and nothing else in the daemon touches it.

**Format.** A shard is one SQLite file (`content-<i>.sqlite`, in a set directory: sets.py); a file's
shard is chosen by its path (files.shard_of). Its tables:

    meta       (key, value): 'schema' = SCHEMA_VERSION; 'docs' = the last document number; 'garbage' =
               documents no file points to any more
    files      (path BLOB PRIMARY KEY, kind, size, mtime_ns, ctime_ns, ino): every file grep reads, its
               kind (files.TEXT, BINARY, OPAQUE) and the signature of the version indexed
    docs       (doc INTEGER PRIMARY KEY, path, kind): the documents holding a file's text, one per
               files.CHUNK_BYTES of it, each starting with the last two characters of the one before
    grams      FTS5 (trigram tokenizer, case-sensitive, detail=none, contentless): the documents of files
               of one document — nearly every file — where one MATCH finds the documents holding all
               of a need's trigrams
    big_grams  the same for files of several documents, looked up trigram by trigram and judged per
               file (a literal may straddle two documents)
    grams_vocab  fts5vocab over `grams`: a trigram's document count, for planning

No positions and no text are kept: only which documents hold which trigrams. docs/decisions.md has
the measurements behind FTS5. A contentless FTS5 table cannot forget a document (SQLite ≥ 3.43's
contentless_delete is not assumed), so a re-indexed file gets new documents and the old ones become
garbage that no `docs` row points to; once most documents are garbage, the workspace builds a new set.

**Versions** (`SCHEMA_VERSION`, in `meta`): a set of another version is never read, only set aside and
built again (sets.py), so a bump costs one build and nothing else.

    1  one document per file, its text whole; files past a size cap left out.
    2  files in documents of files.CHUNK_BYTES, each starting with the last two characters of the one
       before (bounded memory, no size cap); a file of several documents judged per file (`big_grams`),
       so a literal across a seam is never missed; a file that cannot be read cleanly is OPAQUE (every
       search hands it to ripgrep) instead of silently absent.
    3  each document keeps its file's kind (no join with `files` on a lookup); OPAQUE files found through
       a partial index. The Linux tree's `[A-Z]+_SUSPEND` lookup: 13 -> 6 ms.

**Access.** One writer thread per shard writes through `Shard.db` in `Batch`es (transactions); searches
read through a connection of their own (`Shard.reader`: WAL, so reads never wait for the writer).
`Indexed` walks a shard's files in path order through the writer's connection, for merging with a
sorted listing. A need (query/plan.py) is spelled as an FTS5 MATCH expression here and only here.

Rules of this module: no knowledge of the workspace, of events or of ripgrep; whether a row is current
is the caller's question (it compares signatures).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterator

from dsh_search.index.files import OPAQUE, TEXT, Signature, Text
from dsh_search.index.query.plan import Need, grams_of, holders

SCHEMA_VERSION = 3

# The files of a shard as this daemon left them: (st_dev, st_ino, size, mtime_ns) of the database and of its
# write-ahead log (None: no such file). A write by another process changes the mtime (ctime would be
# stronger, but SQLite itself changes it without writing: running as root, it chowns files it opens).
FileState = tuple[int, int, int, int] | None
IDLE, WRITING, COMMITTING = 0, 1, 2


def file_state(path: str) -> FileState:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _connect(path: str, mode: str) -> sqlite3.Connection:
    """A connection that maps nothing another process could truncate under it: the `unix-excl` VFS keeps
    WAL's shared-memory index in this process's heap (no `-shm` file; connections of this process share
    it, and the file lock keeps other processes out), and `mmap_size = 0` reads the database with read()."""
    uri = f"file:{urllib.parse.quote(path)}?mode={mode}&vfs=unix-excl"
    db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA mmap_size = 0")
    db.execute("PRAGMA busy_timeout = 5000")
    return db


class Shard:
    def __init__(self, path: str, *, writable: bool, on_write: Callable[[Shard], None] | None = None) -> None:
        self.path = path
        self.writable = writable
        self._on_write = on_write  # told after each commit, on the writing thread (sets.py records the state)
        self.db = _connect(path, "rwc" if writable else "ro")
        self.lock = threading.Lock()  # one statement at a time on this connection
        self._state_lock = threading.Lock()
        self._phase = IDLE
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
        self.reader = _connect(path, "ro")
        self.read_lock = threading.Lock()
        self.expected = self.state()  # what the files are as this daemon left them

    def state(self) -> tuple[FileState, FileState]:
        """The database's and the write-ahead log's file state now."""
        return file_state(self.path), file_state(self.path + "-wal")

    def intact(self) -> bool:
        """Whether the shard's files are as this daemon left them: not deleted, replaced, truncated or
        written by anyone else. While this daemon writes, the log is its own to change (and, while it
        commits, the database too): then only that the database is still the file opened is checked."""
        with self._state_lock:
            phase, (db, wal) = self._phase, self.expected
        now_db, now_wal = self.state()
        if phase == COMMITTING or now_db is None or db is None:
            return _identity(self.path) == self.identity
        if phase == WRITING:
            return now_db == db
        return now_db == db and now_wal == wal

    def _phase_to(self, phase: int) -> None:
        with self._state_lock:
            self._phase = phase
            if phase != COMMITTING:
                self.expected = self.state()
        if phase != COMMITTING and self._on_write is not None:
            self._on_write(self)

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

    def candidates(
        self, need: Need, low: bytes, high: bytes | None, limit: int | None = None
    ) -> tuple[list[tuple[bytes, int]], bool]:
        """(path, kind) of the files in [low, high) whose indexed text satisfies `need`, and of every
        OPAQUE file there; and whether the lookup stopped at `limit` files of one document (then the
        list is not complete). A file of one document is looked up by one MATCH expression; a file of
        several (`big_grams`) by which of its documents hold each trigram, the need judged per file: its
        literals may straddle documents."""
        sql, args = _range(
            "SELECT d.path, d.kind FROM grams JOIN docs d ON d.doc = grams.rowid WHERE grams MATCH ? AND",
            low,
            high,
            "d.path",
        )
        params: tuple[object, ...] = (match(need), *args)
        if limit is not None:
            sql += " LIMIT ?"
            params = (*params, limit)
        big_sql, big_args = _range(
            "SELECT DISTINCT d.path, d.kind FROM big_grams JOIN docs d ON d.doc = big_grams.rowid "
            "WHERE big_grams MATCH ? AND",
            low,
            high,
            "d.path",
        )
        opaque_sql, opaque_args = _range("SELECT path, kind FROM files WHERE kind = 2 AND", low, high)
        with self.read_lock:
            found = self.reader.execute(sql, params).fetchall()
            if limit is not None and len(found) >= limit:
                return found, True
            found += self.reader.execute(opaque_sql, opaque_args).fetchall()
            if self.reader.execute("SELECT EXISTS (SELECT 1 FROM big_grams)").fetchone()[0]:
                kinds: dict[bytes, int] = {}
                holding: dict[str, set[bytes]] = {}
                for gram in grams_of(need):
                    rows = self.reader.execute(big_sql, (_quoted(gram), *big_args)).fetchall()
                    kinds.update(rows)
                    holding[gram] = {path for path, _kind in rows}
                found += [(path, kinds[path]) for path in holders(need, holding)]
        return found, False

    # -- writing (one writer thread) ------------------------------------------------------------------------

    def batch(self, commit_bytes: int | None = None) -> Batch:
        """A transaction of writes (`with shard.batch() as batch: batch.put(...)`); with `commit_bytes`,
        committed (and a new one begun) whenever that much text has been put since the last commit."""
        return Batch(self, commit_bytes)


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
            if not self._shard.intact():
                raise Tampered(f"{self._shard.path} was changed by another process")
            self._shard._phase_to(WRITING)
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
            try:
                self._shard._phase_to(IDLE)
            finally:
                self._shard.lock.release()

    def _commit(self) -> None:
        self._db.execute("UPDATE meta SET value = ? WHERE key = 'docs'", (self._docs,))
        self._db.execute("UPDATE meta SET value = value + ? WHERE key = 'garbage'", (self._garbage,))
        self._shard._phase_to(COMMITTING)  # a commit may checkpoint: the database file changes too
        self._db.execute("COMMIT")
        self._shard._phase_to(WRITING)
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


class Tampered(sqlite3.DatabaseError):
    """A shard's files were changed by another process: what is read from them can no longer be trusted."""


def held_elsewhere(exc: BaseException) -> bool:
    """Whether opening a shard failed because another process holds it (SQLite's lock)."""
    return isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED")


def storage_fault(exc: BaseException) -> bool:
    """Whether an error came from the shards' storage (corrupt, truncated, full, read-only, tampered with):
    then the set is not used again."""
    return isinstance(exc, sqlite3.Error)


def match(need: Need) -> str:
    """A need as an FTS5 MATCH expression: trigrams quoted, "and" and "or" as AND and OR."""
    if isinstance(need, str):
        return _quoted(need)
    joiner = " AND " if need[0] == "and" else " OR "
    return joiner.join(_quoted(part) if isinstance(part, str) else f"({match(part)})" for part in need[1])


def _quoted(gram: str) -> str:
    return '"' + gram.replace('"', '""') + '"'


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

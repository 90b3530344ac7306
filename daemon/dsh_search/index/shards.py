"""The content index on disk: per shard, a SQLite file of the files and immutable segment files of byte-trigram
postings. The only module that uses SQLite, and the only one that reads or writes the segments.

Which files can hold a literal, as codesearch's `read.go`/`write.go` keep it: the format is stated here,
and nothing else in the daemon touches it.

**Format** (schema 4). A shard (a file's shard is chosen by its path: files.shard_of) is one SQLite file
`content-<i>.sqlite` in a set directory (sets.py) and its segments `content-<i>.<n>.grams` beside it:

    meta      (key, value): 'schema' = SCHEMA_VERSION; 'docs' = the last document number given out
    files     (path BLOB PRIMARY KEY, kind, size, mtime_ns, ctime_ns, ino, doc): every file grep reads,
              its kind (files.TEXT, BINARY, OPAQUE), the signature of the version indexed and the
              document that holds its trigrams (NULL for OPAQUE)
    segments  (seg PRIMARY KEY, lo, hi, docs, bytes, crc): the segment files that make the index, each
              with its documents' range and count, its size and the CRC-32 of its bytes after the header
    dead      (doc PRIMARY KEY): documents still in a segment that no file points to any more (an old
              version of a file, a file removed): left out of every answer, dropped when segments merge

A segment file (little-endian) is a 64-byte header (`SEGMENT_MAGIC`, version, trigram count, document
count, first and last document, postings bytes, paths bytes), then the postings (grams.py: per trigram,
its documents as delta varints), then the directory (trigrams u32, counts u32, list lengths u64), then
its documents (u32, increasing), their kinds (u8), the ends of their paths (u64) and the paths. One
document per file, whatever its size; a trigram is three bytes of the file's content (files.Content).

**Versions** (`SCHEMA_VERSION`, in `meta`): a set of another version is never read, only set aside and
built again (sets.py), so a bump costs one build and nothing else.

    1  SQLite FTS5 trigram tables: one document per file, its text whole; files past a size cap left out.
    2  files in documents of files.CHUNK_BYTES, each starting with the last two characters of the one
       before (bounded memory, no size cap); a file of several documents judged per file (`big_grams`),
       so a literal across a seam is never missed; a file that cannot be read cleanly is OPAQUE (every
       search hands it to ripgrep) instead of silently absent.
    3  each document keeps its file's kind (no join with `files` on a lookup); OPAQUE files found through
       a partial index. The Linux tree's `[A-Z]+_SUSPEND` lookup: 13 -> 6 ms.
    4  (this) byte trigrams in segment files built by grams.py's native builder, SQLite for the files only:
       FTS5's tokenizer built the Linux tree at ~11 MB of text per CPU-second (73–88 s, 112–134 CPU-s)
       and lost the trigrams after a NUL; this builds it in ~12 CPU-s (docs/performance.md).

**Trust.** sets.py records how the SQLite file was left; the SQLite file records each segment's size and
CRC, checked when the shard opens (a segment damaged, truncated or foreign is `Corrupt`: the set is set
aside). While open, a segment's file state (device, inode, size, mtime) must stay as this daemon left it
(`intact`), and a lookup checks it again after reading postings, so a write by another process during a
lookup is never taken for an answer. A segment is read with `pread` (never mapped: a file truncated
under a mapping would kill the process), and every list is decoded with its bounds checked: damaged
bytes are an error, never a read outside a buffer.

**Access.** One writer thread per shard writes through `Shard.db` in `Batch`es (transactions): documents go
into a builder in memory; a commit writes them as a new segment (temporary name, then renamed) and
records it; small segments are merged so that each is at least twice the size of all newer ones. Searches
read through a connection of their own (`Shard.reader`: WAL, so reads never wait for the writer) and the
segments committed so far. `Indexed` walks a shard's files in path order through the writer's
connection, for merging with a sorted listing. A need (query/plan.py) is looked up here and only here.

Rules of this module: no knowledge of the workspace, of events or of ripgrep; whether a row is current
is the caller's question (it compares signatures).
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import os
import sqlite3
import struct
import sys
import threading
import urllib.parse
import zlib
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from dsh_search.index import grams
from dsh_search.index.files import OPAQUE, Content, Signature
from dsh_search.index.query.plan import Need

SCHEMA_VERSION = 4
SEGMENT_MAGIC = b"DSHGRAMS"
SEGMENT_VERSION = 1
_HEADER = struct.Struct("<8sIIQQIIQQ")  # magic, version, 0, trigrams, documents, lo, hi, postings, paths
HEADER_BYTES = 64
MEMORY_BUDGET = 16 << 20  # postings a writer holds in memory before it writes them as a segment
FILES_PER_SEGMENT = 1 << 16  # and files (their paths are held until the segment is written)
MAX_BUILD_SEGMENTS = 32  # a build merges its segments when it has this many (it merges them at its end anyway)
ROWS_AT_ONCE = 4096  # files' rows a writer holds before it writes them into its transaction
MERGE_PARTS = 1024  # a merge reads the postings of 1/1024 of the trigram space at a time
_READ_BYTES = 1 << 20

# The files of a shard as this daemon left them: (st_dev, st_ino, size, mtime_ns) of the database and of its
# write-ahead log (None: no such file). A write by another process changes the mtime (ctime would be
# stronger, but SQLite itself changes it without writing: running as root, it chowns files it opens).
FileState = tuple[int, int, int, int] | None
IDLE, WRITING, COMMITTING = 0, 1, 2
_LITTLE = sys.byteorder == "little"
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


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


def _native(values: array[int]) -> array[int]:
    """An array read from or written to a segment, in the host's byte order (segments are little-endian)."""
    if not _LITTLE:
        values.byteswap()
    return values


def _from_bytes(code: str, data: memoryview) -> array[int]:
    values = array(code)
    values.frombytes(data)
    return _native(values)


class Segment:
    """One segment file. Its tables (directory, documents, paths) are held in memory for lookups: read and
    checked against its record (size, CRC) when opened, or taken from what this daemon just wrote; a
    build's segments, which are merged before anything looks them up, are opened without them
    (`load=False`) and read them only if a lookup comes first. Postings are read list by list."""

    def __init__(
        self,
        path: str,
        seg: int,
        lo: int,
        hi: int,
        ndocs: int,
        size: int,
        crc: int,
        written: Written | None = None,
        *,
        load: bool = True,
    ) -> None:
        self.path = path
        self.seg = seg
        self.size = size
        self.crc = crc
        self.lo, self.hi, self.ndocs = lo, hi, ndocs
        self.loaded = False
        self._load_lock = threading.Lock()
        self._read_lock = threading.Lock()  # lseek + read where there is no pread
        self.fd = os.open(path, _OPEN_FLAGS)
        try:
            st = os.fstat(self.fd)
            self.state: FileState = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            if st.st_size != size or size < HEADER_BYTES:
                raise Corrupt(f"{path}: {st.st_size} bytes, recorded {size}")
            try:
                self._header()
            except struct.error as exc:
                raise Corrupt(f"{path}: {exc}") from None
            if written is not None:
                self._take(written)
            elif load:
                self.load()
        except BaseException:
            os.close(self.fd)
            raise

    def _header(self) -> None:
        header = self._pread(HEADER_BYTES, 0)
        magic, version, _, ngrams, count, first, last, postings, path_bytes = _HEADER.unpack_from(header)
        if (
            magic != SEGMENT_MAGIC
            or version != SEGMENT_VERSION
            or (first, last, count) != (self.lo, self.hi, self.ndocs)
            or HEADER_BYTES + postings + 16 * ngrams + 13 * count + path_bytes != self.size
        ):
            raise Corrupt(f"{self.path}: not the segment recorded")
        self.ngrams = ngrams
        self.tables_at = HEADER_BYTES + postings  # where the directory starts

    def _take(self, written: Written) -> None:
        d = written.directory
        self.grams, self.counts = d.grams, d.counts
        self.offsets = array("Q", itertools.accumulate(d.lens, initial=HEADER_BYTES))
        self.docs, self.kinds, self.ends, self.paths = written.docs, written.kinds, written.ends, written.paths
        self.loaded = True

    def load(self) -> None:
        """The tables in memory, read and checked (once)."""
        if self.loaded:
            return
        with self._load_lock:
            if self.loaded:
                return
            try:
                self._read()
            except (struct.error, ValueError, OverflowError, IndexError) as exc:
                raise Corrupt(f"{self.path}: {exc}") from None
            self.loaded = True

    def _read(self) -> None:
        # The CRC of everything after the header, read once; the tables after the postings are kept.
        size, ngrams, count = self.size, self.ngrams, self.ndocs
        check = 0
        at = HEADER_BYTES
        kept = bytearray()
        while at < size:
            chunk = self._pread(min(_READ_BYTES, size - at), at)
            if not chunk:
                raise Corrupt(f"{self.path}: shorter than recorded")
            check = zlib.crc32(chunk, check)
            if at + len(chunk) > self.tables_at:
                kept += chunk[max(0, self.tables_at - at) :]
            at += len(chunk)
        if check != self.crc:
            raise Corrupt(f"{self.path}: its bytes are not the ones written (CRC)")
        view = memoryview(bytes(kept))
        widths = (4 * ngrams, 4 * ngrams, 8 * ngrams, 4 * count, count, 8 * count)
        bounds = list(itertools.accumulate(widths, initial=0))
        parts = [view[a:b] for a, b in itertools.pairwise(bounds)]
        self.grams = _from_bytes("I", parts[0])
        self.counts = _from_bytes("I", parts[1])
        lens = _from_bytes("Q", parts[2])
        self.docs = _from_bytes("I", parts[3])
        self.kinds = bytes(parts[4])
        self.ends = _from_bytes("Q", parts[5])
        self.paths = bytes(view[bounds[-1] :])
        self.offsets = array("Q", itertools.accumulate(lens, initial=HEADER_BYTES))
        if self.offsets[-1] != self.tables_at or (count and (self.docs[0] != self.lo or self.docs[-1] != self.hi)):
            raise Corrupt(f"{self.path}: its tables do not add up")

    # Reading the tables straight from the file, for a merge (a build's segments are not loaded).

    def directory_grams(self) -> array[int]:
        if self.loaded:
            return self.grams
        return _from_bytes("I", memoryview(self.range(self.tables_at, self.tables_at + 4 * self.ngrams)))

    def directory_slice(self, a: int, b: int) -> tuple[array[int], array[int]]:
        """Counts and list lengths of the directory's trigrams [a, b)."""
        if self.loaded:
            return self.counts[a:b], _lens(self.offsets, a, b)
        n = self.ngrams
        counts = _from_bytes("I", memoryview(self.range(self.tables_at + 4 * (n + a), self.tables_at + 4 * (n + b))))
        lens = _from_bytes("Q", memoryview(self.range(self.tables_at + 8 * (n + a), self.tables_at + 8 * (n + b))))
        return counts, lens

    def documents_table(self, *, paths: bool = True) -> tuple[array[int], bytes, array[int], bytes]:
        """(documents, kinds, path ends, paths: empty unless asked for)."""
        if self.loaded:
            return self.docs, self.kinds, self.ends, self.paths
        at = self.tables_at + 16 * self.ngrams
        count = self.ndocs
        docs = _from_bytes("I", memoryview(self.range(at, at + 4 * count)))
        kinds = self.range(at + 4 * count, at + 5 * count)
        ends = _from_bytes("Q", memoryview(self.range(at + 5 * count, at + 13 * count)))
        return docs, kinds, ends, self.range(at + 13 * count, self.size) if paths else b""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def find(self, gram: int) -> int:
        """The trigram's place in the directory, or -1."""
        i = bisect.bisect_left(self.grams, gram)
        return i if i < len(self.grams) and self.grams[i] == gram else -1

    def frequency(self, gram: int) -> int:
        i = self.find(gram)
        return 0 if i < 0 else self.counts[i]

    def documents(self, i: int) -> array[int]:
        """The documents of the directory's i-th trigram."""
        start, end = self.offsets[i], self.offsets[i + 1]
        data = self._pread(end - start, start)
        if len(data) != end - start:
            raise Corrupt(f"{self.path}: shorter than its directory")
        try:
            return grams.decode(data, self.counts[i], self.lo, self.hi)
        except grams.Invalid as exc:
            raise Corrupt(f"{self.path}: {exc}") from None

    def all_of(self, places: list[int]) -> array[int]:
        """The documents every one of these trigrams (the directory's places, the rarest first) holds: a
        lookup's AND, in one native call that reads each list only as far as what is left reaches."""
        lists = []
        for i in places:
            start, end = self.offsets[i], self.offsets[i + 1]
            data = self._pread(end - start, start)
            if len(data) != end - start:
                raise Corrupt(f"{self.path}: shorter than its directory")
            lists.append((data, self.counts[i]))
        try:
            return grams.all_of(lists, self.lo, self.hi)
        except grams.Invalid as exc:
            raise Corrupt(f"{self.path}: {exc}") from None

    def range(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file (the postings of consecutive trigrams, for a merge)."""
        data = self._pread(end - start, start)
        if len(data) != end - start:
            raise Corrupt(f"{self.path}: shorter than its directory")
        return data

    def _pread(self, size: int, offset: int) -> bytes:
        if hasattr(os, "pread"):
            return os.pread(self.fd, size, offset)
        with self._read_lock:
            os.lseek(self.fd, offset, os.SEEK_SET)
            return os.read(self.fd, size)

    def path_of(self, i: int) -> bytes:
        return self.paths[self.ends[i - 1] if i else 0 : self.ends[i]]

    def intact(self) -> bool:
        return file_state(self.path) == self.state


class Written(NamedTuple):
    """A segment as its writer wrote it: what `Segment` would read back from it."""

    size: int
    crc: int
    directory: grams.Directory
    docs: array[int]
    kinds: bytes
    ends: array[int]
    paths: bytes


class Paths(NamedTuple):
    """A segment's paths: where each ends (cumulative lengths), and the paths end to end — one string, or
    pieces written one after another (a merge's, which are not kept)."""

    ends: array[int]
    blob: bytes | Iterable[bytes]

    @classmethod
    def of(cls, paths: list[bytes]) -> Paths:
        return cls(array("Q", itertools.accumulate(len(p) for p in paths)), b"".join(paths))


def write_segment(
    path: str,
    directory: grams.Directory,
    postings: Iterable[bytes],
    docs: array[int],
    kinds: bytes,
    paths: Paths,
) -> Written:
    """Write a segment under a temporary name and rename it to `path`. The directory may be filled while
    the postings are made (a merge): it is written after them, and the header, which counts both, last."""
    ends, blob = paths
    lo, hi = (docs[0], docs[-1]) if docs else (0, 0)
    temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    check = 0
    total = 0
    try:
        with open(temporary, "xb") as f:
            f.write(b"\0" * HEADER_BYTES)
            for piece in postings:
                f.write(piece)
                check = zlib.crc32(piece, check)
                total += len(piece)
            if total != sum(directory.lens):
                raise RuntimeError(f"postings of {total} bytes, their directory says {sum(directory.lens)}")
            for values in (directory.grams, directory.counts, directory.lens, docs):
                data = _native(array(values.typecode, values)).tobytes()
                f.write(data)
                check = zlib.crc32(data, check)
            for data in (kinds, _native(array("Q", ends)).tobytes()):
                f.write(data)
                check = zlib.crc32(data, check)
            blob_bytes = 0
            for data in [blob] if isinstance(blob, bytes) else blob:
                f.write(data)
                check = zlib.crc32(data, check)
                blob_bytes += len(data)
            if blob_bytes != (ends[-1] if ends else 0):
                raise RuntimeError(f"paths of {blob_bytes} bytes, their ends say {ends[-1] if ends else 0}")
            size = f.tell()
            f.seek(0)
            header = _HEADER.pack(
                SEGMENT_MAGIC, SEGMENT_VERSION, 0, len(directory.grams), len(docs), lo, hi, total, blob_bytes
            )
            f.write(header)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return Written(size, check, directory, docs, kinds, ends, blob if isinstance(blob, bytes) else b"")


class Shard:
    def __init__(self, path: str, *, writable: bool, on_write: Callable[[Shard], None] | None = None) -> None:
        self.path = path
        self.writable = writable
        self._on_write = on_write  # told after each commit, on the writing thread (sets.py records the state)
        self.db = _connect(path, "rwc" if writable else "ro")
        self.lock = threading.Lock()  # one statement at a time on this connection
        self._state_lock = threading.Lock()
        self._phase = IDLE
        self._segments: list[Segment] = []
        self._dead: set[int] = set()
        self._builder: grams.Builder | None = None
        if writable:
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            if self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                self.db.executescript(
                    """
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value);
                    CREATE TABLE files (
                        path BLOB PRIMARY KEY, kind INTEGER,
                        size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER, doc INTEGER
                    ) WITHOUT ROWID;
                    CREATE INDEX files_opaque ON files (path) WHERE kind = 2;
                    CREATE TABLE segments (
                        seg INTEGER PRIMARY KEY, lo INTEGER, hi INTEGER, docs INTEGER, bytes INTEGER, crc INTEGER
                    );
                    CREATE TABLE dead (doc INTEGER PRIMARY KEY);
                    """
                )
                self.db.execute("INSERT INTO meta VALUES ('schema', ?), ('docs', 0)", (SCHEMA_VERSION,))
        try:
            schema = self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.OperationalError:
            schema = None
        if schema is None or schema[0] != SCHEMA_VERSION:
            self.db.close()
            raise sqlite3.DatabaseError(f"{path}: not a content index of schema {SCHEMA_VERSION}")
        try:
            self._open_segments()
        except BaseException:
            self._close_segments(self._segments)
            self.db.close()
            raise
        self.identity = _identity(path)  # the file opened: a shard replaced or deleted is no longer intact
        # Searches read through a connection of their own: in WAL mode they never wait for the writer.
        self.reader = _connect(path, "ro")
        # Re-entrant: a lookup made on the event loop holds it around the calls that take it (`at_once`).
        self.read_lock = threading.RLock()
        self.expected = self.state()  # what the files are as this daemon left them

    def _segment_path(self, seg: int) -> str:
        base = self.path.removesuffix(".sqlite")
        return f"{base}.{seg}.grams"

    def _open_segments(self) -> None:
        rows = self.db.execute("SELECT seg, lo, hi, docs, bytes, crc FROM segments ORDER BY seg").fetchall()
        for seg, lo, hi, ndocs, size, crc in rows:
            path = self._segment_path(seg)
            try:
                self._segments.append(Segment(path, seg, lo, hi, ndocs, size, crc))
            except OSError as exc:
                raise Corrupt(f"{path}: {exc.strerror or exc}") from None
        self._dead = {doc for (doc,) in self.db.execute("SELECT doc FROM dead")}
        if self.writable:  # a segment written but never recorded (a daemon stopped between the two)
            directory, name = os.path.split(self.path)
            prefix = name.removesuffix(".sqlite") + "."
            known = {os.path.basename(s.path) for s in self._segments}
            with contextlib.suppress(OSError):
                for entry in os.scandir(directory or "."):
                    name = entry.name
                    if name.startswith(prefix) and name.endswith((".grams", ".tmp")) and name not in known:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)

    @staticmethod
    def _close_segments(segments: Iterable[Segment]) -> None:
        for segment in segments:
            segment.close()

    def state(self) -> tuple[FileState, FileState]:
        """The database's and the write-ahead log's file state now."""
        return file_state(self.path), file_state(self.path + "-wal")

    def intact(self) -> bool:
        """Whether the shard's files are as this daemon left them: not deleted, replaced, truncated or
        written by anyone else. While this daemon writes, the log is its own to change (and, while it
        commits, the database too): then only that the database is still the file opened is checked.
        Segments never change once written."""
        with self._state_lock:
            phase, (db, wal), segments = self._phase, self.expected, self._segments
        if not all(segment.intact() for segment in segments):
            return False
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
            self._close_segments(self._segments)
            self._segments = []
        with self.lock:
            self.db.close()
            if self._builder is not None:
                self._builder.close()
                self._builder = None

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

    @contextlib.contextmanager
    def at_once(self) -> Iterator[bool]:
        """Whether a lookup may run right now on the caller's thread without waiting: no other reader or
        commit holds the shard, and every segment's tables are in memory (none is read from its file).
        While true, the shard is held."""
        if not self.read_lock.acquire(blocking=False):
            yield False
            return
        try:
            yield all(segment.loaded for segment in self._segments)
        finally:
            self.read_lock.release()

    def doc_frequency(self, gram: str) -> int:
        """At most how many documents hold this (character) trigram: the fewest of its byte trigrams'."""
        windows = grams.windows(gram)
        with self.read_lock:
            segments = self._segments
            for segment in segments:
                segment.load()
            counts = [sum(s.frequency(w) for s in segments) for w in windows]
        return min(counts) if counts else sum(s.ndocs for s in segments)

    def documents(self) -> int:
        """Documents in the segments (old versions of files included)."""
        with self.read_lock:
            return sum(s.ndocs for s in self._segments)

    def garbage(self) -> int:
        """Documents in the segments that no file points to any more."""
        with self.read_lock:
            return len(self._dead)

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
        """(path, kind) of the files in [low, high) whose indexed content satisfies `need`, and of every
        OPAQUE file there; and whether the lookup stopped at `limit` indexed files (then the list is not
        complete). Each segment answers for its documents; a document no file points to is left out."""
        opaque_sql, opaque_args = _range("SELECT path, kind FROM files WHERE kind = 2 AND", low, high)
        found: list[tuple[bytes, int]] = []
        with self.read_lock:
            segments, dead = self._segments, self._dead
            for segment in segments:
                segment.load()
                docs = _satisfying(segment, need)
                chosen = segment.docs if docs is None else docs
                places = grams.positions(chosen, segment.docs)
                for doc, i in zip(chosen, places, strict=True):
                    if i < 0:
                        raise Corrupt(f"{segment.path}: a posting names a document it does not hold")
                    if doc in dead:
                        continue
                    path = segment.path_of(i)
                    if path < low or (high is not None and path >= high):
                        continue
                    found.append((path, segment.kinds[i]))
                    if limit is not None and len(found) >= limit:
                        _still(segments)
                        return found, True
            _still(segments)
            found += self.reader.execute(opaque_sql, opaque_args).fetchall()
        return found, False

    # -- writing (one writer thread) ------------------------------------------------------------------------

    def batch(self, commit_bytes: int | None = None) -> Batch:
        """A transaction of writes (`with shard.batch() as batch: batch.put(...)`); with `commit_bytes`,
        committed (and a new one begun) whenever that much content has been put since the last commit,
        or the postings in memory reach MEMORY_BUDGET. A batch of `commit_bytes` is a build: its
        segments are merged when it ends, not at each commit."""
        return Batch(self, commit_bytes)

    def _writer(self) -> grams.Builder:
        if self._builder is None:
            self._builder = grams.Builder()
        return self._builder

    def _next_seg(self) -> int:
        row = self.db.execute("SELECT max(seg) FROM segments").fetchone()
        return int(row[0] or 0) + 1

    def _publish(self, add: list[Segment], drop: list[Segment], dead_add: set[int], dead_drop: set[int]) -> None:
        """What a commit wrote becomes what searches read."""
        with self.read_lock, self._state_lock:
            gone = {id(s) for s in drop}
            self._segments = [s for s in self._segments if id(s) not in gone] + add
            self._segments.sort(key=lambda s: s.seg)
            self._dead = (self._dead | dead_add) - dead_drop
        for segment in drop:
            segment.close()
            with contextlib.suppress(OSError):
                os.unlink(segment.path)

    def merge_plan(self) -> list[Segment]:
        """The newest segments to merge into one so that every segment is at least twice the size of all
        the newer ones together (a build's segments, of one size, are all merged at once)."""
        segments = self._segments
        sizes = [s.size for s in segments]
        for i in range(len(segments) - 1):
            if sizes[i] < 2 * sum(sizes[i + 1 :]):
                return segments[i:]
        return []

    def merge(self, segments: list[Segment]) -> None:
        """Merge consecutive segments into one (writer thread, outside a transaction), dropping dead
        documents; the old files are removed once searches read the new one. Memory: each input's
        trigrams (4 bytes each) and one part of the trigram space's postings at a time."""
        if len(segments) < 2:
            return
        lo, hi = segments[0].lo, segments[-1].hi
        dead = array("I", sorted(d for d in self._dead if lo <= d <= hi))
        gone = set(dead)
        seg = self._next_seg()
        path = self._segment_path(seg)
        directory = grams.Directory(array("I"), array("I"), array("Q"))
        keys = [s.directory_grams() for s in segments]
        cursors = [HEADER_BYTES] * len(segments)  # where each input's next list starts

        def postings() -> Iterator[bytes]:
            for part in range(MERGE_PARTS):
                start, end = (part << 24) // MERGE_PARTS, ((part + 1) << 24) // MERGE_PARTS
                parts = []
                for k, s in enumerate(segments):
                    a, b = bisect.bisect_left(keys[k], start), bisect.bisect_left(keys[k], end)
                    if a == b:
                        continue
                    counts, lens = s.directory_slice(a, b)
                    size = sum(lens)
                    data = s.range(cursors[k], cursors[k] + size)
                    cursors[k] += size
                    parts.append(grams.Part(grams.Directory(keys[k][a:b], counts, lens), data, s.lo, s.hi))
                if not parts:
                    continue
                try:
                    data, merged = grams.merge(parts, dead)
                except grams.Invalid as exc:
                    raise Corrupt(f"{self.path}: {exc}") from None
                directory.grams.extend(merged.grams)
                directory.counts.extend(merged.counts)
                directory.lens.extend(merged.lens)
                yield data

        # The merged documents' table: their numbers, kinds and path ends in arrays, their paths streamed
        # from each input in turn (no object per path: a segment of a 500,000-file tree has a quarter
        # of a million).
        docs = array("I")
        kinds = bytearray()
        ends = array("Q")
        spans: list[list[tuple[int, int]]] = []
        total = 0
        for s in segments:
            their_docs, their_kinds, their_ends, _blob = s.documents_table(paths=False)
            kept: list[tuple[int, int]] = []
            start = 0
            for i, doc in enumerate(their_docs):
                end = their_ends[i]
                if doc not in gone:
                    docs.append(doc)
                    kinds.append(their_kinds[i])
                    total += end - start
                    ends.append(total)
                    if kept and kept[-1][1] == start:
                        kept[-1] = (kept[-1][0], end)
                    else:
                        kept.append((start, end))
                start = end
            spans.append(kept)

        def paths() -> Iterator[bytes]:
            for s, kept in zip(segments, spans, strict=True):
                _docs, _kinds, _ends, blob = s.documents_table()
                for start, end in kept:
                    yield blob[start:end]

        written = write_segment(path, directory, postings(), docs, bytes(kinds), Paths(ends, paths()))
        size, crc = written.size, written.crc
        try:
            # Its tables are read when a lookup first needs them (a merged segment can be most of the index).
            opened = Segment(
                path, seg, docs[0] if docs else 0, docs[-1] if docs else 0, len(docs), size, crc, load=False
            )
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        try:
            self.db.execute("BEGIN")
            marks = ",".join("?" * len(segments))
            self.db.execute(f"DELETE FROM segments WHERE seg IN ({marks})", [s.seg for s in segments])  # noqa: S608
            if docs:
                self.db.execute(
                    "INSERT INTO segments VALUES (?, ?, ?, ?, ?, ?)", (seg, opened.lo, opened.hi, len(docs), size, crc)
                )
            self.db.executemany("DELETE FROM dead WHERE doc = ?", ((d,) for d in dead))
            self._phase_to(COMMITTING)
            self.db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            opened.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        finally:
            self._phase_to(WRITING)
        self._publish([opened] if docs else [], segments, set(), gone)
        if not docs:
            opened.close()
            with contextlib.suppress(OSError):
                os.unlink(path)


def _lens(offsets: array[int], a: int, b: int) -> array[int]:
    return array("Q", [offsets[i + 1] - offsets[i] for i in range(a, b)])


def _satisfying(segment: Segment, need: Need) -> array[int] | None:
    """The segment's documents that satisfy `need` (None: every document: the need constrains nothing).
    A character trigram is the AND of its UTF-8 form's byte trigrams; an AND reads the shortest lists
    first and stops at an empty one."""
    if isinstance(need, str):
        return _all_of(segment, grams.windows(need))
    if need[0] == "and":
        # The trigrams of the AND's plain parts are one AND, read shortest first.
        windows = [w for part in need[1] if isinstance(part, str) for w in grams.windows(part)]
        result = _all_of(segment, list(dict.fromkeys(windows))) if windows else None
        for part in need[1]:
            if isinstance(part, str) or (result is not None and not result):
                continue
            docs = _satisfying(segment, part)
            if docs is not None:
                result = docs if result is None else grams.both(result, docs)
        return result
    union: array[int] = array("I")
    for part in need[1]:
        docs = _satisfying(segment, part)
        if docs is None:
            return None
        union = grams.either(union, docs)
    return union


def _all_of(segment: Segment, windows: list[int]) -> array[int] | None:
    if not windows:
        return None
    places = []
    for w in windows:
        i = segment.find(w)
        if i < 0:
            return array("I")
        places.append((segment.counts[i], i))
    places.sort()
    return segment.all_of([i for _count, i in places])


def _still(segments: list[Segment]) -> None:
    """After postings were read: the segments must still be as written, or what was read is not trusted."""
    for segment in segments:
        if not segment.intact():
            raise Tampered(f"{segment.path} was changed by another process")


PAGE_ROWS = 1000
_PAGE_SQL = "SELECT path, size, mtime_ns, ctime_ns, ino FROM files WHERE path > ? ORDER BY path LIMIT ?"


class Batch:
    """Writes to one shard in one transaction, by its writer thread."""

    __slots__ = (
        "_build",
        "_builder",
        "_commit_bytes",
        "_db",
        "_dead",
        "_docs",
        "_empty",
        "_kinds",
        "_last",
        "_paths",
        "_pending",
        "_rows",
        "_shard",
        "_written",
    )

    def __init__(self, shard: Shard, commit_bytes: int | None) -> None:
        self._shard = shard
        self._db = shard.db
        self._docs = 0
        self._commit_bytes = commit_bytes
        self._build = commit_bytes is not None
        self._pending = 0  # content put since the last commit
        self._builder = shard._writer()
        self._written = array("I")  # documents in the builder, in order
        self._kinds = bytearray()
        self._paths: list[bytes] = []
        self._dead: set[int] = set()  # documents superseded in this transaction
        # Rows to write, by path (the last write of a path wins), written at the commit in one go.
        self._rows: dict[bytes, tuple[bytes, int, int, int, int, int, int | None]] = {}
        self._empty = False  # no file had a row when the batch began: only its own writes can be old
        self._last = b""  # the greatest path this batch wrote (a build writes them in increasing order)

    def __enter__(self) -> Batch:
        self._shard.lock.acquire()
        try:
            if not self._shard.intact():
                raise Tampered(f"{self._shard.path} was changed by another process")
            self._shard._phase_to(WRITING)
            self._db.execute("BEGIN")
            self._docs = int(self._db.execute("SELECT value FROM meta WHERE key = 'docs'").fetchone()[0])
            self._empty = self._db.execute("SELECT NOT EXISTS (SELECT 1 FROM files)").fetchone()[0] == 1
        except BaseException:
            self._shard.lock.release()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: object) -> None:
        try:
            if kind is None:
                self._commit()
                self._builder.release()  # before a merge, which needs memory of its own
                self._merge()
            elif self._db.in_transaction:  # (a merge between two transactions may have failed)
                self._db.execute("ROLLBACK")
        finally:
            try:
                self._forget()
                self._builder.release()
                self._shard._phase_to(IDLE)
            finally:
                self._shard.lock.release()

    def _forget(self) -> None:
        self._builder.abandon()
        self._builder.reset()
        self._written = array("I")
        self._kinds = bytearray()
        self._paths = []
        self._dead = set()
        self._rows = {}

    def _commit(self) -> None:
        shard = self._shard
        added: list[Segment] = []
        if self._written:
            seg = shard._next_seg()
            path = shard._segment_path(seg)
            directory = self._builder.directory()
            kinds = bytes(self._kinds)
            paths = Paths.of(self._paths)
            written = write_segment(path, directory, self._builder.read(), self._written, kinds, paths)
            size, crc = written.size, written.crc
            # A build's segments are merged before anything looks them up: their tables are not kept.
            kept = None if self._build else written
            lo, hi, count = self._written[0], self._written[-1], len(self._written)
            try:
                added.append(Segment(path, seg, lo, hi, count, size, crc, kept, load=False))
                self._db.execute(
                    "INSERT INTO segments VALUES (?, ?, ?, ?, ?, ?)",
                    (seg, self._written[0], self._written[-1], len(self._written), size, crc),
                )
            except BaseException:
                self._shard._close_segments(added)
                with contextlib.suppress(OSError):
                    os.unlink(path)
                raise
        dead = self._dead
        self._write_rows()
        self._db.executemany("INSERT OR IGNORE INTO dead VALUES (?)", ((d,) for d in dead))
        self._db.execute("UPDATE meta SET value = ? WHERE key = 'docs'", (self._docs,))
        shard._phase_to(COMMITTING)  # a commit may checkpoint: the database file changes too
        try:
            self._db.execute("COMMIT")
        except BaseException:
            self._shard._close_segments(added)
            for segment in added:
                with contextlib.suppress(OSError):
                    os.unlink(segment.path)
            raise
        finally:
            shard._phase_to(WRITING)
        shard._publish(added, [], dead, set())
        self._forget()
        self._pending = 0

    def _merge(self) -> None:
        """Small segments merged (a build's: all at once, when it ends)."""
        plan = self._shard.merge_plan()
        if plan:
            self._shard.merge(plan)

    def _old_doc(self, path: bytes) -> None:
        """The document the path's file had, if any, is superseded."""
        if path in self._rows:
            row = self._rows.pop(path)
            if row[6] is not None:
                self._dead.add(row[6])
            return
        if self._empty and path > self._last:  # past every path written in this batch: never written
            self._last = path
            return
        self._last = max(self._last, path)
        found = self._db.execute("SELECT doc FROM files WHERE path = ?", (path,)).fetchone()
        if found is not None and found[0] is not None:
            self._dead.add(int(found[0]))

    def put(self, path: bytes, sig: Signature, content: Content) -> int:
        """Index this version of this file (replacing any indexed before); returns its content's length."""
        self._old_doc(path)
        self._docs += 1
        doc = self._docs
        builder = self._builder
        builder.begin(doc)
        size = 0
        try:
            for piece in content:
                size += len(piece)
                builder.add(piece)
        except BaseException:
            builder.abandon()
            raise
        if content.kind == OPAQUE:
            builder.abandon()
            self._row(path, sig, OPAQUE, None)
        else:
            builder.end()
            self._written.append(doc)
            self._kinds.append(content.kind)
            self._paths.append(path)
            self._row(path, sig, content.kind, doc)
        self._pending += size
        return size

    def checkpoint(self) -> None:
        """Commit, and go on in a new transaction, if `commit_bytes` of content were put since the last
        commit, the postings in memory reached MEMORY_BUDGET or the segment holds FILES_PER_SEGMENT files.
        The caller calls it between files, never while a file's rows are half written."""
        if len(self._rows) >= ROWS_AT_ONCE:
            self._write_rows()
        if self._commit_bytes is None:
            return
        if (
            self._pending >= self._commit_bytes
            or self._builder.memory() >= MEMORY_BUDGET
            or len(self._written) >= FILES_PER_SEGMENT
        ):
            self._commit()
            if len(self._shard._segments) >= MAX_BUILD_SEGMENTS:
                self._merge()
            self._db.execute("BEGIN")

    def indexed(self) -> Indexed:
        """The files indexed so far, in path order, as this batch sees them (see `Indexed`)."""
        return Indexed(self._db)

    def opaque(self, path: bytes, sig: Signature) -> None:
        """This file is not indexed: every search reads it (it changed while it was read, say)."""
        self._old_doc(path)
        self._row(path, sig, OPAQUE, None)

    def remove(self, path: bytes) -> None:
        self._old_doc(path)
        self._db.execute("DELETE FROM files WHERE path = ?", (path,))

    def _row(self, path: bytes, sig: Signature, kind: int, doc: int | None) -> None:
        self._rows[path] = (path, kind, sig.size, sig.mtime_ns, sig.ctime_ns, sig.ino, doc)

    def _write_rows(self) -> None:
        """The rows so far, into the transaction (a file's later write replaces its row there)."""
        self._db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)", self._rows.values())
        self._rows = {}


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


class Corrupt(sqlite3.DatabaseError):
    """A segment is not as its record says: damaged, truncated, foreign or missing."""


def held_elsewhere(exc: BaseException) -> bool:
    """Whether opening a shard failed because another process holds it (SQLite's lock)."""
    return isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED")


def storage_fault(exc: BaseException) -> bool:
    """Whether an error came from the shards' storage (corrupt, truncated, full, read-only, tampered with):
    then the set is not used again."""
    return isinstance(exc, sqlite3.Error)


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

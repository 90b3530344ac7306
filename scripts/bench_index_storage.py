"""Measurements behind the index's storage and watcher dependencies (issue 17); a tool, not a test.

Three sections, each run as fresh child processes so that peak RSS and CPU belong to one alternative:

  A  content trigram index of a tree: build (wall, CPU, peak RSS), size on disk, query latency and
     candidate counts (checked against `rg -l`: a candidate set must contain every matching file),
     for SQLite FTS5, numpy-built postings (varint or pyroaring), a C helper + pyroaring (no numpy),
     a forward index and tantivy; plus (section `deps`) each dependency's bundled size and import
     time.
  B  the file list that glob needs (path + mtime_ns, sorted by (mtime, path)): memory of three
     representations, time to filter with a compiled regex per path vs one pass over a joined blob.
  C  inotify: time and memory to watch every directory, and read-your-writes (write + close, then a
     non-blocking drain must already hold the event), in-process and from another process.

Alternatives are interleaved round by round (the order rotates) and medians with ranges are reported,
because other work shares the 2 CPUs. Run it through scripts/bench-index-storage, which provides the
scratch venv with the optional packages (numpy, pyroaring, tantivy, inotify_simple, watchdog).
"""

from __future__ import annotations

import argparse
import array
import bisect
import contextlib
import ctypes
import ctypes.util
import importlib.util
import itertools
import json
import os
import re
import resource
import select
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RG = os.environ.get("IDXBENCH_RG") or shutil.which("rg") or str(HERE.parent / ".venv" / "bin" / "rg")

# Queries of section A: (name, literal, case-insensitive). The literal's trigrams must all be present.
QUERIES = [
    ("SUSPEND", "_SUSPEND", False),  # what `[A-Z]+_SUSPEND` requires
    ("nowhere", "zq_no_such_token_xj", False),
    ("static", "static", False),
    ("(?i)suspend", "suspend", True),
]
QUERY_REPEATS = 20

# Characters whose Unicode simple case folding reaches beyond ASCII (ripgrep's (?i) is Unicode-aware:
# `(?i)s` matches U+017F LONG S, `(?i)k` matches U+212A KELVIN SIGN).
EXTRA_FOLDS = {"s": ["\u017f"], "k": ["\u212a"]}


def case_variants(ch: str) -> list[str]:
    out = {ch, ch.lower(), ch.upper()}
    out.update(EXTRA_FOLDS.get(ch.lower(), []))
    return sorted(out)


def char_windows(literal: str, fold: bool) -> list[list[str]]:
    """For each 3-character window of the literal: the strings any one of which a match contains."""
    wins = []
    for i in range(len(literal) - 2):
        w = literal[i : i + 3]
        if not fold:
            wins.append([w])
            continue
        alts = [""]
        for ch in w:
            alts = [a + v for a in alts for v in case_variants(ch)]
        wins.append(alts)
    return wins


def byte_trigram_groups(literal: str, fold: bool) -> list[list[int]]:
    """AND over groups, OR within a group, of 24-bit byte trigrams. A variant whose UTF-8 encoding is
    longer than 3 bytes contributes its first byte trigram (a necessary condition, so still exact)."""
    groups = []
    for alts in char_windows(literal, fold):
        ids = set()
        for a in alts:
            b = a.encode()
            ids.add((b[0] << 16) | (b[1] << 8) | b[2])
        groups.append(sorted(ids))
    return groups


# ---------------------------------------------------------------------------------------------- utils


def peak_rss_mb() -> float:
    """VmHWM: this process's own peak (ru_maxrss also carries the parent's RSS across fork + exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def dir_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def read_list(list_file: Path) -> list[bytes]:
    return list_file.read_bytes().split(b"\0")[:-1]


def read_file(tree: Path, rel: bytes) -> bytes:
    try:
        with open(os.path.join(os.fsencode(tree), rel), "rb") as f:
            return f.read()
    except OSError:
        return b""


def emit(obj: dict) -> None:
    print("RESULT " + json.dumps(obj), flush=True)


def med_range(xs: list[float], fmt: str = "{:.1f}") -> str:
    xs = [x for x in xs if x is not None]
    if not xs:
        return "—"
    if len(xs) == 1:
        return fmt.format(xs[0])
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


# ------------------------------------------------------------------------------- A: the alternatives


def fts_text(data: bytes) -> str:
    """FTS5's trigram tokenizer stops at the first NUL of a value (binary files lost the rest: found
    here, 2 kernel files): NUL becomes U+FFFD, so a query trigram with NUL must fall back to a scan."""
    return data.replace(b"\0", b"\xff").decode("utf-8", "replace")


class Fts5:
    """SQLite FTS5, trigram tokenizer, contentless, detail=none; `shards` databases built in threads."""

    def __init__(self, shards: int) -> None:
        self.shards = shards

    def db(self, out: Path, s: int) -> Path:
        return out / f"fts{s}.db"

    def build(self, tree: Path, files: list[bytes], out: Path) -> dict:
        def one(s: int) -> None:
            path = self.db(out, s)
            c = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            c.execute("PRAGMA page_size=8192")
            for p in ("journal_mode=OFF", "synchronous=OFF", "locking_mode=EXCLUSIVE", "cache_size=-16384"):
                c.execute(f"PRAGMA {p}")
            c.execute(
                "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trigram case_sensitive 1', detail=none, content='')"
            )
            c.execute("INSERT INTO t(t, rank) VALUES('pgsz', 8000)")
            c.execute("BEGIN")
            n = 0
            for i in range(s, len(files), self.shards):
                data = read_file(tree, files[i])
                c.execute("INSERT INTO t(rowid, body) VALUES(?, ?)", (i, fts_text(data)))
                n += len(data)
                if n > 64 << 20:  # commit now and then: bounds the pending-terms memory
                    c.execute("COMMIT")
                    c.execute("BEGIN")
                    n = 0
            c.execute("COMMIT")
            t0 = time.perf_counter()
            c.execute("INSERT INTO t(t) VALUES('optimize')")
            timings[s] = time.perf_counter() - t0
            c.close()

        timings: dict[int, float] = {}
        threads = [threading.Thread(target=one, args=(s,)) for s in range(self.shards)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return {"optimize_s": max(timings.values())}

    def open(self, out: Path) -> None:
        self.conns = []
        for s in range(self.shards):
            c = sqlite3.connect(self.db(out, s), isolation_level=None)
            c.execute("PRAGMA cache_size=-8192")
            self.conns.append(c)

    def update(self, tree: Path, files: list[bytes], ids: list[int]) -> None:
        """Re-index rewritten files. Without contentless_delete (SQLite 3.43) a contentless row cannot
        be deleted without its old text: the new text gets a new rowid, the old one a tombstone."""
        for c in self.conns:
            c.execute("BEGIN")
        for i in ids:
            rowid = len(files) + i
            c = self.conns[rowid % self.shards]
            c.execute("INSERT INTO t(rowid, body) VALUES(?, ?)", (rowid, fts_text(read_file(tree, files[i]))))
        for c in self.conns:
            c.execute("COMMIT")

    def query(self, literal: str, fold: bool) -> list[int]:
        parts = []
        for alts in char_windows(literal, fold):
            ors = " OR ".join('"' + a.replace('"', '""') + '"' for a in alts)
            parts.append(f"({ors})")
        expr = " AND ".join(parts)
        out: list[int] = []
        for c in self.conns:
            out.extend(r[0] for r in c.execute("SELECT rowid FROM t WHERE t MATCH ?", (expr,)))
        return out


def extract_trigrams(data: bytes, np, marks) -> object:
    """Sorted distinct 24-bit byte trigrams of data (numpy): big-endian 4-byte words read at the 4
    offsets (no copy of data), shifted right by 8, plus the last trigram by hand; then sort + keep
    changes for small files, a 16 Mi mark table for big ones (sorting 1M+ values costs more)."""
    n = len(data) - 2
    if n <= 0:
        return np.empty(0, np.uint32)
    last = (data[-3] << 16) | (data[-2] << 8) | data[-1]
    words = [(len(data) - k) // 4 for k in range(4)]  # full words at offset k cover positions < n - 1
    if n > 1 << 20 and marks is not None:
        step = 1 << 18  # words per slice: bounds the temporaries (the index array is int64)
        for k in range(4):
            for w in range(0, words[k], step):
                count = min(step, words[k] - w)
                marks[np.frombuffer(data, dtype=">u4", count=count, offset=k + 4 * w) >> 8] = True
        marks[last] = True
        u = np.flatnonzero(marks).astype(np.uint32)
        marks[u] = False
        return u
    out = np.empty(sum(words) + 1, np.uint32)
    pos = 0
    for k in range(4):
        m = words[k]
        if m > 0:
            np.right_shift(np.frombuffer(data, dtype=">u4", count=m, offset=k), 8, out=out[pos : pos + m])
            pos += m
    out[pos] = last
    out.sort()
    keep = np.empty(len(out), bool)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    return out[keep]


def parallel_extract(tree: Path, files: list[bytes], np, workers: int = 2):
    """Yield (doc id, distinct trigrams) in doc order; extraction runs on `workers` threads (numpy's
    sort and ufuncs release the GIL). One 16 MiB mark table per worker for big files."""
    from concurrent.futures import ThreadPoolExecutor

    local = threading.local()

    def job(i: int):
        if not hasattr(local, "marks"):
            local.marks = np.zeros(1 << 24, bool)
        data = read_file(tree, files[i])
        return i, len(data), extract_trigrams(data, np, local.marks)

    with ThreadPoolExecutor(workers) as ex:
        window = 16
        futs = [ex.submit(job, i) for i in range(min(window, len(files)))]
        nxt = len(futs)
        k = 0
        while k < len(futs):
            res = futs[k].result()
            futs[k] = None
            if nxt < len(files):
                futs.append(ex.submit(job, nxt))
                nxt += 1
            k += 1
            yield res


def varint_encode(np, vals):
    """LEB128 of uint32 values, vectorized: (bytes, length in bytes of each value)."""
    vals = vals.astype(np.uint32)
    nb = np.ones(len(vals), np.uint8)
    for j in (7, 14, 21, 28):
        nb += vals >= (1 << j)
    starts = np.cumsum(nb, dtype=np.int64) - nb
    out = np.empty(int(nb.sum()), np.uint8)
    for j in range(5):
        sel = nb > j
        if not sel.any():
            break
        v = (vals[sel] >> (7 * j)) & 0x7F
        cont = (nb[sel] > j + 1).astype(np.uint32) << 7
        out[starts[sel] + j] = (v | cont).astype(np.uint8)
    return out, nb


def varint_decode(np, buf):
    b = np.frombuffer(buf, np.uint8)
    if len(b) == 0:
        return np.empty(0, np.uint32)
    ends = b < 0x80
    starts = np.flatnonzero(np.concatenate(([True], ends[:-1])))
    if len(starts) == len(b):  # every value one byte
        return np.cumsum(b, dtype=np.uint32)
    gid = np.cumsum(np.concatenate(([0], ends[:-1].astype(np.int64))))
    shift = (np.arange(len(b)) - starts[gid]) * 7
    parts = (b & 0x7F).astype(np.uint32) << shift.astype(np.uint32)
    return np.cumsum(np.add.reduceat(parts, starts), dtype=np.uint32)


class NumpyPostings:
    """numpy trigram extraction, bounded-memory build: (trigram, doc) pairs collected into runs of at
    most RUN_PAIRS, each sorted and spilled to disk; then merged partition by partition (ranges of
    trigrams sized from a histogram) and written as one postings file + a dictionary. The encoding is
    `varint` (delta + LEB128, numpy only) or `roaring` (one pyroaring BitMap per trigram)."""

    RUN_PAIRS = 2_500_000  # one run buffer: 20 MB of uint64 (trigram << 32 | doc) keys
    MERGE_PAIRS = 1_000_000  # pairs per merge partition

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding

    def build(self, tree: Path, files: list[bytes], out: Path) -> dict:
        from concurrent.futures import ThreadPoolExecutor

        import numpy as np

        tmp = out / "runs"
        tmp.mkdir()
        hist = np.zeros(1 << 16, np.int64)
        runs: list[tuple[Path, object]] = []  # (file, offset of each 2-byte trigram prefix bucket)
        bucket_keys = np.arange((1 << 16) + 1, dtype=np.uint64) << np.uint64(40)
        spiller = ThreadPoolExecutor(1)  # sorts and writes one run while the next one fills
        pending = None
        free = [np.empty(self.RUN_PAIRS, np.uint64), np.empty(self.RUN_PAIRS, np.uint64)]

        def spill(k, buf) -> None:
            nonlocal hist
            k.sort()
            offsets = np.searchsorted(k, bucket_keys).astype(np.int64)
            hist += np.diff(offsets)
            path = tmp / f"run{len(runs):04d}.bin"
            k.tofile(path)
            runs.append((path, offsets))
            if buf is not None:
                free.append(buf)

        def submit(k, buf) -> None:
            nonlocal pending
            if pending is not None:
                pending.result()  # runs stay in doc order, and at most two buffers exist
            pending = spiller.submit(spill, k, buf)

        t_extract = time.perf_counter()
        keys = free.pop()
        held = 0
        for i, _size, tris in parallel_extract(tree, files, np):
            n = len(tris)
            if n == 0:
                continue
            if held + n > self.RUN_PAIRS:
                submit(keys[:held], keys)
                if pending is not None and not free:
                    pending.result()
                keys, held = free.pop(), 0
            if n > self.RUN_PAIRS:  # one file with more distinct trigrams than a run holds
                submit((tris.astype(np.uint64) << np.uint64(32)) | np.uint64(i), None)
                continue
            dst = keys[held : held + n]
            dst[:] = tris
            dst <<= np.uint64(32)
            dst |= np.uint64(i)
            held += n
        if held:
            submit(keys[:held], keys)
        if pending is not None:
            pending.result()
        spiller.shutdown()
        free.clear()
        del keys
        t_extract = time.perf_counter() - t_extract

        t_merge = time.perf_counter()
        cum = np.cumsum(hist)
        bounds = [0]
        while bounds[-1] < (1 << 16):
            base = cum[bounds[-1] - 1] if bounds[-1] else 0
            nxt = int(np.searchsorted(cum, base + self.MERGE_PAIRS, side="right"))
            bounds.append(max(nxt, bounds[-1] + 1))
        bounds[-1] = 1 << 16
        fds = [os.open(path, os.O_RDONLY) for path, _ in runs]
        post = open(out / "postings.bin", "wb")  # noqa: SIM115 - written in the loop below
        dict_t, dict_off, dict_n = [], [], []
        offset = 0
        for lo, hi in itertools.pairwise(bounds):
            pieces = []
            for fd, (_path, boff) in zip(fds, runs, strict=True):
                a, b = int(boff[lo]), int(boff[hi])
                if b > a:  # read, not mmap: mapped pages would count in the process's RSS
                    pieces.append(np.frombuffer(os.pread(fd, (b - a) * 8, a * 8), np.uint64))
            if not pieces:
                continue
            keys = np.concatenate(pieces)
            keys.sort()
            tri = (keys >> np.uint64(32)).astype(np.uint32)
            doc = (keys & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            del keys, pieces
            first = np.concatenate(([True], tri[1:] != tri[:-1]))
            starts = np.flatnonzero(first)
            counts = np.diff(np.append(starts, len(tri)))
            if self.encoding == "varint":
                delta = doc.copy()
                delta[1:] -= doc[:-1]
                delta[starts] = doc[starts]
                enc, nb = varint_encode(np, delta)
                lens = np.add.reduceat(nb.astype(np.int64), starts)
                post.write(enc.tobytes())
            else:
                from pyroaring import BitMap

                lens = np.empty(len(starts), np.int64)
                ends = np.append(starts[1:], len(doc))
                for j, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
                    bm = BitMap(array.array("I", doc[a:b].tobytes()))
                    bm.run_optimize()
                    s = bm.serialize()
                    lens[j] = len(s)
                    post.write(s)
            dict_t.append(tri[starts])
            dict_off.append(offset + np.cumsum(lens) - lens)
            dict_n.append(counts.astype(np.uint32))
            offset += int(lens.sum())
        post.close()
        for fd in fds:
            os.close(fd)
        np.save(out / "dict_tri.npy", np.concatenate(dict_t))
        np.save(out / "dict_off.npy", np.append(np.concatenate(dict_off), offset).astype(np.int64))
        np.save(out / "dict_n.npy", np.concatenate(dict_n))
        shutil.rmtree(tmp)
        return {
            "extract_s": t_extract,
            "merge_s": time.perf_counter() - t_merge,
            "runs": len(runs),
            "trigrams": int(sum(len(x) for x in dict_t)),
            "pairs": int(cum[-1]),
        }

    def open(self, out: Path) -> None:
        import mmap

        import numpy as np

        self.np = np
        self.tri = np.load(out / "dict_tri.npy", mmap_mode="r")
        self.off = np.load(out / "dict_off.npy", mmap_mode="r")
        self.cnt = np.load(out / "dict_n.npy", mmap_mode="r")
        f = open(out / "postings.bin", "rb")  # noqa: SIM115 - kept open with the map
        self.mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size else b""
        self.f = f

    def _list(self, t: int):
        np = self.np
        j = int(np.searchsorted(self.tri, np.uint32(t)))  # a Python int would copy the table to int64
        if j >= len(self.tri) or int(self.tri[j]) != t:
            return None
        a, b = int(self.off[j]), int(self.off[j + 1])
        if self.encoding == "varint":
            return varint_decode(np, self.mm[a:b])
        from pyroaring import FrozenBitMap

        return FrozenBitMap.deserialize(self.mm[a:b])

    def query(self, literal: str, fold: bool) -> list[int]:
        np = self.np
        result = None
        groups = byte_trigram_groups(literal, fold)
        # AND the rarest groups first
        sized = []
        for g in groups:
            n = 0
            for t in g:
                j = int(np.searchsorted(self.tri, np.uint32(t)))
                if j < len(self.tri) and int(self.tri[j]) == t:
                    n += int(self.cnt[j])
            sized.append((n, g))
        sized.sort(key=lambda x: x[0])
        for n, g in sized:
            if n == 0:
                return []
            lists = [x for x in (self._list(t) for t in g) if x is not None]
            if self.encoding == "varint":
                u = lists[0] if len(lists) == 1 else np.unique(np.concatenate(lists))
                result = u if result is None else np.intersect1d(result, u, assume_unique=True)
            else:
                from pyroaring import BitMap

                u = lists[0] if len(lists) == 1 else BitMap.union(*lists)
                result = u if result is None else result & u
            if len(result) == 0:
                return []
        return [] if result is None else list(result)


class ForwardArrays:
    """Per-file sorted trigram arrays in one file (a forward index): cheapest to build and update one
    file at a time, but a query must scan every file's array."""

    def build(self, tree: Path, files: list[bytes], out: Path) -> dict:
        import numpy as np

        offs = array.array("q", [0])
        with open(out / "fwd.bin", "wb") as f:
            for _i, _size, tris in parallel_extract(tree, files, np):
                f.write(tris.tobytes())
                offs.append(offs[-1] + len(tris))
        np.save(out / "fwd_off.npy", np.frombuffer(offs, np.int64))
        return {"pairs": offs[-1]}

    def open(self, out: Path) -> None:
        import numpy as np

        self.np = np
        self.all = np.memmap(out / "fwd.bin", np.uint32, mode="r")
        self.off = np.load(out / "fwd_off.npy")

    def query(self, literal: str, fold: bool) -> list[int]:
        np = self.np
        groups = [list(g) for g in dict.fromkeys(tuple(g) for g in byte_trigram_groups(literal, fold))]
        want = np.array(sorted({t for g in groups for t in g}), np.uint32)
        gid = {t: k for k, g in enumerate(groups) for t in g}
        hit = np.flatnonzero(np.isin(self.all, want))
        if len(hit) == 0:
            return []
        doc = np.searchsorted(self.off, hit, side="right") - 1
        grp = np.array([gid[int(t)] for t in self.all[hit]], np.int64) if fold else None
        if grp is None:
            grp = np.searchsorted(want, self.all[hit])  # one group per trigram
        pairs = np.unique(doc * len(groups) + grp)
        docs, n = np.unique(pairs // len(groups), return_counts=True)
        return docs[n == len(groups)].tolist()


class Tantivy:
    """tantivy-py, an ngram(3,3) analyzer on a text field indexed with doc ids only ("basic")."""

    HEAP = 96 << 20

    def schema(self):
        import tantivy

        sb = tantivy.SchemaBuilder()
        sb.add_integer_field("id", stored=False, indexed=True, fast=True)
        sb.add_text_field("body", stored=False, tokenizer_name="ngram3", index_option="basic")
        return sb.build()

    def index(self, out: Path, create: bool):
        import tantivy

        idx = tantivy.Index(self.schema(), path=str(out), reuse=not create)
        analyzer = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.ngram(3, 3, False)).build()
        idx.register_tokenizer("ngram3", analyzer)
        return idx

    def build(self, tree: Path, files: list[bytes], out: Path) -> dict:
        import tantivy

        idx = self.index(out, True)
        w = idx.writer(heap_size=self.HEAP, num_threads=2)
        for i, rel in enumerate(files):
            data = read_file(tree, rel)
            w.add_document(tantivy.Document(id=i, body=data.decode("utf-8", "replace")))
        w.commit()
        w.wait_merging_threads()
        return {}

    def update(self, tree: Path, files: list[bytes], ids: list[int]) -> None:
        import tantivy

        w = self.idx.writer(heap_size=32 << 20, num_threads=1)
        for i in ids:
            w.delete_documents("id", i)
            w.add_document(tantivy.Document(id=i, body=read_file(tree, files[i]).decode("utf-8", "replace")))
        w.commit()
        w.wait_merging_threads()
        self.idx.reload()
        self.searcher = self.idx.searcher()

    def open(self, out: Path) -> None:
        self.idx = self.index(out, False)
        self.idx.reload()
        self.searcher = self.idx.searcher()
        self.n = self.searcher.num_docs
        self.s = self.schema()

    def query(self, literal: str, fold: bool) -> list[int]:
        import tantivy

        q = tantivy.Query
        musts = []
        for alts in char_windows(literal, fold):
            terms = [q.term_query(self.s, "body", a) for a in alts]
            if len(terms) == 1:
                musts.append((tantivy.Occur.Must, terms[0]))
            else:
                musts.append((tantivy.Occur.Must, q.boolean_query([(tantivy.Occur.Should, t) for t in terms])))
        res = self.searcher.search(q.boolean_query(musts), limit=max(1, self.n), order_by_field="id")
        return [int(h[0]) for h in res.hits]


C_EXTRACT = r"""
#include <stddef.h>
#include <stdint.h>
#include <string.h>
/* Distinct 24-bit byte trigrams of d[0..n) into out (unsorted); seen is a zeroed 2 MiB bitset, left
   zeroed. out must hold min(n, 2^24) values. */
size_t trigrams(const uint8_t *d, size_t n, uint8_t *seen, uint32_t *out) {
    if (n < 3) return 0;
    size_t k = 0;
    uint32_t t = ((uint32_t)d[0] << 8) | d[1];
    for (size_t i = 2; i < n; i++) {
        t = ((t << 8) | d[i]) & 0xFFFFFFu;
        uint8_t bit = (uint8_t)(1u << (t & 7));
        if (!(seen[t >> 3] & bit)) { seen[t >> 3] |= bit; out[k++] = t; }
    }
    for (size_t j = 0; j < k; j++) seen[out[j] >> 3] = 0;
    return k;
}

/* Big files: set the bits of d's trigrams in seen and count the new ones; then collect_trigrams
   writes them (sorted) to an array of exactly that size and clears seen, scanning its 2 MiB. */
size_t mark_trigrams(const uint8_t *d, size_t n, uint8_t *seen) {
    if (n < 3) return 0;
    size_t k = 0;
    uint32_t t = ((uint32_t)d[0] << 8) | d[1];
    for (size_t i = 2; i < n; i++) {
        t = ((t << 8) | d[i]) & 0xFFFFFFu;
        uint8_t bit = (uint8_t)(1u << (t & 7));
        if (!(seen[t >> 3] & bit)) { seen[t >> 3] |= bit; k++; }
    }
    return k;
}

size_t collect_trigrams(uint8_t *seen, uint32_t *out) {
    size_t k = 0;
    uint64_t *w = (uint64_t *)seen;
    for (size_t i = 0; i < (1u << 24) / 64; i++) {
        uint64_t x = w[i];
        if (!x) continue;
        w[i] = 0;
        while (x) { out[k++] = (uint32_t)(i * 64 + __builtin_ctzll(x)); x &= x - 1; }
    }
    return k;
}

/* (trigram << 32 | doc) keys for one file's trigrams */
void keys_append(uint64_t *dst, const uint32_t *tris, size_t n, uint32_t doc) {
    for (size_t i = 0; i < n; i++) dst[i] = ((uint64_t)tris[i] << 32) | doc;
}

/* Stable LSD radix sort of keys by their trigram (bits 32..55), 2 passes of 12 bits; tmp holds n
   keys. Keys whose docs ascend (a run; runs concatenated in doc order) end up sorted by (trigram,
   doc). */
void sort_by_trigram(uint64_t *a, size_t n, uint64_t *tmp) {
    static size_t count[4096];
    uint64_t *src = a, *dst = tmp;
    for (int pass = 0; pass < 2; pass++) {
        int shift = 32 + 12 * pass;
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++) count[(src[i] >> shift) & 4095]++;
        size_t sum = 0;
        for (int b = 0; b < 4096; b++) { size_t c = count[b]; count[b] = sum; sum += c; }
        for (size_t i = 0; i < n; i++) dst[count[(src[i] >> shift) & 4095]++] = src[i];
        uint64_t *t = src; src = dst; dst = t;
    }
}

/* off[b] = index of the first key whose 16-bit trigram prefix is >= b, for b in 0..65536 */
void bucket_offsets(const uint64_t *a, size_t n, int64_t *off) {
    size_t i = 0;
    for (uint32_t b = 0; b <= 65536; b++) {
        while (i < n && (a[i] >> 40) < b) i++;
        off[b] = (int64_t)i;
    }
}

/* sorted keys -> distinct trigrams, their start offsets (k + 1 values) and the docs; returns k */
size_t split_keys(const uint64_t *a, size_t n, uint32_t *tris, int64_t *starts, uint32_t *docs) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t t = (uint32_t)(a[i] >> 32);
        if (i == 0 || t != (uint32_t)(a[i - 1] >> 32)) { tris[k] = t; starts[k] = (int64_t)i; k++; }
        docs[i] = (uint32_t)a[i];
    }
    starts[k] = (int64_t)n;
    return k;
}
"""


def compile_c(out: Path) -> ctypes.CDLL:
    src, so = out / "trigrams.c", out / "trigrams.so"
    src.write_text(C_EXTRACT)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    lib = ctypes.CDLL(str(so))
    src.unlink()
    so.unlink()  # the mapping stays valid
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lib.trigrams.restype = sz
    lib.trigrams.argtypes = [ctypes.c_char_p, sz, vp, vp]
    lib.mark_trigrams.restype = sz
    lib.mark_trigrams.argtypes = [ctypes.c_char_p, sz, vp]
    lib.collect_trigrams.restype = sz
    lib.collect_trigrams.argtypes = [vp, vp]
    lib.keys_append.restype = None
    lib.keys_append.argtypes = [vp, ctypes.c_char_p, sz, ctypes.c_uint32]
    lib.sort_by_trigram.restype = None
    lib.sort_by_trigram.argtypes = [vp, sz, vp]
    lib.bucket_offsets.restype = None
    lib.bucket_offsets.argtypes = [vp, sz, vp]
    lib.split_keys.restype = sz
    lib.split_keys.argtypes = [vp, sz, vp, vp, vp]
    return lib


def addr(buf, offset: int = 0) -> int:
    """Address of a writable buffer (bytearray or array.array) at a byte offset."""
    if isinstance(buf, array.array):
        return buf.buffer_info()[0] + offset
    return ctypes.addressof(ctypes.c_char.from_buffer(buf, offset))


class CExtract:
    """Not an index: how fast a compiled helper of our own (20 lines of C, called through ctypes,
    which releases the GIL) extracts the distinct trigrams on 2 threads, for comparison with numpy's
    extraction and FTS5's tokenizer. Needs a C compiler; the build only extracts and counts."""

    def build(self, tree: Path, files: list[bytes], out: Path) -> dict:
        from concurrent.futures import ThreadPoolExecutor

        so = out / "trigrams.so"
        src = out / "trigrams.c"
        src.write_text(C_EXTRACT)
        t = time.perf_counter()
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
        compile_s = time.perf_counter() - t
        lib = ctypes.CDLL(str(so))
        lib.trigrams.restype = ctypes.c_size_t
        lib.trigrams.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
        local = threading.local()

        def job(rel: bytes) -> int:
            if not hasattr(local, "seen"):
                local.seen = ctypes.create_string_buffer(1 << 21)
                local.out = ctypes.create_string_buffer(4 << 20)
            data = read_file(tree, rel)
            need = 4 * min(len(data), 1 << 24)
            if need > len(local.out):
                local.out = ctypes.create_string_buffer(need)
            return lib.trigrams(data, len(data), local.seen, local.out)

        t = time.perf_counter()
        with ThreadPoolExecutor(2) as ex:
            pairs = sum(ex.map(job, files, chunksize=64))
        so.unlink()
        src.unlink()
        return {"pairs": pairs, "compile_s": compile_s, "extract_s": time.perf_counter() - t}


class CRoaring:
    """No numpy anywhere: the C helper above extracts (2 threads), radix-sorts the runs and splits them;
    pyroaring stores the postings; queries use only bisect on memoryviews and pyroaring. This is the
    shape of the recommended daemon-side code (the C would become an extension module)."""

    RUN_PAIRS = 2_500_000
    MERGE_PAIRS = 1_000_000

    def build(self, tree: Path, files: list[bytes], out: Path) -> dict:
        from concurrent.futures import ThreadPoolExecutor

        from pyroaring import BitMap

        lib = compile_c(out)
        local = threading.local()

        def job(i: int) -> tuple[int, bytes]:
            if not hasattr(local, "seen"):
                local.seen = bytearray(1 << 21)  # 2^24 bits, one per trigram
                local.out = bytearray(4 << 20)  # room for the trigrams of a file up to 1 MiB
            data = read_file(tree, files[i])
            if len(data) <= 1 << 20:
                k = lib.trigrams(data, len(data), addr(local.seen), addr(local.out))
                return i, bytes(memoryview(local.out)[: 4 * k])
            out = bytearray(4 * lib.mark_trigrams(data, len(data), addr(local.seen)))
            lib.collect_trigrams(addr(local.seen), addr(out) if out else None)
            return i, bytes(out)

        tmp = out / "runs"
        tmp.mkdir()
        runs: list[tuple[Path, array.array]] = []
        hist = [0] * (1 << 16)
        run = bytearray(8 * self.RUN_PAIRS)
        scratch = bytearray(8 * self.RUN_PAIRS)

        def spill(buf: bytearray, n: int, work: bytearray) -> None:
            lib.sort_by_trigram(addr(buf), n, addr(work))
            off = array.array("q", bytes(8 * ((1 << 16) + 1)))
            lib.bucket_offsets(addr(buf), n, addr(off))
            for b in range(1 << 16):
                hist[b] += off[b + 1] - off[b]
            path = tmp / f"run{len(runs):04d}.bin"
            with open(path, "wb") as f:
                f.write(memoryview(buf)[: 8 * n])
            runs.append((path, off))

        t_extract = time.perf_counter()
        held = 0
        with ThreadPoolExecutor(2) as ex:
            window = 8
            futs = [ex.submit(job, i) for i in range(min(window, len(files)))]
            nxt = len(futs)
            for k in range(len(files)):
                i, tris = futs[k].result()
                futs[k] = None
                if nxt < len(files):
                    futs.append(ex.submit(job, nxt))
                    nxt += 1
                n = len(tris) // 4
                if n == 0:
                    continue
                if n > self.RUN_PAIRS:  # one file with more distinct trigrams than a run holds
                    big, work = bytearray(8 * n), bytearray(8 * n)
                    lib.keys_append(addr(big), tris, n, i)
                    spill(big, n, work)
                    continue
                if held + n > self.RUN_PAIRS:
                    spill(run, held, scratch)
                    held = 0
                lib.keys_append(addr(run, 8 * held), tris, n, i)
                held += n
        if held:
            spill(run, held, scratch)
        del run
        t_extract = time.perf_counter() - t_extract

        t_merge = time.perf_counter()
        cum = list(itertools.accumulate(hist))
        bounds = [0]
        while bounds[-1] < (1 << 16):
            base = cum[bounds[-1] - 1] if bounds[-1] else 0
            nxt = bisect.bisect_right(cum, base + self.MERGE_PAIRS)
            bounds.append(max(nxt, bounds[-1] + 1))
        bounds[-1] = 1 << 16
        fds = [os.open(path, os.O_RDONLY) for path, _ in runs]
        dict_t, dict_off, dict_n = array.array("I"), array.array("q"), array.array("I")
        offset = 0
        with open(out / "postings.bin", "wb") as post:
            for lo, hi in itertools.pairwise(bounds):
                total = sum(off[hi] - off[lo] for _, off in runs)
                if total == 0:
                    continue
                keys = bytearray(8 * total)
                pos = 0
                for fd, (_path, off) in zip(fds, runs, strict=True):
                    a, b = off[lo], off[hi]
                    if b > a:
                        keys[pos : pos + 8 * (b - a)] = os.pread(fd, 8 * (b - a), 8 * a)
                        pos += 8 * (b - a)
                if len(scratch) < 8 * total:
                    scratch = bytearray(8 * total)
                lib.sort_by_trigram(addr(keys), total, addr(scratch))
                tris = array.array("I", bytes(4 * total))
                starts = array.array("q", bytes(8 * (total + 1)))
                docs = array.array("I", bytes(4 * total))
                k = lib.split_keys(addr(keys), total, addr(tris), addr(starts), addr(docs))
                del keys
                for j in range(k):
                    a, b = starts[j], starts[j + 1]
                    bm = BitMap(docs[a:b])
                    bm.run_optimize()
                    blob = bm.serialize()
                    post.write(blob)
                    dict_t.append(tris[j])
                    dict_off.append(offset)
                    dict_n.append(b - a)
                    offset += len(blob)
        dict_off.append(offset)
        for fd in fds:
            os.close(fd)
        for name, arr in (("dict_tri.bin", dict_t), ("dict_off.bin", dict_off), ("dict_n.bin", dict_n)):
            with open(out / name, "wb") as f:
                arr.tofile(f)
        shutil.rmtree(tmp)
        return {"extract_s": t_extract, "merge_s": time.perf_counter() - t_merge, "runs": len(runs),
                "trigrams": len(dict_t), "pairs": cum[-1]}  # fmt: skip

    def open(self, out: Path) -> None:
        import mmap

        self.maps = {}
        for name, code in (("dict_tri", "I"), ("dict_off", "q"), ("dict_n", "I"), ("postings", None)):
            with open(out / f"{name}.bin", "rb") as f:
                m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size else b""
            self.maps[name] = memoryview(m).cast(code) if code and len(m) else (m if code is None else [])
        self.tri, self.off, self.cnt = self.maps["dict_tri"], self.maps["dict_off"], self.maps["dict_n"]
        self.post = self.maps["postings"]

    def _find(self, t: int) -> int:
        j = bisect.bisect_left(self.tri, t)
        return j if j < len(self.tri) and self.tri[j] == t else -1

    def query(self, literal: str, fold: bool) -> list[int]:
        from pyroaring import BitMap, FrozenBitMap

        sized = []
        for g in byte_trigram_groups(literal, fold):
            js = [j for j in (self._find(t) for t in g) if j >= 0]
            sized.append((sum(self.cnt[j] for j in js), js))
        sized.sort(key=lambda x: x[0])
        result = None
        for n, js in sized:
            if n == 0:
                return []
            lists = [FrozenBitMap.deserialize(self.post[self.off[j] : self.off[j + 1]]) for j in js]
            u = lists[0] if len(lists) == 1 else BitMap.union(*lists)
            result = u if result is None else result & u
            if not result:
                return []
        return [] if result is None else list(result)


METHODS = {
    "fts5-1t": lambda: Fts5(1),
    "fts5-2t": lambda: Fts5(2),
    "np-varint": lambda: NumpyPostings("varint"),
    "np-roaring": lambda: NumpyPostings("roaring"),
    "forward": ForwardArrays,
    "tantivy": Tantivy,
    "c-extract": CExtract,
    "c-roaring": CRoaring,
}


def child_build(method: str, tree: Path, list_file: Path, out: Path) -> None:
    files = read_list(list_file)
    impl = METHODS[method]()
    rss0 = peak_rss_mb()
    peaks = {"RssAnon": 0, "RssFile": 0}
    stop = threading.Event()

    def sample() -> None:  # VmHWM counts mapped file pages too: tell anonymous memory apart
        while not stop.wait(0.05):
            with open("/proc/self/status") as f:
                for line in f:
                    key = line.split(":")[0]
                    if key in peaks:
                        peaks[key] = max(peaks[key], int(line.split()[1]))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    w0, c0 = time.perf_counter(), cpu_s()
    extra = impl.build(tree, files, out)
    wall, cpu = time.perf_counter() - w0, cpu_s() - c0
    stop.set()
    sampler.join()
    emit({"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": peak_rss_mb(), "rss_before_mb": rss0,
          "peak_anon_mb": peaks["RssAnon"] / 1024, "peak_file_mb": peaks["RssFile"] / 1024,
          "index_bytes": dir_bytes(out), **extra})  # fmt: skip


def child_query(method: str, out: Path, truth_file: Path, tree: Path, list_file: Path) -> None:
    truth = json.loads(truth_file.read_text())
    impl = METHODS[method]()
    t0 = time.perf_counter()
    impl.open(out)
    res: dict = {"open_ms": (time.perf_counter() - t0) * 1000}
    repeats = 3 if method == "forward" else QUERY_REPEATS  # a forward index scans everything per query
    res["repeats"] = repeats
    for name, literal, fold in QUERIES:
        times = []
        cands: list[int] = []
        for _ in range(repeats):
            t = time.perf_counter()
            cands = impl.query(literal, fold)
            times.append((time.perf_counter() - t) * 1000)
        got = {int(x) for x in cands}
        need = set(truth[name])
        res[name] = {"ms": statistics.median(times), "first_ms": times[0], "candidates": len(got),
                     "matching": len(need), "missed": len(need - got)}  # fmt: skip
    if hasattr(impl, "update"):  # rewrite 1,000 files spread over the tree, then query again
        files = read_list(list_file)
        ids = list(range(0, len(files), max(1, len(files) // 1000)))[:1000]
        t = time.perf_counter()
        impl.update(tree, files, ids)
        res["update_1000_ms"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        impl.query("_SUSPEND", False)
        res["suspend_after_update_ms"] = (time.perf_counter() - t) * 1000
    res["peak_rss_mb"] = peak_rss_mb()
    emit(res)


# -------------------------------------------------------------------------------- A: orchestration


# glibc raises its mmap threshold after big frees (up to 32 MiB), after which numpy's large temporaries
# come from arenas that are not given back: RSS then grows to ~270 MB instead of ~140 MB. A fixed
# threshold keeps large blocks in mmap (the daemon can set it with mallopt through ctypes).
CHILD_ENV = {m: {"MALLOC_MMAP_THRESHOLD_": "262144"} for m in ("np-varint", "np-roaring", "c-roaring")}


def run_child(args: list[str], timeout: float = 1800, env: dict | None = None) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, timeout=timeout, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (done.stderr.strip().splitlines() or ["no result"])[-1][:300]}


def file_list(tree: Path, work: Path, name: str) -> tuple[Path, list[bytes], int]:
    out = subprocess.run([RG, "--files", "-0", "--sort", "path"], cwd=tree, capture_output=True, check=True).stdout
    files = out.split(b"\0")[:-1]
    lf = work / f"{name}.list"
    lf.write_bytes(out)
    total = sum(os.stat(os.path.join(os.fsencode(tree), f)).st_size for f in files)
    return lf, files, total


def rg_truth(tree: Path, files: list[bytes], work: Path, name: str) -> Path:
    index = {f: i for i, f in enumerate(files)}
    truth = {}
    for qname, literal, fold in QUERIES:
        argv = [RG, "-l", "-0", "--fixed-strings", *(["-i"] if fold else ["-s"]), "--", literal]
        done = subprocess.run(argv, cwd=tree, capture_output=True, check=False)
        truth[qname] = sorted(index[f] for f in done.stdout.split(b"\0")[:-1] if f in index)
    tf = work / f"{name}.truth.json"
    tf.write_text(json.dumps(truth))
    return tf


def section_a(tree: Path, name: str, methods: list[str], rounds: int, work: Path) -> dict:
    lf, files, total = file_list(tree, work, name)
    tf = rg_truth(tree, files, work, name)
    # warm the page cache once so that no alternative pays the first read
    subprocess.run([RG, "-c", "zq_warm_the_cache_zq"], cwd=tree, capture_output=True, check=False)
    rg_times = []
    results: dict = {m: [] for m in methods}
    for r in range(rounds):
        order = methods[r % len(methods) :] + methods[: r % len(methods)]
        for m in order:
            out = Path(tempfile.mkdtemp(prefix=f"{m}.", dir=work))
            print(f"  [{name}] round {r + 1}/{rounds}: {m} build", flush=True)
            b = run_child(["_build", m, str(tree), str(lf), str(out)], env=CHILD_ENV.get(m))
            q = {}
            if "error" not in b and hasattr(METHODS[m](), "query"):
                q = run_child(["_query", m, str(out), str(tf), str(tree), str(lf)])
            results[m].append({"build": b, "query": q})
            if "error" in b or "error" in q:
                print(f"    {m}: {b.get('error') or q.get('error')}", flush=True)
            shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        subprocess.run([RG, "-l", "-s", "--fixed-strings", "_SUSPEND"], cwd=tree, capture_output=True, check=False)
        rg_times.append((time.perf_counter() - t) * 1000)
    return {"tree": str(tree), "files": len(files), "bytes": total, "rg_l_suspend_ms": rg_times, "results": results}


def print_a(res: dict) -> list[str]:
    lines = [
        f"### A. Trigram index of {res['tree']} ({res['files']:,} files, {res['bytes'] / 1e6:,.0f} MB)",
        "",
        f"bare `rg -l _SUSPEND` over the tree: {med_range(res['rg_l_suspend_ms'])} ms",
        "",
        "| method | build wall s | build CPU s | peak RSS MB (VmHWM) | of it anon / file MB | index MB | × text "
        "| open ms (incl. import) | rewrite 1,000 files ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m, runs in res["results"].items():
        b = [x["build"] for x in runs if "error" not in x["build"]]
        q = [x["query"] for x in runs if x["query"] and "error" not in x["query"]]
        if not b:
            err = runs[0]["build"].get("error", "?") if runs else "?"
            lines.append(f"| {m} | failed: {err} | | | | | | | |")
            continue
        size = statistics.median(x["index_bytes"] for x in b)
        if not size:
            lines.append(
                f"| {m} | {med_range([x['wall_s'] for x in b])} | {med_range([x['cpu_s'] for x in b])} | "
                "(not measured: the harness holds every future) | | extraction only, no index | | | |"
            )
            continue
        lines.append(
            f"| {m} | {med_range([x['wall_s'] for x in b])} | {med_range([x['cpu_s'] for x in b])} | "
            f"{med_range([x['peak_rss_mb'] for x in b], '{:.0f}')} | "
            f"{med_range([x['peak_anon_mb'] for x in b], '{:.0f}')} / "
            f"{med_range([x['peak_file_mb'] for x in b], '{:.0f}')} | "
            f"{size / 1e6:,.0f} | {size / res['bytes']:.2f} | {med_range([x['open_ms'] for x in q])} | "
            f"{med_range([x['update_1000_ms'] for x in q if 'update_1000_ms' in x], '{:.0f}')} |"
        )
    lines += ["", "| method | " + " | ".join(f"`{n}` ms (candidates / matching)" for n, _, _ in QUERIES) + " |"]
    lines.append("|---|" + "---|" * len(QUERIES))
    for m, runs in res["results"].items():
        q = [x["query"] for x in runs if x["query"] and "error" not in x["query"]]
        if not q:
            continue
        cells = []
        for n, _, _ in QUERIES:
            c = q[-1][n]
            miss = f", **{c['missed']} missed**" if any(x[n]["missed"] for x in q) else ""
            ms = med_range([x[n]["ms"] for x in q], "{:.2f}")
            cells.append(f"{ms} ({c['candidates']:,} / {c['matching']:,}{miss})")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    extra = []
    for m, runs in res["results"].items():
        b = [x["build"] for x in runs if "error" not in x["build"]]
        names = ("optimize_s", "compile_s", "extract_s", "merge_s", "runs", "trigrams", "pairs")
        keys = [k for k in names if b and k in b[0]]
        if keys:
            extra.append(f"- {m}: " + ", ".join(f"{k} {med_range([x[k] for x in b])}" for k in keys))
    return [*lines, "", *extra, ""]


# ------------------------------------------------------------------------ A: dependency size/import


DEPS = {
    "sqlite3 (stdlib + libsqlite3)": ("sqlite3", None),
    "numpy": ("numpy", "numpy"),
    "pyroaring": ("pyroaring", "pyroaring"),
    "tantivy": ("tantivy", "tantivy"),
    "inotify_simple": ("inotify_simple", "inotify_simple"),
    "watchdog (inotify observer)": ("watchdog.observers.inotify", "watchdog"),
    "ctypes (stdlib)": ("ctypes", None),
}


def dep_files(dist: str | None, module: str) -> list[Path]:
    if dist is None:  # standard library: the module's extension and the shared libraries it links
        mod = {"sqlite3": "_sqlite3", "ctypes": "_ctypes"}[module]
        spec = importlib.util.find_spec(mod)
        so = Path(spec.origin)
        paths = [so]
        ldd = subprocess.run(["ldd", str(so)], capture_output=True, text=True, check=False).stdout
        for line in ldd.splitlines():
            if "=>" in line and ("sqlite" in line or "ffi" in line):
                paths.append(Path(line.split("=>")[1].split("(")[0].strip()).resolve())
        pkg = Path(importlib.util.find_spec(module).origin).parent
        paths += [p for p in pkg.rglob("*.py") if "test" not in p.parts]
        return paths
    from importlib import metadata

    d = metadata.distribution(dist)
    out = []
    for f in d.files or []:
        p = Path(d.locate_file(f))
        if p.is_file() and "dist-info" not in str(f) and "__pycache__" not in str(f) and "/tests/" not in str(f):
            out.append(p)
    return out


def section_deps(repeats: int) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="idxbench-strip.") as d:
        return _section_deps(repeats, Path(d))


def _section_deps(repeats: int, strip_dir: Path) -> list[dict]:
    rows: list[dict] = []
    for label, (module, dist) in DEPS.items():
        try:
            paths = dep_files(dist, module)
        except Exception as e:  # a missing optional package is reported
            rows.append({"dep": label, "error": str(e)})
            continue
        native = [p for p in paths if ".so" in p.name]
        total = sum(p.stat().st_size for p in paths)
        nat = sum(p.stat().st_size for p in native)
        rows.append({"dep": label, "module": module, "files": len(paths), "bytes": total, "native_bytes": nat,
                     "native": sorted(p.name for p in native if p.stat().st_size > 300_000), "import_ms": [],
                     "marginal_ms": [], "wall_ms": [], "copy_ms": []})  # fmt: skip
        # the spec strips binaries (strip=True): measure what would really be bundled
        stripped = []
        for k, src in enumerate(native):
            dst = strip_dir / f"{len(rows)}-{k}-{src.name}"
            shutil.copyfile(src, dst)
            if shutil.which("strip"):
                subprocess.run(["strip", str(dst)], capture_output=True, check=False)
            stripped.append(dst)
        rows[-1]["stripped_native_bytes"] = sum(p.stat().st_size for p in stripped)
        rows[-1]["paths"] = [str(p) for p in stripped]
    base = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-S", "-c", "pass"], check=True)
        base.append((time.perf_counter() - t) * 1000)
        for row in rows:
            if "error" in row:
                continue
            t = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", f"import {row['module']}"],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            row["wall_ms"].append((time.perf_counter() - t) * 1000)
            top = row["module"]
            cum = 0
            for line in done.stderr.splitlines():
                parts = [p.strip() for p in line.split("|")]
                if len(parts) == 3 and parts[2] == top:
                    cum = int(parts[1])
            row["import_ms"].append(cum / 1000)
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", f"import asyncio, json, ctypes; import {row['module']}"],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            cum = 0
            for line in done.stderr.splitlines():
                parts = [p.strip() for p in line.split("|")]
                if len(parts) == 3 and parts[2] == top:
                    cum = int(parts[1])
            row["marginal_ms"].append(cum / 1000)
            # what onefile does at each start with uncompressed binaries: copy them out, 4 KiB writes
            t = time.perf_counter()
            with tempfile.TemporaryDirectory(dir="/tmp") as d:
                for k, p in enumerate(row["paths"]):
                    with open(p, "rb") as src, open(os.path.join(d, str(k)), "wb", buffering=0) as dst:
                        while chunk := src.read(4096):
                            dst.write(chunk)
            row["copy_ms"].append((time.perf_counter() - t) * 1000)
    for row in rows:
        row.pop("paths", None)
    rows.append({"dep": "python -S -c pass", "wall_ms": base})
    return rows


def print_deps(rows: list[dict]) -> list[str]:
    lines = [
        "### Dependencies: what the onefile executable would carry and unpack at every start",
        "",
        "| dependency | files | all MB | native (.so) MB | stripped native MB | big native files "
        "| import ms (-X importtime) | import ms after asyncio, json, ctypes | copy its stripped .so out, ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['dep']} | not installed: {r['error']} | | | | | | | |")
        elif "files" not in r:
            wall = med_range(r["wall_ms"])
            lines.append(f"| {r['dep']} (interpreter start, for scale) | | | | | | wall {wall} | | |")
        else:
            lines.append(
                f"| {r['dep']} | {r['files']} | {r['bytes'] / 1e6:.1f} | {r['native_bytes'] / 1e6:.1f} | "
                f"{r['stripped_native_bytes'] / 1e6:.1f} | "
                f"{', '.join(r['native']) or '—'} | {med_range(r['import_ms'])} | {med_range(r['marginal_ms'])} | "
                f"{med_range(r['copy_ms'])} |"
            )
    return [*lines, ""]


# ------------------------------------------------------------------------------------ B: file list


def glob_rx(kind: str) -> str:
    # `**/*.x` and a selective `d001/e00*/**/g01?.txt` (scale tree) / `drivers/net/**/*.h` (kernel)
    return {
        "x": r"(?:[^\n]*/)?[^/\n]*\.x",
        "x-simple": r"[^\n]*\.x",  # the same set of paths (a path ends in .x iff its name does)
        "c": r"(?:[^\n]*/)?[^/\n]*\.c",
        "sel-scale": r"d001/e00[^/\n]*/(?:[^\n]*/)?g01[^/\n]\.txt",
        "sel-kernel": r"drivers/net/(?:[^\n]*/)?[^/\n]*\.h",
    }[kind]


def child_filelist(tree: Path, list_file: Path, rep: str, patterns: list[str]) -> None:
    import gc
    import tracemalloc

    raw = read_list(list_file)
    entries = []
    for rel in raw:
        st = os.lstat(os.path.join(os.fsencode(tree), rel))
        entries.append((st.st_mtime_ns, rel.decode("utf-8", "surrogateescape")))
    t = time.perf_counter()
    entries.sort()
    sort_ms = (time.perf_counter() - t) * 1000
    del raw
    gc.collect()
    res: dict = {"rep": rep, "n": len(entries), "sort_ms": sort_ms}

    def make() -> object:
        if rep == "tuples":  # fresh objects, as the daemon would hold them
            return [((m + 1) - 1, p.encode().decode()) for m, p in entries]
        if rep == "blob":
            return ("\n".join(p for _, p in entries) + "\n", array.array("q", (m for m, _ in entries)))
        # sqlite (in memory), a table clustered on (mtime, path)
        db = sqlite3.connect(":memory:")
        db.execute("CREATE TABLE f(mtime INTEGER, path TEXT, PRIMARY KEY(mtime, path)) WITHOUT ROWID")
        db.executemany("INSERT INTO f VALUES(?, ?)", entries)
        db.commit()
        return db

    # RSS first (freed memory is kept for reuse, so a second build would show no growth), then the
    # Python objects counted by tracemalloc (whose own bookkeeping would have inflated that RSS)
    rss0 = rss_mb()
    data = make()
    res["rss_delta_mb"] = rss_mb() - rss0
    del data
    gc.collect()
    tracemalloc.start()
    data = make()
    res["tracemalloc_mb"] = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    entries.clear()
    gc.collect()
    for pat in patterns:
        body = glob_rx(pat)
        timings = {}
        if rep == "tuples":
            rx = re.compile(body)
            fm = rx.fullmatch
            for _ in range(2):
                t = time.perf_counter()
                hits = [p for _, p in data if fm(p)]
                timings.setdefault("per_path_ms", []).append((time.perf_counter() - t) * 1000)
            res[pat] = {"hits": len(hits), "per_path_ms": min(timings["per_path_ms"])}
            if pat == "x-simple":  # what a suffix fast path would cost instead of a regex
                t = time.perf_counter()
                hits = [p for _, p in data if p.endswith(".x")]
                res[pat]["endswith_ms"] = (time.perf_counter() - t) * 1000
        elif rep == "blob":
            blob = data[0]
            rxm = re.compile(f"^(?:{body})$", re.MULTILINE)
            for _ in range(2):
                t = time.perf_counter()
                hits = rxm.findall(blob)
                timings.setdefault("findall_ms", []).append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                ends = [m.start() for m in rxm.finditer(blob)]
                timings.setdefault("finditer_ms", []).append((time.perf_counter() - t) * 1000)
            res[pat] = {"hits": len(hits), "findall_ms": min(timings["findall_ms"]),
                        "finditer_ms": min(timings["finditer_ms"]), "hits_iter": len(ends)}  # fmt: skip
        else:
            rx = re.compile(body)
            data.create_function("rx", 1, lambda s, fm=rx.fullmatch: fm(s) is not None, deterministic=True)
            t = time.perf_counter()
            hits = data.execute("SELECT path FROM f WHERE rx(path) ORDER BY mtime, path").fetchall()
            res[pat] = {"hits": len(hits), "sql_udf_ms": (time.perf_counter() - t) * 1000}
    if rep == "sqlite":
        with tempfile.TemporaryDirectory() as d:
            disk = sqlite3.connect(os.path.join(d, "f.db"))
            data.backup(disk)
            disk.close()
            res["disk_mb"] = os.path.getsize(os.path.join(d, "f.db")) / 2**20
    emit(res)


def section_b(trees: list[tuple[str, Path]], rounds: int, work: Path) -> dict:
    out = {}
    for name, tree in trees:
        lf, files, _ = file_list(tree, work, name + "-b")
        pats = ["x", "x-simple", "sel-scale"] if name.startswith("scale") else ["c", "sel-kernel"]
        out[name] = {"files": len(files), "patterns": pats, "runs": {r: [] for r in ("tuples", "blob", "sqlite")}}
        reps = ["tuples", "blob", "sqlite"]
        for r in range(rounds):
            for rep in reps[r % 3 :] + reps[: r % 3]:
                print(f"  [{name}] round {r + 1}/{rounds}: file list as {rep}", flush=True)
                out[name]["runs"][rep].append(run_child(["_filelist", str(tree), str(lf), rep, ",".join(pats)]))
    return out


def print_b(res: dict) -> list[str]:
    lines = ["### B. File list for glob: (mtime_ns, path) sorted, held in memory", ""]
    for name, r in res.items():
        pats = r["patterns"]
        lines += [
            f"{name}: {r['files']:,} paths",
            "",
            "| representation | tracemalloc MB | RSS delta MB | "
            + " | ".join(f"filter `{glob_rx(p)}` ms (hits)" for p in pats)
            + " |",
            "|---|---|---|" + "---|" * len(pats),
        ]
        for rep, runs in r["runs"].items():
            ok = [x for x in runs if "error" not in x]
            if not ok:
                lines.append(f"| {rep} | failed: {runs[0].get('error') if runs else '?'} | | |")
                continue
            cells = []
            for p in pats:
                if rep == "tuples":
                    ms = med_range([x[p]["per_path_ms"] for x in ok])
                    cells.append(f"per-path fullmatch {ms} ({ok[0][p]['hits']:,})")
                    if "endswith_ms" in ok[0][p]:
                        cells[-1] += f"; str.endswith {med_range([x[p]['endswith_ms'] for x in ok])}"
                elif rep == "blob":
                    cells.append(
                        f"findall {med_range([x[p]['findall_ms'] for x in ok])}, finditer "
                        f"{med_range([x[p]['finditer_ms'] for x in ok])} ({ok[0][p]['hits']:,})"
                    )
                else:
                    ms = med_range([x[p]["sql_udf_ms"] for x in ok])
                    cells.append(f"SQL + Python UDF {ms} ({ok[0][p]['hits']:,})")
            disk = f" (on disk {ok[0]['disk_mb']:.0f} MB)" if "disk_mb" in ok[0] else ""
            tm = med_range([x["tracemalloc_mb"] for x in ok])
            if rep == "sqlite":
                tm = "not seen (SQLite's own allocator)"
            lines.append(
                f"| {rep}{disk} | {tm} | {med_range([x['rss_delta_mb'] for x in ok])} | " + " | ".join(cells) + " |"
            )
        sort_ms = med_range([x["sort_ms"] for runs in r["runs"].values() for x in runs if "sort_ms" in x])
        lines += ["", f"sorting the {r['files']:,} (mtime, path) tuples: {sort_ms} ms", ""]
    return lines


# --------------------------------------------------------------------------------------- C: inotify

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_ONLYDIR = 0x400, 0x800, 0x4000, 0x01000000
IN_NONBLOCK, IN_CLOEXEC = 0o4000, 0o2000000
MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
    | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
)  # fmt: skip


def all_dirs(tree: Path) -> list[str]:
    out = []
    for dirpath, dirnames, _ in os.walk(tree):
        out.append(dirpath)
        dirnames[:] = [d for d in dirnames if d != ".git"]
    return out


class RawInotify:
    """inotify through ctypes: init1(NONBLOCK), add_watch, and a read until EAGAIN."""

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = self.libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")

    def add(self, path: str) -> int:
        wd = self.libc.inotify_add_watch(self.fd, os.fsencode(path), MASK)
        if wd < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")
        return wd

    def drain(self) -> list[tuple[int, int, str]]:
        events = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return events
            pos = 0
            while pos < len(buf):
                wd, mask, _cookie, ln = __import__("struct").unpack_from("iIII", buf, pos)
                name = buf[pos + 16 : pos + 16 + ln].rstrip(b"\0").decode("utf-8", "surrogateescape")
                events.append((wd, mask, name))
                pos += 16 + ln

    def close(self) -> None:
        os.close(self.fd)


class SimpleInotify:
    def __init__(self) -> None:
        from inotify_simple import INotify

        self.ino = INotify(nonblocking=True)

    def add(self, path: str) -> int:
        return self.ino.add_watch(path, MASK)

    def drain(self) -> list[tuple[int, int, str]]:
        events = []
        while True:
            got = self.ino.read(timeout=0)
            if not got:
                return events
            events.extend((e.wd, e.mask, e.name) for e in got)

    def close(self) -> None:
        self.ino.close()


def child_watch(lib: str, tree: Path) -> None:
    res: dict = {"lib": lib}
    rss0 = rss_mb()
    t = time.perf_counter()
    dirs = all_dirs(tree)
    res["walk_ms"] = (time.perf_counter() - t) * 1000
    res["dirs"] = len(dirs)
    rss1 = rss_mb()
    if lib == "watchdog":
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers.inotify import InotifyObserver

        t = time.perf_counter()
        obs = InotifyObserver()
        obs.schedule(FileSystemEventHandler(), str(tree), recursive=True)
        obs.start()  # the emitter adds its recursive watches in start()
        res["watch_ms"] = (time.perf_counter() - t) * 1000
        res["rss_watch_mb"] = rss_mb() - rss0
        obs.stop()
        obs.join()
    else:
        w = RawInotify() if lib == "ctypes" else SimpleInotify()
        t = time.perf_counter()
        table = {}
        for d in dirs:
            table[w.add(d)] = d
        res["watch_ms"] = (time.perf_counter() - t) * 1000
        res["rss_watch_mb"] = rss_mb() - rss1
        res["watches"] = len(table)
        t = time.perf_counter()
        ev = w.drain()
        res["empty_drain_us"] = (time.perf_counter() - t) * 1e6
        res["events_at_rest"] = len(ev)
        w.close()
    res["peak_rss_mb"] = peak_rss_mb()
    emit(res)


def writer_proc(directory: str, n: int, rfd: int, wfd: int) -> None:
    """In a child process: for each byte read from rfd, write + close a file, then answer on wfd."""
    for i in range(n):
        if not os.read(rfd, 1):
            return
        with open(os.path.join(directory, f"f{i % 100}.txt"), "wb") as f:
            f.write(b"x%d\n" % i)
        os.write(wfd, b"k")


def child_ryw(lib: str, n: int) -> None:
    res: dict = {"lib": lib, "n": n}
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        if lib == "watchdog":
            from collections import deque

            from watchdog.events import FileSystemEventHandler
            from watchdog.observers.inotify import InotifyObserver

            seen: deque = deque()

            class H(FileSystemEventHandler):
                def on_closed(self, event) -> None:
                    seen.append(os.path.basename(event.src_path))

            obs = InotifyObserver()
            obs.schedule(H(), d, recursive=True)
            obs.start()
            immediate, delays = 0, []
            for i in range(n):
                name = f"f{i % 100}.txt"
                seen.clear()
                with open(os.path.join(d, name), "wb") as f:
                    f.write(b"x%d\n" % i)
                t = time.perf_counter()
                if name in seen:
                    immediate += 1
                    delays.append(0.0)
                    continue
                while name not in seen and time.perf_counter() - t < 2:
                    time.sleep(0.0001)
                delays.append((time.perf_counter() - t) * 1000)
            obs.stop()
            obs.join()
            delays.sort()
            res.update({"in_process_present": immediate, "delay_ms_median": statistics.median(delays),
                        "delay_ms_p99": delays[int(len(delays) * 0.99)], "delay_ms_max": delays[-1]})  # fmt: skip
            emit(res)
            return
        w = RawInotify() if lib == "ctypes" else SimpleInotify()
        w.add(d)
        ok, drain_us = 0, []
        for i in range(n):
            name = f"f{i % 100}.txt"
            with open(os.path.join(d, name), "wb") as f:
                f.write(b"x%d\n" % i)
            t = time.perf_counter()
            ev = w.drain()
            drain_us.append((time.perf_counter() - t) * 1e6)
            ok += any(m & IN_CLOSE_WRITE and nm == name for _, m, nm in ev)
        res["in_process_present"] = ok
        res["drain_us_median"] = statistics.median(drain_us)
        # another process writes and closes, then tells us over a pipe; we drain at once
        to_child_r, to_child_w = os.pipe()
        to_parent_r, to_parent_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(to_child_w)
            os.close(to_parent_r)
            writer_proc(d, n, to_child_r, to_parent_w)
            os._exit(0)
        os.close(to_child_r)
        os.close(to_parent_w)
        ok = 0
        for i in range(n):
            name = f"f{i % 100}.txt"
            os.write(to_child_w, b"g")
            select.select([to_parent_r], [], [])
            os.read(to_parent_r, 1)
            ev = w.drain()
            ok += any(m & IN_CLOSE_WRITE and nm == name for _, m, nm in ev)
        os.close(to_child_w)
        os.waitpid(pid, 0)
        res["cross_process_present"] = ok
        w.close()
    emit(res)


def section_c(trees: list[tuple[str, Path]], rounds: int, ryw_n: int) -> dict:
    libs = ["ctypes", "inotify_simple", "watchdog"]
    out: dict = {"watch": {}, "ryw": {}}
    for name, tree in trees:
        out["watch"][name] = {lib: [] for lib in libs}
        for r in range(rounds):
            for lib in libs[r % 3 :] + libs[: r % 3]:
                print(f"  [{name}] round {r + 1}/{rounds}: watch every directory with {lib}", flush=True)
                out["watch"][name][lib].append(run_child(["_watch", lib, str(tree)]))
    for lib in libs:
        print(f"  read-your-writes x{ryw_n}: {lib}", flush=True)
        out["ryw"][lib] = run_child(["_ryw", lib, str(ryw_n)])
    with open("/proc/sys/fs/inotify/max_user_watches") as f:
        out["max_user_watches"] = int(f.read())
    with open("/proc/sys/fs/inotify/max_queued_events") as f:
        out["max_queued_events"] = int(f.read())
    return out


def print_c(res: dict) -> list[str]:
    lines = [
        "### C. inotify: a watch on every directory",
        "",
        f"max_user_watches {res['max_user_watches']:,}, max_queued_events {res['max_queued_events']:,}",
        "",
        "| tree | library | directories | walk ms | add watches ms | RSS delta MB | peak RSS MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, libs in res["watch"].items():
        for lib, runs in libs.items():
            ok = [x for x in runs if "error" not in x]
            if not ok:
                lines.append(f"| {name} | {lib} | failed: {runs[0].get('error') if runs else '?'} | | | | |")
                continue
            note = " (walk + watches inside start())" if lib == "watchdog" else ""
            lines.append(
                f"| {name} | {lib} | {ok[0]['dirs']:,} | {med_range([x['walk_ms'] for x in ok])} | "
                f"{med_range([x['watch_ms'] for x in ok])}{note} | {med_range([x['rss_watch_mb'] for x in ok])} | "
                f"{med_range([x['peak_rss_mb'] for x in ok], '{:.0f}')} |"
            )
    lines += ["", "Read-your-writes: write + close a file, then look for its IN_CLOSE_WRITE without waiting", ""]
    lines += ["| library | in-process: present at once | another process (pipe handshake) | note |"]
    lines += ["|---|---|---|---|"]
    for lib, r in res["ryw"].items():
        if "error" in r:
            lines.append(f"| {lib} | failed: {r['error']} | | |")
        elif lib == "watchdog":
            lines.append(
                f"| {lib} | {r['in_process_present']:,} / {r['n']:,} | — | delivered by its thread after "
                f"{r['delay_ms_median']:.2f} ms median, p99 {r['delay_ms_p99']:.2f}, max {r['delay_ms_max']:.2f} |"
            )
        else:
            lines.append(
                f"| {lib} | {r['in_process_present']:,} / {r['n']:,} | {r['cross_process_present']:,} / {r['n']:,} | "
                f"non-blocking drain {r['drain_us_median']:.1f} µs median |"
            )
    return [*lines, ""]


# ------------------------------------------------------------------------------------------- main


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        cmd, rest = sys.argv[1], sys.argv[2:]
        if cmd == "_build":
            child_build(rest[0], Path(rest[1]), Path(rest[2]), Path(rest[3]))
        elif cmd == "_query":
            child_query(rest[0], Path(rest[1]), Path(rest[2]), Path(rest[3]), Path(rest[4]))
        elif cmd == "_filelist":
            child_filelist(Path(rest[0]), Path(rest[1]), rest[2], rest[3].split(","))
        elif cmd == "_watch":
            child_watch(rest[0], Path(rest[1]))
        elif cmd == "_ryw":
            child_ryw(rest[0], int(rest[1]))
        return
    sys.path.insert(0, str(HERE))
    from bench_corpus import default_cache, kernel_tree, scale_tree

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="A,deps,B,C", help="sections: A, A-scale, deps, B, C (comma-separated)")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--kernel", type=Path, default=None)
    ap.add_argument("--scale-files", type=int, default=500_000)
    ap.add_argument("--ryw", type=int, default=10_000, help="read-your-writes trials per library")
    ap.add_argument("--out", type=Path, default=Path("bench-data/index-storage"))
    a = ap.parse_args()
    cache = a.cache or default_cache()
    kernel = a.kernel or kernel_tree(cache)
    scale = scale_tree(cache, a.scale_files)
    only = set(a.only.split(","))
    methods = a.methods.split(",")
    a.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="idxbench.", dir=os.environ.get("IDXBENCH_TMP", "/tmp")))
    results: dict = {"machine": machine(), "rounds": a.rounds}
    report: list[str] = [f"machine: {results['machine']}", ""]
    try:
        if "A" in only:
            results["A"] = section_a(kernel, "kernel", methods, a.rounds, work)
            report += print_a(results["A"])
        if "A-scale" in only:
            results["A-scale"] = section_a(scale, f"scale-{a.scale_files}", methods, a.rounds, work)
            report += print_a(results["A-scale"])
        if "deps" in only:
            results["deps"] = section_deps(max(5, a.rounds * 3))
            report += print_deps(results["deps"])
        if "B" in only:
            results["B"] = section_b([("kernel", kernel), (f"scale-{a.scale_files}", scale)], a.rounds, work)
            report += print_b(results["B"])
        if "C" in only:
            results["C"] = section_c([("kernel", kernel), (f"scale-{a.scale_files}", scale)], a.rounds, a.ryw)
            report += print_c(results["C"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
        (a.out / "results.json").write_text(json.dumps(results, indent=1))
        (a.out / "results.md").write_text("\n".join(report) + "\n")
    print("\n".join(report))
    print(f"(raw results: {a.out / 'results.json'})")


def machine() -> str:
    cpu = "?"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB, Linux {os.uname().release}, Python {sys.version.split()[0]}, "
        f"SQLite {sqlite3.sqlite_version}"
    )


if __name__ == "__main__":
    main()

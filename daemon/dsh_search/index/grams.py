"""Byte-trigram postings: a file's distinct trigrams gathered into posting lists, lists decoded, combined
and merged (sans IO). The computation of the content index (shards.py keeps the files).

**The native part.** `grams.c`, beside this module, does the work through ctypes: extracting a file's
distinct trigrams runs over every byte of the tree at a build (1.3 GB for the Linux tree), and no Python
loop over bytes comes near it. It is plain C with the C library only (no Python API, no OS calls), built
by scripts/build-native into `_grams.so` here (`_grams.dll` on Windows) and bundled into the frozen
executable by scripts/build; ctypes releases the GIL for each call, so the builder's threads extract in
parallel. Where the library is missing, of another ABI, or cannot be loaded, a pure-Python
implementation of the same functions answers the same (tests/index/test_grams.py proves the two equal):
the index is then slow to build, never wrong.

**The lists.** A trigram is three bytes, read as a number `b0 << 16 | b1 << 8 | b2`. A posting list is
the documents (positive integers, increasing) that hold a trigram, each written as a varint (LEB128) of
its difference from the one before (the first: from 0). A builder hands its postings back in trigram
order with a directory: for each trigram, its document count and its list's length in bytes.

**The text.** Trigrams are of the file's bytes as ripgrep reads them (files.Content: up to the first
NUL; a UTF-8 byte-order mark left out). A literal that ripgrep matches is matched as the bytes of its
UTF-8 form, so a file holding it holds every 3-byte window of that form: `windows(literal)` is what a
lookup asks for. No decoding, no tokenizer rules, no loss at a NUL or a malformed sequence.

Rules of this module: bytes in, bytes and arrays out; no file is opened here.
"""

from __future__ import annotations

import ctypes
import os
import sys
from array import array
from collections.abc import Iterable, Iterator

ABI = 3
LIBRARY = "_grams.dll" if sys.platform == "win32" else "_grams.so"

# A lookup's AND reads no further list once what is left is fewer than this fraction of the next list's
# documents: a list is decoded from its start (~15-20 ns a document here), so each long one costs its whole
# length to take out the few candidates it still could, where ripgrep reads a file in ~15-30 µs. Measured on
# the Linux tree (each shard ~39,000 files): `alloc_chrdev_region` (17 trigrams) leaves 57 files after its
# seven rarest in 52 µs and after all seventeen in 400-540; `blk_mq_alloc_tag_set` (18) 28 after ten in
# ~100 µs, after all in ~460; `EXPORT_SYMBOL_GPL\(devm_\w+\)` reads 20 of its 21 (its ninth still halves
# what is left).
ENOUGH_RATIO = 128

U32 = ctypes.POINTER(ctypes.c_uint32)
U64 = ctypes.POINTER(ctypes.c_uint64)


def _load() -> ctypes.CDLL | None:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY)
    if os.environ.get("DSH_SEARCH_PURE_GRAMS") == "1" or not os.path.isfile(path):
        return None
    try:
        lib = ctypes.CDLL(path)
        lib.dg_abi.restype = ctypes.c_int32
        if lib.dg_abi() != ABI:
            return None
    except (OSError, AttributeError):
        return None
    vp, sz, u8p = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
    sig: dict[str, tuple[object, list[object]]] = {
        "dg_builder_new": (vp, []),
        "dg_builder_free": (None, [vp]),
        "dg_begin": (ctypes.c_int, [vp, ctypes.c_uint32]),
        "dg_add": (ctypes.c_int, [vp, u8p, sz]),
        "dg_end": (ctypes.c_int64, [vp]),
        "dg_abandon": (None, [vp]),
        "dg_memory": (ctypes.c_uint64, [vp]),
        "dg_pairs": (ctypes.c_uint64, [vp]),
        "dg_grams": (ctypes.c_uint64, [vp]),
        "dg_directory": (ctypes.c_int, [vp, vp, vp, vp]),
        "dg_read": (ctypes.c_int64, [vp, vp, sz]),
        "dg_reset": (None, [vp]),
        "dg_release": (None, [vp]),
        "dg_decode": (ctypes.c_int, [u8p, sz, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, vp]),
        "dg_and": (sz, [vp, sz, vp, sz, vp]),
        "dg_all_of": (
            ctypes.c_int64,
            [sz, vp, vp, vp, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, vp],
        ),
        "dg_and_encoded": (
            ctypes.c_int64,
            [vp, sz, u8p, sz, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, vp],
        ),
        "dg_or": (sz, [vp, sz, vp, sz, vp]),
        "dg_positions": (None, [vp, sz, vp, sz, vp]),
        "dg_merge": (
            ctypes.c_int64,
            [ctypes.c_int, vp, vp, vp, vp, vp, vp, vp, vp, vp, sz, vp, ctypes.c_uint64, vp, vp, vp, vp],
        ),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


_lib = _load()
NATIVE = _lib is not None


class Invalid(ValueError):
    """Postings that are not as a writer writes them (a damaged or foreign file)."""


def _addr(buffer: array[int] | bytearray) -> int:
    """The address of a buffer's first item (the buffer must not be resized while it is used)."""
    if isinstance(buffer, array):
        return buffer.buffer_info()[0]
    return ctypes.addressof(ctypes.c_char.from_buffer(buffer)) if buffer else 0


def _zeros(code: str, n: int) -> array[int]:
    return array(code, bytes(array(code).itemsize * n))


# --- trigrams of a literal ------------------------------------------------------------------------------


def windows(literal: str) -> list[int]:
    """The distinct trigrams of a literal's UTF-8 form (every file that holds the literal holds them);
    none when it has no UTF-8 form (the caller then asks for nothing: no constraint)."""
    try:
        data = literal.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no file's UTF-8 holds it; ask for nothing rather than guess
        return []
    return list(dict.fromkeys((data[i] << 16) | (data[i + 1] << 8) | data[i + 2] for i in range(len(data) - 2)))


# --- the varint lists, in Python ------------------------------------------------------------------------------


def encode(docs: Iterable[int]) -> bytes:
    out = bytearray()
    prev = 0
    for doc in docs:
        delta = doc - prev
        prev = doc
        while delta >= 0x80:
            out.append((delta & 0x7F) | 0x80)
            delta >>= 7
        out.append(delta)
    return bytes(out)


def _decode_py(data: bytes, count: int, lo: int, hi: int) -> array[int]:
    out = array("I")
    doc = pos = 0
    end = len(data)
    for _ in range(count):
        delta = shift = 0
        while True:
            if pos >= end or shift > 28:
                raise Invalid("a posting list ends inside a number")
            byte = data[pos]
            pos += 1
            delta |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
        doc += delta
        if delta == 0 or doc < lo or doc > hi or doc > 0xFFFFFFFF:
            raise Invalid("a posting list is out of order or out of its segment")
        out.append(doc)
    if pos != end:
        raise Invalid("a posting list has bytes left over")
    return out


def decode(data: bytes, count: int, lo: int, hi: int) -> array[int]:
    """A list of `count` documents, each in [lo, hi], increasing; Invalid when it is not exactly that."""
    if _lib is None:
        return _decode_py(data, count, lo, hi)
    if count > len(data):  # every document takes a byte at least
        raise Invalid("a posting list is shorter than its count")
    out = _zeros("I", count)
    if _lib.dg_decode(data, len(data), count, lo, hi, _addr(out)) != 0:
        raise Invalid("a posting list is not as a writer writes it")
    return out


def both(a: array[int], b: array[int]) -> array[int]:
    """The documents in both sorted lists."""
    if _lib is None:
        other = set(b)
        return array("I", [d for d in a if d in other])
    out = _zeros("I", min(len(a), len(b)))
    n = _lib.dg_and(_addr(a), len(a), _addr(b), len(b), _addr(out))
    del out[n:]
    return out


def both_encoded(a: array[int], data: bytes, count: int, lo: int, hi: int) -> array[int]:
    """The documents of the sorted list `a` that the encoded list `data` (`count` documents in [lo, hi])
    holds too; Invalid when the part of `data` read is not as a writer writes it (the list is read only
    as far as `a` reaches, and never decoded into memory)."""
    if _lib is None:
        return both(a, _decode_py(data, count, lo, hi))
    if count > len(data):  # every document takes a byte at least
        raise Invalid("a posting list is shorter than its count")
    out = _zeros("I", len(a))
    n = _lib.dg_and_encoded(_addr(a), len(a), data, len(data), count, lo, hi, _addr(out))
    if n < 0:
        raise Invalid("a posting list is not as a writer writes it")
    del out[n:]
    return out


def all_of(lists: list[tuple[bytes, int]], lo: int, hi: int, ratio: int = ENOUGH_RATIO) -> array[int]:
    """The documents every one of the encoded `lists` ((data, count), shortest first) holds, each list's
    documents in [lo, hi]: one native call for the whole AND (the GIL released throughout), reading each
    list only as far as what is left reaches — and no further list once what is left is fewer than a
    `ratio`-th of its documents (0: every list; see ENOUGH_RATIO). Invalid when a list, as far as it is
    read, is not as a writer writes it."""
    if not lists:
        return array("I")
    if _lib is None or len(lists) == 1:
        result = decode(lists[0][0], lists[0][1], lo, hi)
        for data, count in lists[1:]:
            if not result or (ratio and len(result) * ratio < count):
                break
            result = both_encoded(result, data, count, lo, hi)
        return result
    for data, count in lists:
        if count > len(data):  # every document takes a byte at least
            raise Invalid("a posting list is shorter than its count")
    k = len(lists)
    bufs = (ctypes.c_char_p * k)(*(data for data, _ in lists))
    lens = array("Q", [len(data) for data, _ in lists])
    counts = array("I", [count for _, count in lists])
    out = _zeros("I", lists[0][1])
    n = _lib.dg_all_of(k, bufs, _addr(lens), _addr(counts), lo, hi, ratio, _addr(out))
    if n < 0:
        raise Invalid("a posting list is not as a writer writes it")
    del out[n:]
    return out


def either(a: array[int], b: array[int]) -> array[int]:
    """The documents in either sorted list."""
    if _lib is None:
        return array("I", sorted(set(a) | set(b)))
    out = _zeros("I", len(a) + len(b))
    n = _lib.dg_or(_addr(a), len(a), _addr(b), len(b), _addr(out))
    del out[n:]
    return out


def positions(docs: array[int], table: array[int]) -> array[int]:
    """For each of the sorted `docs`, its index in the sorted `table`, or -1."""
    if _lib is None:
        where = {doc: i for i, doc in enumerate(table)}
        return array("q", [where.get(d, -1) for d in docs])
    out = _zeros("q", len(docs))
    _lib.dg_positions(_addr(docs), len(docs), _addr(table), len(table), _addr(out))
    return out


# --- building ---------------------------------------------------------------------------------------------------


class Directory:
    """What a builder or a merge hands back beside the lists: trigrams in order, their document counts,
    their lists' lengths in bytes."""

    __slots__ = ("counts", "grams", "lens")

    def __init__(self, grams: array[int], counts: array[int], lens: array[int]) -> None:
        self.grams = grams
        self.counts = counts
        self.lens = lens


class Builder:
    """Postings of the documents given to it, in memory until `directory` and `read` hand them back. One
    thread at a time; documents in increasing order."""

    def __init__(self) -> None:
        self._native: int | None = None
        self._py: dict[int, list[int]] = {}
        self._doc = 0
        self._seen: set[int] = set()
        self._tail = b""
        self._py_pairs = 0
        self._pending: Iterator[bytes] | None = None
        if _lib is not None:
            handle = _lib.dg_builder_new()
            if not handle:
                raise MemoryError("the trigram builder could not allocate its tables")
            self._native = handle

    def close(self) -> None:
        if self._native is not None and _lib is not None:
            _lib.dg_builder_free(self._native)
            self._native = None

    def __del__(self) -> None:
        self.close()

    def begin(self, doc: int) -> None:
        if self._native is not None and _lib is not None:
            if _lib.dg_begin(self._native, doc) != 0:
                raise RuntimeError("the trigram builder refused a document")
            return
        self._doc, self._seen, self._tail = doc, set(), b""

    def add(self, piece: bytes) -> None:
        """The next bytes of the open document."""
        if self._native is not None and _lib is not None:
            if _lib.dg_add(self._native, piece, len(piece)) != 0:
                raise MemoryError("the trigram builder ran out of memory")
            return
        data = self._tail + piece
        self._seen.update((data[i] << 16) | (data[i + 1] << 8) | data[i + 2] for i in range(len(data) - 2))
        self._tail = data[-2:]

    def end(self) -> int:
        """Close the document: its trigrams join the postings. Returns how many distinct ones it has."""
        if self._native is not None and _lib is not None:
            n = _lib.dg_end(self._native)
            if n < 0:
                raise MemoryError("the trigram builder ran out of memory")
            return int(n)
        for gram in self._seen:
            self._py.setdefault(gram, []).append(self._doc)
        self._py_pairs += len(self._seen)
        n, self._seen = len(self._seen), set()
        return n

    def abandon(self) -> None:
        """Drop the open document."""
        if self._native is not None and _lib is not None:
            _lib.dg_abandon(self._native)
        self._seen, self._tail = set(), b""

    def memory(self) -> int:
        """Bytes the postings hold now."""
        if self._native is not None and _lib is not None:
            return int(_lib.dg_memory(self._native))
        return self._py_pairs * 40 + len(self._py) * 100

    def pairs(self) -> int:
        if self._native is not None and _lib is not None:
            return int(_lib.dg_pairs(self._native))
        return self._py_pairs

    def directory(self) -> Directory:
        """The trigrams in order with their counts and lengths; then `read` the lists, then `reset`."""
        if self._native is not None and _lib is not None:
            n = int(_lib.dg_grams(self._native))
            grams, counts, lens = _zeros("I", n), _zeros("I", n), _zeros("Q", n)
            if _lib.dg_directory(self._native, _addr(grams), _addr(counts), _addr(lens)) != 0:
                raise MemoryError("the trigram builder could not sort its postings")
            return Directory(grams, counts, lens)
        order = sorted(self._py)
        lists = [encode(self._py[g]) for g in order]
        self._pending = iter(lists)
        return Directory(
            array("I", order), array("I", [len(self._py[g]) for g in order]), array("Q", [len(x) for x in lists])
        )

    def read(self, size: int = 1 << 20) -> Iterator[bytes]:
        """The lists' bytes, in the directory's order, in pieces of at most `size`."""
        if self._native is not None and _lib is not None:
            buffer = bytearray(size)
            address = _addr(buffer)
            while True:
                n = _lib.dg_read(self._native, address, size)
                if n < 0:
                    raise RuntimeError("the trigram builder was read before its directory")
                if n == 0:
                    return
                yield bytes(buffer[:n])
        if self._pending is not None:
            yield from self._pending

    def reset(self) -> None:
        """Forget every posting: the next documents make a new segment (in the memory held so far)."""
        if self._native is not None and _lib is not None:
            _lib.dg_reset(self._native)
        self._py, self._py_pairs, self._pending = {}, 0, None

    def release(self) -> None:
        """Forget every posting and give back the memory that held them."""
        self.reset()
        if self._native is not None and _lib is not None:
            _lib.dg_release(self._native)


# --- merging ----------------------------------------------------------------------------------------------------


class Part:
    """One segment's trigrams of a range, for `merge`: its directory's slice, the bytes of their lists,
    and the segment's range of documents."""

    __slots__ = ("data", "directory", "hi", "lo")

    def __init__(self, directory: Directory, data: bytes, lo: int, hi: int) -> None:
        self.directory = directory
        self.data = data
        self.lo = lo
        self.hi = hi


def merge(parts: list[Part], dead: array[int]) -> tuple[bytes, Directory]:
    """The lists of several segments' parts (oldest first, each segment's documents above the one before)
    as one, without the documents in `dead` (sorted); Invalid when a part is not as a writer writes it."""
    total_bytes = sum(len(p.data) for p in parts)
    total_grams = sum(len(p.directory.grams) for p in parts)
    if _lib is None or len(parts) > 64:
        return _merge_py(parts, dead)
    k = len(parts)
    out = bytearray(total_bytes + 16)
    ogram, ocount, olen = _zeros("I", total_grams), _zeros("I", total_grams), _zeros("Q", total_grams)
    onum = ctypes.c_uint64(0)
    bufs = (ctypes.c_char_p * k)(*[p.data for p in parts])
    arrays = [(p.directory.grams, p.directory.counts, p.directory.lens) for p in parts]
    ptr = ctypes.c_void_p
    n = _lib.dg_merge(
        k,
        bufs,
        (ctypes.c_uint64 * k)(*[len(p.data) for p in parts]),
        (ptr * k)(*[_addr(a[0]) for a in arrays]),
        (ptr * k)(*[_addr(a[1]) for a in arrays]),
        (ptr * k)(*[_addr(a[2]) for a in arrays]),
        (ctypes.c_uint64 * k)(*[len(a[0]) for a in arrays]),
        (ctypes.c_uint32 * k)(*[p.lo for p in parts]),
        (ctypes.c_uint32 * k)(*[p.hi for p in parts]),
        _addr(dead),
        len(dead),
        _addr(out),
        len(out),
        _addr(ogram),
        _addr(ocount),
        _addr(olen),
        ctypes.addressof(onum),
    )
    if n < 0:
        raise Invalid("postings to merge are not as a writer writes them")
    m = onum.value
    del ogram[m:], ocount[m:], olen[m:]
    return bytes(out[:n]), Directory(ogram, ocount, olen)


def _merge_py(parts: list[Part], dead: array[int]) -> tuple[bytes, Directory]:
    gone = set(dead)
    lists: dict[int, list[int]] = {}
    for part in parts:
        d = part.directory
        if sum(d.lens) != len(part.data) or any(b <= a for a, b in zip(d.grams, d.grams[1:], strict=False)):
            raise Invalid("postings to merge are not as a writer writes them")
        at = 0
        for gram, count, size in zip(d.grams, d.counts, d.lens, strict=True):
            docs = _decode_py(part.data[at : at + size], count, part.lo, part.hi)
            at += size
            have = lists.setdefault(gram, [])
            if have and docs and docs[0] <= have[-1]:
                raise Invalid("segments to merge overlap")
            have.extend(docs)
    out = bytearray()
    grams, counts, lens = array("I"), array("I"), array("Q")
    for gram in sorted(lists):
        kept = [doc for doc in lists[gram] if doc not in gone]
        if kept:
            data = encode(kept)
            out += data
            grams.append(gram)
            counts.append(len(kept))
            lens.append(len(data))
    return bytes(out), Directory(grams, counts, lens)

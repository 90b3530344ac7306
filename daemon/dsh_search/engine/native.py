"""Many files stat-ed in one call: `native.c`, beside this module, through ctypes, and the same in Python
where the library is missing, of another ABI, or says it is not implemented there (Windows).

glob stats every file ripgrep lists (its modification time orders the listing) and the index checks the
signature of every rule file of grep's walk for each grep answer. Through `os.stat` each file costs
the interpreter ~1.5 us beyond the system call, which made the stat-ing of a listing of a few thousand
files cost more than ripgrep's listing itself (docs/performance.md, "The small calls"). The library makes
the same `fstatat` calls in one loop, the GIL released.

What a stat gives is six numbers per name (`FIELDS`): st_dev, st_ino, the file type (`st_mode & S_IFMT`),
st_size, st_mtime_ns, st_ctime_ns — a directory's size, mtime and ctime as -1, 0, 0 (it is known by its
identity) — or, when the name cannot be stat-ed, -errno then zeros (type 0: no file). The pure-Python
path gives the very same numbers (tests/engine/test_native.py compares the two).

Rules of this module: metadata only (nothing is opened or written); names are bytes, as the OS has them.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from array import array

ABI = 2
LIBRARY = "_native.dll" if sys.platform == "win32" else "_native.so"
FIELDS = 6
DEV, INO, TYPE, SIZE, MTIME, CTIME = range(FIELDS)
_FOLLOW = 1
_MASK = (1 << 64) - 1


def _load() -> ctypes.CDLL | None:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY)
    if os.environ.get("DSH_SEARCH_PURE_NATIVE") == "1" or not os.path.isfile(path):
        return None
    try:
        lib = ctypes.CDLL(path)
        lib.dn_abi.restype = ctypes.c_int32
        if lib.dn_abi() != ABI:
            return None
        fn = lib.dn_stat_many
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int64
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    walk = lib.dn_walk
    walk.restype = ctypes.c_int64
    walk.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_size_t,
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_size_t),
    ]
    return lib


_lib = _load()


def _signed(value: int) -> int:
    value &= _MASK
    return value - (1 << 64) if value >> 63 else value


def _stat_py(dirfd: int | None, names: list[bytes], follow: bool) -> array[int]:
    out = array("q")
    for name in names:
        try:
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=follow)
        except OSError as exc:
            out.extend((-(exc.errno or errno.EIO), 0, 0, 0, 0, 0))
            continue
        except ValueError:  # a NUL in the name: no file has it
            out.extend((-errno.ENOENT, 0, 0, 0, 0, 0))
            continue
        kind = stat.S_IFMT(st.st_mode)
        if stat.S_ISDIR(st.st_mode):
            out.extend((_signed(st.st_dev), _signed(st.st_ino), kind, -1, 0, 0))
        else:
            out.extend((_signed(st.st_dev), _signed(st.st_ino), kind, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return out


def stat_many(names: list[bytes], *, dirfd: int | None = None, follow: bool = True) -> array[int]:
    """`FIELDS` numbers for each of `names` (relative to the directory `dirfd`, or absolute), in order."""
    if not names:
        return array("q")
    if _lib is not None and not any(b"\0" in name for name in names):
        blob = b"\0".join(names) + b"\0"
        out = array("q", bytes(8 * FIELDS * len(names)))
        n = _lib.dn_stat_many(
            -1 if dirfd is None else dirfd,
            blob,
            len(blob),
            _FOLLOW if follow else 0,
            out.buffer_info()[0],
            len(out),
        )
        if n == len(names):
            return out
    return _stat_py(dirfd, names, follow)


def stat_joined(blob: bytes, count: int, *, dirfd: int | None = None, follow: bool = True) -> array[int] | None:
    """The same for `count` names already joined, each followed by a NUL (`blob`: ripgrep's `--null`
    listing as it came); None where only `stat_many` can do it (no library)."""
    if _lib is None:
        return None
    out = array("q", bytes(8 * FIELDS * count))
    n = _lib.dn_stat_many(
        -1 if dirfd is None else dirfd, blob, len(blob), _FOLLOW if follow else 0, out.buffer_info()[0], len(out)
    )
    return out if n == count else None


class TooBig(Exception):
    """A walk met more entries than its budget."""


NOT_HERE = object()  # `walk` where the library cannot walk (Windows, no library): the caller walks itself


def walk(top: bytes, prefix: bytes, skip: frozenset[bytes], budget: int) -> list[bytes] | object | None:
    """The regular files under the directory `top` (absolute, or relative to the current directory), each
    as `prefix` + its path below `top`, in no order: directories descended into, regular files listed,
    anything else (links, devices, FIFOs, sockets) and any entry named in `skip` left out — glob's listing,
    as ripgrep's `--files` makes it. None when a directory cannot be listed or an entry looked at;
    `TooBig` past `budget` entries; NOT_HERE when only Python can walk here."""
    if _lib is None or b"\0" in top or b"\0" in prefix:
        return NOT_HERE
    names = b"".join(name + b"\0" for name in sorted(skip))
    cap = 1 << 16
    while True:
        out = ctypes.create_string_buffer(cap)
        used = ctypes.c_size_t(0)
        n = _lib.dn_walk(top, prefix, len(prefix), names, len(names), budget, out, cap, ctypes.byref(used))
        if n == -3:
            cap = max(cap * 2, used.value + 1)
            continue
        if n == -2:
            raise TooBig
        if n == -4:
            return NOT_HERE
        if n < 0:
            return None
        return out.raw[: used.value].split(b"\0")[:-1] if n else []


def native() -> bool:
    """Whether the library does the work here (else Python does, the same way)."""
    return _lib is not None

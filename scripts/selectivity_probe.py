"""How many files an index of each kind would hand ripgrep for a literal, measured on a tree without
building one (docs/performance.md, part 4, "What would give the index the selectivity").

    .venv/bin/python scripts/selectivity_probe.py TREE [--rg PATH] [--bits 4,8,16] LITERAL ...

For each literal, one table row: the files (and their megabytes) that hold every byte trigram of it —
what the content index hands ripgrep today (index/grams.py) — then, of those, the files a "follow mask"
would keep (for each of the literal's trigrams, the bytes that follow it anywhere in the file, hashed
into `bits` bits, must include the byte that follows it in the literal), the files that hold every
exact 4-gram and 5-gram of it, and the files that hold it. The n-gram sets are found by ripgrep
(`-l -F -a`, each gram over the files that held the grams before it); a file's text for the masks is
read as the index reads it, up to its first NUL (ripgrep's `--text` reads past it, so a file whose
literal comes only after a NUL counts among the n-gram columns and not the index's). A measurement tool:
nothing here is the daemon's.

    .venv/bin/python scripts/selectivity_probe.py --segments SET_DIR

prints what the postings of an index set on disk (its `content-*.grams` segments, index/shards.py) take
now and would take with a mask of 4 or 8 bits folded into each posting's varint (`delta << bits | mask`),
or kept as one more byte a posting: the price on disk of the masks above.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy
    from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "daemon"))

import bench_bound  # noqa: E402 - scripts/ is not a package
from dsh_search.index import shards  # noqa: E402
from dsh_search.osdep import argv_names_budget  # noqa: E402


def holding(rg: str, tree: str, literals: list[bytes], files: list[str] | None = None) -> list[str]:
    """The files under `tree` (or among `files`) that hold every one of `literals`, as ripgrep finds them;
    names beyond one command line are split as scripts/bench_bound.py splits them."""
    for literal in literals:
        argv = [rg, "--no-config", "--files-with-matches", "--null", "--fixed-strings", "--text", "--no-ignore"]
        argv += ["--hidden", "--regexp=" + os.fsdecode(literal)]
        if files is None:
            runs = [[b"."]]
        else:
            runs = bench_bound._split([os.fsencode(name) for name in files], argv_names_budget())
        found = b"".join(
            subprocess.run([*argv, "--", *run], cwd=tree, capture_output=True, check=False).stdout for run in runs
        )
        files = [os.fsdecode(name) for name in found.split(b"\0") if name]
        if not files:
            break
    return files if files is not None else []


def grams(literal: bytes, n: int) -> list[bytes]:
    return list(dict.fromkeys(literal[i : i + n] for i in range(len(literal) - n + 1)))


def bucket(byte: int, bits: int) -> int:
    return ((byte * 0x9E3779B1) >> 7) % bits


def follows(text: bytes, gram: bytes, bits: int) -> int:
    """The mask of the bytes that follow `gram` in `text`, each hashed into one of `bits` bits."""
    mask, full, at = 0, (1 << bits) - 1, text.find(gram)
    while at >= 0 and mask != full:
        if at + len(gram) < len(text):
            mask |= 1 << bucket(text[at + len(gram)], bits)
        at = text.find(gram, at + 1)
    return mask


def masked(tree: str, files: list[str], literal: bytes, bits: int) -> list[str]:
    """The `files` that a follow mask of `bits` bits a posting would keep for `literal`."""
    need = [(literal[i : i + 3], literal[i + 3]) for i in range(len(literal) - 3)]
    kept = []
    for name in files:
        text = Path(tree, name).read_bytes().split(b"\0", 1)[0]
        if all(follows(text, gram, bits) >> bucket(after, bits) & 1 for gram, after in need):
            kept.append(name)
    return kept


def size(tree: str, files: list[str]) -> str:
    megabytes = sum(os.path.getsize(os.path.join(tree, name)) for name in files) / 1e6
    return f"{len(files):,}, {megabytes:.0f} MB"


def varint_bytes(values: NDArray[numpy.int64]) -> int:
    """The bytes of these values written as LEB128 varints."""
    import numpy

    out = numpy.ones(len(values), dtype=numpy.int64)
    rest = values >> 7
    while rest.any():
        out += rest > 0
        rest = rest >> 7
    return int(out.sum())


def segments(directory: str) -> None:
    """What the postings of the set's segments take now, and with a mask a posting."""
    import numpy

    count = now = folded4 = folded8 = 0
    for path in sorted(glob.glob(os.path.join(directory, "content-*.grams"))):
        data = Path(path).read_bytes()
        header = shards._HEADER.unpack_from(data)
        if header[0] != shards.SEGMENT_MAGIC:
            sys.exit(f"{path}: not a segment")
        postings = numpy.frombuffer(data, dtype=numpy.uint8, offset=shards.HEADER_BYTES, count=header[7])
        ends = numpy.flatnonzero(postings < 0x80)  # a varint's last byte
        starts = numpy.concatenate(([0], ends[:-1] + 1))
        lengths = ends - starts + 1
        deltas = numpy.zeros(len(ends), dtype=numpy.int64)
        for k in range(int(lengths.max(initial=0))):
            longer = lengths > k
            deltas[longer] |= (postings[starts[longer] + k].astype(numpy.int64) & 0x7F) << (7 * k)
        count += len(deltas)
        now += len(postings)
        folded4 += varint_bytes(deltas << 4)
        folded8 += varint_bytes(deltas << 8)
    print(f"postings: {count:,}; their bytes now {now:,}")
    print(f"  a 4-bit mask folded into each varint: {folded4:,} (+{folded4 - now:,})")
    print(f"  an 8-bit mask folded into each varint: {folded8:,} (+{folded8 - now:,})")
    print(f"  an 8-bit mask as one more byte a posting: {now + count:,} (+{count:,})")


def main() -> None:
    if sys.argv[1:2] == ["--segments"] and len(sys.argv) == 3:
        segments(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree")
    parser.add_argument("literals", nargs="+")
    parser.add_argument("--rg", default=str(ROOT / "dist" / "dsh-search-rg"))
    parser.add_argument("--bits", default="4,8,16", help="the masks' widths, comma-separated")
    args = parser.parse_args()
    tree = os.path.abspath(args.tree)
    widths = [int(b) for b in args.bits.split(",")]
    masks = " | ".join(f"+ a {b}-bit mask" for b in widths)
    print(f"| literal | trigrams | {masks} | exact 4-grams | exact 5-grams | files that hold it |")
    print("|---" * (5 + len(widths)) + "|")
    for text in args.literals:
        literal = text.encode()
        trigram = holding(args.rg, tree, grams(literal, 3))
        cells = [size(tree, trigram)]
        cells += [size(tree, masked(tree, trigram, literal, bits)) for bits in widths]
        cells += [size(tree, holding(args.rg, tree, grams(literal, n), trigram)) for n in (4, 5)]
        cells.append(f"{len(holding(args.rg, tree, [literal], trigram)):,}")
        print(f"| `{text}` | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()

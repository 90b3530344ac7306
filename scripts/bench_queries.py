"""The realistic suite's queries (scripts/bench, workloads `suite-*`): about a hundred greps drawn from the
tree the way agents search it, made reproducibly from the tree itself with a fixed seed.

- identifiers at every document frequency, from 10 files to 20,000 (log-spaced buckets, the top ones
  capped at the tree's size), chosen at random within each bucket;
- two- and three-word phrases (identifiers separated by one space) taken from random lines;
- regexes: two words joined by `\\s+`, an identifier followed by `\\(` (a call), an alternation of two
  identifiers, and an identifier under `(?i)`.

Document frequencies come from one pass over the files grep reads (`rg --files`, so ignore files count):
every identifier of four characters or more, once per file. The kernel tree takes about a minute and a
half of CPU for that, so the query list is kept in the corpus cache, keyed by the tree's file list and
the generator's version.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

VERSION = 3  # of the generator: a cached list made by another version is made again
SEED = 28
BUCKETS = [10, 30, 100, 300, 1000, 3000, 10_000, 20_000]  # document frequencies aimed at
PER_BUCKET = 5
PHRASES_2, PHRASES_3 = 15, 10
SPACES, CALLS, ALTERNATIONS, FOLDED = 10, 10, 8, 7
_IDENTIFIER = re.compile(rb"\b[A-Za-z_][A-Za-z0-9_]{3,39}\b")
_WORD = rb"[A-Za-z_][A-Za-z0-9_]*"
_PHRASE_2 = re.compile(rb"(?<![\w ])(" + _WORD + rb") (" + _WORD + rb")(?![\w])")
_PHRASE_3 = re.compile(rb"(?<![\w ])(" + _WORD + rb") (" + _WORD + rb") (" + _WORD + rb")(?![\w])")
_CALL = re.compile(rb"\b(" + _WORD + rb")\(")
_MAX_FILE = 1 << 20  # bytes read of a file (the kernel's largest sources are generated tables)


class Query(NamedTuple):
    kind: str  # identifier, phrase-2, phrase-3, spaces, call, alternation, folded
    pattern: str
    df: int | None  # the identifier's document frequency (what its bucket was chosen by), else None

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "pattern": self.pattern, "df": self.df}


def grep_files(rg: Path, tree: Path) -> list[bytes]:
    """The files a path-less grep of `tree` reads, sorted."""
    done = subprocess.run(
        [str(rg), "--no-config", "--files", "--null"],
        cwd=tree,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    return sorted(p for p in done.stdout.split(b"\0") if p)


def _contents(tree: Path, files: list[bytes]) -> Iterator[bytes]:
    for name in files:
        try:
            with open(bytes(tree) + b"/" + name, "rb") as f:
                data = f.read(_MAX_FILE)
        except OSError:
            continue
        if b"\0" not in data[:8192]:  # what grep's walk skips as binary is no search target
            yield data


def document_frequencies(tree: Path, files: list[bytes]) -> Counter[bytes]:
    """How many files hold each identifier of four characters or more (~90 CPU-seconds on the kernel)."""
    counts: Counter[bytes] = Counter()
    for data in _contents(tree, files):
        counts.update(set(_IDENTIFIER.findall(data)))
    return counts


def _pick(rnd: random.Random, pool: list[str], count: int, taken: set[str], shape: str = "{}") -> list[str]:
    """`count` patterns `shape.format(item)` for items of `pool` at random, none already `taken`."""
    out = []
    for item in rnd.sample(pool, len(pool)):
        if len(out) == count:
            break
        pattern = shape.format(item)
        if pattern not in taken:
            taken.add(pattern)
            out.append(pattern)
    return out


def make(tree: Path, files: list[bytes], seed: int = SEED) -> list[Query]:
    """The suite's queries for `tree` (deterministic for a given tree and seed)."""
    rnd = random.Random(seed)  # noqa: S311 - sampling, not cryptography
    df = document_frequencies(tree, files)
    words = sorted(w.decode() for w in df)
    queries: list[Query] = []
    taken: set[str] = set()
    top = max(df.values(), default=0)
    for target in BUCKETS:
        aim = min(target, top)
        near = [w for w in words if aim / 1.5 <= df[w.encode()] <= aim * 1.5]
        for word in _pick(rnd, near, PER_BUCKET, taken):
            queries.append(Query("identifier", word, df[word.encode()]))
    # Phrases and calls from the lines of files chosen at random: common words, as agents type them.
    sample = [files[i] for i in sorted(rnd.sample(range(len(files)), min(len(files), 800)))]
    twos: set[str] = set()
    threes: set[str] = set()
    calls: set[str] = set()
    common = max(10, min(100, top // 50))  # a phrase's words each in this many files or more
    for data in _contents(tree, sample):
        for a, b in _PHRASE_2.findall(data):
            if df[a] >= common and df[b] >= common and len(a) + len(b) >= 9:
                twos.add(f"{a.decode()} {b.decode()}")
        for a, b, c in _PHRASE_3.findall(data):
            if min(df[a], df[b], df[c]) >= common:
                threes.add(f"{a.decode()} {b.decode()} {c.decode()}")
        for name in _CALL.findall(data):
            if df[name] >= 10 and len(name) >= 5:
                calls.add(name.decode())
    pairs = sorted(twos)
    queries += [Query("phrase-2", p, None) for p in _pick(rnd, pairs, PHRASES_2, taken)]
    queries += [Query("phrase-3", p, None) for p in _pick(rnd, sorted(threes), PHRASES_3, taken)]
    spaced = [p.replace(" ", r"\s+") for p in pairs]
    queries += [Query("spaces", p, None) for p in _pick(rnd, spaced, SPACES, taken)]
    queries += [Query("call", c, None) for c in _pick(rnd, sorted(calls), CALLS, taken, "{}\\(")]
    middle = [w for w in words if 30 <= df[w.encode()] <= 3000] or words
    for _ in range(ALTERNATIONS):
        if len(middle) >= 2:
            a, b = rnd.sample(middle, 2)
            if f"{a}|{b}" not in taken:
                taken.add(f"{a}|{b}")
                queries.append(Query("alternation", f"{a}|{b}", None))
    queries += [Query("folded", w, None) for w in _pick(rnd, middle, FOLDED, taken, "(?i){}")]
    return queries


def suite(rg: Path, tree: Path, cache: Path) -> list[Query]:
    """The queries for `tree`, made once and kept in `cache` (keyed by its file list and VERSION)."""
    files = grep_files(rg, tree)
    key = hashlib.sha256(b"\0".join([str(VERSION).encode(), bytes(tree), *files])).hexdigest()[:16]
    kept = cache / f"suite-queries-{key}.json"
    if kept.is_file():
        return [Query(q["kind"], q["pattern"], q["df"]) for q in json.loads(kept.read_text())]
    print(f"bench: choosing the realistic suite's queries from {len(files):,} files (once)", flush=True)
    queries = make(tree, files)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_suffix(".tmp")
    tmp.write_text(json.dumps([q.as_json() for q in queries], indent=1) + "\n")
    tmp.rename(kept)
    return queries

"""The realistic suite's bound (scripts/bench, workload `suite-bound`): what any exact index that lets
ripgrep decide every match would still pay for a query, measured beside the daemon and bare ripgrep.

An index that knew, in no time at all, exactly the files that hold a match would still have ripgrep read
those files and print what it finds. The bound is that run: ripgrep, started from this process, given
exactly the answer's files by name (`rg --files-with-matches` of the walk, computed once and not timed;
none at all is the null device, as the daemon checks the pattern even then),
with the printer the daemon's first run uses (`STANDARD`) and the daemon's own rules for a named-file run
(`--no-ignore`, a thread per `FILES_PER_THREAD` files, at most one per CPU). No request, no index, no
parse, no answer: the daemon can only be slower. A query whose `--json` output passes the raw-output cap
ends in the overflow; its bound is the share of that run that prints the cap's worth: the run is stopped
once the standard output has printed `cap / json bytes` of its whole size (its `--json` would have
reached the cap there, the two outputs growing together line by line).

Names beyond what one command line carries (osdep.argv_names_budget) are split across runs made one
after another, each a spawn more: the bound is then slightly high, never low.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "daemon"))

from dsh_search.config import KEYS_BY_NAME  # noqa: E402
from dsh_search.engine.grep.argv import FILES_PER_THREAD, STANDARD  # noqa: E402
from dsh_search.osdep import NULL_DEVICE, argv_names_budget  # noqa: E402

DEFAULT_CAP = int(KEYS_BY_NAME["rawOutputMaxBytes"].default)  # the cap the suite's daemons run with
NAME_COST = 9  # bytes a name costs on a command line beyond its own: its NUL and its pointer


@dataclass(frozen=True)
class Bound:
    """One query's bound run, prepared: the argv of each run (the names split to fit a command line) and
    how many bytes of standard output to read before stopping (None: the whole run)."""

    pattern: str
    files: int
    runs: tuple[tuple[bytes, ...], ...]
    stop_after: int | None

    @property
    def overflows(self) -> bool:
        return self.stop_after is not None


def _rg(rg: Path, argv: list[str | bytes], tree: Path) -> bytes:
    return subprocess.run(
        [str(rg), "--no-config", *argv], cwd=tree, stdin=subprocess.DEVNULL, capture_output=True, check=False
    ).stdout


def _split(names: list[bytes], budget: int) -> list[list[bytes]]:
    chunks: list[list[bytes]] = [[]]
    used = 0
    for name in names:
        cost = len(name) + NAME_COST
        if chunks[-1] and used + cost > budget:
            chunks.append([])
            used = 0
        chunks[-1].append(name)
        used += cost
    return chunks


def prepare(rg: Path, tree: Path, pattern: str, cap: int = DEFAULT_CAP) -> Bound:
    """The files that hold a match (untimed), and how far the bound's run goes."""
    listed = _rg(rg, ["--files-with-matches", "--null", f"--regexp={pattern}"], tree)
    names = sorted(n for n in listed.split(b"\0") if n)
    cpus = os.cpu_count() or 1
    runs: list[tuple[bytes, ...]] = []
    for chunk in _split(names, argv_names_budget()) if names else [[NULL_DEVICE]]:
        threads = max(1, min(cpus, len(chunk) // FILES_PER_THREAD))
        flags = [*STANDARD, f"--regexp={pattern}", "--no-ignore", f"--threads={threads}", "--"]
        runs.append((*(flag.encode() for flag in flags), *chunk))
    stop_after = None
    if names:
        standard = sum(len(_rg(rg, list(one), tree)) for one in runs)
        # --json spends at most ~6 bytes per byte of a line (escapes) and ~1.5 KB per file (its begin and end
        # records, the path in each match): below that, its size is not worth a second walk to learn.
        if standard * 6 + len(names) * 1536 > cap:
            json_size = len(_rg(rg, ["--json", f"--regexp={pattern}"], tree))
            if json_size > cap:
                stop_after = max(1, standard * cap // json_size)
    return Bound(pattern, len(names), tuple(runs), stop_after)


def run(rg: Path, tree: Path, bound: Bound) -> float:
    """One timed bound run, in seconds."""
    started = time.perf_counter()
    left = bound.stop_after
    for argv in bound.runs:
        with subprocess.Popen(
            [str(rg).encode(), b"--no-config", *argv], cwd=tree, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
        ) as proc:
            assert proc.stdout is not None
            while chunk := os.read(proc.stdout.fileno(), 1 << 16):
                if left is not None:
                    left -= len(chunk)
                    if left <= 0:
                        proc.kill()
                        break
            proc.stdout.close()
            proc.wait()
        if left is not None and left <= 0:
            break
    return time.perf_counter() - started

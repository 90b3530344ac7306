"""Spawn → first `ping` response, for the frozen executable and for `python -m dsh_search`."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PING = b'{"jsonrpc":"2.0","method":"ping","id":1}\n'


def first_ping(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(PING)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    assert line.startswith(b'{"jsonrpc":"2.0","result":{}'), line
    proc.stdin.close()
    proc.wait()
    return elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=10)
    args = p.parse_args()
    flags = ["--sample-over-cap-glob-results", "false"]
    env = dict(os.environ)
    unfrozen_env = {**env, "PYTHONPATH": str(ROOT / "daemon"), "DSH_SEARCH_RG": str(ROOT / "dist" / "dsh-search-rg")}
    variants = [
        ("frozen dist/dsh-search", [str(ROOT / "dist" / "dsh-search"), *flags], env),
        ("unfrozen python -m dsh_search", [sys.executable, "-m", "dsh_search", *flags], unfrozen_env),
    ]
    for name, cmd, variant_env in variants:
        first_ping(cmd, variant_env)  # warm caches
        samples = [first_ping(cmd, variant_env) for _ in range(args.runs)]
        print(
            f"{name:32s} median {statistics.median(samples) * 1000:6.1f} ms"
            f"  (min {min(samples) * 1000:.1f}, max {max(samples) * 1000:.1f}, {args.runs} runs)"
        )


if __name__ == "__main__":
    main()

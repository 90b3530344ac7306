"""Median round-trip time of daemon searches next to bare ripgrep, measured in the same run.

Each case alternates a daemon request (over a pipe to one long-running frozen daemon) with a bare
`rg` run of the comparison argv, so both see the same machine state; the ratio is median/median.
- grep `[A-Z]+_SUSPEND`: bare rg with the daemon's exact argv (`--json --regexp=…`).
- glob `*.c` and `*`: against ripgrep's own sorted listing (upstream's argv with `--sort=modified`),
  the target; and, for information, against the daemon's own unsorted `--null` argv.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from stdio_client import StdioClient, timed  # scripts/, beside this script

VCS = [g for d in (".git", ".svn", ".hg", ".bzr", ".jj", ".sl") for g in (f"--glob=!**/{d}", f"--glob=!**/{d}/**")]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--exe", required=True)
    p.add_argument("--tree", required=True)
    p.add_argument("--runs", type=int, default=11)
    args = p.parse_args()
    rg = args.exe + "-rg"
    files = sum(1 for _ in Path(args.tree).rglob("*"))
    print(f"tree: {args.tree} ({files} entries); {args.runs} runs per case, medians")

    def bare(argv: list[str]) -> Any:
        # Output is read through a pipe, as any consumer of rg reads it (ripgrep treats a stdout that
        # is /dev/null specially and stops early, which would not be a like-for-like comparison).
        return lambda: subprocess.run([rg, "--no-config", *argv], cwd=args.tree, capture_output=True, check=False)

    sorted_glob = ["--files", "--glob={}", "--sort=modified", "--no-ignore", "--hidden", *VCS]
    null_glob = ["--files", "--glob={}", "--null", "--no-ignore", "--hidden", *VCS]
    cases = [
        (
            "grep [A-Z]+_SUSPEND",
            "grep",
            {"pattern": "[A-Z]+_SUSPEND"},
            [("rg, same argv", ["--json", "--regexp=[A-Z]+_SUSPEND"])],
        ),
    ]
    for pattern in ("*.c", "*"):
        cases.append(
            (
                f"glob {pattern}",
                "glob",
                {"pattern": pattern},
                [
                    ("rg sorted listing", [a.format(pattern) for a in sorted_glob]),
                    ("rg unsorted (our argv)", [a.format(pattern) for a in null_glob]),
                ],
            )
        )
    with tempfile.TemporaryDirectory() as spill:
        daemon = StdioClient(
            [args.exe, "--sample-over-cap-glob-results", "true", "--workdir", args.tree, "--spill-dir", spill]
        )
        daemon.result("ping")
        for name, method, params, comparisons in cases:
            daemon.result(method, params)  # warm the page cache for everyone
            ours: list[float] = []
            theirs: dict[str, list[float]] = {label: [] for label, _ in comparisons}
            for _ in range(args.runs):
                ours.append(timed(lambda m=method, a=params: daemon.result(m, a)))
                for label, argv in comparisons:
                    theirs[label].append(timed(bare(argv)))
            mine = statistics.median(ours)
            print(f"{name:22s} daemon {mine * 1000:7.1f} ms")
            for label, samples in theirs.items():
                base = statistics.median(samples)
                print(f"{'':22s} {label:24s} {base * 1000:7.1f} ms   ratio {mine / base:.3f}")
        daemon.close()


if __name__ == "__main__":
    main()

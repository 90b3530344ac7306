"""The workspace index's first build of a tree, in this process, phase by phase: wall time of each phase,
the process's CPU time and peak RSS, and the index's size (docs/performance.md, "The build, phase by phase").

    .venv/bin/python scripts/profile_build.py TREE [--rg PATH] [--daemon DIR]

`--daemon DIR` profiles another checkout's daemon/ (say, `git archive` of an older commit), so that two
versions can be measured on the same tree in the same hour. The page cache is warmed first (one ripgrep
pass over the tree), as scripts/bench does. Wall times move with the machine's load; CPU time does not
much: compare CPU on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def rss_mb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree")
    parser.add_argument("--rg", default=str(ROOT / ".venv" / "bin" / "rg"))
    parser.add_argument("--daemon", default=str(ROOT / "daemon"))
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.daemon))
    from dsh_search.index import builder, lister, sets, workspace
    from dsh_search.index.globlist import GlobList
    from dsh_search.index.lister import GrepLister

    phases: dict[str, float] = {}
    peak = [0]

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if asyncio.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*a: Any, **k: Any) -> Any:
                started = time.perf_counter()
                try:
                    return await fn(*a, **k)
                finally:
                    phases[name] = phases.get(name, 0.0) + time.perf_counter() - started

            return run_async

        @functools.wraps(fn)
        def run(*a: Any, **k: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                phases[name] = phases.get(name, 0.0) + time.perf_counter() - started

        return run

    workspace.walk = timed("walk of the tree for glob (with its watches)", workspace.walk)  # type: ignore[attr-defined]
    GlobList.from_keys = staticmethod(timed("glob's list", GlobList.from_keys))  # type: ignore[method-assign]
    lister.facts = timed("grep's list: its facts", lister.facts)  # type: ignore[attr-defined]
    listing = GrepLister.__call__
    GrepLister.__call__ = timed("grep's list: rg --files", listing)  # type: ignore[method-assign]
    sets.ShardSet.open = classmethod(timed("opening the shard set", sets.ShardSet.open.__func__))  # type: ignore[method-assign]
    builder.Builder.index = timed("the content index: read, trigrams, segments", builder.Builder.index)  # type: ignore[method-assign]
    builder.skipped_files = timed("files glob lists and grep skips", builder.skipped_files)  # type: ignore[attr-defined]

    def sample() -> None:
        while True:
            peak[0] = max(peak[0], rss_mb())
            time.sleep(0.1)

    subprocess.run(
        [args.rg, "--no-config", "-l", "zq_no_such_token_xj"], cwd=args.tree, capture_output=True, check=False
    )
    threading.Thread(target=sample, daemon=True).start()

    async def build() -> None:
        index_dir = tempfile.mkdtemp(prefix="profile-build-")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": index_dir}
        ws = workspace.Workspace(args.tree, index_dir=index_dir, grep_lister=GrepLister.create(args.rg, env, 60.0))
        cpu, wall = time.process_time(), time.perf_counter()
        ws.start()
        await ws._ready.wait()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        status = ws.status("on")
        ws.close()
        shutil.rmtree(index_dir, ignore_errors=True)
        text, size = status.bytes or 0, status.index_bytes or 0
        print(f"{args.daemon}: {status.state}, {status.files} files ({status.grep_files} read by grep), {text:,} bytes")
        print(f"  index {size:,} bytes ({size / max(1, text):.3f} x the text)")
        print(f"  wall {wall:.2f} s, CPU {cpu:.2f} s, peak RSS {max(peak[0], rss_mb())} MB", end="")
        print(f" (ru_maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB)")
        print(f"  load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for name, seconds in phases.items():
            print(f"  {name:48s} {seconds:8.2f} s")

    asyncio.run(build())


if __name__ == "__main__":
    main()

"""One selective grep on a warm workspace index, in this process, phase by phase (docs/performance.md,
"The per-query floor"): the daemon assembled by its own wiring over pipes, each call timed from the
request's bytes to the answer's, with a timestamp at every step the issue names.

    .venv/bin/python scripts/profile_grep.py TREE [--index-dir DIR] [--rounds N] [--daemon DIR] [PATTERN ...]

The index is built in `--index-dir` (default: a directory under /tmp kept between runs, so a second run
reuses it in seconds). Each pattern is asked `--rounds` times; the medians of every phase are printed,
and the CPU time of the daemon's process per call. Then ripgrep alone, with the argv the daemon gave it,
from this process (`rg alone`), the same number of times. `--daemon DIR` profiles another checkout's
daemon/ (say, `git archive` of an older commit), so two versions are measured on the same tree in the
same hour. Wall times move with the machine's load; compare CPU time and phase shares on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PATTERNS = [
    "alloc_chrdev_region",
    r"EXPORT_SYMBOL_GPL\(devm_\w+\)",
    "spi_sync",
    "blk_mq_alloc_tag_set",
]

marks: list[tuple[str, float]] = []  # (point, perf_counter) of the call being measured
argvs: list[list[Any]] = []  # ripgrep's argv of each call


def mark(name: str) -> None:
    marks.append((name, time.perf_counter()))


def around(owner: Any, attr: str, name: str) -> None:
    """Time `owner.attr` (a function or coroutine function): marks `<name>` and `<name> done`."""
    fn = getattr(owner, attr)
    if asyncio.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*a: Any, **k: Any) -> Any:
            mark(name)
            try:
                return await fn(*a, **k)
            finally:
                mark(name + " done")

        setattr(owner, attr, run_async)
        return

    @functools.wraps(fn)
    def run(*a: Any, **k: Any) -> Any:
        mark(name)
        try:
            return fn(*a, **k)
        finally:
            mark(name + " done")

    setattr(owner, attr, run)


def instrument() -> None:
    from dsh_search.engine import grep as grep_pkg
    from dsh_search.engine import ripgrep
    from dsh_search.engine.grep import page, standard
    from dsh_search.index import answers, planner, workspace
    from dsh_search.index.manager import IndexManager
    from dsh_search.methods import tools
    from dsh_search.transport import requests, stdio

    around(stdio.Server, "_on_input", "input")
    around(requests.RequestTable, "submit", "submit")
    around(tools, "grep_query", "tool")
    around(grep_pkg, "grep", "engine")
    around(IndexManager, "grep", "source")
    around(workspace.Workspace, "usable", "usable")
    around(planner, "narrowing", "narrowing")
    around(planner.Planner, "_plan", "plan")
    around(planner, "_ask", "ask")
    around(planner.Planner, "choose", "choose")
    around(answers, "search_root", "root")
    from dsh_search.index import freshness

    around(freshness.Freshness, "settle", "settle")
    around(planner, "judged", "judged")
    around(answers, "grep_files", "spell")
    around(standard.StandardRun, "run", "rg run")
    around(page, "render", "render")
    around(stdio.Server, "send", "send")
    from dsh_search.engine import glob as glob_mod
    from dsh_search.engine import run as run_mod
    from dsh_search.methods import dispatch

    around(dispatch.Dispatcher, "dispatch", "dispatch")
    try:
        from dsh_search.index import glance
    except ImportError:  # a daemon from before glances (--daemon)
        pass
    else:
        around(glance.Glancing, "glob", "source")
        around(glance.Glancing, "make", "glance")
    around(glob_mod, "_listed", "listed")
    around(glob_mod, "page_of", "page")
    around(tools, "glob_query", "tool")
    around(glob_mod, "locate", "locate")
    around(grep_pkg, "locate", "locate")
    around(run_mod, "preflight", "preflight")
    around(glob_mod, "ordered_paths", "order")
    around(glob_mod, "select", "select")
    around(glob_mod, "glob_meta", "meta")
    around(glob_mod, "check_decoded_size", "decoded size")

    spawn = ripgrep.spawn

    def spawned(rg_path: str, args: Any, **k: Any) -> Any:
        argvs.append([rg_path, "--no-config", *args])
        mark("spawn")
        try:
            return spawn(rg_path, args, **k)
        finally:
            mark("spawn done")

    ripgrep.spawn = spawned  # type: ignore[assignment]
    exited = ripgrep._Pump._exited
    out = ripgrep._Pump._out

    def on_exit(self: Any, fd: int) -> None:
        mark("rg exited")
        exited(self, fd)

    def on_out(self: Any, fd: int) -> None:
        if not self.size:
            mark("rg first output")
        out(self, fd)

    ripgrep._Pump._exited = on_exit  # type: ignore[method-assign]
    ripgrep._Pump._out = on_out  # type: ignore[method-assign]


INDEX_ANSWER = "the index's whole answer"
BARE = "bare rg, upstream's argv (the baseline)"
# The phases reported, each the time between two marks (the first occurrence of each).
PHASES = [
    ("request: bytes → the loop has them (the reader thread)", "write", "input"),
    ("request: framed, parsed, a task made", "input", "submit done"),
    ("request: the task starts → the dispatcher", "submit done", "dispatch"),
    ("request: the dispatcher → the tool's params (jsonrpcserver)", "dispatch", "tool"),
    ("request: bytes → the tool (read, frame, parse, dispatch, params)", "write", "tool"),
    ("params → the engine (query value, checks)", "tool", "engine"),
    ("engine → the index asked (scope, locate)", "engine", "source"),
    ("locate (the cwd, the path, confinement)", "locate", "locate done"),
    ("preflight (the cwd entered)", "preflight", "preflight done"),
    ("freshness before the answer (intact, mounts, rules, inotify drain)", "usable", "usable done"),
    ("the pattern read (narrowing: analysis, globs)", "narrowing", "narrowing done"),
    ("the search's root (realpath)", "root", "root done"),
    ("new files settled", "settle", "settle done"),
    ("usable → the lookup chosen (choose)", "usable done", "choose"),
    ("the plan (trigrams, document counts)", "plan", "plan done"),
    ("the lookups (shards, on threads; first to last)", "ask", "ask done"),
    ("changed files judged", "judged", "judged done"),
    ("the answer spelled (names, filters)", "spell", "spell done"),
    ("choose: its start → the plan's start", "choose", "plan"),
    ("choose: the plan's end → the lookups' start", "plan done", "ask"),
    ("choose: the lookups' end → the spelling", "ask done", "spell"),
    ("the index's whole answer", "source", "source done"),
    ("index answered → ripgrep spawned (argv, slot, pipes)", "source done", "spawn"),
    ("spawning ripgrep (Popen, prlimit)", "spawn", "spawn done"),
    ("ripgrep: spawned → its first output", "spawn done", "rg first output"),
    ("ripgrep: spawned → its exit", "spawn done", "rg exited"),
    ("ripgrep exited → its run read and parsed", "rg exited", "rg run done"),
    ("rendering (page, meta, footers)", "rg run done", "engine done"),
    ("glob: rg exited → the decoded size checked (the batches' stat)", "rg exited", "decoded size done"),
    ("glob: the glance (on a thread)", "glance", "glance done"),
    ("glob: the source asked → the glance starts", "source", "glance"),
    ("glob: the glance ends → the source answered", "glance done", "source done"),
    ("glob: the source answered → the listing judged", "source done", "listed done"),
    ("glob: the page", "page", "page done"),
    ("glob: sorted, shown", "order", "order done"),
    ("glob: the page's paths chosen", "select", "select done"),
    ("glob: meta", "meta", "meta done"),
    ("glob: meta → the answer sent", "meta done", "send"),
    ("the answer encoded and queued", "send", "send done"),
    ("the answer: queued → read by the client", "send done", "read"),
    ("whole call, bytes in → bytes out", "write", "read"),
]


def phase_times(call: list[tuple[str, float]]) -> dict[str, float]:
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for name, t in call:
        first.setdefault(name, t)
        last[name] = t
    out = {}
    for label, start, end in PHASES:
        if start in first and end in last:
            # A phase that runs several times (a lookup per shard) spans its first start to its last end.
            out[label] = (last[end] if end.endswith("done") else first[end]) - first[start]
    return out


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each thread of this process so far, by name (threads of one name summed)."""
    out: dict[str, float] = {}
    names = {t.native_id: t.name.split(" ")[0].rstrip("_0123456789-") for t in threading.enumerate()}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])  # time on the CPU, nanoseconds
        except OSError:
            continue
        name = names.get(int(tid), "other")
        out[name] = out.get(name, 0.0) + ns / 1e9
    return out


def suite_table(call: Callable[..., Any], queries: list[Any], args: Any, tree: str) -> None:
    """Each of the suite's queries: the call's phases (medians of --rounds), the candidates, bare ripgrep."""
    print("| pattern | named | call ms | index ms | spawn→exit ms | after rg ms | bare rg ms | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    totals = [0.0, 0.0]
    ratios = []
    for n, query in enumerate(queries):
        rows = []
        named = 0
        for _ in range(args.rounds):
            marks.clear()
            argvs.clear()
            call("grep", {"pattern": query.pattern}, 10_000 + n)
            rows.append(phase_times(list(marks)))
            named = sum(1 for a in (argvs[-1] if argvs else []) if isinstance(a, bytes))
        bare = []
        for _ in range(max(1, args.rounds // 2)):
            t = time.perf_counter()
            subprocess.run(
                [args.rg, "--no-config", "--json", f"--regexp={query.pattern}"],
                cwd=tree,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                check=False,
            )
            bare.append(time.perf_counter() - t)

        def med(label: str, rows: list[dict[str, float]] = rows) -> float:
            values = [r[label] for r in rows if label in r]
            return statistics.median(values) * 1000 if values else float("nan")

        whole, rg = med("whole call, bytes in → bytes out"), statistics.median(bare) * 1000
        totals[0] += whole
        totals[1] += rg
        ratios.append(whole / rg)
        print(
            f"| `{query.pattern}` | {named if argvs else 'walk'} | {whole:.1f} | {med(INDEX_ANSWER):.1f} "
            f"| {med('ripgrep: spawned → its exit'):.1f} | {med('ripgrep exited → its run read and parsed'):.1f} "
            f"| {rg:.1f} | {whole / rg:.3f} |",
            flush=True,
        )
    import math

    ratios.sort()
    print(
        f"\nsum {totals[0] / totals[1]:.3f}, geometric mean {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}, "
        f"p95 {ratios[math.ceil(0.95 * len(ratios)) - 1]:.3f}, worst {ratios[-1]:.3f}; load {os.getloadavg()}"
    )


VCS = [g for d in (".git", ".svn", ".hg", ".bzr", ".jj", ".sl") for g in (f"--glob=!**/{d}", f"--glob=!**/{d}/**")]


def baseline(args: Any, pattern: str) -> list[str]:
    """Bare ripgrep as scripts/bench runs it: upstream's argv for the tool."""
    tail = ["--", args.path] if args.path else []
    if args.tool == "glob":
        return [
            args.rg,
            "--no-config",
            "--files",
            f"--glob={pattern}",
            "--sort=modified",
            "--no-ignore",
            "--hidden",
            *VCS,
            *tail,
        ]
    return [args.rg, "--no-config", "--json", f"--regexp={pattern}", *tail]


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree")
    parser.add_argument("patterns", nargs="*")
    parser.add_argument("--rg", default=str(ROOT / ".venv" / "bin" / "rg"))
    parser.add_argument("--daemon", default=str(ROOT / "daemon"))
    parser.add_argument("--index-dir", default="/tmp/dsh-search-profile-index")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--tool", choices=("grep", "glob"), default="grep")
    parser.add_argument("--path", help="the calls' path (glob `*` in `init`: --tool glob --path init '*')")
    parser.add_argument("--index", choices=("on", "off"), default="on")
    parser.add_argument("--cprofile", help="write a cProfile of the event loop's thread (CPU time) to this file")
    parser.add_argument(
        "--suite",
        action="store_true",
        help="the realistic suite's queries (scripts/bench_queries.py, from the corpus cache): one line each",
    )
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.daemon))
    import orjson

    from dsh_search import config as config_mod
    from dsh_search import wiring
    from dsh_search.engine.sidecar import verify

    instrument()
    tree = os.path.abspath(args.tree)
    config = config_mod.build(
        {
            "sampleOverCapGlobResults": True,
            "index": args.index,
            "indexDir": args.index_dir,
            "spillDir": "/tmp/dsh-search-profile-spill",
        }
    )
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    daemon = wiring.assemble(
        config=config,
        rg=verify(args.rg, os.environ),
        workdir=tree,
        framing=None,
        workdir_given=True,
        stdin_fd=in_r,
        stdout_fd=out_w,
        handle_signals=False,
    )
    loop_profiler = None
    if args.cprofile:
        import cProfile

        loop_profiler = cProfile.Profile(time.thread_time)

    def serve() -> None:
        if loop_profiler is not None:
            loop_profiler.enable()
        try:
            asyncio.run(wiring.run(daemon))
        finally:
            if loop_profiler is not None:
                loop_profiler.disable()
                loop_profiler.dump_stats(args.cprofile)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    pending = b""

    def call(method: str, params: Any, ident: int) -> Any:
        nonlocal pending
        body = orjson.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + b"\n"
        mark("write")
        os.write(in_w, body)
        while b"\n" not in pending:
            pending += os.read(out_r, 1 << 20)
        mark("read")
        line, _, pending = pending.partition(b"\n")
        return orjson.loads(line)

    started = time.monotonic()
    while args.index == "on":
        status = call("index/status", None, 0)["result"]
        if status["state"] == "ready":
            break
        if status["state"] == "failed":
            sys.exit(f"the index failed: {status}")
        time.sleep(0.5)
    if args.index == "on":
        print(f"index ready after {time.monotonic() - started:.1f} s ({status['files']} files)", flush=True)
    ident = 1
    if args.suite:
        sys.path.insert(0, str(ROOT / "scripts"))
        import bench_queries

        cache = Path(os.environ.get("BENCH_CACHE") or Path.home() / ".cache" / "dsh-search-bench")
        queries = bench_queries.suite(Path(args.rg), Path(tree), cache)
        suite_table(call, queries, args, tree)
        os.close(in_w)
        thread.join(timeout=30)
        return
    for pattern in args.patterns or DEFAULT_PATTERNS:
        calls: list[dict[str, float]] = []
        cpus: list[float] = []
        per_thread: dict[str, float] = {}
        answer: Any = None
        for _ in range(args.rounds + 1):  # the first call warms caches and is not counted
            marks.clear()
            argvs.clear()
            before = cpu()
            threads_before = thread_cpu()
            params = {"pattern": pattern}
            if args.path:
                params["path"] = args.path
            answer = call(args.tool, params, ident)
            spent = cpu() - before
            if ident > 1:
                for name, t in thread_cpu().items():
                    per_thread[name] = per_thread.get(name, 0.0) + t - threads_before.get(name, 0.0)
            if ident > 1 and "result" in answer:
                calls.append(phase_times(list(marks)))
                if os.environ.get("PROFILE_MARKS"):
                    print([(n, round((t - marks[0][1]) * 1000, 3)) for n, t in marks])
                cpus.append(spent)
            ident += 1
        if "result" not in answer:
            print(f"{pattern}: {answer}")
            continue
        text = answer["result"]["text"]
        rg_argv = argvs[-1] if argvs else None
        if rg_argv and os.environ.get("PROFILE_ARGV"):  # ripgrep's argv, NUL-separated, for experiments
            with open(os.environ["PROFILE_ARGV"], "wb") as out:
                out.write(b"\0".join(a if isinstance(a, bytes) else a.encode() for a in rg_argv))
        named = sum(1 for a in rg_argv or [] if isinstance(a, bytes)) if rg_argv else 0
        print(f"\n{pattern!r}: {text.splitlines()[0]}; ripgrep given {named} files by name ({args.rounds} calls)")
        for label, _, _ in PHASES:
            values = [c[label] for c in calls if label in c]
            if values:
                print(f"  {label:<72} {statistics.median(values) * 1000:8.3f} ms")
        print(
            f"  {'CPU time of this process per call (every thread, ripgrep not counted)':<72} "
            f"{statistics.median(cpus) * 1000:8.3f} ms"
        )
        for name, t in sorted(per_thread.items(), key=lambda kv: -kv[1]):
            if t > 0:
                print(f"    thread {name:<64} {t / args.rounds * 1000:8.3f} ms a call (schedstat)")
        if rg_argv:
            alone = []
            for _ in range(args.rounds):
                t = time.perf_counter()
                subprocess.run(rg_argv, cwd=tree, stdin=subprocess.DEVNULL, capture_output=True, check=False)
                alone.append(time.perf_counter() - t)
            print(
                f"  {'rg alone, the same argv, from this process (subprocess.run)':<72} "
                f"{statistics.median(alone) * 1000:8.3f} ms"
            )
            bare = []
            for _ in range(args.rounds):
                t = time.perf_counter()
                subprocess.run(
                    baseline(args, pattern), cwd=tree, stdin=subprocess.DEVNULL, capture_output=True, check=False
                )
                bare.append(time.perf_counter() - t)
            print(f"  {BARE:<72} {statistics.median(bare) * 1000:8.3f} ms")
    print(f"\nload average: {os.getloadavg()}")
    os.close(in_w)
    thread.join(timeout=30)


if __name__ == "__main__":
    main()

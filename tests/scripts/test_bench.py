"""scripts/bench end to end on a tiny kernel-shaped tree and tiny scale trees, one round: every workload
runs against the frozen daemon and bare ripgrep, and the results file and the chart come out.

The kernel workloads run on `mini_kernel_tree` (the paths they name, a few hundred files), never on the
kernel itself, so the test needs no download; the cold start is compared with upstream's documented
figure rather than installing the Node tool. Durations are recorded, never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
sys.path.insert(0, str(SCRIPTS))

import bench_bound  # noqa: E402 - scripts/ is not a package
import bench_corpus  # noqa: E402
import selectivity_probe  # noqa: E402

pytestmark = pytest.mark.e2e


def snapshot(tree: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and modification time."""
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in tree.rglob("*") if p.is_file()}


def test_every_workload_runs_and_is_reported(exe: Path, tmp_path: Path) -> None:
    tree = bench_corpus.mini_kernel_tree(tmp_path / "tree")
    before = snapshot(tree)
    out = tmp_path / "out"
    common = [sys.executable, str(SCRIPTS / "bench_suite.py"), "--exe", str(exe), "--scale-sizes", "300,900"]
    listed = subprocess.run([*common, "--list"], capture_output=True, text=True, check=True).stdout.split()
    done = subprocess.run(
        [
            *common,
            *("--tree", str(tree), "--cache", str(tmp_path / "cache"), "--out", str(out), "--rounds", "1"),
            "--no-upstream-node",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    doc = json.loads((out / "results.json").read_text())
    workloads = {w["id"]: w for w in doc["workloads"]}
    assert sorted(workloads) == sorted(listed)
    assert {"grep-static", "cold-start", "rss-grep-static", "concurrency", "terminal-regex"} <= set(workloads)
    for w in workloads.values():
        assert w["status"] in {"pass", "miss", "info"}, w
        for system in w["systems"].values():
            assert system.get("reference") or len(system["samples_ms"]) == 1, w
        if w["baseline"]:
            assert w["ratio"] is not None and w["ratio"] > 0, w
    assert workloads["cold-start"]["systems"]["upstream Node tool"]["reference"] is True
    assert workloads["rss-grep-static"]["peak_rss_mb"] > 0
    assert workloads["scale-grep-literal-900"]["extra"]["rg_results"] == 9
    assert workloads["grep-static"]["extra"]["rg_results"] > 0
    # The core-count runs: each pinned workload once per count, 1 CPU always among them.
    cores = [w for w in workloads.values() if w["group"] == "cores"]
    assert {(w["id"].rsplit("-", 1)[0], w["extra"]["cpus"]) for w in cores} >= {
        ("cores-grep-static", 1),
        ("cores-grep-overflow", 1),
    }
    growth = doc["scale_growth"]
    assert set(growth) == {"glob-all", "glob-x", "grep-literal"}
    assert growth["glob-all"]["files"] == [300, 900]

    # The warm workloads: every answer the index gave was the walk's; the rewritten files are restored.
    warm = [w for w in workloads.values() if w["group"] == "warm"]
    assert {"warm-build-kernel", "warm-rewrite", "warm-grep-static", "warm-first-answer", "warm-build-900"} <= {
        w["id"] for w in warm
    }
    assert all(w["extra"]["exact"] is True for w in warm if "exact" in w["extra"]), warm
    assert workloads["warm-build-kernel"]["extra"]["grep_files"] > 0
    assert snapshot(tree) == before

    # The realistic suite: queries of every kind drawn from the tree, each answered as the walk answers it.
    suite = workloads["suite-index-on"]["extra"]
    assert suite["exact"] is True and suite["queries"] == len(suite["per_query"]) > 20
    assert {q["kind"] for q in suite["per_query"]} >= {"identifier", "phrase-2", "spaces", "alternation", "folded"}
    assert all(q["on_ratio"] > 0 and q["off_ratio"] > 0 for q in suite["per_query"])
    assert workloads["suite-on-vs-off"]["extra"]["max_on_off"] > 0
    assert (out / "suite.md").read_text().count("\n") == suite["queries"] + 2
    # The bound, beside them: every query's answer files counted, the bound's figures reported.
    assert all(q["files"] >= 1 and q["bound_ratio"] > 0 and q["on_bound"] > 0 for q in suite["per_query"])
    bound = workloads["suite-bound"]["extra"]
    assert bound["queries"] == suite["queries"] and 0 < bound["geomean_ratio_bound"] <= bound["worst_ratio_bound"]

    assert (out / "bench-ratios.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (out / "results.md").read_text()
    assert table.count("\n") == len(workloads) + 2

    redrawn = tmp_path / "redrawn.png"
    subprocess.run(
        [*common, "--chart-from", str(out / "results.json"), "--png", str(redrawn)], check=True, capture_output=True
    )
    assert redrawn.read_bytes()[:4] == b"\x89PNG"


def test_the_bound_names_exactly_the_answers_files(rg_path: str, tmp_path: Path) -> None:
    """scripts/bench_bound.py: the files ripgrep's walk finds a match in, ignore files honoured; no file is
    the null device; an output over the cap is stopped at the cap's share of it; names split to fit."""
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / ".gitignore").write_text("ignored.txt\n")
    (tree / ".git").mkdir()
    (tree / "a.txt").write_text("needle\n" * 50)
    (tree / "sub" / "b.txt").write_text("hay needle hay\n")
    (tree / "ignored.txt").write_text("needle\n")
    (tree / "c.txt").write_text("hay\n")
    rg = Path(rg_path)

    bound = bench_bound.prepare(rg, tree, "needle")
    assert bound.files == 2 and not bound.overflows and len(bound.runs) == 1
    assert bound.runs[0][-3:] == (b"--", b"a.txt", b"sub/b.txt")
    assert bench_bound.run(rg, tree, bound) > 0

    nothing = bench_bound.prepare(rg, tree, "absent")
    assert nothing.files == 0 and nothing.runs[0][-1] == b"/dev/null"

    over = bench_bound.prepare(rg, tree, "needle", cap=1000)  # --json of 51 matches is ~15 KB
    standard = subprocess.run(
        [rg_path, "--no-config", *bench_bound.STANDARD, "--regexp=needle", "a.txt", "sub/b.txt"],
        cwd=tree,
        capture_output=True,
        check=True,
    ).stdout
    assert over.overflows and over.stop_after is not None and 0 < over.stop_after < len(standard) // 5
    assert bench_bound.run(rg, tree, over) > 0

    assert bench_bound._split([b"a" * 10] * 5, 40) == [[b"a" * 10, b"a" * 10], [b"a" * 10, b"a" * 10], [b"a" * 10]]


def test_the_selectivity_probe_counts_what_each_index_would_keep(rg_path: str, tmp_path: Path) -> None:
    """scripts/selectivity_probe.py: the trigram candidates, then the follow mask's and the exact n-grams'
    subsets of them — a file holding the literal is kept by every one, a file holding its trigrams apart
    by the trigrams only (and by a mask only where the two following bytes share a bucket)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "whole.txt").write_bytes(b"xx abcd yy\n")
    (tree / "apart.txt").write_bytes(b"abcz zbcd\n")  # abc and bcd, never abc followed by d
    (tree / "none.txt").write_bytes(b"nothing\n")
    (tree / "after-nul.txt").write_bytes(b"abz\0abcd\n")  # the index reads up to the NUL; ripgrep -a reads on
    rg, literal = rg_path, b"abcd"

    trigram = sorted(selectivity_probe.holding(rg, str(tree), selectivity_probe.grams(literal, 3)))
    assert trigram == ["./after-nul.txt", "./apart.txt", "./whole.txt"]
    for bits in (4, 8, 16):
        kept = selectivity_probe.masked(str(tree), trigram, literal, bits)
        apart_kept = selectivity_probe.bucket(ord("z"), bits) == selectivity_probe.bucket(ord("d"), bits)
        assert kept == [p for p in trigram if p == "./whole.txt" or (p == "./apart.txt" and apart_kept)]
    four = selectivity_probe.holding(rg, str(tree), selectivity_probe.grams(literal, 4), trigram)
    assert sorted(four) == ["./after-nul.txt", "./whole.txt"]
    assert selectivity_probe.varint_bytes(numpy.array([0, 127, 128, 16383, 16384])) == 1 + 1 + 2 + 2 + 3

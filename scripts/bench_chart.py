"""The chart of a scripts/bench results file: ratios against their targets, the absolute targets (cold
start, peak RSS) as a share of their limit, and how the scale workloads grow with the tree.

Drawn with matplotlib's Agg backend (no display needed) from the JSON alone, so a published results
file can be redrawn at any time: `scripts/bench --chart-from docs/bench/results.json`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PASS, MISS, INFO = "#2e7d32", "#c62828", "#9e9e9e"


def _colour(status: str) -> str:
    return {"pass": PASS, "miss": MISS}.get(status, INFO)


def _ratio_status(workload: dict[str, Any]) -> str:
    """pass/miss of the ratio target alone (a workload's other targets have their own panel)."""
    checks = [c for c in workload["checks"] if c["metric"] == "ratio"]
    if not checks:
        return "info"
    return "pass" if all(c["pass"] for c in checks) else "miss"


def render(doc: dict[str, Any], png: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = doc["workloads"]
    ratios = [w for w in workloads if w["ratio"] is not None]
    absolute: list[tuple[str, dict[str, Any]]] = []
    for w in workloads:
        for c in w["checks"]:
            if c["metric"] == "ratio" or c["value"] is None:
                continue
            label = w["title"]
            if w["group"] == "scale":  # one daemon per size: the same peak for its three workloads
                label = w["title"].split(":")[0] + ": peak RSS"
                if any(seen == label for seen, _ in absolute):
                    continue
            absolute.append((label, c))
    growth = doc.get("scale_growth") or {}
    has_growth = any(len(e["files"]) > 1 for e in growth.values())

    bottom_rows = max(len(absolute), 3)
    fig_height = 1.6 + 0.28 * len(ratios) + (0.3 * bottom_rows + 1.4 if absolute or has_growth else 0)
    fig = plt.figure(figsize=(10, fig_height), dpi=80)
    heights = [max(len(ratios), 1) * 0.28 + 0.6] + ([0.3 * bottom_rows + 0.8] if absolute or has_growth else [])
    grid = fig.add_gridspec(len(heights), 2, height_ratios=heights, width_ratios=[1.25, 1])

    ax = fig.add_subplot(grid[0, :])
    labels = [w["title"] for w in ratios][::-1]
    values = [w["ratio"] for w in ratios][::-1]
    colours = [_colour(_ratio_status(w)) for w in ratios][::-1]
    ys = range(len(ratios))
    ax.barh(list(ys), values, color=colours, height=0.6)
    for y, w in zip(ys, ratios[::-1], strict=True):
        ax.text(w["ratio"], y, f" {w['ratio']:.2f}", va="center", fontsize=8)
        for check in w["checks"]:
            if check["metric"] != "ratio":
                continue
            ax.plot([check["limit"]] * 2, [y - 0.4, y + 0.4], color="black", linewidth=2)
            if check["stretch"] is not None:
                ax.plot([check["stretch"]] * 2, [y - 0.4, y + 0.4], color="black", linewidth=1, linestyle=":")
    ax.axvline(1.0, color="#555555", linewidth=0.8, linestyle="--")
    ax.set_yticks(list(ys), labels, fontsize=8)
    ax.set_xlabel("daemon median / baseline median (lower is faster); | target, : stretch", fontsize=8)
    load = doc.get("load", {}).get("before", ["?"])
    ax.set_title(
        f"dsh-search vs bare ripgrep — {doc.get('date', '')[:10]}, {doc.get('rounds')} rounds, "
        f"{doc.get('host', {}).get('cpus')} CPUs, load {load[0]}",
        fontsize=10,
    )
    ax.set_xlim(0, max([*values, 1.4]) * 1.12)
    ax.tick_params(axis="x", labelsize=8)

    if absolute:
        ax2 = fig.add_subplot(grid[1, 0])
        names, shares, colours2 = [], [], []
        for label, c in absolute:
            unit = "ms" if c["metric"] == "median_ms" else "MB"
            names.append(f"{label[:40]}: {c['value']:.0f} / {c['limit']:g} {unit}")
            shares.append(100 * c["value"] / c["limit"])
            colours2.append(PASS if c["pass"] else MISS)
        ys2 = range(len(absolute))
        ax2.barh(list(ys2)[::-1], shares, color=colours2, height=0.6)
        ax2.axvline(100, color="black", linewidth=2)
        ax2.set_yticks(list(ys2)[::-1], names, fontsize=7)
        ax2.set_xlabel("% of the absolute target (cold start ms, peak RSS MB)", fontsize=8)
        ax2.tick_params(axis="x", labelsize=8)

    if has_growth:
        ax3 = fig.add_subplot(grid[1, 1])
        for kind, entry in growth.items():
            (line,) = ax3.plot(entry["files"], entry["daemon_ms"], marker="o", label=f"daemon {kind}")
            ax3.plot(
                entry["files"], entry["rg_ms"], marker="x", linestyle=":", color=line.get_color(), label=f"rg {kind}"
            )
        ax3.set_xscale("log")
        ax3.set_yscale("log")
        sizes = sorted({n for e in growth.values() for n in e["files"]})
        ax3.set_xticks(sizes, [f"{n // 1000}k" if n % 1000 == 0 else str(n) for n in sizes])
        ax3.minorticks_off()
        ax3.set_xlabel("files in the scale tree", fontsize=8)
        ax3.set_ylabel("median ms", fontsize=8)
        ax3.legend(fontsize=6)
        ax3.tick_params(labelsize=7)

    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=80)
    plt.close(fig)
    return png

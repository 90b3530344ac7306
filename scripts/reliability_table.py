"""Render the reliability tests' figures (JSON lines from tests/support/reliability_report.py) as
docs/reliability.md's table."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"
BEGIN, END = "<!-- reliability-table:begin -->", "<!-- reliability-table:end -->"


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def table(rows: list[dict[str, Any]]) -> str:
    by: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by.setdefault(row["what"], []).append(row)
    out = ["| what | measured in the last run |", "|---|---|"]
    for load in by.get("load", []):
        rss0, rss1 = load["rss_kib"]
        out.append(
            f"| load held ({load['framing']}) | {load['requests']:,} mixed requests, {load['in_flight']} in flight; "
            f"{load['answered_once']:,} of {load['requests'] - 400:,} measured ids answered exactly once; "
            f"fds {load['fds'][0]} → {load['fds'][1]}; rg left: {load['rg_left']}; "
            f"RSS after warm-up {mib(rss0)} → after the run {mib(rss1)} ({(rss1 / rss0 - 1) * 100:+.0f} %) |"
        )
    for load in by.get("load", []):
        out.append(f"| cancellations survived ({load['framing']}) | {load['cancelled']:,} cancelled at random "
                   "instants, a third of them in the same write as their request |")  # fmt: skip
    for storm in by.get("storm", []):
        out.append(
            f"| early-cancellation storm ({storm['framing']}) | {storm['greps']} greps cancelled 0–10 ms after "
            f"sending: {storm['answered']} answered; fds {storm['fds'][0]} → {storm['fds'][1]} |"
        )
    fuzz = by.get("fuzz", [])
    hostile = by.get("hostile", [])
    if fuzz or hostile:
        parts = [f"{f['examples']} fuzzed {f['framing']} examples ({f['answers']:,} answers)" for f in fuzz]
        parts += [f"{h['calls']} method calls with {h['strings']} hostile strings" for h in hostile]
        out.append(f"| bad inputs tried | {'; '.join(parts)}; internal errors: 0; stray stdout bytes: 0 |")
    for mem in by.get("rg-memory", []):
        out.append(
            f"| faults injected: rg out of memory | a {mem['file_mb']} MB all-matching file under a "
            f"{mem['bound_mib']} MiB bound: overflow (1003) in {mem['answered_s']} s |"
        )
    for fault in by.get("fault", []):
        out.append(f"| faults injected | {fault['fault']}: {fault['outcome']} |")
    for sb in by.get("scrollback", []):
        base, grown, after = sb["rss_kib"]
        out.append(
            f"| memory bounds: scrollback | {sb['appended_mib']} MiB appended under a {sb['budget_mib']} MiB budget: "
            f"RSS {mib(base)} → {mib(grown)}; all sessions closed: {mib(after)} |"
        )
    out.append("| nothing lost | every test above passed |")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("report")
    p.add_argument("--write", action="store_true", help="replace the table in docs/reliability.md")
    args = p.parse_args()
    rows = [json.loads(line) for line in Path(args.report).read_text().splitlines() if line.strip()]
    stamp = f"Run on {datetime.date.today()}, {platform.machine()}, Linux {platform.release()}."
    rendered = f"{BEGIN}\n{stamp}\n\n{table(rows)}\n{END}"
    print(rendered)
    if args.write:
        doc = DOC.read_text()
        DOC.write_text(re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: rendered, doc, flags=re.S))


if __name__ == "__main__":
    main()

"""scripts/demo's session against the frozen daemon: every request is paired with its own answer (the
daemon's notifications, such as tools/list_changed after the first scrollback, are shown apart), and
the daemon exits 0 after shutdown and exit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def test_demo_pairs_each_request_with_its_answer(exe: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo_session.py"), "--exe", str(exe), "--workdir", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    sent = [json.loads(line[4:]) for line in lines if line.startswith("--> ")]
    answered = [json.loads(line[4:]) for line in lines if line.startswith("<-- {")]
    notified = [json.loads(line[len("<-- (notification) ") :]) for line in lines if line.startswith("<-- (notif")]
    assert [m["id"] for m in sent if "id" in m] == [m["id"] for m in answered]
    assert all("error" not in m for m in answered)  # the deliberate bad pattern is an isError result
    assert [m["method"] for m in notified] == ["notifications/tools/list_changed"]
    requests = [m for m in sent if "id" in m]
    found = next(a for a, r in zip(answered, requests, strict=True) if r["method"] == "terminal_search")
    assert found["result"]["matchCount"] == 1
    assert re.search(r"\(daemon exited with status 0\)$", done.stdout.strip())

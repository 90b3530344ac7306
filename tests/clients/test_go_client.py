"""clients/go: gofmt, go vet, then `go test` against the frozen executable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.hosts import go_run, go_toolchain, gofmt_clean

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "go"


def test_go_client(exe: Path, slow_corpus: Path) -> None:
    go, env = go_toolchain()
    gofmt_clean(go, CLIENT)
    go_run(go, env, ["vet", "./..."], CLIENT)
    env = {**env, "DSH_SEARCH_EXE": str(exe), "DSH_SLOW_CORPUS": str(slow_corpus)}
    output = go_run(go, env, ["test", "-count=1", "-v", "./..."], CLIENT, timeout=600)
    # Every test ran: they skip only without DSH_SEARCH_EXE.
    assert "--- SKIP" not in output, output
    assert "--- FAIL" not in output, output
    assert len(re.findall(r"^--- PASS: Test", output, re.MULTILINE)) >= 15, output

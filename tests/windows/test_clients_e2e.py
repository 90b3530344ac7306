"""The Go client's host tests (clients/go/client_test.go), cross-compiled for Windows (GOOS=windows), run
under wine against the Windows daemon: every test, none skipped. (The Python client's: tests/windows/
test_wheel_e2e.py drives it from the installed win_amd64 wheel in the Windows Python.)"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.support.hosts import go_run, go_toolchain, gofmt_clean
from tests.windows.conftest import as_text, run_wine, winpath

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "go"


def test_go_client_on_windows(exe: Path, slow_corpus: Path, tmp_path: Path) -> None:
    go, env = go_toolchain()
    gofmt_clean(go, CLIENT)
    windows = {**env, "GOOS": "windows", "GOARCH": "amd64"}
    go_run(go, windows, ["vet", "./..."], CLIENT)
    binary = tmp_path / "dshsearch.test.exe"
    go_run(go, windows, ["test", "-c", "-o", str(binary), "."], CLIENT, timeout=600)
    done = as_text(run_wine(
        [str(binary), "-test.count=1", "-test.v"],
        env={**os.environ, "DSH_SEARCH_EXE": winpath(exe), "DSH_SLOW_CORPUS": winpath(slow_corpus)},
        timeout=600, stdin_pipe=True,
    ))  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "--- SKIP" not in output and "--- FAIL" not in output, output
    assert len(re.findall(r"^--- PASS: Test", output, re.MULTILINE)) >= 15, output

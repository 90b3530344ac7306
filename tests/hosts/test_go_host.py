"""examples/go-host (Go 1.19 standard library, NDJSON framing) against the frozen executable."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.hosts.support import (
    check_common_transcript,
    find_line,
    kill_host_mid_search,
    lonely_copy,
    run_host,
    run_host_without_sidecar,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
GO_HOST = ROOT / "examples" / "go-host"
GO_LINES = [
    r"concurrent: 5 requests from 5 goroutines, answered in this order: (?P<fast>.+), slow grep",
    r'grep "export": Found 1 match in src/util\.js',
    r"ping: \{\}",
    r"slow grep: context deadline exceeded after 1500 ms, answered after (?P<after>\d+) ms: error -32800 "
    r"SEARCH_ABORTED: Error: grep was aborted before completion \(tool timeout or caller cancellation\)",
]


def _install_go() -> str:
    """Debian's golang-go (Go 1.19 on bookworm), installed when missing, as scripts/test promises."""
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        pytest.fail("examples/go-host needs Go 1.19+ (`go` is not on PATH): apt-get install golang-go as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in ([apt, "update"], [apt, "install", "-y", "--no-install-recommends", "golang-go"]):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
        if proc.returncode != 0:
            pytest.fail(
                f"could not install Go ({' '.join(argv)} failed):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            )
    go = shutil.which("go") or ("/usr/bin/go" if Path("/usr/bin/go").exists() else None)
    if go is None:
        pytest.fail("golang-go was installed but `go` is not on PATH")
    return go


@pytest.fixture(scope="module")
def go_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with open(Path(tempfile.gettempdir()) / "dsh-search-go-install.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # one apt-get at a time, even across concurrent test runs
        go = shutil.which("go") or _install_go()
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"go(\d+)\.(\d+)", version)
    assert found and (int(found[1]), int(found[2])) >= (1, 19), version
    env = {
        **os.environ,
        "GOPROXY": "off",  # standard library only: nothing to download
        "GOTOOLCHAIN": "local",  # a newer Go must not try to fetch another toolchain
        "CGO_ENABLED": "0",
    }
    env.setdefault("GOCACHE", str(ROOT / ".cache" / "go-build"))
    gofmt = Path(go).with_name("gofmt")
    unformatted = subprocess.run(
        [str(gofmt) if gofmt.exists() else "gofmt", "-l", "."], cwd=GO_HOST, capture_output=True, text=True, check=True
    ).stdout
    assert not unformatted, f"gofmt would change: {unformatted}"
    binary = tmp_path_factory.mktemp("go-host") / "go-host"
    for argv in ([go, "vet", "./..."], [go, "build", "-o", str(binary), "."]):
        proc = subprocess.run(argv, cwd=GO_HOST, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, f"{' '.join(argv)} failed:\n{proc.stdout}\n{proc.stderr}"
    return binary


def test_go_host_session(go_host: Path, exe: Path, slow_corpus: Path, tmp_path: Path) -> None:
    lines = run_host([str(go_host), "-exe", str(exe), "-corpus", str(slow_corpus)], GO_HOST, tmp_path)
    check_common_transcript(lines, exe, "ndjson")
    concurrent = find_line(lines, GO_LINES[0])
    assert sorted(concurrent["fast"].split(", ")) == ['glob "**/*.js"', 'grep "TODO"', 'grep "export"', "ping"]
    for pattern in GO_LINES[1:]:
        find_line(lines, pattern)
    timed_out = find_line(lines, GO_LINES[3])
    assert int(timed_out["after"]) < 1500 + 3000, timed_out.group(0)


def test_daemon_exits_when_go_host_is_sigkilled(go_host: Path, exe: Path, slow_corpus: Path, tmp_path: Path) -> None:
    argv = [str(go_host), "-exe", str(exe), "-corpus", str(slow_corpus), "-block-in-slow-grep"]
    output = kill_host_mid_search(argv, GO_HOST, tmp_path, exe)
    assert "slow grep: started" in output


def test_go_host_reports_a_missing_sidecar(go_host: Path, exe: Path, tmp_path: Path) -> None:
    lonely = lonely_copy(exe, tmp_path / "bin")
    _, stderr = run_host_without_sidecar([str(go_host), "-exe", str(lonely)], GO_HOST, tmp_path / "tmp")
    assert f"dsh-search: ripgrep sidecar {lonely}-rg is missing" in stderr

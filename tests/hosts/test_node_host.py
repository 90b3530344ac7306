"""examples/node-host (Node 20, vscode-jsonrpc over LSP framing) against the frozen executable."""

from __future__ import annotations

import fcntl
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.hosts.support import (
    check_common_transcript,
    kill_host_mid_search,
    lonely_copy,
    run_host,
    run_host_without_sidecar,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NODE_HOST = ROOT / "examples" / "node-host"
# Written after a successful `npm ci`: a copy of the lock file it installed (npm ci empties node_modules
# first, so a stale or half-finished install never carries it).
STAMP = NODE_HOST / "node_modules" / ".dsh-installed-lock.json"


@pytest.fixture(scope="module")
def node_host() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("examples/node-host needs Node.js 20+ with npm on PATH (node or npm is missing)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    major = int(re.match(r"v(\d+)", version).group(1))  # type: ignore[union-attr]
    if major < 20:
        pytest.fail(f"examples/node-host needs Node.js 20+, found {version}")
    lock = (NODE_HOST / "package-lock.json").read_bytes()
    # One npm ci at a time, even across concurrent test runs.
    with open(Path(tempfile.gettempdir()) / "dsh-search-node-host-npm.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if not STAMP.is_file() or STAMP.read_bytes() != lock:
            proc = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                cwd=NODE_HOST,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if proc.returncode != 0:
                pytest.fail(f"npm ci in {NODE_HOST} failed:\n{proc.stdout}\n{proc.stderr}")
            STAMP.write_bytes(lock)
    subprocess.run([node, "--check", "host.js"], cwd=NODE_HOST, check=True)
    return NODE_HOST / "host.js"


def test_node_host_session(node_host: Path, exe: Path, slow_corpus: Path, tmp_path: Path) -> None:
    lines = run_host(["node", str(node_host), "--exe", str(exe), "--corpus", str(slow_corpus)], NODE_HOST, tmp_path)
    check_common_transcript(lines, exe, "lsp")


def test_daemon_exits_when_node_host_is_sigkilled(
    node_host: Path, exe: Path, slow_corpus: Path, tmp_path: Path
) -> None:
    argv = ["node", str(node_host), "--exe", str(exe), "--corpus", str(slow_corpus), "--block-in-slow-grep"]
    output = kill_host_mid_search(argv, NODE_HOST, tmp_path, exe)
    assert "slow grep: started" in output


def test_node_host_reports_a_missing_sidecar(node_host: Path, exe: Path, tmp_path: Path) -> None:
    lonely = lonely_copy(exe, tmp_path / "bin")
    _, stderr = run_host_without_sidecar(["node", str(node_host), "--exe", str(lonely)], NODE_HOST, tmp_path / "tmp")
    assert f"dsh-search: ripgrep sidecar {lonely}-rg is missing" in stderr

"""examples/node-host (the Node client library, vscode-jsonrpc over LSP framing) against the frozen executable."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.hosts import (
    check_common_transcript,
    kill_host_mid_search,
    lonely_copy,
    node_toolchain,
    npm_ci,
    path_without,
    run_failing_host,
    run_host,
    run_host_without_sidecar,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NODE_HOST = ROOT / "examples" / "node-host"
CLIENT = ROOT / "clients" / "node"


@pytest.fixture(scope="module")
def node_host() -> Path:
    node, npm = node_toolchain()
    npm_ci(npm, NODE_HOST)  # installs a copy of clients/node (file: dependency, install-links) and vscode-jsonrpc
    subprocess.run([node, "--check", "host.js"], cwd=NODE_HOST, check=True)
    return NODE_HOST / "host.js"


def test_node_host_session(node_host: Path, exe: Path, slow_corpus: Path, tmp_path: Path) -> None:
    lines = run_host(["node", str(node_host), "--exe", str(exe), "--corpus", str(slow_corpus)], NODE_HOST, tmp_path)
    check_common_transcript(lines, exe, "lsp")


def test_node_host_copied_out_of_the_repository(exe: Path, slow_corpus: Path, tmp_path: Path) -> None:
    """The example as a user would start from it: copied elsewhere, the client installed from its packed
    tarball (`npm pack clients/node`), the executable found on PATH."""
    _node, npm = node_toolchain()
    packed = tmp_path / "packed"
    packed.mkdir()
    done = subprocess.run(
        [npm, "pack", "--pack-destination", str(packed), str(CLIENT)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (tarball,) = packed.glob("dsh-search-client-*.tgz")
    copy = tmp_path / "my-host"
    copy.mkdir()
    for name in ("host.js", "package.json", "README.md"):
        shutil.copy2(NODE_HOST / name, copy / name)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline", str(tarball)],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    path = os.pathsep.join([str(exe.parent), os.environ.get("PATH", "")])
    lines = run_host(["node", "host.js", "--corpus", str(slow_corpus)], copy, tmp_path / "tmp", env={"PATH": path})
    check_common_transcript(lines, exe, "lsp")
    # Without an argument, DSH_SEARCH_EXE or a dsh-search on PATH, it says how to point it at one.
    path = path_without(exe.parent)
    if shutil.which("dsh-search", path=path) is None:
        lines, _ = run_failing_host(["node", "host.js"], copy, tmp_path / "tmp2", {"PATH": path})
        assert any(line.startswith("FAILED: ") and "DSH_SEARCH_EXE" in line for line in lines), lines


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

"""clients/node: type check of index.d.ts, then its `node --test` suite against the frozen executable."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.hosts import node_toolchain, npm_ci, run_node_test_suite

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "node"


def test_node_client(exe: Path, slow_corpus: Path) -> None:
    node, npm = node_toolchain()
    npm_ci(npm, CLIENT)  # vscode-jsonrpc, and the pinned typescript + @types/node for the type check
    for source in ("index.js", "test/client.test.js", "test/fake-daemon.js", "test/exit-check.js"):
        subprocess.run([node, "--check", source], cwd=CLIENT, check=True)
    typecheck = subprocess.run(
        [node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json"],
        cwd=CLIENT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert typecheck.returncode == 0, typecheck.stdout + typecheck.stderr
    env = {**os.environ, "DSH_SEARCH_EXE": str(exe), "DSH_SLOW_CORPUS": str(slow_corpus)}
    run_node_test_suite(node, CLIENT, "test/client.test.js", env, at_least=16)

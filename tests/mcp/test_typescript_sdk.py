"""The official MCP TypeScript SDK client drives the frozen executable: tests/mcp/node/mcp.test.js
(roots and list_changed, progress, cancellation, outputSchema validation by the SDK itself, isError, the
spill path under confinement, terminal_search announced with list_changed, log messages), under
`node --test`, with the SDK pinned in its package-lock.json and installed by `npm ci`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.hosts import node_toolchain, npm_ci, run_node_test_suite

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parent / "node"


def test_typescript_sdk_client(exe: Path, slow_corpus: Path, slow_pattern: str, tmp_path: Path) -> None:
    node, npm = node_toolchain()
    npm_ci(npm, PROJECT)
    env = {
        **os.environ,
        "DSH_SEARCH_EXE": str(exe),
        "DSH_SLOW_CORPUS": str(slow_corpus),
        "DSH_SLOW_PATTERN": slow_pattern,
        "TMPDIR": str(tmp_path),  # the scratch trees the tests make, removed with tmp_path
    }
    run_node_test_suite(node, PROJECT, "mcp.test.js", env, at_least=7)

"""The official MCP TypeScript clients drive the frozen executable, under `node --test`, with both SDKs
pinned in tests/mcp/node/package-lock.json and installed by `npm ci`:

- tests/mcp/node/mcp.test.js: `@modelcontextprotocol/sdk` 1.x, the 2025-11-25 handshake (roots and
  list_changed, progress, cancellation, outputSchema validation by the SDK itself, isError, a spill read
  through resources/read, the read tool and grep under confinement, terminal_search announced with
  list_changed, log messages);
- tests/mcp/node/mcp2.test.js: `@modelcontextprotocol/client` 2.x in `auto` mode, which probes in a
  throwaway copy of the server and settles on 2026-07-28 (the copies it starts, the tools, resources and
  the read tool, progress, cancellation, subscriptions/listen, and connect() against one cold start)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.hosts import node_toolchain, npm_ci, run_node_test_suite

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parent / "node"


@pytest.mark.parametrize(("suite", "tests"), [("mcp.test.js", 7), ("mcp2.test.js", 7)])
def test_typescript_sdk_client(
    exe: Path, slow_corpus: Path, slow_pattern: str, tmp_path: Path, suite: str, tests: int
) -> None:
    node, npm = node_toolchain()
    npm_ci(npm, PROJECT)
    env = {
        **os.environ,
        "DSH_SEARCH_EXE": str(exe),
        "DSH_SLOW_CORPUS": str(slow_corpus),
        "DSH_SLOW_PATTERN": slow_pattern,
        "TMPDIR": str(tmp_path),  # the scratch trees the tests make, removed with tmp_path
    }
    run_node_test_suite(node, PROJECT, suite, env, at_least=tests)

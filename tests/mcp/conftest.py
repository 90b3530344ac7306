"""Fixtures of the MCP SDK tests: the slow regex (the slow corpus is a fixture of tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.support.trees import SLOW_PATTERN


@pytest.fixture(scope="session")
def slow_pattern() -> str:
    return SLOW_PATTERN

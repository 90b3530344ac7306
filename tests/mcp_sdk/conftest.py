"""Fixtures of the MCP SDK tests: the slow regex (the slow corpus comes from tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.conftest import SLOW_PATTERN


@pytest.fixture(scope="session")
def slow_pattern() -> str:
    return SLOW_PATTERN

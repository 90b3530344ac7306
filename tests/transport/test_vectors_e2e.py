"""Every envelope vector of tests/data/jsonrpc-vectors.json against the frozen executable, in both framings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.daemon import Daemon
from tests.support.locations import SHARED

VECTORS = json.loads((SHARED / "jsonrpc-vectors.json").read_text())["vectors"]


@pytest.fixture(scope="module", params=["ndjson", "lsp"])
def daemon(request: pytest.FixtureRequest, exe: Any) -> Iterator[Daemon]:
    d = Daemon(framing=request.param, exe=exe)
    yield d
    d.stop()


def exchange(daemon: Daemon, body: str, n: int) -> list[Any]:
    """Send one vector, then a sentinel ping; return everything else answered until a quiet moment."""
    daemon.send_body(body.encode())
    sentinel = f"sentinel-{n}"
    daemon.send({"jsonrpc": "2.0", "method": "ping", "id": sentinel})
    got: list[Any] = []
    seen_sentinel = False
    while not seen_sentinel or not daemon.no_response(0.2):
        msg = daemon.next_response(timeout=20)
        if isinstance(msg, dict) and msg.get("id") == sentinel:
            seen_sentinel = True
        else:
            got.append(msg)
    return got


def matches(expect: dict[str, Any], actual: dict[str, Any], alt_ids: list[Any]) -> bool:
    if actual.get("jsonrpc") != "2.0":
        return False
    if actual.get("id") != expect["id"] and actual.get("id") not in alt_ids:
        return False
    if "result" in expect:
        return "error" not in actual and actual.get("result") == expect["result"]
    return "result" not in actual and actual.get("error", {}).get("code") == expect["error_code"]


@pytest.mark.parametrize("index", range(len(VECTORS)), ids=[v["name"] for v in VECTORS])
def test_vector(daemon: Daemon, index: int) -> None:
    vector = VECTORS[index]
    got = exchange(daemon, vector["request"], index)
    expect = vector["expect"]
    alt = vector.get("alt_ids", [])
    if expect is None:
        assert got == []
        return
    assert len(got) == 1, got
    actual = got[0]
    if isinstance(expect, dict):
        assert isinstance(actual, dict) and matches(expect, actual, alt), actual
        return
    assert isinstance(actual, list) and len(actual) == len(expect), actual
    remaining = list(actual)
    for want in expect:
        hit = next((a for a in remaining if matches(want, a, alt)), None)
        assert hit is not None, (want, actual)
        remaining.remove(hit)

"""The sans-IO JSON-RPC envelope: what is a call, a notification, an invalid element, a whole-message error."""

from __future__ import annotations

import json

import pytest

from dsh_search.transport import jsonrpc as rpc
from tests.support.locations import SHARED


def parse(text: str) -> rpc.Incoming | rpc.EnvelopeError:
    return rpc.parse(text.encode())


def test_request_and_notification() -> None:
    got = parse('{"jsonrpc":"2.0","method":"ping","id":1}')
    assert isinstance(got, rpc.Incoming) and not got.is_batch
    assert got.items == [rpc.Call("ping", None, 1)]
    note = parse('{"jsonrpc":"2.0","method":"ping"}')
    assert isinstance(note, rpc.Incoming)
    call = note.items[0]
    assert isinstance(call, rpc.Call) and call.is_notification


def test_params_null_is_omitted_and_id_null_is_a_request() -> None:
    got = parse('{"jsonrpc":"2.0","method":"ping","params":null,"id":null}')
    assert isinstance(got, rpc.Incoming)
    call = got.items[0]
    assert isinstance(call, rpc.Call) and call.params is None and not call.is_notification and call.id is None


@pytest.mark.parametrize(
    ("text", "echo"),
    [
        ('{"jsonrpc":"1.0","method":"ping","id":5}', 5),
        ('{"method":"ping","id":6}', 6),
        ('{"jsonrpc":"2.0","method":"ping","params":"x","id":7}', 7),
        ('{"jsonrpc":"2.0","method":1,"id":"m"}', "m"),
        ('{"jsonrpc":"2.0","method":"ping","id":{"a":1}}', None),
        ('{"jsonrpc":"2.0","method":"ping","id":true}', None),
        ('{"jsonrpc":"2.0","method":"ping","id":[1]}', None),
        ('"hello"', None),
        ("42", None),
    ],
)
def test_invalid_elements_echo_the_id_when_readable(text: str, echo: object) -> None:
    got = parse(text)
    assert isinstance(got, rpc.Incoming)
    item = got.items[0]
    assert isinstance(item, rpc.Invalid) and item.id == echo


def test_parse_error_and_empty_batch_are_whole_message_errors() -> None:
    assert parse("{nope") == rpc.EnvelopeError(rpc.PARSE_ERROR, parse("{nope").message)  # type: ignore[union-attr]
    assert isinstance(parse("[]"), rpc.EnvelopeError) and parse("[]").code == rpc.INVALID_REQUEST  # type: ignore[union-attr]
    assert parse(b"\xff".decode("latin-1")).code == rpc.PARSE_ERROR  # type: ignore[union-attr]


def test_batch_elements_are_independent() -> None:
    got = parse('[1, {"jsonrpc":"2.0","method":"ping","id":"a"}, {"foo":"boo"}]')
    assert isinstance(got, rpc.Incoming) and got.is_batch
    kinds = [type(i).__name__ for i in got.items]
    assert kinds == ["Invalid", "Call", "Invalid"]


def test_every_shared_vector_classifies_as_expected() -> None:
    """The envelope half of tests/data/jsonrpc-vectors.json, without any process (the e2e test runs them all)."""
    vectors = json.loads((SHARED / "jsonrpc-vectors.json").read_text())["vectors"]
    for v in vectors:
        got = rpc.parse(v["request"].encode())
        expect = v["expect"]
        whole_message = isinstance(expect, dict) and expect.get("error_code") == rpc.PARSE_ERROR
        if whole_message or v["request"] == "[]":
            assert isinstance(got, rpc.EnvelopeError), v["name"]
            continue
        assert isinstance(got, rpc.Incoming), v["name"]
        if isinstance(expect, dict) and expect.get("error_code") == rpc.INVALID_REQUEST:
            assert isinstance(got.items[0], rpc.Invalid), v["name"]


def test_ids_round_trip_exactly() -> None:
    big = 9007199254740993
    assert rpc.dumps(rpc.result(big, {})) == b'{"jsonrpc":"2.0","id":9007199254740993,"result":{}}'
    assert rpc.dumps(rpc.result(2**70, None)) == b'{"jsonrpc":"2.0","id":1180591620717411303424,"result":null}'
    assert rpc.id_key(1) != rpc.id_key("1")


def test_error_shape() -> None:
    assert rpc.error(rpc.NO_ID, -32600, "x") == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "x"},
    }
    assert rpc.error(3, 1001, "m", {"code": "C"})["error"]["data"] == {"code": "C"}

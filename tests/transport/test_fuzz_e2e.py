"""Property-based fuzzing of the live frozen daemon's transport: random and mutated frames and batches.

Whatever arrives, in either framing: no internal error (-32603) is ever answered, every byte on stdout
belongs to a well-framed JSON-RPC response, and a ping sent afterwards is answered. After each example
the stream is brought back to a message boundary: a newline (NDJSON), or padding longer than any body
the example could have declared (LSP), which the decoder skips as garbage before the ping's header.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.daemon import Daemon, frame
from tests.support.reliability_report import record

MAX_MESSAGE = 2048  # the daemon's maxMessageBytes here, so oversized messages are cheap to make
PAD = MAX_MESSAGE * 3

METHODS = [
    "ping",
    "glob",
    "grep",
    "spill/read",
    "tools/list",
    "tools/call",
    "initialize",
    "rpc.discover",
    "scrollback/append",
    "scrollback/read",
    "scrollback/close",
    "terminal_search",
    "$/cancelRequest",
    "notifications/cancelled",
    "$/setTrace",
    "no/such/method",
    "",
]  # fmt: skip (never exit or shutdown: the daemon must stay up)

# Any code point, lone surrogates included (JSON can carry them; hypothesis leaves them out by default).
any_char = st.characters(exclude_categories=())
text = st.text(any_char, max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(any_char, max_size=8), inner, max_size=4),
    max_leaves=12,
)
params = st.one_of(
    st.none(),
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "pattern": st.text(any_char, max_size=12),
            "path": st.text(any_char, max_size=12),
            "include": st.text(any_char, max_size=8),
            "cwd": st.text(any_char, max_size=8),
            "sessionId": st.text(any_char, max_size=6),
            "locator": st.text(any_char, max_size=12),
            "data": st.text(any_char, max_size=30),
            "regex": st.booleans(),
            "offset": st.integers(-3, 2**60),
            "limit": st.integers(-3, 2**60),
            "id": json_values,
            "name": st.sampled_from(["glob", "grep", "terminal_search", "nope"]),
            "arguments": json_values,
        },
    ),
)


@st.composite
def requests(draw: st.DrawFn) -> Any:
    message: dict[str, Any] = {}
    if draw(st.booleans()):
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "1.0", 2]))
    message["method"] = draw(
        st.sampled_from(METHODS) | st.text(max_size=6).filter(lambda m: m not in ("exit", "shutdown"))
    )
    if draw(st.booleans()):
        message["params"] = draw(params)
    if draw(st.integers(0, 3)):
        message["id"] = draw(st.integers(-5, 2**64) | st.text(max_size=5) | st.none() | st.booleans() | json_values)
    return message


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """One message body: a request, a batch, any JSON, raw bytes, or a mutated request."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return json.dumps(draw(requests())).encode()
    if kind == 1:
        return json.dumps(draw(st.lists(requests(), max_size=5))).encode()
    if kind == 2:
        return json.dumps(draw(json_values)).encode()
    if kind == 3:
        return draw(st.binary(max_size=64))
    if kind == 4:
        return b"x" * draw(st.integers(MAX_MESSAGE - 2, MAX_MESSAGE + 50))  # around the size limit
    base = bytearray(json.dumps(draw(requests())).encode())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(0, len(base) - 1)))
        op = draw(st.integers(0, 2))
        if op == 0 and base:
            base[at] = draw(st.integers(0, 255))
        elif op == 1:
            base[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif base:
            del base[at : at + draw(st.integers(1, 4))]
    return bytes(base)


@st.composite
def lsp_frames(draw: st.DrawFn) -> bytes:
    body = draw(bodies())
    header = draw(
        st.sampled_from(["good", "good", "good", "short", "long", "garbage-length", "no-length", "junk-line", "lower"])
    )
    if header == "good":
        return frame(body, "lsp")
    if header == "short":
        return b"Content-Length: %d\r\n\r\n" % max(0, len(body) - draw(st.integers(1, 10))) + body
    if header == "long":
        return b"Content-Length: %d\r\n\r\n" % (len(body) + draw(st.integers(1, 100))) + body
    if header == "garbage-length":
        return b"Content-Length: " + draw(st.sampled_from([b"-1", b"abc", b"", b"1e3", b" 12x"])) + b"\r\n\r\n" + body
    if header == "no-length":
        return b"Content-Type: x\r\n\r\n" + body
    if header == "junk-line":
        return b"no colon here\r\n" + frame(body, "lsp")
    return b"content-length: %d\r\n\r\n" % len(body) + body


def parse_stdout(raw: bytes, framing: str, *, complete: bool = True) -> list[Any]:
    """Every message on stdout; fails on any byte that is not part of a well-framed message. With
    `complete` false, a message still being written at the end is left for later."""
    messages = []
    if framing == "ndjson":
        assert raw.endswith(b"\n") or not raw or not complete
        for line in raw.split(b"\n")[:-1]:
            messages.append(json.loads(line))
    else:
        rest = raw
        while rest:
            head, sep, body = rest.partition(b"\r\n\r\n")
            if not sep and not complete:
                break
            assert sep and head.startswith(b"Content-Length: "), head[:80]
            length = int(head[len(b"Content-Length: ") :])
            if len(body) < length and not complete:
                break
            messages.append(json.loads(body[:length]))
            rest = body[length:]
    for message in messages:
        for response in message if isinstance(message, list) else [message]:
            assert response["jsonrpc"] == "2.0" and "id" in response
            assert ("result" in response) != ("error" in response), response
    return messages


def errors_in(messages: list[Any]) -> Iterator[dict[str, Any]]:
    for message in messages:
        for response in message if isinstance(message, list) else [message]:
            if "error" in response:
                yield response


@pytest.fixture(scope="module")
def fuzz_daemons(exe: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Daemon]]:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "a.txt").write_text("alpha\nbeta\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("gamma alpha\n")
    daemons = {
        framing: Daemon(
            [
                "--sample-over-cap-glob-results",
                "true",
                "--workdir",
                str(root),
                "--spill-dir",
                str(root / ".spill"),
                "--max-message-bytes",
                str(MAX_MESSAGE),
                "--timeout-ms",
                "5000",
                "--framing",
                framing,
            ],
            framing=framing,
            exe=exe,
        )
        for framing in ("ndjson", "lsp")
    }
    yield daemons
    for framing, d in daemons.items():
        d.stop()
        messages = parse_stdout(bytes(d.raw_stdout), framing)
        record(
            "fuzz", framing=framing, examples=EXAMPLES[framing], stdout_bytes=len(d.raw_stdout), answers=len(messages)
        )
        assert not [r for r in errors_in(messages) if r["error"]["code"] == -32603]
        assert "Traceback" not in d.stderr


_ping_ids = itertools.count()


EXAMPLES = {"ndjson": 0, "lsp": 0}


def check_then_ping(d: Daemon, data: bytes, framing: str) -> None:
    EXAMPLES[framing] += 1
    d.write_raw(data + (b"\n" if framing == "ndjson" else b" " * PAD))
    ping_id = f"fuzz-ping-{next(_ping_ids)}"
    d.send({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
    assert d.wait_for(ping_id, timeout=20)["result"] == {}
    messages = parse_stdout(bytes(d.raw_stdout), framing, complete=False)
    assert not [r for r in errors_in(messages) if r["error"]["code"] == -32603]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(frames=st.lists(bodies(), min_size=1, max_size=6))
def test_ndjson_fuzz(fuzz_daemons: dict[str, Daemon], frames: list[bytes]) -> None:
    check_then_ping(fuzz_daemons["ndjson"], b"\n".join(frames), "ndjson")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(frames=st.lists(lsp_frames(), min_size=1, max_size=6))
def test_lsp_fuzz(fuzz_daemons: dict[str, Daemon], frames: list[bytes]) -> None:
    check_then_ping(fuzz_daemons["lsp"], b"".join(frames), "lsp")

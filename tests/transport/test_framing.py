"""The sans-IO framing decoder: both framings, detection, oversize skipping, resync, any chunking."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dsh_search.transport.framing import BadFrame, Decoder, Framing, Message, Oversized, encode


def feed_all(decoder: Decoder, chunks: list[bytes]) -> list[object]:
    events: list[object] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.feed_eof())
    return events


def test_detects_ndjson_from_first_byte() -> None:
    d = Decoder(1000)
    assert d.feed(b'{"a":1}\n{"b":2}\n') == [Message(b'{"a":1}'), Message(b'{"b":2}')]
    assert d.framing is Framing.NDJSON


def test_detects_lsp_from_capital_or_small_c() -> None:
    for first in (b"Content-Length", b"content-length"):
        d = Decoder(1000)
        assert d.feed(first + b': 7\r\n\r\n{"a":1}') == [Message(b'{"a":1}')]
        assert d.framing is Framing.LSP


def test_ndjson_blank_lines_and_crlf() -> None:
    d = Decoder(1000)
    assert d.feed(b'\n  \n{"a":1}\r\n\r\n\t\n{"b":2}') == [Message(b'{"a":1}')]
    assert d.feed_eof() == [Message(b'{"b":2}')]


def test_ndjson_split_anywhere() -> None:
    d = Decoder(1000)
    assert d.feed(b'{"a"') == []
    assert d.feed(b":1}") == []
    assert d.feed(b"\n") == [Message(b'{"a":1}')]


def test_ndjson_oversized_line_is_skipped_then_next_message_served() -> None:
    d = Decoder(10)
    events = d.feed(b"x" * 25)
    assert events == [Oversized(None)]
    assert d.feed(b"y" * 100) == []  # still inside the oversized line: nothing buffered
    assert d.feed(b'zz\n{"ok":1}\n') == [Message(b'{"ok":1}')]


def test_ndjson_oversized_line_seen_whole() -> None:
    d = Decoder(10)
    assert d.feed(b"x" * 11 + b'\n{"k":1}\n') == [Oversized(11), Message(b'{"k":1}')]
    d = Decoder(10)
    assert d.feed(b"x" * 10 + b"\n") == [Message(b"x" * 10)]  # exactly the cap is fine


def test_lsp_messages_and_partial_reads() -> None:
    d = Decoder(1000, Framing.LSP)
    body = b'{"jsonrpc":"2.0"}'
    data = encode(Framing.LSP, body) * 3
    out: list[object] = []
    for i in range(len(data)):
        out.extend(d.feed(data[i : i + 1]))
    assert out == [Message(body)] * 3


def test_lsp_extra_headers_and_case() -> None:
    d = Decoder(1000)
    msg = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-LENGTH:  2\r\n\r\n{}"
    assert d.feed(b"Content-Length: 2\r\n\r\n{}" + msg) == [Message(b"{}"), Message(b"{}")]


def test_lsp_oversized_body_is_skipped_by_declared_length() -> None:
    d = Decoder(10, Framing.LSP)
    events = d.feed(b"Content-Length: 50\r\n\r\n" + b"x" * 20)
    assert events == [Oversized(50)]
    assert d.feed(b"x" * 30 + encode(Framing.LSP, b"{}")) == [Message(b"{}")]


def test_lsp_bad_headers_resync_at_next_header() -> None:
    d = Decoder(1000, Framing.LSP)
    events = d.feed(b"Content-Length: abc\r\n\r\n" + encode(Framing.LSP, b"{}"))
    assert events == [BadFrame("Content-Length is not a non-negative integer"), Message(b"{}")]
    events = d.feed(b"X-Foo: 1\r\n\r\ngarbage garbage " + encode(Framing.LSP, b"[]"))
    assert events == [BadFrame("missing Content-Length header"), Message(b"[]")]
    events = d.feed(b"no colon here\r\n\r\n" + encode(Framing.LSP, b"1"))
    assert events == [BadFrame("malformed header line"), Message(b"1")]


def test_lsp_too_short_content_length_costs_no_intact_frame() -> None:
    # The leftover of a body longer than its declared length runs straight into the next header.
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    second, third = b'{"jsonrpc":"2.0","id":2,"method":"ping"}', b'{"jsonrpc":"2.0","id":3,"method":"ping"}'
    stream = b"Content-Length: 10\r\n\r\n" + body + encode(Framing.LSP, second) + encode(Framing.LSP, third)
    for chunks in ([stream], [stream[:30], stream[30:70], stream[70:]], [bytes([b]) for b in stream]):
        events = feed_all(Decoder(1000, Framing.LSP), chunks)
        messages = [e for e in events if isinstance(e, Message)]
        assert messages == [Message(body[:10]), Message(second), Message(third)], events
        assert len([e for e in events if isinstance(e, BadFrame)]) == 1


def test_lsp_endless_header_is_bounded() -> None:
    d = Decoder(1000, Framing.LSP)
    events = d.feed(b"Content-Length: 1" + b"1" * 9000)
    assert events == [BadFrame("header block too long")]
    assert d.feed(encode(Framing.LSP, b"{}")) == [Message(b"{}")]


def test_lsp_eof_inside_message_is_reported() -> None:
    d = Decoder(1000, Framing.LSP)
    assert d.feed(b"Content-Length: 10\r\n\r\n{}") == []
    assert d.feed_eof() == [BadFrame("input ended inside a message")]


def test_forced_framing_ignores_first_byte() -> None:
    d = Decoder(1000, Framing.NDJSON)
    assert d.feed(b"Content\n") == [Message(b"Content")]


bodies = st.lists(st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b and b.strip() != b""), max_size=8)


@given(bodies, st.lists(st.integers(min_value=1, max_value=50), max_size=30), st.sampled_from(list(Framing)))
def test_any_chunking_gives_the_same_messages(messages: list[bytes], cuts: list[int], framing: Framing) -> None:
    if framing is Framing.NDJSON:
        messages = [m.rstrip(b"\r") for m in messages if m.rstrip(b"\r").strip()]
    data = b"".join(encode(framing, m) for m in messages)
    chunks = []
    pos = 0
    for cut in cuts:
        chunks.append(data[pos : pos + cut])
        pos += cut
    chunks.append(data[pos:])
    events = feed_all(Decoder(100, framing), [c for c in chunks if c])
    assert events == [Message(m) for m in messages]


@given(st.binary(max_size=300), st.sampled_from(list(Framing)))
def test_garbage_never_raises(data: bytes, framing: Framing) -> None:
    d = Decoder(64, framing)
    for i in range(0, len(data), 7):
        d.feed(data[i : i + 7])
    d.feed_eof()

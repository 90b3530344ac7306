"""Terminal scrollback, sans IO: sanitising across chunk boundaries, decoding, retention, coordinates,
search paging and rendering (docs/terminal.md)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_search.engine.terminal import literal_matches, render_search, rg_matches, rg_stdin
from dsh_search.store.scrollback import (
    Sanitiser,
    Scrollback,
    Snapshot,
    Terminals,
    read_page,
)
from tests.support.examples import examples

BIG = 1 << 40


def clean(*chunks: str) -> str:
    """What these `data` chunks, appended in order to a fresh unbounded buffer, are retained as."""
    buffer = Scrollback(BIG, BIG)
    for chunk in chunks:
        buffer.append_text(chunk)
    return buffer.snapshot().data.decode()


def clean_bytes(*chunks: bytes) -> str:
    buffer = Scrollback(BIG, BIG)
    for chunk in chunks:
        buffer.append_bytes(chunk)
    return buffer.snapshot().data.decode()


def every_split(text: str) -> list[tuple[str, str]]:
    return [(text[:i], text[i:]) for i in range(len(text) + 1)]


def lines_of(buffer: Scrollback) -> list[str]:
    snap = buffer.snapshot()
    return [snap.line(i) for i in range(snap.total_lines)]


# --- sanitising ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("plain text", "plain text"),
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[1;38;5;208mbold\x1b[m", "bold"),
        ("\x1b[?25l\x1b[2J\x1b[Hscreen\x1b[?25h", "screen"),
        ("\x1b[>4;2m\x1b[ qcursor", "cursor"),  # private parameters, an intermediate byte
        ("ring\x07ring", "ringring"),
        ("\x1b]0;window title\x07after", "after"),  # OSC ended by BEL
        ("\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC ended by ST
        ("\x1bP1$r0m\x1b\\dcs", "dcs"),  # DCS string
        ("\x1b_Gkitty=1;AAAA\x1b\\apc", "apc"),  # APC string
        ("\x1b(Bcharset\x1b)0", "charset"),  # designate G0/G1: ESC, intermediate, final
        ("\x1b=keypad\x1b>", "keypad"),  # two-byte sequences
        ("\x1b7save\x1b8\x1bMreverse", "savereverse"),
        ("a\r\nb", "a\nb"),
        ("a\rb", "a\nb"),  # a lone CR is a line break too
        ("a\n\rb", "a\n\nb"),  # LF CR is two breaks
        ("a\r\r\nb", "a\n\nb"),
        ("progress 10%\r\x1b[Kprogress 20%\r\x1b[K\n", "progress 10%\nprogress 20%\n"),  # erase does not split CRLF
        ("tab\there\x08bs", "tab\there\x08bs"),  # other controls are kept
        ("\x1b]0;never terminated\nnext line", "\nnext line"),  # a line break abandons an OSC string
        ("\x1b[12\nx", "\nx"),  # ... and a CSI
        ("\x1b\x1b[31mx", "x"),
        ("\x1b\nx", "\nx"),  # a lone ESC is dropped, what follows is kept
        ("\x1bé", "é"),
        ("\x1b]0;title\x1b[31mred", "red"),  # ESC inside a string ends it and starts a sequence
        ("é\x1b[1m€\x1b[0m𝄞", "é€𝄞"),
    ],
)
def test_sanitises(raw: str, expected: str) -> None:
    assert clean(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "a\x1b[1;31mred\x1b[0mb",
        "x\x1b]0;title\x07y",
        "x\x1b]8;;http://h\x1b\\y",
        "x\x1b(By\x1b=z",
        "one\r\ntwo\rthree\r\n",
        "bar\r\x1b[K\n",
        "é€𝄞\r\n",
    ],
)
def test_a_chunk_boundary_anywhere_changes_nothing(raw: str) -> None:
    whole = clean(raw)
    for head, tail in every_split(raw):
        assert clean(head, tail) == whole, (head, tail)
    assert clean(*raw) == whole  # one character per chunk


def test_cr_at_the_end_of_a_chunk_and_lf_at_the_start_of_the_next_are_one_break() -> None:
    buffer = Scrollback(BIG, BIG)
    buffer.append_text("first\r")
    assert buffer.total_lines == 2  # the break is visible at once
    buffer.append_text("\nsecond")
    assert lines_of(buffer) == ["first", "second"]
    buffer.append_text("\r")
    buffer.append_text("\x1b[K")
    buffer.append_text("\n")
    assert lines_of(buffer) == ["first", "second", ""]


# Tokens with a known meaning: (raw text, clean text, kind). An LF right after a CR (only removed tokens
# between them) is the second half of a CRLF and adds nothing.
TOKENS = [
    ("plain", "plain", "text"),
    ("é𝄞", "é𝄞", "text"),
    (" ", " ", "text"),
    ("\x1b[0m", "", "removed"),
    ("\x1b[38;5;208m", "", "removed"),
    ("\x1b]0;title\x07", "", "removed"),
    ("\x1b]8;;u\x1b\\", "", "removed"),
    ("\x1b(B", "", "removed"),
    ("\x1b=", "", "removed"),
    ("\x07", "", "removed"),
    ("\r", "\n", "cr"),
    ("\n", "\n", "lf"),
    ("\r\n", "\n", "crlf"),
]


def expected_clean(tokens: list[tuple[str, str, str]]) -> str:
    out = []
    after_cr = False
    for _raw, text, kind in tokens:
        if kind == "lf" and after_cr:
            after_cr = False
            continue
        out.append(text)
        if kind != "removed":
            after_cr = kind == "cr"
    return "".join(out)


@given(st.lists(st.sampled_from(TOKENS), max_size=40), st.lists(st.integers(0, 400), max_size=8))
def test_sanitising_any_token_stream_cut_anywhere(tokens: list[tuple[str, str, str]], cuts: list[int]) -> None:
    raw = "".join(t[0] for t in tokens)
    points = sorted({min(c, len(raw)) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert clean(*chunks) == expected_clean(tokens)


@given(st.text(alphabet="\x1b[]P_\\(=;0m\x07\r\n xé😀", max_size=60), st.lists(st.integers(0, 60), max_size=6))
def test_any_input_cut_anywhere_gives_the_same_text(raw: str, cuts: list[int]) -> None:
    points = sorted({min(c, len(raw)) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert clean(*chunks) == clean(raw)
    encoded = raw.encode()  # the same cut points now fall anywhere, inside characters too
    byte_chunks = [encoded[a:b] for a, b in zip([0, *points], [*points, len(encoded)], strict=True)]
    assert clean_bytes(*byte_chunks) == clean(raw)


def test_sanitiser_state_is_per_session() -> None:
    first, second = Sanitiser(), Sanitiser()
    assert first.feed("a\x1b[3") == "a"
    assert second.feed("1mb") == "1mb"
    assert first.feed("1mb") == "b"


# --- decoding ---------------------------------------------------------------------------------------------


def test_surrogate_pair_split_across_data_chunks_is_joined() -> None:
    assert clean("x\ud83d", "\ude00y") == "x😀y"
    assert clean("\ud83d", "\ude00") == "😀"


def test_lone_surrogates_become_replacement_characters() -> None:
    assert clean("a\ud83db") == "a\ufffdb"
    assert clean("a\ude00b") == "a\ufffdb"
    assert clean("a\ud83d", "b") == "a\ufffdb"  # the next chunk did not start with the low half
    assert clean("a\ud83d", "\ud83d", "\ude00") == "a\ufffd😀"


def test_utf8_split_across_byte_chunks_is_joined() -> None:
    raw = "é€𝄞 done\r\n".encode()
    whole = clean_bytes(raw)
    assert whole == "é€𝄞 done\n"
    for i in range(len(raw) + 1):
        assert clean_bytes(raw[:i], raw[i:]) == whole
    assert clean_bytes(*[raw[i : i + 1] for i in range(len(raw))]) == whole


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert clean_bytes(b"a\xffb\xc3") == "a\ufffdb"  # the trailing lead byte waits for its continuation
    assert clean_bytes(b"a\xffb\xc3", b"z") == "a\ufffdb\ufffdz"


def test_switching_kinds_flushes_a_pending_partial_character() -> None:
    buffer = Scrollback(BIG, BIG)
    buffer.append_bytes(b"a\xe2\x82")
    buffer.append_text("b\ud83d")
    buffer.append_bytes(b"c")
    assert buffer.snapshot().data.decode() == "a\ufffdb\ufffdc"


def test_escape_sequence_split_across_byte_chunks() -> None:
    raw = "\x1b]0;tïtle\x07ok\x1b[1;31m€\x1b[0m\r\n".encode()
    for i in range(len(raw) + 1):
        assert clean_bytes(raw[:i], raw[i:]) == "ok€\n"


# --- retention --------------------------------------------------------------------------------------------


def reference(chunks: list[str], max_lines: int, max_bytes: int) -> tuple[str, bool]:
    """Upstream's retention, re-run over the whole text after every append."""
    text, truncated = "", False
    for chunk in chunks:
        text += chunk
        lines = text.split("\n")
        if len(lines) > max_lines:
            text, truncated = "\n".join(lines[-max_lines:]), True
        data = text.encode()
        if len(data) > max_bytes:
            text, truncated = data[-max_bytes:].decode("utf-8", "ignore"), True
    return text, truncated


def test_keeps_the_newest_lines() -> None:
    buffer = Scrollback(3, BIG)
    buffer.append_text("one\ntwo\nthree")
    assert (buffer.total_lines, buffer.truncated) == (3, False)
    buffer.append_text("\n")  # the trailing newline makes an empty newest line, which counts
    assert lines_of(buffer) == ["two", "three", ""]
    assert buffer.truncated
    buffer.append_text("four\nfive\nsix")
    assert lines_of(buffer) == ["four", "five", "six"]


def test_keeps_the_newest_bytes_on_whole_code_points() -> None:
    buffer = Scrollback(BIG, 10)
    buffer.append_text("0123456789")
    assert not buffer.truncated
    buffer.append_text("é")  # 12 bytes: the newest 10 are "23456789é"
    assert buffer.snapshot().data.decode() == "23456789é"
    assert buffer.truncated
    buffer = Scrollback(BIG, 5)
    buffer.append_text("ééé")  # 6 bytes: the newest 5 start inside the first "é", which goes whole
    assert buffer.snapshot().data.decode() == "éé"
    buffer.append_text("𝄞")  # 8 bytes: the newest 5 start inside the second "é"
    assert buffer.snapshot().data.decode() == "𝄞"


def test_lines_first_then_bytes() -> None:
    buffer = Scrollback(2, 6)
    buffer.append_text("aaaa\nbbbb\ncccc")
    assert buffer.snapshot().data == b"b\ncccc"  # kept "bbbb\ncccc", then its last 6 bytes
    assert buffer.total_lines == 2
    assert buffer.snapshot().line(0) == "b"  # a partial first line is still a line


def test_truncated_is_sticky() -> None:
    buffer = Scrollback(2, BIG)
    buffer.append_text("a\nb\nc")
    assert buffer.truncated
    buffer.append_text("d")
    assert buffer.truncated
    assert read_page(buffer.snapshot(), 0, 10)["truncated"]


def test_one_line_limit_with_a_trailing_newline_leaves_nothing() -> None:
    buffer = Scrollback(1, BIG)
    buffer.append_text("a\n")
    assert buffer.snapshot().data == b""
    assert buffer.total_lines == 0


@settings(max_examples=examples(300))
@given(
    st.lists(st.text(alphabet="ab\né€𝄞", max_size=12), max_size=20),
    st.integers(1, 6),
    st.integers(1, 24),
)
def test_retention_matches_upstreams_whole_text_rule(chunks: list[str], max_lines: int, max_bytes: int) -> None:
    buffer = Scrollback(max_lines, max_bytes)
    for chunk in chunks:
        buffer.append_text(chunk)
    text, truncated = reference(chunks, max_lines, max_bytes)
    snap = buffer.snapshot()
    assert snap.data.decode() == text
    assert snap.truncated == truncated
    assert snap.total_lines == (len(text.split("\n")) if text else 0)
    assert [snap.line(i) for i in range(snap.total_lines)] == (text.split("\n") if text else [])


def test_a_full_buffer_takes_many_small_appends_in_linear_time() -> None:
    buffer = Scrollback(10_000, 4 << 20)
    buffer.append_text("x" * (4 << 20))  # one huge line fills the byte budget
    start = time.monotonic()
    for i in range(20_000):
        buffer.append_text(f"line {i} " + "y" * 100 + "\n")
    assert time.monotonic() - start < 5  # re-scanning 4 MiB per append would take minutes
    snap = buffer.snapshot()
    assert len(snap.data) <= 4 << 20
    assert snap.total_lines == 10_000
    assert snap.line(snap.total_lines - 2).startswith("line 19999 ")


# --- coordinates ------------------------------------------------------------------------------------------


def snapshot_of(text: str, truncated: bool = False) -> Snapshot:
    data = text.encode()
    return Snapshot(data, [i for i, b in enumerate(data) if b == 10], truncated)


@pytest.mark.parametrize(("text", "total"), [("", 0), ("a", 1), ("a\n", 2), ("\n", 2), ("a\nb", 2), ("a\n\nb\n", 4)])
def test_total_lines_counts_newline_separated_segments(text: str, total: int) -> None:
    assert snapshot_of(text).total_lines == total
    buffer = Scrollback(BIG, BIG)
    buffer.append_text(text)
    assert buffer.total_lines == total


def test_read_page_in_terminal_read_coordinates() -> None:
    snap = snapshot_of("l0\nl1\nl2\nl3\nl4")
    assert read_page(snap, 0, 2) == {
        "text": "l3\nl4",
        "lineBegin": 0,
        "lineEnd": 2,
        "totalLines": 5,
        "truncated": False,
    }
    assert read_page(snap, 2, 2)["text"] == "l1\nl2"
    assert read_page(snap, 4, 500) == {"text": "l0", "lineBegin": 4, "lineEnd": 5, "totalLines": 5, "truncated": False}
    assert read_page(snap, 5, 1) == {"text": "", "lineBegin": 5, "lineEnd": 5, "totalLines": 5, "truncated": False}
    assert read_page(snapshot_of(""), 0, 1) == {
        "text": "",
        "lineBegin": 0,
        "lineEnd": 0,
        "totalLines": 0,
        "truncated": False,
    }


def test_paging_older_with_line_end_visits_every_line_once() -> None:
    lines = [f"line {i}" for i in range(23)]
    snap = snapshot_of("\n".join(lines) + "\n")
    seen: list[str] = []
    offset = 0
    while True:
        page = read_page(snap, offset, 5)
        if page["lineEnd"] == page["lineBegin"]:
            break
        seen = page["text"].split("\n") + seen
        offset = page["lineEnd"]
    assert seen == [*lines, ""]


# --- searching --------------------------------------------------------------------------------------------

LOG = "boot\nERROR one\nok\nerror two ERROR\n\nERROR three\nok\n"  # 8 lines; the newest is empty


def test_literal_matches_are_case_sensitive_substrings_once_per_line() -> None:
    snap = snapshot_of(LOG)
    assert literal_matches(snap, "ERROR") == [1, 3, 5]
    assert literal_matches(snap, "ok") == [2, 6]
    assert literal_matches(snap, "boot") == [0]
    assert literal_matches(snap, "nothing") == []
    assert literal_matches(snapshot_of("é€ and €"), "€") == [0]


def test_rg_stdin_and_output_map_to_the_same_lines() -> None:
    snap = snapshot_of(LOG)
    assert rg_stdin(snap).count(b"\n") == snap.total_lines  # every segment is one rg line
    out = b"2:[Omitted long matching line]\n5:\n8:\n"
    assert rg_matches(out, snap.total_lines) == [1, 4, 7]
    assert rg_matches(b"9:\n", snap.total_lines) == []


def test_render_newest_first_with_read_offsets() -> None:
    snap = snapshot_of(LOG)
    page = render_search(snap, [1, 3, 5], 0, 100, 1 << 20)
    assert page.text == (
        "[offset 2] ERROR three\n[offset 4] error two ERROR\n[offset 6] ERROR one\n"
        "[search: 3 of 3 matches, 8 retained lines]"
    )
    assert page.matches == [
        {"offset": 2, "line": "ERROR three"},
        {"offset": 4, "line": "error two ERROR"},
        {"offset": 6, "line": "ERROR one"},
    ]
    assert (page.match_count, page.total_lines, page.truncated) == (3, 8, False)
    for match in page.matches:  # a read with a match's offset ends at the match line
        assert read_page(snap, match["offset"], 3)["text"].split("\n")[-1] == match["line"]


def test_render_no_matches() -> None:
    page = render_search(snapshot_of(LOG), [], 0, 100, 1 << 20)
    assert page.text == "No matches found\n[search: 0 of 0 matches, 8 retained lines]"
    assert (page.matches, page.truncated) == ([], False)
    assert render_search(snapshot_of(LOG, truncated=True), [], 0, 100, 1 << 20).truncated


def test_render_a_page_past_the_last_match_is_the_summary_alone() -> None:
    page = render_search(snapshot_of(LOG), [1, 3, 5], 3, 10, 1 << 20)
    assert page.text == "[search: 0 of 3 matches, 8 retained lines]"
    assert not page.truncated


def test_truncated_when_more_matches_lie_past_the_page() -> None:
    snap = snapshot_of(LOG)
    first = render_search(snap, [1, 3, 5], 0, 2, 1 << 20)
    assert [m["offset"] for m in first.matches] == [2, 4]
    assert first.truncated
    assert first.text.endswith("[search: 2 of 3 matches, 8 retained lines]")
    last = render_search(snap, [1, 3, 5], 2, 2, 1 << 20)
    assert [m["offset"] for m in last.matches] == [6]
    assert not last.truncated


def test_byte_bound_drops_whole_lines_from_the_end_and_keeps_the_summary() -> None:
    lines = [f"match {i:03d} " + "é" * 20 for i in range(50)]
    snap = snapshot_of("\n".join(lines))
    indices = list(range(50))
    full = render_search(snap, indices, 0, 100, 1 << 20)
    for bound in (1, 60, 100, 200, 1000, 2500):
        page = render_search(snap, indices, 0, 100, bound)
        size = len(page.text.encode())
        rows = page.text.split("\n")
        assert rows[-1] == f"[search: {len(page.matches)} of 50 matches, 50 retained lines]"
        assert rows[:-1] == full.text.split("\n")[: len(page.matches)]  # whole lines, in order
        assert size <= bound or not page.matches
        if len(page.matches) < 50:
            # Maximal: one more line (and the wider count) would not have fitted.
            next_row = full.text.split("\n")[len(page.matches)]
            bigger = f"[search: {len(page.matches) + 1} of 50 matches, 50 retained lines]"
            assert size - len(rows[-1].encode()) + len(next_row.encode()) + 1 + len(bigger.encode()) > bound
            assert page.truncated


@pytest.mark.parametrize(("limit", "bound"), [(1, 1 << 20), (3, 1 << 20), (7, 1 << 20), (100, 300), (4, 150)])
def test_paging_visits_every_match_exactly_once(limit: int, bound: int) -> None:
    lines = [f"{'hit' if i % 3 else 'miss'} {i}" for i in range(40)]
    snap = snapshot_of("\n".join(lines))
    indices = literal_matches(snap, "hit")
    seen: list[int] = []
    offset = 0
    while True:
        page = render_search(snap, indices, offset, limit, bound)
        assert page.match_count == len(indices)
        if not page.matches:
            assert not page.truncated
            break
        assert page.truncated == (offset + len(page.matches) < len(indices))
        seen += [m["offset"] for m in page.matches]
        offset += len(page.matches)
    expected = [snap.total_lines - 1 - i for i in reversed(indices)]
    assert seen == expected  # newest first, each once
    assert len(set(seen)) == len(seen)


def test_terminals_store() -> None:
    terminals = Terminals(10, 100, 1 << 20)
    assert terminals.snapshot("t1") is None
    buffer = terminals.append_text("t1", "a\nb")
    assert terminals.append_text("t1", "c") is buffer
    snap = terminals.snapshot("t1")
    assert snap is not None and snap.data == b"a\nbc"
    assert terminals.close("t1")
    assert not terminals.close("t1")
    assert terminals.snapshot("t1") is None and not terminals.was_evicted("t1")
    assert terminals.total_bytes == 0 and len(terminals) == 0


def test_terminals_budget_evicts_least_recently_used() -> None:
    released: list[int] = []
    chunk = "x" * 50_000 + "\n"
    # Room for about three sessions of ~50 KB (each with its 64 KiB chunk and fixed overhead).
    terminals = Terminals(10_000, 1 << 20, 3 * 70_000, on_release=lambda: released.append(1))
    for name in ("a", "b", "c"):
        terminals.append_text(name, chunk)
    assert len(terminals) == 3 and not released
    assert terminals.snapshot("a") is not None  # "a" is now the most recently used; "b" the least
    terminals.append_text("d", chunk)
    assert terminals.was_evicted("b") and terminals.snapshot("b") is None
    assert len(terminals) <= 3 and terminals.total_bytes <= 3 * 70_000 and released
    # An append to an evicted session starts afresh, marked truncated: its older output is gone.
    fresh = terminals.append_text("b", "new\n")
    assert fresh.truncated and not terminals.was_evicted("b")


def test_terminals_session_in_use_is_never_evicted_by_its_own_append() -> None:
    terminals = Terminals(10_000, 1 << 20, 10_000)
    terminals.append_text("small", "x\n")
    big = terminals.append_text("big", "y" * 100_000)
    assert big.total_lines == 1 and terminals.was_evicted("small") and len(terminals) == 1


def test_terminals_accounting_matches_the_buffers() -> None:
    terminals = Terminals(100, 4096, 1 << 30)
    for i in range(200):
        terminals.append_text(f"s{i % 7}", f"line {i}\n" * (i % 13))
        if i % 5 == 0:
            terminals.snapshot(f"s{i % 7}")
    for i in range(0, 7, 2):
        terminals.close(f"s{i}")
    expected = sum(terminals._sessions[k].memory_bytes for k in terminals._sessions)
    assert terminals.total_bytes == expected

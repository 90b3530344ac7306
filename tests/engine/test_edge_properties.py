"""Properties behind the edge cases of tests/engine/test_edges.py, over generated inputs.

JavaScript is the reference where node is installed: what `trim()` removes, and how many bytes Node's
UTF-8 decoding with replacements gives. The runner's tally of ripgrep's reports must not depend on how
stderr was cut into reads. The end-to-end properties (real trees, ripgrep, the frozen daemon) are in
tests/engine/test_edge_properties_e2e.py.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_search.engine.jscompat import js_trim, utf8_growth
from dsh_search.engine.ripgrep import StderrTally

# ECMAScript WhiteSpace + LineTerminator, written out independently of the implementation.
_JS_TRIM = re.compile(
    "^[\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]+"
    "|[\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]+$"
)
# Characters on which Python and JavaScript disagree, or which are easy to get wrong, and some text.
_EDGY = st.sampled_from(
    list("\t\n\v\f\r \x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u200a\u200b\u2028\u2029\u202f\u205f\u3000\ufeff\ufffdab")
)
_EDGY_TEXT = st.lists(st.one_of(_EDGY, st.characters(codec="utf-8")), max_size=12).map("".join)


@given(_EDGY_TEXT)
def test_js_trim_removes_exactly_javascripts_whitespace(text: str) -> None:
    assert js_trim(text) == _JS_TRIM.sub("", text)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to ask JavaScript itself")
@settings(max_examples=5, deadline=None)
@given(st.lists(_EDGY_TEXT, min_size=50, max_size=200))
def test_js_trim_agrees_with_node(texts: list[str]) -> None:
    script = (
        "const a = JSON.parse(require('fs').readFileSync(0, 'utf8')); console.log(JSON.stringify(a.map(s => s.trim())))"
    )
    done = subprocess.run(["node", "-e", script], input=json.dumps(texts), capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [js_trim(t) for t in texts]


# Bytes around UTF-8's edges: ASCII, continuation bytes, every kind of lead byte, bytes never valid.
_EDGY_BYTES = st.lists(
    st.sampled_from([0x00, 0x0A, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0])
    | st.sampled_from([0xE1, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF]),
    max_size=16,
).map(bytes)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to ask JavaScript itself")
@settings(max_examples=5, deadline=None)
@given(st.lists(_EDGY_BYTES | st.binary(max_size=16), min_size=100, max_size=300))
def test_utf8_growth_is_what_node_decodes_to(samples: list[bytes]) -> None:
    script = (
        "const a = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(a.map(b => { const buf = Buffer.from(b, 'base64');"
        " return Buffer.byteLength(buf.toString('utf8')) - buf.length; })))"
    )
    payload = json.dumps([base64.b64encode(s).decode() for s in samples])
    done = subprocess.run(["node", "-e", script], input=payload, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [utf8_growth(s) for s in samples]


@given(st.lists(_EDGY_BYTES, max_size=8), st.sampled_from([b"\0", b"\n"]))
def test_utf8_growth_adds_up_over_pieces_cut_at_a_separator(pieces: list[bytes], sep: bytes) -> None:
    assert utf8_growth(sep.join(pieces)) == sum(utf8_growth(p) for p in pieces)


_REPORT = st.one_of(
    st.builds(lambda p: b"rg: %s: Permission denied (os error 13)" % p, st.binary(min_size=1, max_size=40)),
    st.builds(lambda p: b"rg: %s/.ignore: line 2: error parsing glob '{': unclosed" % p, st.binary(max_size=20)),
    st.just(b"/w/.ignore: line 3: error parsing glob '[': unclosed character class"),  # continuation
    st.just(b"error: unclosed group"),
    st.just(b""),
)


@given(st.lists(_REPORT, max_size=30), st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=20))
def test_stderr_tally_does_not_depend_on_the_reads(reports: list[bytes], cuts: list[int]) -> None:
    reports = [r.replace(b"\n", b" ") for r in reports]
    stderr = b"\n".join(reports) + b"\n"
    tally = StderrTally()
    i = k = 0
    while i < len(stderr):
        step = cuts[k % len(cuts)]
        tally.feed(stderr[i : i + step])
        i, k = i + step, k + 1
    tally.finish()
    ignore = [r for r in reports if r.startswith(b"rg: ") and re.match(rb"rg: .*: line [0-9]+: error parsing glob ", r)]
    paths = [r for r in reports if r.startswith(b"rg: ")]
    assert (tally.paths, tally.ignore_files) == (len(paths) - len(ignore), len(ignore))

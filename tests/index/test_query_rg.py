"""The index's regex analysis against ripgrep itself: every file ripgrep reports a match in satisfies
the formula `required(pattern)` gives (Lit(s): s occurs in the file's content decoded as UTF-8 with
replacement). That is the whole promise: the index may only skip files where the formula is false.

Patterns come from a grammar of regex pieces (tests/support/regex_patterns.py), texts from samples of
the pattern with case variants, line breaks, noise, invalid UTF-8 and byte order marks, so that
ripgrep really matches. One ripgrep run per pattern covers all its texts. The number of examples is
DSH_INDEX_REGEX_EXAMPLES (default 150, a few seconds); run it with 20000 or more after touching the
analysis. The parser is also held to ripgrep's: a pattern ripgrep accepts must parse here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from dsh_search.index.query import analysis, formula, syntax
from dsh_search.index.query.analysis import required
from tests.support.examples import examples
from tests.support.regex_patterns import Piece, patterns, texts

EXAMPLES = examples(150, "DSH_INDEX_REGEX_EXAMPLES")
KELVIN, LONG_S = "\u212a", "\u017f"


def rg_matching_files(rg: str, root: Path, names: Sequence[str], pattern: str) -> set[str] | None:
    """The files among `names` (in root) in which ripgrep, with its defaults, reports a match; None
    when it rejects the pattern."""
    argv = [rg, "--no-config", "--json", f"--regexp={pattern}", "--", *names]
    done = subprocess.run(argv, cwd=root, capture_output=True, timeout=60, check=False)
    if done.returncode == 2:
        assert b"regex" in done.stderr, done.stderr  # a pattern ripgrep refuses, not a failed search
        assert b'"type":"match"' not in done.stdout
        return None
    assert done.returncode in (0, 1), done.stderr
    matched = set()
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message["type"] == "match":
            matched.add(message["data"]["path"]["text"])
    return matched


def check(rg: str, pattern: str, datas: Sequence[bytes]) -> set[int] | None:
    """Runs ripgrep over the texts and checks the formula on every text it matched; the indexes of
    those texts (None: ripgrep rejected the pattern)."""
    root = Path(tempfile.mkdtemp(prefix="dsh-index-regex-"))
    try:
        names = [f"f{i}" for i in range(len(datas))]
        for name, data in zip(names, datas, strict=True):
            (root / name).write_bytes(data)
        matched = rg_matching_files(rg, root, names, pattern)
    finally:
        shutil.rmtree(root)
    if matched is None:
        return None
    try:  # the parser reads what ripgrep accepts (a bail-out here would be a divergence)
        strict = analysis._required(pattern)
    except syntax.Bail as bail:
        raise AssertionError(f"ripgrep accepts {pattern!r}, the parser does not: {bail}") from None
    query = required(pattern)
    assert query == strict
    hits = {int(name[1:]) for name in matched}
    for i in hits:
        text = datas[i].decode("utf-8", "replace")
        assert query.holds(text), f"rg matches {pattern!r} in {datas[i]!r}, but the formula {query!r} is false"
    return hits


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, list[bytes]]:
    piece: Piece = draw(patterns(python_compatible=False))
    return piece.pattern, draw(st.lists(texts(piece.samples, python_compatible=False), min_size=1, max_size=8))


@settings(
    max_examples=EXAMPLES,
    derandomize=EXAMPLES <= 150,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(case=cases())
@example(case=("(?i)k", [KELVIN.encode()]))
def test_every_file_ripgrep_matches_satisfies_the_formula(rg_path: str, case: tuple[str, list[bytes]]) -> None:
    pattern, datas = case
    hits = check(rg_path, pattern, datas)
    event("rejected by ripgrep" if hits is None else "matched" if hits else "no match")


# Each case: a pattern, texts ripgrep must match (so that the formula is put to the test) and texts it
# must not match.
REGRESSIONS: list[tuple[str, list[bytes], list[bytes]]] = [
    ("(?i)k", [KELVIN.encode(), b"K", b"k"], [b"x"]),
    ("(?i)kelvin", [(KELVIN + "ELVIN").encode(), b"KeLvIn"], [b"kelvi"]),
    ("(?i)s", [LONG_S.encode(), b"S"], [b"x"]),
    ("(?i)[a-z]+ss", ["xſS".encode(), "K\u212asS".encode()], [b"ss"]),
    ("(?i:a)b", [b"Ab"], [b"aB"]),
    ("a(?i)b|c", [b"aB", b"C"], [b"Ab"]),  # (?i) lasts past the |
    ("(?i)a(?-i)b|C", [b"Ab", b"C"], [b"c", b"AB"]),
    ("(?i)[k--K]", [], [b"k", b"K", KELVIN.encode()]),
    ("(?i)(?-i:a)b", [b"aB"], [b"AB"]),  # a group's flags end with it
    ("(?i)x|(?-i)y|z", [b"X", b"y", b"z"], [b"Y", b"Z"]),
    ("[abc--[b&&\\d]]", [b"b"], [b"d"]),  # b is no digit: nothing is subtracted
    ("c(?:ab){2,3}d", [b"cabababd", b"cababd"], [b"cabd"]),
    ("(?-u:\\xE9)x", [b"\xe9x"], ["éx".encode()]),  # under (?-u), \xE9 is a byte
    ("(?-u:é)x", ["éx".encode()], [b"\xe9x"]),  # a character written as itself is UTF-8 still
    ("[a&&b]|x", [b"x"], [b"ab"]),
    ("[[a-c]--b]z", [b"az"], [b"bz"]),
    ("[a-c~~b-d]z", [b"az", b"dz"], [b"bz"]),
    ("[[:upper:]&&[A-C]]z", [b"Bz"], [b"Dz"]),
    ("[]a]b", [b"]b"], [b"b"]),
    ("\\x{212A}|\\u0041\\U0001F600", [KELVIN.encode(), "A😀".encode()], [b"A"]),
    ("a)|(b", [b"b", b"a"], [b"c"]),  # ripgrep's (?:a)|(b)
    ("(?x)a b c # note\n", [b"abc"], [b"a b c"]),
    ("(?x)a\\ b[c d]", [b"a bc"], [b"ab c"]),
    ("(?x)\\x 4 1", [b"A"], [b"x41"]),
    ("a{ 2 }", [b"aa"], [b"a a"]),
    ("\\b{2}foo", [b"foo"], [b"xfoo"]),
    ("\\b{start}foo\\b{end}", [b"a foo b"], [b"afoo"]),
    ("\\<foo\\>", [b"(foo)"], [b"foox"]),
    ("x{0}y", [b"y"], [b"z"]),
    ("(?U)a+?b|c{2,}", [b"aab", b"ccc"], [b"c"]),
    ("colou?r", [b"color", b"colour"], [b"colr"]),
    ("(abc|abd)e", [b"abde"], [b"abe"]),
    ("[A-Z]+_SUSPEND", [b"TASK_SUSPEND"], [b"_SUSPEND"]),
    ("a\\u{FFFD}", ["a\ufffd".encode()], [b"a\xff", b"\xef\xbb\xbfa\xff"]),  # a character, not a bad byte
    ("^abc", [b"\xef\xbb\xbfabc"], [b"xabc"]),  # ripgrep strips a UTF-8 byte order mark
    ("(?-u:\\xFF)ab", [b"x\xffab"], [b"xab"]),  # a byte, not a character
    ("(?-u)\\w+ab", [b"xab"], [b"ab"]),
    ("é|(?i)ß", ["é".encode(), "ß".encode()], [b"e"]),
    ("(?i)é", ["É".encode()], [b"e"]),
    ("\\d+€", ["٣€".encode()], [b"x\xe2\x82"]),
    ("\\p{Greek}x", ["λx".encode()], [b"x"]),
    ("[^\\n]+x", [b"ax"], [b"x"]),
    ("a\\tb", [b"a\tb"], [b"a b"]),
    ("x[\\na]", [b"xa"], [b"x"]),  # the line terminator leaves the class
]


@pytest.mark.parametrize(("pattern", "positives", "negatives"), REGRESSIONS, ids=[repr(c[0]) for c in REGRESSIONS])
def test_regressions(rg_path: str, pattern: str, positives: list[bytes], negatives: list[bytes]) -> None:
    hits = check(rg_path, pattern, [*positives, *negatives])
    assert hits == set(range(len(positives))), f"ripgrep matched {hits} of {positives + negatives}"


def test_case_folding_matches_ripgreps(rg_path: str) -> None:
    """(?i) on an ASCII character matches exactly the characters the analysis expands it to: over
    every Unicode scalar value, the ones (?i) ties to ASCII are ASCII, K (Kelvin) and ſ (long s)."""
    root = Path(tempfile.mkdtemp(prefix="dsh-index-fold-"))
    try:
        everything = "\n".join(chr(c) for c in range(1, 0x110000) if c != 0x0A and not 0xD800 <= c <= 0xDFFF)
        (root / "all").write_text(everything)
        folded = ripgrep_lines(rg_path, root, "all", r"(?i)[\x01-\x09\x0B-\x7F]")
        assert {line for line in folded if not line.isascii()} == {KELVIN, LONG_S}
        (root / "few").write_text("\n".join(sorted(folded)))
        for code in range(0x21, 0x7F):
            c = chr(code)
            got = required("(?i)\\x{%x}" % code)  # noqa: UP031 (braces)
            expected = ripgrep_lines(rg_path, root, "few", "(?i)\\x{%x}" % code)  # noqa: UP031
            assert got == (formula.Lit(c) if expected == {c} else formula.Or(tuple(formula.Lit(e) for e in expected)))
    finally:
        shutil.rmtree(root)


def ripgrep_lines(rg: str, root: Path, name: str, pattern: str) -> set[str]:
    argv = [rg, "--no-config", "--json", f"--regexp={pattern}", "--", name]
    done = subprocess.run(argv, cwd=root, capture_output=True, timeout=60, check=True)
    lines = set()
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message["type"] == "match":
            lines.add(message["data"]["lines"]["text"].rstrip("\n"))
    return lines

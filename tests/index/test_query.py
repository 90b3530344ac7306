"""The index's regex analysis (dsh_search.index.query.analysis), sans IO: the formula it gives for each
shape of pattern that matters, soundness against Python's `re` where it agrees with Rust's regex, the
query algebra it simplifies with, and that it never raises and stays bounded on any text.

tests/index/test_query_rg.py checks soundness against ripgrep itself. The property tests
run DSH_INDEX_REGEX_EXAMPLES examples (default 150, a couple of seconds; 20000 after touching the
analysis)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from types import FrameType

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dsh_search.index.grams import windows
from dsh_search.index.query import analysis, formula, syntax
from dsh_search.index.query.analysis import required
from dsh_search.index.query.formula import ANY, NONE, And, Lit, Or, Query
from dsh_search.index.query.plan import TRIGRAMS_PER_LITERAL, plan, trigrams
from tests.server.test_layout import FORBIDDEN, PACKAGE, imported_modules
from tests.support.examples import examples
from tests.support.regex_patterns import Piece, patterns, texts

KELVIN, LONG_S = "\u212a", "\u017f"
EXAMPLES = examples(150, "DSH_INDEX_REGEX_EXAMPLES")


def lits(*texts: str) -> Query:
    return Or(tuple(Lit(t) for t in texts))


def every_case(word: str) -> Query:
    """Or of every case variant of an ASCII word, as (?i) matches it."""
    variants = [""]
    for c in word:
        folds = {c.lower(), c.upper()} | ({KELVIN} if c in "kK" else set()) | ({LONG_S} if c in "sS" else set())
        variants = [v + f for v in variants for f in folds]
    return lits(*variants)


SHAPES: list[tuple[str, Query]] = [
    # literals and escapes
    ("SUSPEND", Lit("SUSPEND")),
    ("héllo wörld", Lit("héllo wörld")),
    (r"\.", Lit(".")),
    (r"a\x41\x{42}\u0043\u{44}\U00000045", Lit("aABCDE")),
    (r"\u{263A} \x{1F600}", Lit("☺ 😀")),
    (r"a\tb\rc", Lit("a\tb\rc")),
    (r"\%\/\ \-\&\~\#", Lit("%/ -&~#")),
    (r"\(a\)\[b\]\{c\}\*\+\?\|\^\$\\", Lit("(a)[b]{c}*+?|^$\\")),
    ("a}b]c", Lit("a}b]c")),
    # alternation and concatenation
    ("foo|bar", lits("foo", "bar")),
    ("foo.*bar", And((Lit("foo"), Lit("bar")))),
    ("(abc|abd)e", lits("abce", "abde")),
    ("(foo|bar)+baz", lits("foobaz", "barbaz")),
    ("x(a|b)(c|d)y", lits("xacy", "xady", "xbcy", "xbdy")),
    ("foo|", ANY),
    ("(?:foo|)bar", Lit("bar")),
    ("a)|(b", lits("a", "b")),  # ripgrep reads (?:a)|(b)
    # classes
    ("[A-Z]+_SUSPEND", Lit("_SUSPEND")),
    ("[ab]cd", lits("acd", "bcd")),
    ("[0-9]x", lits(*(f"{d}x" for d in range(10)))),
    ("x[[:digit:]]", lits(*(f"x{d}" for d in range(10)))),
    ("[[:alpha:]]foo", Lit("foo")),
    ("[:alpha:]x", lits(":x", "ax", "hx", "lx", "px")),  # a POSIX class only inside brackets
    ("[^a]bc", Lit("bc")),
    (r"[\d]x", Lit("x")),
    (r"\w+_ops", Lit("_ops")),
    ("[]a]b", lits("]b", "ab")),
    ("[-a]b", lits("-b", "ab")),
    ("[a-]b", lits("ab", "-b")),
    ("[a&&b]x", NONE),
    ("[[a-c]--b]z", lits("az", "cz")),
    ("[a-c~~b-d]z", lits("az", "dz")),
    (r"[a-c&&\w]z", lits("az", "bz", "cz")),
    (r"[a-c--\w]z", lits("az", "bz", "cz")),  # \w is not modelled: nothing is subtracted (a superset)
    ("[[:upper:]&&[A-C]]z", lits("Az", "Bz", "Cz")),
    ("[é]x", Lit("éx")),
    # repetitions
    ("ab+c", And((Lit("ab"), Lit("bc")))),
    ("ab*c", And((Lit("a"), Lit("c")))),
    ("colou?r", lits("color", "colour")),
    ("a{3}", Lit("aaa")),
    ("a{ 3 }b", Lit("aaab")),
    ("x{2,}y", Lit("xxy")),
    ("(ab){2,5}", Lit("abab")),
    ("(ab){0,3}c", Lit("c")),
    ("a{0}b", Lit("b")),
    ("(abc)*", ANY),
    ("x{2}{3}", Lit("xxxxxx")),
    ("(foo)?", ANY),
    # zero-width assertions
    ("^foo$", Lit("foo")),
    (r"\bfoo\b\B", Lit("foo")),
    (r"\Afoo\z", Lit("foo")),
    (r"\<foo\>", Lit("foo")),
    (r"\b{start}foo\b{end}\b{start-half}\b{end-half}", Lit("foo")),
    (r"\b{2}foo", Lit("foo")),  # a counted repetition of \b
    # groups
    ("(?:foo)bar", Lit("foobar")),
    ("(?P<n>foo)bar", Lit("foobar")),
    ("(?<n>foo)bar", Lit("foobar")),
    # flags
    ("(?i)k", lits("k", "K", KELVIN)),
    ("(?i)S", lits("s", "S", LONG_S)),
    ("(?i:a)b", lits("ab", "Ab")),
    ("a(?i)b|c", lits("ab", "aB", "c", "C")),  # (?i) lasts past the |, to the end of the group
    ("(?i)a(?-i)b|c", lits("ab", "Ab", "c")),
    ("(?i)[a-b]z", lits("az", "aZ", "Az", "AZ", "bz", "bZ", "Bz", "BZ")),
    ("(?i)é", ANY),
    ("(?i)[k--K]", NONE),  # both sides folded first
    ("(?-u)abc", Lit("abc")),
    (r"(?-u:\xFF)abc", Lit("abc")),
    ("(?s).foo(?m)bar(?U)x+?(?R)$", Lit("foobarx")),
    ("(?x) f o o # a comment\n", Lit("foo")),
    (r"(?x)a\ b\#c", Lit("a b#c")),
    ("(?x)[a b]c", lits("ac", "bc")),
    ("(?x)a # comment\n b", Lit("ab")),
    ("(?x)a {2}", Lit("aa")),
    (r"(?x)\x 4 1", Lit("A")),
    # nothing known
    ("", ANY),
    ("a*", ANY),
    (".", ANY),
    (r"\p{Greek}+", ANY),
    ("(?i)", ANY),
    # rejected by ripgrep: any answer is right, ANY is what it gets
    ("(", ANY),
    ("a{", ANY),
    ("a{,2}", ANY),
    (r"\e", ANY),
    (r"\1", ANY),
    ("(?=a)", ANY),
    ("[a", ANY),
    ("(?i)*", ANY),
    ("(?x)a#)", ANY),  # the comment eats ripgrep's closing parenthesis
]


@pytest.mark.parametrize(("pattern", "expected"), SHAPES, ids=[repr(p) for p, _ in SHAPES])
def test_shapes(pattern: str, expected: Query) -> None:
    got = required(pattern)
    assert got == expected, got


def test_case_insensitive_words_become_case_variants_of_their_parts() -> None:
    """(?i)suspend has 288 variants, too many for one set: it becomes variants of pieces of it,
    which every variant of the word contains."""
    got = required("(?i)suspend")
    variants = every_case("suspend")
    assert isinstance(got, And) and isinstance(variants, Or)
    assert all(got.holds(v.text) for v in variants.args if isinstance(v, Lit))
    assert not got.holds("suspen") and not got.holds("uspend")


def test_case_folding_is_unicodes_simple_folding_for_ascii() -> None:
    """Each ASCII character under (?i) is its own set of simple case variants (the two non-ASCII ones
    included); tests/index/test_query_rg.py checks the same against ripgrep."""
    for code in range(0x21, 0x7F):
        c = chr(code)
        expected = {c.lower(), c.upper()} | ({KELVIN} if c in "kK" else set()) | ({LONG_S} if c in "sS" else set())
        escaped = "\\" + c if c in "\\.+*?()|[]{}^$#&-~" else c
        got = required("(?i)" + escaped)
        assert got == (Lit(c) if len(expected) == 1 else lits(*expected)), (c, got)


def test_long_literals_keep_their_ends() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(1000))
    got = required(text)
    assert got == And((Lit(text[: analysis.MAX_LEN]), Lit(text[-analysis.MAX_LEN :])))


def test_queries() -> None:
    q = And((Lit("ab"), Or((Lit("x"), Lit("y")))))
    assert q.holds("..ab..y") and not q.holds("ab") and not q.holds("xy")
    assert ANY.holds("") and not NONE.holds("anything")
    assert q == And((Or((Lit("y"), Lit("x"))), Lit("ab")))  # arguments in any order
    assert q != Or((Lit("ab"), Or((Lit("x"), Lit("y")))))
    assert Lit("a") != Or((Lit("a"),)) and hash(q) == hash(And((Or((Lit("y"), Lit("x"))), Lit("ab"))))
    assert repr(q) == "And((Lit('ab'), Or((Lit('x'), Lit('y')))))"
    assert repr(ANY) == "ANY" and repr(NONE) == "NONE"
    match Lit("z"):
        case Lit(text):
            assert text == "z"


def test_the_query_package_is_sans_io_and_apart() -> None:
    for path in sorted((PACKAGE / "index" / "query").glob("*.py")):
        for name in imported_modules(path):
            assert name.split(".")[0] not in FORBIDDEN, (path.name, name)
            assert not name.startswith("dsh_search") or name.startswith("dsh_search.index.query"), (path.name, name)


# ---------------------------------------------------------------------------------------------------
# Soundness where Python's re agrees with Rust's regex: ASCII texts, searched line by line.


def python_matches(pattern: str, data: bytes) -> bool | None:
    try:
        compiled = re.compile(pattern)
    except re.error:
        return None
    return any(compiled.search(line) for line in data.decode().split("\n"))


@st.composite
def python_cases(draw: st.DrawFn) -> tuple[str, list[bytes]]:
    piece: Piece = draw(patterns(python_compatible=True))
    return piece.pattern, draw(st.lists(texts(piece.samples, python_compatible=True), min_size=1, max_size=6))


@settings(
    max_examples=EXAMPLES,
    derandomize=EXAMPLES <= 150,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=python_cases())
@example(case=("(?i:k)x", [b"Kx"]))
@example(case=("a|b*", [b""]))
def test_sound_where_python_agrees(case: tuple[str, list[bytes]]) -> None:
    pattern, datas = case
    query = analysis._required(pattern)
    for data in datas:
        if python_matches(pattern, data):
            assert query.holds(data.decode()), (pattern, data, query)


# ---------------------------------------------------------------------------------------------------
# The query algebra: what the simplifier builds is implied by what it was given (never stronger).

LETTERS = st.text(alphabet="abc", min_size=1, max_size=3)


def queries(depth: int = 2) -> st.SearchStrategy[Query]:
    leaf: st.SearchStrategy[Query] = st.one_of(LETTERS.map(Lit), st.sampled_from([ANY, NONE]))
    if depth == 0:
        return leaf
    sub = st.lists(queries(depth - 1), min_size=1, max_size=4).map(tuple)
    return st.one_of(leaf, sub.map(And), sub.map(Or))


@settings(max_examples=EXAMPLES, derandomize=EXAMPLES <= 150, database=None)
@given(st.lists(queries(), min_size=1, max_size=6), st.lists(st.text(alphabet="abc", max_size=8), max_size=8))
def test_simplification_is_sound(qs: list[Query], haystacks: list[str]) -> None:
    conjunction, disjunction = formula.conjoin(*qs), formula.disjoin(*qs)
    for text in haystacks:
        if all(q.holds(text) for q in qs):
            assert conjunction.holds(text)
        if any(q.holds(text) for q in qs):
            assert disjunction.holds(text)
        if len(qs) <= 4:  # under every bound: nothing dropped, so equivalent
            assert conjunction.holds(text) == all(q.holds(text) for q in qs)
            assert disjunction.holds(text) == any(q.holds(text) for q in qs)


@given(st.frozensets(st.text(alphabet="abé", max_size=300), min_size=1, max_size=300), st.booleans())
def test_shortened_sets_still_start_or_end_every_string(strings: frozenset[str], suffixes: bool) -> None:
    short = analysis._shorten(strings, suffixes)
    assert len(short) <= formula.MAX_SET and all(len(s) <= analysis.MAX_LEN for s in short)
    for s in strings:
        assert any((s.endswith(t) if suffixes else s.startswith(t)) for t in short)


# ---------------------------------------------------------------------------------------------------
# Never raises, always bounded.

REGEX_ALPHABET = "ab()[]{}|*+?\\^$.-&~:<>=!,#PpxuUdDwWsSbBAzi 0129éſK\n\t"


@settings(max_examples=EXAMPLES * 3, derandomize=EXAMPLES <= 150, database=None, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet=REGEX_ALPHABET, max_size=40)))
@example("\ud800")  # a lone surrogate: no pattern ripgrep can be given
@example("a" * (analysis.MAX_PATTERN + 1))
@example("(" * 300 + ")" * 300)
@example("[" * 300 + "]" * 300)
@example("a" + "*" * 300)
@example(r"\x{" + "0" * 100 + "41}")
@example("a{" + "9" * 5000 + "}")
def test_never_raises_and_stays_bounded(pattern: str) -> None:
    try:
        query = analysis._required(pattern)  # without the safety net, so that a bug shows
    except syntax.Bail:
        query = ANY
    assert isinstance(query, Query)
    assert formula.nodes(query) <= formula.MAX_NODES
    assert required(pattern) == query


# Pathological shapes, each a pattern of about 30,000 characters at full size (`n` = 1).
PATHOLOGICAL: list[Callable[[float], str]] = [
    lambda n: "a" * int(30_000 * n),
    lambda n: "(?i)" + "abcdefghij" * int(3000 * n),
    lambda n: "[ab]" * int(8000 * n),
    lambda n: "a.*" * int(10_000 * n),
    lambda n: "|".join(f"word{i}" for i in range(int(3000 * n))),
    lambda n: "(a|b|c|d)" * int(3000 * n),
    lambda n: "(abc)?" * int(5000 * n),
    lambda n: "(?x)" + " a # c\n" * int(5000 * n),
    lambda n: "((a|b)(c|d)|(e|f)(g|h))" * int(1000 * n),
    lambda n: "[" + "".join(f"\\x{{{i * 512:x}}}-\\x{{{i * 512 + 511:x}}}" for i in range(int(1000 * n))) + "]",
    lambda n: "(" * 99 + "a" + ")" * 99,
    lambda n: "(abc){4294967295}",
]


def calls_of(pattern: str) -> tuple[int, Query]:
    """The function calls `required(pattern)` makes (counted, not timed), and its answer."""
    calls = 0

    def count(_frame: FrameType, event: str, _arg: object) -> None:
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        query = required(pattern)
    finally:
        sys.setprofile(None)
    return calls, query


@pytest.mark.parametrize("shape", PATHOLOGICAL, ids=[shape(0.001)[:20] for shape in PATHOLOGICAL])
def test_pathological_patterns_take_bounded_work(shape: Callable[[float], str]) -> None:
    """The parse is linear and the analysis budgeted: at full size the answer is bounded, and the work —
    the function calls made, counted at a 32nd and a 16th of the size — grows no faster than the
    pattern does."""
    assert formula.nodes(required(shape(1))) <= formula.MAX_NODES
    small, large = shape(1 / 32), shape(1 / 16)
    (small_calls, _), (large_calls, _) = calls_of(small), calls_of(large)
    assert large_calls <= 2.5 * small_calls + 1000, (small_calls, large_calls)


def test_long_patterns_keep_what_was_learnt_before_the_budget_ran_out() -> None:
    query = required("needle_one" + "(a|b|c|d)" * 3000)
    assert query.holds("needle_one" + "abcd" * 750) and not query.holds("needle_two" + "abcd" * 750)


# --- the plan: trigrams to look up -------------------------------------------------------------------


def test_every_trigram_of_a_literal_and_a_spread_of_a_long_one() -> None:
    assert trigrams("struct spinlock") == [
        *("str", "tru", "ruc", "uct", "ct ", "t s", " sp", "spi", "pin", "inl", "nlo", "loc", "ock")
    ]
    grams = trigrams("".join(chr(0x4E00 + i) for i in range(200)))
    assert len(grams) == TRIGRAMS_PER_LITERAL
    assert grams[0] == "\u4e00\u4e01\u4e02" and grams[-1] == "".join(chr(0x4E00 + i) for i in range(197, 200))
    assert trigrams("ab") == []


def test_plan_asks_every_trigram_the_rarest_first_and_bounds_the_documents() -> None:
    counts = {"abc": 50, "bcd": 3, "cde": 9, "def": 700}
    planned = plan(required("abcdef"), lambda g: counts[g])
    assert planned.need == ("and", ("bcd", "cde", "abc", "def"))
    assert windows("bcd") == [0x626364]  # the shards look a trigram up as the bytes of its UTF-8 form
    assert windows("\u00fc\u00dfe") == [0xC3BCC3, 0xBCC39F, 0xC39F65]
    assert planned.estimate == 3
    either = plan(required("abcd|cdef"), lambda g: counts[g])
    assert either.estimate == 3 + 9
    assert plan(required("a.c|abcd"), None).need is None  # one alternative unconstrained

"""Hypothesis strategies for ripgrep patterns and for texts they are likely to match.

Used by the tests of the index's regex analysis (dsh_search.index.query.analysis): a pattern is built
from a grammar of regex pieces, and each piece carries a few sample strings it probably matches, so
that texts built from the samples (with case changes, line breaks, noise and invalid bytes) give real
matches to check the analysis against.

Two grammars: `python_compatible=True` keeps to the subset where Python's `re`, searching each line of
an ASCII text, agrees with Rust's regex (a fast oracle for unit tests); otherwise the full syntax
ripgrep reads (non-ASCII, escapes, nested classes and set operations, POSIX and Unicode classes, inline
and scoped flags, `(?x)`, `(?-u)`, special word boundaries, counted repetitions with spaces), and
sometimes junk that ripgrep rejects.
"""

from __future__ import annotations

from typing import NamedTuple

from hypothesis import strategies as st


class Piece(NamedTuple):
    pattern: str
    # Strings this piece probably matches: hints, not a specification. A raw byte (what \xNN means
    # under (?-u)) is a surrogate escape, U+DC80-U+DCFF; texts encode with errors="surrogateescape".
    samples: tuple[str, ...]


ASCII_CHARS = "abcksxyzABKS019_ -"
FULL_CHARS = ASCII_CHARS + "éÉßſ\u212aλΛ☺日😀\t\r#~&%/ÿ\x85"
RUST_META = set("\\.+*?()|[]{}^$#&-~")
PYTHON_META = set("\\.+*?()|[]{}^$")
# Characters whose case variants ripgrep's (?i) matches (simple case folding), and a few others.
CASE_VARIANTS = {
    "k": "kK\u212a",
    "K": "kK\u212a",
    "s": "sS\u017f",
    "S": "sS\u017f",
    "\u212a": "kK\u212a",
    "\u017f": "sS\u017f",
    "é": "éÉ",
    "É": "éÉ",
    "λ": "λΛ",
    "Λ": "λΛ",
    "ß": "ßẞ",
}
NOISE = ["", " ", "x", "_", "é", "K", "\t", "日", "ab", "Ab", "\n"]
INVALID_UTF8 = [b"\xff", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\x80", b"\xe9", b"\x85"]


def _case_variants(c: str) -> str:
    if c in CASE_VARIANTS:
        return CASE_VARIANTS[c]
    if c.isascii() and c.isalpha():
        return c.lower() + c.upper()
    return c


def escape(c: str, python_compatible: bool) -> str:
    return "\\" + c if c in (PYTHON_META if python_compatible else RUST_META) else c


@st.composite
def literal(draw: st.DrawFn, python_compatible: bool) -> Piece:
    c = draw(st.sampled_from(ASCII_CHARS if python_compatible else FULL_CHARS))
    if python_compatible:
        return Piece(escape(c, True), (c,))
    form = draw(st.integers(0, 9))
    if form == 0:
        spelled = f"\\x{{{ord(c):X}}}"
    elif form == 1 and ord(c) < 0x100:
        spelled = f"\\x{ord(c):02x}"  # under (?-u), above 0x7F: a byte, not a character
        if ord(c) >= 0x80:
            return Piece(spelled, (c, chr(0xDC00 + ord(c))))
    elif form == 2 and ord(c) < 0x10000:
        spelled = f"\\u{ord(c):04X}"
    elif form == 3:
        spelled = f"\\U{ord(c):08x}"
    elif form == 4:
        spelled = f"\\u{{{ord(c):x}}}"
    elif form == 5 and c == "\t":
        spelled = "\\t"
    elif form == 6 and c.isascii() and not c.isalnum() and c not in "<>":
        spelled = "\\" + c  # a superfluous escape (and necessary for meta characters)
    elif form == 7:
        byte = draw(st.sampled_from([0xE9, 0xC9, 0xFF, 0x85, 0xDF]))
        return Piece(f"(?-u:\\x{byte:02X})", (chr(0xDC00 + byte), chr(byte)))
    else:
        spelled = escape(c, False)
    return Piece(spelled, (c,))


@st.composite
def literal_run(draw: st.DrawFn, python_compatible: bool) -> Piece:
    pieces = draw(st.lists(literal(python_compatible), min_size=2, max_size=6))
    return Piece("".join(p.pattern for p in pieces), ("".join(p.samples[0] for p in pieces),))


CLASS_ITEMS_PYTHON = ["a", "b", "c", "k", "K", "x", "0", "_", "-", " ", "a-c", "x-z", "0-9", "A-K"]
CLASS_ITEMS_FULL = [
    *CLASS_ITEMS_PYTHON,
    "é",
    "ſ",
    "\u212a",
    "λ",
    "à-é",
    "\\x41-\\x43",
    "\\u{212A}",
    "\\d",
    "\\w",
    "\\s",
    "\\D",
    "\\pL",
    "\\p{Greek}",
    "\\P{Lu}",
    "[:alpha:]",
    "[:upper:]",
    "[:lower:]",
    "[:digit:]",
    "[:space:]",
    "[:^alpha:]",
    "[:word:]",
    "[:punct:]",
    "\\[",
    "\\]",
    "\\-",
    "&",
    "~",
    "^",
    "\\^",
]


# Set operations whose right side is only known as a superset (through \d, \w): a subtraction must not
# take away what it might not contain.
CLASS_TEMPLATES = [
    ("[{a}--[{b}&&\\d]]", "a"),
    ("[{a}--[{b}&&\\w]]", "a"),
    ("[{a}&&[{b}--\\d]]", "ab"),
    ("[{a}--[{b}--{a}]]", "a"),
    ("[{a}~~[{b}&&\\pL]]", "ab"),
    ("[[{a}]--{b}]", "a"),
    ("[{a}&&{b}]", "ab"),
]


def _class_samples(items: list[str]) -> list[str]:
    samples: list[str] = []
    for item in items:
        if len(item) == 3 and item[1] == "-":
            samples.extend([item[0], item[2], chr((ord(item[0]) + ord(item[2])) // 2)])
        elif len(item) == 1:
            samples.append(item)
        elif item.startswith("[:"):
            samples.extend(["a", "Z", "5", " ", "!"])
        elif item.startswith("\\") and len(item) == 2 and not item[1].isalpha():
            samples.append(item[1])
    return samples or ["a"]


@st.composite
def char_class(draw: st.DrawFn, python_compatible: bool, depth: int = 0) -> Piece:
    pool = CLASS_ITEMS_PYTHON if python_compatible else CLASS_ITEMS_FULL
    if not python_compatible and draw(st.integers(0, 4)) == 0:
        template, sampled = draw(st.sampled_from(CLASS_TEMPLATES))
        sides = {name: draw(st.text(alphabet="abcdxK19_é", min_size=1, max_size=4)) for name in "ab"}
        negated = "^" if draw(st.integers(0, 5)) == 0 else ""
        samples = tuple(c for name in sampled for c in sides[name]) if not negated else ("é", "#", "Q", "7")
        return Piece(template.format(**sides).replace("[", "[" + negated, 1), samples)
    items = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4))
    # a leading '^' would negate and a leading ']' is a literal; '-' must not make an accidental range
    body_items = [i for i in items if not (i in ("-", "^") and python_compatible)] or ["a"]
    body = "".join(body_items)
    samples = _class_samples(body_items)
    if not python_compatible:
        extra = draw(st.integers(0, 6))
        if extra == 1 and depth < 2:
            nested = draw(char_class(False, depth + 1))
            body += nested.pattern
            samples += list(nested.samples)
        elif extra in (2, 3, 4) and depth < 2:
            op = {2: "&&", 3: "--", 4: "~~"}[extra]
            other = draw(char_class(False, depth + 1))
            body += op + (other.pattern if draw(st.booleans()) else other.pattern.strip("[]^"))
        elif extra == 5:
            body = "]" + body  # a literal ']' first
            samples.append("]")
        elif extra == 6:
            body = "-" + body
            samples.append("-")
    negated = draw(st.integers(0, 4)) == 0
    if negated:
        samples = ["é", "#", "Q", "7", " "]
    return Piece(f"[{'^' if negated else ''}{body}]", tuple(samples))


OPAQUE_PYTHON = [(".", ("a", "é", " ")), ("\\d", ("0", "7")), ("\\w", ("a", "_", "Z")), ("\\s", (" ", "\t"))]
OPAQUE_FULL = [
    *OPAQUE_PYTHON,
    ("\\D", ("a", "é")),
    ("\\W", (" ", "é")),
    ("\\S", ("a",)),
    ("\\pL", ("a", "λ", "é")),
    ("\\p{Greek}", ("λ", "Λ")),
    ("\\PL", ("0", " ")),
    ("\\p{Lu}", ("A", "É")),
    ("\\p{ Letter }", ("a",)),
    ("\\d", ("٣",)),
]
ANCHORS_PYTHON = ["^", "$", "\\b", "\\B"]
ANCHORS_FULL = [
    *ANCHORS_PYTHON,
    "\\A",
    "\\z",
    "\\<",
    "\\>",
    "\\b{start}",
    "\\b{end}",
    "\\b{start-half}",
    "\\b{end-half}",
]


@st.composite
def atom(draw: st.DrawFn, python_compatible: bool) -> Piece:
    kind = draw(st.integers(0, 9))
    if kind <= 3:
        return draw(literal(python_compatible))
    if kind <= 5:
        return draw(literal_run(python_compatible))
    if kind == 6:
        return draw(char_class(python_compatible))
    if kind == 7:
        pattern, samples = draw(st.sampled_from(OPAQUE_PYTHON if python_compatible else OPAQUE_FULL))
        return Piece(pattern, samples)
    if kind == 8:
        return Piece(draw(st.sampled_from(ANCHORS_PYTHON if python_compatible else ANCHORS_FULL)), ("",))
    return draw(literal(python_compatible))


INLINE_FLAGS = ["(?i)", "(?i)", "(?-i)", "(?x)", "(?-u)", "(?s)", "(?i-u)", "(?u)"]
FLAG_GROUPS_PYTHON = ["(?i:", "(?-i:", "(?s:", "(?m:"]
FLAG_GROUPS_FULL = [
    *FLAG_GROUPS_PYTHON,
    "(?U:",
    "(?x:",
    "(?-u:",
    "(?R:",
    "(?i-u:",
    "(?is:",
    "(?u:",
    "(?iU-s:",
    "(?-i:",
    "(?-u:",
]


def _combine(draw: st.DrawFn, parts: list[Piece]) -> tuple[str, ...]:
    """A few samples of a concatenation: one sample of each part, chosen at random."""
    samples = []
    for _ in range(draw(st.integers(1, 3))):
        samples.append("".join(draw(st.sampled_from(p.samples)) for p in parts))
    return tuple(dict.fromkeys(samples))


@st.composite
def piece(draw: st.DrawFn, python_compatible: bool, depth: int = 0, counter: list[int] | None = None) -> Piece:
    counter = counter if counter is not None else [0]
    kind = draw(st.integers(0, 9)) if depth < 3 else 0
    if kind <= 2:
        return draw(atom(python_compatible))
    if kind == 3:  # concatenation
        parts = draw(st.lists(piece(python_compatible, depth + 1, counter), min_size=2, max_size=4))
        pattern = "".join(p.pattern for p in parts)
        if not python_compatible and draw(st.integers(0, 3)) == 0:
            pattern = draw(st.sampled_from(INLINE_FLAGS)) + pattern
        return Piece(pattern, _combine(draw, parts))
    if kind == 4:  # alternation, in a group
        parts = draw(st.lists(piece(python_compatible, depth + 1, counter), min_size=2, max_size=3))
        branches = [p.pattern for p in parts]
        if not python_compatible:  # a flag set in one branch lasts into the next ones
            for i in range(len(branches)):
                if draw(st.integers(0, 3)) == 0:
                    branches[i] = draw(st.sampled_from(INLINE_FLAGS)) + branches[i]
        open_ = draw(st.sampled_from(["(", "(?:"]))
        return Piece(open_ + "|".join(branches) + ")", tuple(s for p in parts for s in p.samples))
    if kind == 5:  # a group, half the time with flags
        inner = draw(piece(python_compatible, depth + 1, counter))
        counter[0] += 1
        if draw(st.booleans()):
            kinds = FLAG_GROUPS_PYTHON if python_compatible else FLAG_GROUPS_FULL
        else:
            kinds = ["(", "(?:", f"(?P<g{counter[0]}>", *([] if python_compatible else [f"(?<n{counter[0]}>"])]
        return Piece(draw(st.sampled_from(kinds)) + inner.pattern + ")", inner.samples)
    if kind in (6, 7):  # a repetition (of a group, so that it never repeats a repetition)
        inner = draw(piece(python_compatible, depth + 1, counter))
        operand = inner.pattern if len(inner.samples) == 1 and _single(inner.pattern) else f"(?:{inner.pattern})"
        op, lo, hi = draw(
            st.sampled_from(
                [("?", 0, 1), ("*", 0, 3), ("+", 1, 3), ("{2}", 2, 2), ("{0}", 0, 0), ("{1,}", 1, 3)]
                + [("{2,3}", 2, 3), ("{0,2}", 0, 2), ("{3}", 3, 3), ("{1,2}", 1, 2)]
                + ([] if python_compatible else [("{ 2 , 3 }", 2, 3), ("{2 }", 2, 2), ("{ 1,}", 1, 3)])
            )
        )
        lazy = "?" if draw(st.integers(0, 4)) == 0 else ""
        count = draw(st.sampled_from([lo, hi, hi, draw(st.integers(lo, hi))]))
        samples = tuple("".join(draw(st.sampled_from(inner.samples)) for _ in range(count)) for _ in range(2))
        return Piece(operand + op + lazy, samples)
    if kind == 8:
        run = draw(literal_run(python_compatible))
        if not python_compatible and draw(st.integers(0, 2)) == 0:  # flags that end with their group
            scoped = draw(st.sampled_from(["(?-i:", "(?-u:", "(?i:", "(?u:", "(?-x:"]))
            rest = draw(literal_run(False))
            return Piece(scoped + run.pattern + ")" + rest.pattern, _combine(draw, [run, rest]))
        return run
    if python_compatible:
        return draw(atom(True))
    # odd corners: ripgrep's (?:…) wrapping, (?x) spacing and comments, empty alternatives, junk
    odd = draw(st.integers(0, 4))
    inner = draw(piece(False, depth + 1, counter))
    if odd == 0:
        return Piece(inner.pattern + ")|(" + draw(atom(False)).pattern, inner.samples)
    if odd == 1:
        return Piece("(?x: " + " ".join(inner.pattern) + " )", inner.samples)
    if odd == 2:
        return Piece("(?x)" + inner.pattern + " # note\n", inner.samples)
    if odd == 3:
        return Piece("(?:" + inner.pattern + "|)", (*inner.samples, ""))
    junk = draw(st.text(alphabet="ab()[]{}|*+?\\^$.-&~:<>Pi#x 0123,", max_size=8))
    return Piece(junk, ("ab",))


def _single(pattern: str) -> bool:
    """Whether a repetition operator after `pattern` applies to all of it (one literal or class)."""
    if len(pattern) == 1:
        return pattern not in "^$"
    return pattern.startswith("[") and pattern.endswith("]") and pattern.count("[") == 1


@st.composite
def patterns(draw: st.DrawFn, python_compatible: bool) -> Piece:
    found = draw(piece(python_compatible))
    if not python_compatible and draw(st.integers(0, 3)) == 0:
        found = Piece("(?i)" + found.pattern, found.samples)  # case folding is where most can go wrong
    return found


def mutate_case(draw: st.DrawFn, text: str) -> str:
    """Some characters of text replaced by a case variant (including the ones only (?i) knows)."""
    if not text or draw(st.booleans()):
        return text
    return "".join(draw(st.sampled_from(_case_variants(c))) if draw(st.booleans()) else c for c in text)


@st.composite
def texts(draw: st.DrawFn, samples: tuple[str, ...], python_compatible: bool) -> bytes:
    """A file's content: samples of the pattern, case variants and noise, sometimes across lines;
    without python_compatible, sometimes invalid UTF-8 (never at the start, where ripgrep would take
    \\xff\\xfe for a UTF-16 byte order mark) or a UTF-8 byte order mark."""
    noise = [n for n in NOISE if n.isascii()] if python_compatible else NOISE
    parts: list[bytes] = []
    for _ in range(draw(st.integers(0, 4))):
        choice = draw(st.integers(0, 5))
        if choice <= 2:
            text = draw(st.sampled_from(samples))
            if not python_compatible:
                text = mutate_case(draw, text)
            elif not text.isascii():
                text = ""
            parts.append(text.encode("utf-8", "surrogateescape"))
        elif choice <= 4:
            parts.append(draw(st.sampled_from(noise)).encode())
        elif python_compatible:
            parts.append(b"\n")
        else:
            parts.append(draw(st.sampled_from(INVALID_UTF8)))
    data = b"".join(parts)
    if not python_compatible:
        if data.startswith((b"\xff", b"\xfe")):
            data = b"x" + data
        if draw(st.integers(0, 15)) == 0:
            data = b"\xef\xbb\xbf" + data
    return data

"""What a file must contain for a ripgrep regex to match in it: a formula of required substrings.

`required(pattern)` reads `pattern` as ripgrep 15 does with its defaults (`rg --no-config -e PATTERN`:
Rust's regex syntax, case-sensitive, Unicode, line by line) and answers a `Query` that is true of the
text of every file in which ripgrep reports a match. An index uses it to skip the files where the
query is false; ripgrep still decides what matches (codesearch's and Zoekt's split).

The rules, and why:

- **Sound before precise.** A file the query rejects is a file ripgrep never reads, so a query that
  is false of a file ripgrep would match loses a real result. Every step therefore answers a superset
  of what the regex can match: a piece that is not understood matches "any string" (ANY), a set that
  grows too large is shortened (a prefix of a prefix is a prefix), a conjunct may be dropped, never a
  disjunct. Precision is what is left when all of that is safe.
- **The text is the decoded text.** `Lit(s)` is true when `s` occurs in the file's bytes decoded as
  UTF-8 with replacement (`data.decode("utf-8", "replace")`). Each literal is made of characters the
  regex matches as whole UTF-8 sequences, and a decoder that meets a lead byte always starts a new
  character there, so the bytes ripgrep matched decode to the same characters. What ripgrep does to
  the bytes first (a UTF-8 BOM stripped, UTF-16 transcoded) is the caller's business.
- **The parser is regex-syntax's.** ripgrep hands `(?:PATTERN)` to regex-syntax 0.8; the parser here
  is a port of `regex_syntax::ast::parse` (including `(?x)` whitespace and comments, nested classes
  with `&&`, `--`, `~~`, `\\b{start}`, counted repetitions with spaces), so a pattern ripgrep accepts
  is read with the same structure. A pattern it rejects may get any answer (ripgrep searches
  nothing), so errors and anything unfamiliar answer ANY for the whole pattern.
- **Flags as the translator applies them.** `(?flags)` lasts to the end of its group, across `|`;
  `(?flags:...)` for the group. Case-insensitive ASCII letters expand to their simple case folding
  (`k` also matches U+212A KELVIN SIGN, `s` U+017F LONG S); any other character under `(?i)` is one
  unknown character. Under `(?-u)` only ASCII characters are modelled.
- **Classes are character sets, when small.** A bracketed class is evaluated as a set (ranges, ASCII
  classes, nesting, set operations, folding) when that is exact or a safe superset; negated classes,
  `.`, `\\d`, `\\w`, `\\p{..}` and large sets are one unknown character.
- **Bounded.** Sets hold at most `MAX_SET` strings of at most `MAX_LEN` characters (larger ones are
  cut to shorter prefixes or suffixes), queries at most `MAX_NODES` nodes (conjuncts dropped), and
  the work of one pattern a budget: when it runs out, the rest of the pattern counts as any string. A
  pattern longer than `MAX_PATTERN` or nested deeper than `MAX_DEPTH` answers ANY. `required` never
  raises.

The analysis is Russ Cox's (codesearch, `index/regexp.go`): for each sub-expression the set of strings
it matches when small (`exact`), else the sets every match starts and ends with and a query every match
satisfies; literals here are whole substrings, not trigrams (the caller makes trigrams, and drops
literals shorter than it can use).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple, final

# ---------------------------------------------------------------------------------------------------
# Queries


class Query:
    """A condition on a file's text: ANY, NONE, Lit(text), And(args), Or(args)."""

    __slots__ = ()

    def holds(self, text: str) -> bool:
        """Whether this condition is true of `text` (the file's decoded content)."""
        raise NotImplementedError


@final
class _Constant(Query):
    __slots__ = ("_name", "_value")

    def __init__(self, name: str, value: bool) -> None:
        self._name = name
        self._value = value

    def holds(self, text: str) -> bool:
        return self._value

    def __repr__(self) -> str:
        return self._name


ANY: Final[Query] = _Constant("ANY", True)  # no constraint: every file may match
NONE: Final[Query] = _Constant("NONE", False)  # no file can match


@final
class Lit(Query):
    """The text contains `text`."""

    __slots__ = ("text",)
    __match_args__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        self.text = text

    def holds(self, text: str) -> bool:
        return self.text in text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lit) and other.text == self.text

    def __hash__(self) -> int:
        return hash(("Lit", self.text))

    def __repr__(self) -> str:
        return f"Lit({self.text!r})"


class _Compound(Query):
    __slots__ = ("_hash", "args", "size")
    __match_args__ = ("args",)
    args: tuple[Query, ...]
    size: int  # nodes, this one included

    def __init__(self, args: tuple[Query, ...]) -> None:
        self.args = tuple(args)
        self._hash = hash((type(self).__name__, frozenset(self.args)))
        self.size = 1 + sum(_size(a) for a in self.args)

    def __eq__(self, other: object) -> bool:
        """Equal when of the same kind with the same arguments, in any order."""
        return (
            type(other) is type(self)
            and isinstance(other, _Compound)
            and other._hash == self._hash
            and frozenset(other.args) == frozenset(self.args)
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.args!r})"


@final
class And(_Compound):
    """Every argument holds."""

    __slots__ = ()

    def holds(self, text: str) -> bool:
        return all(a.holds(text) for a in self.args)


@final
class Or(_Compound):
    """At least one argument holds."""

    __slots__ = ()

    def holds(self, text: str) -> bool:
        return any(a.holds(text) for a in self.args)


def _size(q: Query) -> int:
    return q.size if isinstance(q, _Compound) else 1


# Bounds. Sets of strings (exact, prefixes, suffixes) and the queries built from them stay small, so
# that every operation is cheap and a pattern's analysis is bounded by its length.
MAX_SET: Final = 64  # strings in a set; also alternatives kept in an Or
MAX_LEN: Final = 128  # characters of a string in a set (prefixes and suffixes are cut to it)
MAX_CROSS: Final = 1024  # a cross product is computed (then shortened) up to this many strings
MAX_CLASS: Final = 16  # a class of more characters is one unknown character
MAX_RANGE: Final = 512  # a class range of more characters is not enumerated
FACTOR_OVER: Final = 16  # an Or of more literals sharing a substring of >= 3 characters becomes it
MAX_AND: Final = 16  # conjuncts kept in an And, the longest literals first
MAX_NODES: Final = 1024  # nodes in any query
MAX_DEPTH: Final = 100  # nesting of the parsed pattern (ripgrep's own limit is 250)
MAX_PATTERN: Final = 1 << 15  # characters of a pattern analysed at all (parsing is not budgeted)
BUDGET: Final = 300_000  # work units for one pattern (one unit is roughly 50-400 ns)
_IMPLY_STEPS: Final = 100_000  # budget of one simplification outside an analysis
_IMPLY_STEP: Final = 10  # the cost of one step of an implication test, in budget units
_STEP: Final = 60  # the cost of one step of the walk, in budget units


class _Budget:
    """Work left (roughly: steps of a few hundred nanoseconds)."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


def _lit(text: str) -> Query:
    return Lit(text) if text else ANY


def _implies(p: Query, q: Query, budget: _Budget) -> bool:
    """Whether p ⇒ q is known (sound, incomplete: False when unsure or out of budget)."""
    budget.left -= _IMPLY_STEP
    if budget.left < 0:
        return False
    if q is ANY or p is NONE or p == q:
        return True
    if isinstance(p, Lit) and isinstance(q, Lit):
        return q.text in p.text
    if isinstance(q, Or) and _all_lits(q) and _all_lits(p):  # literals only: the same answer, quicker
        budget.left -= _size(p) * _size(q)
        needles = [b.text for b in q.args if isinstance(b, Lit)]
        haystacks = [a.text for a in (p.args if isinstance(p, Or) else (p,)) if isinstance(a, Lit)]
        return all(any(b in a for b in needles) for a in haystacks)
    if isinstance(p, Or):
        return all(_implies(a, q, budget) for a in p.args)
    if isinstance(q, And):
        return all(_implies(p, b, budget) for b in q.args)
    if isinstance(q, Or) and any(_implies(p, b, budget) for b in q.args):
        return True
    return isinstance(p, And) and any(_implies(a, q, budget) for a in p.args)


def _all_lits(q: Query) -> bool:
    return isinstance(q, Lit) or (isinstance(q, Or) and all(isinstance(a, Lit) for a in q.args))


def _value(q: Query) -> int:
    """How much a conjunct narrows: the length of the literal it guarantees."""
    if isinstance(q, Lit):
        return len(q.text)
    if isinstance(q, Or):
        return min(_value(a) for a in q.args)
    if isinstance(q, And):
        return max(_value(a) for a in q.args)
    return 1 << 30 if q is NONE else 0


def _and(*qs: Query, budget: _Budget | None = None) -> Query:
    """The conjunction, simplified: flattened, ANY dropped, implied conjuncts dropped, bounded."""
    flat: list[Query] = []
    for q in qs:
        if q is NONE:
            return NONE
        if isinstance(q, And):
            flat.extend(q.args)
        elif q is not ANY:
            flat.append(q)
    kept: list[Query] = []
    budget = budget or _Budget(_IMPLY_STEPS)
    unique = list(dict.fromkeys(flat))
    if all(isinstance(q, Lit) for q in unique):  # the common case, quicker: drop what a longer one contains
        texts = sorted((q.text for q in unique if isinstance(q, Lit)), key=len, reverse=True)
        budget.left -= len(texts) ** 2
        kept_texts: list[str] = []
        for t in texts:
            if not any(t in k for k in kept_texts):
                kept_texts.append(t)
        kept = [q for q in unique if isinstance(q, Lit) and q.text in kept_texts]
    else:
        for q in unique:
            if any(_implies(k, q, budget) for k in kept):
                continue
            kept = [k for k in kept if not _implies(q, k, budget)]
            kept.append(q)
    if len(kept) > MAX_AND or sum(_size(k) for k in kept) > MAX_NODES:
        ranked = sorted(range(len(kept)), key=lambda i: -_value(kept[i]))
        chosen: set[int] = set()
        room = MAX_NODES - 1
        for i in ranked[:MAX_AND]:
            if _size(kept[i]) <= room:
                chosen.add(i)
                room -= _size(kept[i])
        kept = [k for i, k in enumerate(kept) if i in chosen]
    if not kept:
        return ANY
    return kept[0] if len(kept) == 1 else And(tuple(kept))


def _or(*qs: Query, budget: _Budget | None = None) -> Query:
    """The disjunction, simplified: flattened, NONE dropped, alternatives that imply another one
    dropped, many literals factored into their common substring, bounded (weakened when too large)."""
    flat: list[Query] = []
    for q in qs:
        if q is ANY:
            return ANY
        if isinstance(q, Or):
            flat.extend(q.args)
        elif q is not NONE:
            flat.append(q)
    budget = budget or _Budget(_IMPLY_STEPS)
    if len(flat) > 4 * MAX_SET:  # too many to simplify one by one
        return _factor(flat, budget) if all(isinstance(q, Lit) for q in flat) else ANY
    kept: list[Query] = []
    unique = list(dict.fromkeys(flat))
    if all(isinstance(q, Lit) for q in unique):  # the common case, quicker: drop what contains a shorter one
        texts = sorted((q.text for q in unique if isinstance(q, Lit)), key=len)
        budget.left -= len(texts) ** 2
        kept_texts: set[str] = set()
        for t in texts:
            if not any(k in t for k in kept_texts):
                kept_texts.add(t)
        kept = [q for q in unique if isinstance(q, Lit) and q.text in kept_texts]
    else:
        for q in unique:
            if any(_implies(q, k, budget) for k in kept):
                continue
            kept = [k for k in kept if not _implies(k, q, budget)]
            kept.append(q)
    if not kept:
        return NONE
    if len(kept) == 1:
        return kept[0]
    if len(kept) > FACTOR_OVER and all(isinstance(q, Lit) for q in kept):
        common = _factor(kept, budget)
        if (isinstance(common, Lit) and len(common.text) >= 3) or len(kept) > MAX_SET:
            return common
    if len(kept) > MAX_SET:
        return ANY
    if 1 + sum(_size(k) for k in kept) > MAX_NODES:
        share = (MAX_NODES - 1) // len(kept)
        kept = [_shrink(k, share) for k in kept]
        if ANY in kept:
            return ANY
    return Or(tuple(kept))


def _factor(lits: Sequence[Query], budget: _Budget) -> Query:
    """Lit(the longest substring every one of these literals contains), or ANY; bounded."""
    texts = [q.text for q in lits if isinstance(q, Lit)]
    cost = len(texts) * 256  # the binary search over the substrings of the shortest one, short-circuiting
    if len(texts) > 16 * MAX_SET or budget.left < cost:
        return ANY
    budget.left -= cost
    return _lit(_common_substring(texts))


def _shrink(q: Query, room: int) -> Query:
    """A condition implied by q with at most `room` nodes (ANY when nothing fits)."""
    if _size(q) <= room:
        return q
    if isinstance(q, And):
        kept: list[Query] = []
        left = room - 1
        for a in sorted(q.args, key=lambda a: -_value(a)):
            smaller = _shrink(a, left)
            if smaller is not ANY and _size(smaller) <= left:
                kept.append(smaller)
                left -= _size(smaller)
        if len(kept) <= 1:
            return kept[0] if kept else ANY
        return And(tuple(kept))
    if isinstance(q, Or) and len(q.args) + 1 <= room:
        share = (room - 1) // len(q.args)
        alternatives = [_shrink(a, share) for a in q.args]
        return ANY if ANY in alternatives else Or(tuple(alternatives))
    return ANY


def _common_substring(texts: Sequence[str]) -> str:
    """The longest substring of the first (at most 64) characters of the shortest text that occurs in
    every text ('' when none)."""
    base = min(texts, key=len)[:64]
    others = [t for t in texts if t is not base]

    def found(n: int) -> str | None:
        for i in range(len(base) - n + 1):
            piece = base[i : i + n]
            if all(piece in t for t in others):
                return piece
        return None

    lo, hi, best = 1, len(base), ""
    while lo <= hi:
        mid = (lo + hi) // 2
        piece = found(mid)
        if piece is None:
            hi = mid - 1
        else:
            best, lo = piece, mid + 1
    return best


# ---------------------------------------------------------------------------------------------------
# The parser: regex-syntax's `ast::parse::ParserI`, for the patterns ripgrep accepts.


class _Bail(Exception):
    """A pattern ripgrep rejects, or one past a bound: the answer is ANY."""


class _Char(NamedTuple):
    c: str
    byte: bool  # written `\xNN`: a byte, not a character, where Unicode is off


class _Text(NamedTuple):
    """Plain characters in a row (the parser's shortcut for as many _Char)."""

    text: str


class _Range(NamedTuple):
    lo: _Char
    hi: _Char


class _Ascii(NamedTuple):
    name: str
    negated: bool


class _Opaque:
    """One character of a set not modelled: `.`, `\\d`, `\\w`, `\\s`, `\\p{..}` and their negations."""

    __slots__ = ()


class _Look:
    """A zero-width assertion: `^ $ \\A \\z \\b \\B \\< \\>`, `\\b{start}`..."""

    __slots__ = ()


class _Union(NamedTuple):
    items: list[_Item]


class _SetOp(NamedTuple):
    op: str  # "&&", "--" or "~~"
    lhs: _Set
    rhs: _Set


class _Class(NamedTuple):
    negated: bool
    set: _Set


class _Repeat(NamedTuple):
    node: _Node
    lo: int
    hi: int | None  # None: unbounded


Flags = tuple[tuple[str, bool], ...]  # (flag letter, on) in the order written


class _Group(NamedTuple):
    node: _Node
    flags: Flags | None


class _SetFlags(NamedTuple):
    flags: Flags


class _Concat(NamedTuple):
    nodes: list[_Node]


class _Alt(NamedTuple):
    branches: list[_Node]


_Item = _Char | _Range | _Ascii | _Opaque | _Class
_Set = _Union | _SetOp
_Node = _Char | _Text | _Opaque | _Look | _Class | _Repeat | _Group | _SetFlags | _Concat | _Alt

_OPAQUE: Final = _Opaque()
_LOOK: Final = _Look()

# Rust's char::is_whitespace (Unicode White_Space), which `(?x)` skips.
_WHITESPACE: Final = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_META: Final = frozenset("\\.+*?()|[]{}^$#&-~")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_FLAGS: Final = frozenset("imsUuRx")
_SPECIAL: Final = {"a": "\x07", "f": "\x0c", "t": "\t", "n": "\n", "r": "\r", "v": "\x0b"}
_WORD_BOUNDARIES: Final = frozenset({"start", "end", "start-half", "end-half"})
_ASCII_CLASSES: Final = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\x00-\x7f",
    "blank": "\t ",
    "cntrl": "\x00-\x1f\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@[-`{-~",
    "space": "\t\n\x0b\x0c\r ",
    "upper": "A-Z",
    "word": "0-9A-Z_a-z",
    "xdigit": "0-9A-Fa-f",
}


# A run of characters that are literals wherever they stand outside a class (the parser's main loop
# dispatches on the others); with (?x), whitespace and '#' end a run too.
_PLAIN: Final = re.compile("[^" + re.escape("\\.^$()|[?*+{") + "]+")
_PLAIN_X: Final = re.compile("[^" + re.escape("\\.^$()|[?*+{#" + "".join(sorted(_WHITESPACE))) + "]+")


def _escapable(c: str) -> bool:
    """regex-syntax's is_escapeable_character: a meta character, or ASCII other than [0-9A-Za-z<>]."""
    return c in _META or (c.isascii() and not c.isalnum() and c not in "<>")


class _GroupOpen(NamedTuple):
    concat: list[_Node]
    flags: Flags | None
    ignore_whitespace: bool


class _ClassOpen(NamedTuple):
    union: list[_Item]
    negated: bool


class _ClassOp(NamedTuple):
    op: str
    lhs: _Set


class _Parser:
    """A port of regex-syntax's parser (ripgrep 15.2.0 uses regex-syntax 0.8.11), without the
    checks that only turn a pattern into an error: on a pattern regex-syntax accepts it builds the
    same tree; on one it rejects it may build anything or raise _Bail."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.x = False  # ignore whitespace
        self.stack: list[_GroupOpen | list[_Node]] = []  # a list: an alternation's branches so far

    # -- position

    def eof(self) -> bool:
        return self.i >= len(self.p)

    def char(self) -> str:
        if self.i >= len(self.p):
            raise _Bail("unexpected end")
        return self.p[self.i]

    def bump(self) -> bool:
        if self.eof():
            return False
        self.i += 1
        return not self.eof()

    def bump_if(self, prefix: str) -> bool:
        if self.p.startswith(prefix, self.i):
            self.i += len(prefix)
            return True
        return False

    def bump_and_bump_space(self) -> bool:
        if not self.bump():
            return False
        self.bump_space()
        return not self.eof()

    def bump_space(self) -> None:
        if not self.x:
            return
        p = self.p
        while self.i < len(p):
            c = p[self.i]
            if c in _WHITESPACE:
                self.i += 1
            elif c == "#":
                end = p.find("\n", self.i)
                self.i = len(p) if end < 0 else end + 1
            else:
                break

    def peek(self) -> str | None:
        return self.p[self.i + 1] if self.i + 1 < len(self.p) else None

    def peek_space(self) -> str | None:
        if not self.x:
            return self.peek()
        if self.eof():
            return None
        start = self.i + 1
        in_comment = False
        for j in range(start, len(self.p)):
            c = self.p[j]
            if c in _WHITESPACE:
                continue
            if not in_comment and c == "#":
                in_comment = True
            else:  # (regex-syntax's own reading: any other character ends the peek, in a comment too)
                start = j
                break
        return self.p[start] if start < len(self.p) else None

    # -- structure

    def parse(self) -> _Node:
        concat: list[_Node] = []
        while True:
            if self.x:
                self.bump_space()
            if self.i >= len(self.p):
                break
            c = self.p[self.i]
            if c == "(":
                concat = self.push_group(concat)
            elif c == ")":
                concat = self.pop_group(concat)
            elif c == "|":
                self.push_alternate(concat)
                self.bump()
                concat = []
            elif c == "[":
                concat.append(self.parse_set_class())
            elif c in "?*+":
                concat = self.uncounted_repetition(concat, c)
            elif c == "{":
                concat = self.counted_repetition(concat)
            else:
                run = (_PLAIN_X if self.x else _PLAIN).match(self.p, self.i)
                if run is None:
                    concat.append(self.primitive())
                else:
                    text = run.group()
                    concat.append(_Text(text) if len(text) > 1 else _Char(text, False))
                    self.i = run.end()
        return self.pop_group_end(concat)

    def push_alternate(self, concat: list[_Node]) -> None:
        if self.stack and isinstance(self.stack[-1], list):
            self.stack[-1].append(_Concat(concat))
        else:
            self.stack.append([_Concat(concat)])

    def push_group(self, concat: list[_Node]) -> list[_Node]:
        self.bump()
        self.bump_space()
        if self.bump_if("?=") or self.bump_if("?!") or self.bump_if("?<=") or self.bump_if("?<!"):
            raise _Bail("look-around")
        if self.bump_if("?P<") or self.bump_if("?<"):
            self.capture_name()
            flags: Flags | None = None
        elif self.bump_if("?"):
            if self.eof():
                raise _Bail("unclosed group")
            flags = self.parse_flags()
            end = self.char()
            self.bump()
            if end == ")":
                if not flags:
                    raise _Bail("empty flags")
                x = _flag(flags, "x")
                if x is not None:
                    self.x = x
                concat.append(_SetFlags(flags))
                return concat
        else:
            flags = None
        x = _flag(flags, "x") if flags else None
        self.stack.append(_GroupOpen(concat, flags, self.x))
        if len(self.stack) > MAX_DEPTH:
            raise _Bail("too deep")
        if x is not None:
            self.x = x
        return []

    def capture_name(self) -> None:
        start = self.i
        end = self.p.find(">", start)
        if end <= start:  # no '>', or an empty name
            raise _Bail("bad group name")
        self.i = end + 1

    def parse_flags(self) -> Flags:
        flags: list[tuple[str, bool]] = []
        on = True
        last_was_negation = False
        while self.char() not in ":)":
            c = self.char()
            if c == "-":
                if not on:
                    raise _Bail("repeated negation")
                on = False
                last_was_negation = True
            else:
                if c not in _FLAGS or any(f == c for f, _ in flags):
                    raise _Bail("bad flag")
                flags.append((c, on))
                last_was_negation = False
            if not self.bump():
                raise _Bail("unexpected end in flags")
        if last_was_negation:
            raise _Bail("dangling negation")
        return tuple(flags)

    def pop_group(self, concat: list[_Node]) -> list[_Node]:
        if not self.stack:
            raise _Bail("unopened group")
        top = self.stack.pop()
        branches: list[_Node] | None = None
        if isinstance(top, list):
            branches = top
            if not self.stack or isinstance(self.stack[-1], list):
                raise _Bail("unopened group")
            top = self.stack.pop()
            assert isinstance(top, _GroupOpen)
        self.x = top.ignore_whitespace
        self.bump()
        inner: _Node = _Concat(concat) if branches is None else _Alt([*branches, _Concat(concat)])
        top.concat.append(_Group(inner, top.flags))
        return top.concat

    def pop_group_end(self, concat: list[_Node]) -> _Node:
        node: _Node = _Concat(concat)
        if self.stack:
            top = self.stack.pop()
            if not isinstance(top, list) or self.stack:
                raise _Bail("unclosed group")
            node = _Alt([*top, node])
        return node

    def operand(self, concat: list[_Node]) -> _Node:
        """The last node, which a repetition applies to (of a run of characters, the last one)."""
        if not concat or isinstance(concat[-1], _SetFlags):
            raise _Bail("repetition of nothing")
        node = concat.pop()
        if isinstance(node, _Text):
            if len(node.text) > 1:
                concat.append(_Text(node.text[:-1]))
            node = _Char(node.text[-1], False)
        return node

    def uncounted_repetition(self, concat: list[_Node], op: str) -> list[_Node]:
        node = self.operand(concat)
        if self.bump() and self.char() == "?":
            self.bump()
        lo, hi = {"?": (0, 1), "*": (0, None), "+": (1, None)}[op]
        concat.append(_Repeat(node, lo, hi))
        return concat

    def counted_repetition(self, concat: list[_Node]) -> list[_Node]:
        node = self.operand(concat)
        if not self.bump_and_bump_space():
            raise _Bail("unclosed count")
        start = self.decimal()
        if self.eof():
            raise _Bail("unclosed count")
        if self.char() == ",":
            if not self.bump_and_bump_space():
                raise _Bail("unclosed count")
            if self.char() != "}":
                end = self.decimal()
                if start is None or end is None:
                    raise _Bail("bad count")
                lo, hi = start, end
            else:
                if start is None:
                    raise _Bail("bad count")
                lo, hi = start, None
        else:
            if start is None:
                raise _Bail("bad count")
            lo = hi = start
        if self.eof() or self.char() != "}":
            raise _Bail("unclosed count")
        if self.bump_and_bump_space() and self.char() == "?":
            self.bump()
        if hi is not None and lo > hi:
            raise _Bail("bad count")
        concat.append(_Repeat(node, lo, hi))
        return concat

    def decimal(self) -> int | None:
        """A u32 with whitespace around it (always allowed: regex-syntax skips it even without x)."""
        while not self.eof() and self.p[self.i] in _WHITESPACE:
            self.bump()
        digits: list[str] = []
        while not self.eof() and "0" <= self.p[self.i] <= "9":
            digits.append(self.p[self.i])
            self.bump_and_bump_space()
        while not self.eof() and self.p[self.i] in _WHITESPACE:
            self.bump_and_bump_space()
        text = "".join(digits).lstrip("0") or ("0" if digits else "")
        if not text or len(text) > 10 or int(text) > 0xFFFF_FFFF:
            return None
        return int(text)

    # -- primitives

    def primitive(self) -> _Char | _Opaque | _Look:
        c = self.p[self.i]
        if c == "\\":
            return self.escape()
        self.bump()
        if c == ".":
            return _OPAQUE
        if c in "^$":
            return _LOOK
        return _Char(c, False)

    def escape(self) -> _Char | _Opaque | _Look:
        if not self.bump():
            raise _Bail("dangling escape")
        c = self.p[self.i]
        if "0" <= c <= "9":
            raise _Bail("backreference")
        if c in "xuU":
            return self.hex(c)
        if c in "pP":
            self.unicode_class()
            return _OPAQUE
        if c in "dswDSW":
            self.bump()
            return _OPAQUE
        self.bump()
        if _escapable(c):
            return _Char(c, False)
        if c in _SPECIAL:
            return _Char(_SPECIAL[c], False)
        if c in "AzB<>":
            return _LOOK
        if c == "b":
            if not self.eof() and self.p[self.i] == "{":
                self.special_word_boundary()
            return _LOOK
        raise _Bail("unknown escape")

    def special_word_boundary(self) -> None:
        """`\\b{start}` and the like; a `{` that cannot start one is left for a counted repetition."""
        start = self.i
        if not self.bump_and_bump_space():
            raise _Bail("unexpected end")
        if not _word_boundary_char(self.p[self.i]):
            self.i = start
            return
        name: list[str] = []
        while not self.eof() and _word_boundary_char(self.p[self.i]):
            name.append(self.p[self.i])
            self.bump_and_bump_space()
        if self.eof() or self.p[self.i] != "}":
            raise _Bail("unclosed word boundary")
        self.bump()
        if "".join(name) not in _WORD_BOUNDARIES:
            raise _Bail("unknown word boundary")

    def hex(self, kind: str) -> _Char:
        if not self.bump_and_bump_space():
            raise _Bail("unexpected end")
        digits: list[str] = []
        if self.p[self.i] == "{":
            while self.bump_and_bump_space() and self.p[self.i] != "}":
                if self.p[self.i] not in _HEX:
                    raise _Bail("bad hex")
                digits.append(self.p[self.i])
            if self.eof():
                raise _Bail("unexpected end")
            self.bump_and_bump_space()
            byte = False  # only the fixed \xNN form is a byte
        else:
            for n in range({"x": 2, "u": 4, "U": 8}[kind]):
                if n > 0 and not self.bump_and_bump_space():
                    raise _Bail("unexpected end")
                if self.p[self.i] not in _HEX:
                    raise _Bail("bad hex")
                digits.append(self.p[self.i])
            self.bump_and_bump_space()
            byte = kind == "x"
        text = "".join(digits).lstrip("0") or "0"
        if not digits or len(text) > 8:
            raise _Bail("bad hex")
        value = int(text, 16)
        if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
            raise _Bail("not a scalar value")
        return _Char(chr(value), byte)

    def unicode_class(self) -> None:
        if not self.bump_and_bump_space():
            raise _Bail("unexpected end")
        if self.p[self.i] == "{":
            while self.bump_and_bump_space() and self.p[self.i] != "}":
                pass
            if self.eof():
                raise _Bail("unexpected end")
            self.bump()
        else:
            if self.p[self.i] == "\\":
                raise _Bail("bad class")
            self.bump_and_bump_space()

    # -- bracketed classes

    def parse_set_class(self) -> _Class:
        stack: list[_ClassOpen | _ClassOp] = []
        union: list[_Item] = []
        while True:
            self.bump_space()
            if self.eof():
                raise _Bail("unclosed class")
            c = self.p[self.i]
            if c == "[":
                if stack:
                    ascii_class = self.ascii_class()
                    if ascii_class is not None:
                        union.append(ascii_class)
                        continue
                negated, nested = self.set_class_open()
                stack.append(_ClassOpen(union, negated))
                if len(stack) > MAX_DEPTH:
                    raise _Bail("too deep")
                union = nested
            elif c == "]":
                kind = _pop_class_op(stack, _Union(union))
                top = stack.pop()
                assert isinstance(top, _ClassOpen)
                self.bump()
                cls = _Class(top.negated, kind)
                if not stack:
                    return cls
                union = top.union
                union.append(cls)
            elif c in "&-~" and self.peek() == c:
                self.i += 2
                lhs = _pop_class_op(stack, _Union(union))
                stack.append(_ClassOp(c + c, lhs))
                union = []
            else:
                union.append(self.set_class_range())

    def set_class_open(self) -> tuple[bool, list[_Item]]:
        if not self.bump_and_bump_space():
            raise _Bail("unclosed class")
        negated = self.p[self.i] == "^"
        if negated and not self.bump_and_bump_space():
            raise _Bail("unclosed class")
        union: list[_Item] = []
        while self.p[self.i] == "-":
            union.append(_Char("-", False))
            if not self.bump_and_bump_space():
                raise _Bail("unclosed class")
        if not union and self.p[self.i] == "]":
            union.append(_Char("]", False))
            if not self.bump_and_bump_space():
                raise _Bail("unclosed class")
        return negated, union

    def ascii_class(self) -> _Ascii | None:
        start = self.i
        if not self.bump() or self.p[self.i] != ":" or not self.bump():
            self.i = start
            return None
        negated = self.p[self.i] == "^"
        if negated and not self.bump():
            self.i = start
            return None
        name_start = self.i
        while self.p[self.i] != ":" and self.bump():
            pass
        if self.eof():
            self.i = start
            return None
        name = self.p[name_start : self.i]
        if not self.bump_if(":]") or name not in _ASCII_CLASSES:
            self.i = start
            return None
        return _Ascii(name, negated)

    def set_class_range(self) -> _Item:
        first = self.set_class_item()
        self.bump_space()
        if self.eof():
            raise _Bail("unclosed class")
        if self.p[self.i] != "-" or self.peek_space() in ("]", "-"):
            if isinstance(first, _Look):
                raise _Bail("assertion in class")
            return first
        if not self.bump_and_bump_space():
            raise _Bail("unclosed class")
        last = self.set_class_item()
        if not isinstance(first, _Char) or not isinstance(last, _Char) or first.c > last.c:
            raise _Bail("bad range")
        return _Range(first, last)

    def set_class_item(self) -> _Char | _Opaque | _Look:
        if self.p[self.i] == "\\":
            return self.escape()
        c = self.p[self.i]
        self.bump()
        return _Char(c, False)


def _flag(flags: Flags | None, letter: str) -> bool | None:
    for f, on in flags or ():
        if f == letter:
            return on
    return None


def _word_boundary_char(c: str) -> bool:
    return c == "-" or ("a" <= c <= "z") or ("A" <= c <= "Z")


def _pop_class_op(stack: list[_ClassOpen | _ClassOp], rhs: _Set) -> _Set:
    if stack and isinstance(stack[-1], _ClassOp):
        op = stack.pop()
        assert isinstance(op, _ClassOp)
        return _SetOp(op.op, op.lhs, rhs)
    return rhs


def _depth(root: _Node) -> int:
    """The nesting depth of a parsed pattern (iteratively: the analysis recurses, this must not)."""
    deepest = 1
    todo: list[tuple[object, int]] = [(root, 1)]
    while todo:
        node, depth = todo.pop()
        children: Sequence[object]
        if isinstance(node, _Concat):
            children = node.nodes
        elif isinstance(node, _Alt):
            children = node.branches
        elif isinstance(node, _Repeat | _Group):
            children = (node.node,)
        elif isinstance(node, _Class):
            children = (node.set,)
        elif isinstance(node, _Union):
            children = node.items
        elif isinstance(node, _SetOp):
            children = (node.lhs, node.rhs)
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        todo.extend((child, depth) for child in children if isinstance(child, _CONTAINERS))
    return deepest


_CONTAINERS: Final = (_Concat, _Alt, _Repeat, _Group, _Class, _Union, _SetOp)


# ---------------------------------------------------------------------------------------------------
# Characters and classes

# Simple case folding of the ASCII letters, as regex-syntax 0.8.11 has it (Unicode 16): each letter
# with its other case, and the two non-ASCII characters that fold to an ASCII letter.
_EXTRA_FOLDS: Final = {"k": "\u212a", "s": "\u017f"}


def _fold_ascii(c: str) -> frozenset[str]:
    if c.isascii() and c.isalpha():
        return frozenset({c.lower(), c.upper(), *_EXTRA_FOLDS.get(c.lower(), "")})
    return frozenset({c})


# A class as a set of characters: (chars, exact). chars None: any character. exact False: a superset
# of the class's characters (never smaller), which is safe to match with but not to subtract.
_CharSet = tuple[frozenset[str] | None, bool]
_UNKNOWN: Final[_CharSet] = (None, False)


def _ascii_set(spec: str) -> frozenset[str]:
    chars: set[str] = set()
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            chars.update(chr(o) for o in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            chars.add(spec[i])
            i += 1
    return frozenset(chars)


_ASCII_SETS: Final = {name: _ascii_set(spec) for name, spec in _ASCII_CLASSES.items()}


def _fold_set(value: _CharSet) -> _CharSet:
    chars, exact = value
    if chars is None:
        return value
    if not all(c.isascii() for c in chars):
        return _UNKNOWN  # the folding of non-ASCII characters is not modelled
    folded: set[str] = set()
    for c in chars:
        folded |= _fold_ascii(c)
    return frozenset(folded), exact


# ---------------------------------------------------------------------------------------------------
# The analysis


class _Info(NamedTuple):
    """What is known of the strings a sub-expression matches: all of them (`exact`, when not None),
    else sets that every match starts (`prefix`) and ends (`suffix`) with, and a query every text
    containing a match satisfies. "" in a prefix or suffix set: nothing known."""

    exact: frozenset[str] | None
    prefix: frozenset[str]
    suffix: frozenset[str]
    match: Query


_NOTHING_KNOWN: Final = frozenset({""})
_ANY_STRING: Final = _Info(None, _NOTHING_KNOWN, _NOTHING_KNOWN, ANY)
_EMPTY: Final = _Info(_NOTHING_KNOWN, _NOTHING_KNOWN, _NOTHING_KNOWN, ANY)


def _shorten(strings: frozenset[str], suffixes: bool) -> frozenset[str]:
    """A set of at most MAX_SET strings of at most MAX_LEN characters such that every string of
    `strings` starts (ends, for suffixes) with one of them: the strings cut to a common length."""

    def cut(n: int) -> frozenset[str]:
        return frozenset(s[len(s) - n :] if suffixes else s[:n] for s in strings) if n else _NOTHING_KNOWN

    if "" in strings:
        return _NOTHING_KNOWN
    if any(len(s) > MAX_LEN for s in strings):
        strings = cut(MAX_LEN)
    if len(strings) <= MAX_SET:
        return strings
    lo, hi = 0, max(len(s) for s in strings)  # cut(lo) fits, cut(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if len(cut(mid)) <= MAX_SET:
            lo = mid
        else:
            hi = mid
    return cut(lo)


class _Analysis:
    """The walk over a parsed pattern. When the budget runs out, every node not yet analysed counts
    as "any string": the answer stays sound and the time bounded."""

    def __init__(self) -> None:
        self.budget = _Budget(BUDGET)
        self.fold = False  # (?i)
        self.unicode = True  # (?u)

    def charge(self, work: int) -> None:
        self.budget.left -= work

    def exhausted(self) -> bool:
        return self.budget.left <= 0

    # -- combinators

    def lits(self, strings: Iterable[str]) -> Query:
        return _or(*(_lit(s) for s in strings), budget=self.budget)

    def exact(self, strings: frozenset[str]) -> _Info:
        if len(strings) <= MAX_SET and all(len(s) <= MAX_LEN for s in strings):
            return _Info(strings, strings, strings, ANY)
        # Too many, or too long: what every one starts and ends with.
        self.charge(sum(len(s) for s in strings) * 4)
        return _Info(None, _shorten(strings, False), _shorten(strings, True), ANY)

    def parts(self, info: _Info) -> tuple[frozenset[str], frozenset[str], Query]:
        if info.exact is not None:
            return info.exact, info.exact, self.lits(info.exact)
        return info.prefix, info.suffix, info.match

    def cross(self, left: frozenset[str], right: frozenset[str]) -> frozenset[str]:
        self.charge(len(left) * len(right) * 2)
        return frozenset(a + b for a in left for b in right)

    def shorten(self, strings: frozenset[str], suffixes: bool) -> frozenset[str]:
        if len(strings) > MAX_SET:
            self.charge(len(strings) * 8)
        return _shorten(strings, suffixes)

    def concat(self, x: _Info, y: _Info) -> _Info:
        self.charge(_STEP)
        if x.exact == _NOTHING_KNOWN:
            return y
        if y.exact == _NOTHING_KNOWN:
            return x
        if x.exact is not None and y.exact is not None and len(x.exact) * len(y.exact) <= MAX_SET:
            return self.exact(self.cross(x.exact, y.exact))
        x_prefix, x_suffix, x_match = self.parts(x)
        y_prefix, y_suffix, y_match = self.parts(y)
        self.charge(4 * (_size(x_match) + _size(y_match) + len(x_suffix) + len(y_prefix)))
        if x.exact is None:
            prefix = x_prefix
        elif len(x.exact) * len(y_prefix) <= MAX_CROSS:
            prefix = self.shorten(self.cross(x.exact, y_prefix), False)
        else:
            prefix = self.shorten(x.exact, False)
        if y.exact is None:
            suffix = y_suffix
        elif len(x_suffix) * len(y.exact) <= MAX_CROSS:
            suffix = self.shorten(self.cross(x_suffix, y.exact), True)
        else:
            suffix = self.shorten(y.exact, True)
        junction: Query = ANY  # a match of x followed by one of y: the strings across the seam
        if len(x_suffix) * len(y_prefix) <= MAX_SET:
            junction = self.lits(self.cross(x_suffix, y_prefix))
        return _Info(None, prefix, suffix, _and(x_match, y_match, junction, budget=self.budget))

    def alternate(self, infos: Sequence[_Info]) -> _Info:
        if all(i.exact is not None for i in infos):
            union: set[str] = set()
            for i in infos:
                assert i.exact is not None
                union |= i.exact
                if len(union) > 4 * MAX_SET:
                    break
            else:
                self.charge(len(union))
                return self.exact(frozenset(union))
        prefixes: set[str] = set()
        suffixes: set[str] = set()
        for i in infos:
            prefix, suffix = (i.exact, i.exact) if i.exact is not None else (i.prefix, i.suffix)
            prefixes |= prefix
            suffixes |= suffix
            self.charge(len(prefix) + len(suffix))
            if len(prefixes) > 4 * MAX_SET:
                prefixes = set(self.shorten(frozenset(prefixes), False))
            if len(suffixes) > 4 * MAX_SET:
                suffixes = set(self.shorten(frozenset(suffixes), True))
        match = ANY
        if len(infos) <= MAX_SET:
            match = _or(*(self.query(i) for i in infos), budget=self.budget)
        return _Info(None, self.shorten(frozenset(prefixes), False), self.shorten(frozenset(suffixes), True), match)

    def repeat(self, x: _Info, lo: int, hi: int | None) -> _Info:
        if hi == 0:
            return _EMPTY
        if lo == 0:
            return self.alternate([x, _EMPTY]) if hi == 1 else _ANY_STRING
        if lo == hi and lo <= 4:
            result = x
            for _ in range(lo - 1):
                result = self.concat(result, x)
            return result
        # x{lo,hi} with lo >= 1: every match starts and ends with a match of x (of xx when lo >= 2)
        # and contains one.
        head = x if lo == 1 else self.concat(x, x)
        prefix, suffix, match = self.parts(head)
        return _Info(None, prefix, suffix, match)

    def query(self, info: _Info) -> Query:
        if info.exact is not None:
            return self.lits(info.exact)
        return _and(info.match, self.lits(info.prefix), self.lits(info.suffix), budget=self.budget)

    # -- the tree

    def node(self, node: _Node) -> _Info:
        if self.exhausted():
            return _ANY_STRING
        self.charge(1)
        if isinstance(node, _Char):
            return self.char(node)
        if isinstance(node, _Text):
            return self.sequence([node])
        if isinstance(node, _Concat):
            return self.sequence(node.nodes)
        if isinstance(node, _Alt):
            infos: list[_Info] = []
            for branch in node.branches:
                if self.exhausted():
                    return _ANY_STRING
                infos.append(self.node(branch))
            return self.alternate(infos)
        if isinstance(node, _Group):
            saved = self.fold, self.unicode
            self.set_flags(node.flags)
            try:
                return self.node(node.node)
            finally:
                self.fold, self.unicode = saved
        if isinstance(node, _Repeat):
            return self.repeat(self.node(node.node), node.lo, node.hi)
        if isinstance(node, _Class):
            return self.bracketed(node)
        if isinstance(node, _SetFlags):
            self.set_flags(node.flags)
            return _EMPTY
        if isinstance(node, _Look):
            return _EMPTY
        return _ANY_STRING  # _Opaque: one character not modelled

    def set_flags(self, flags: Flags | None) -> None:
        fold, unicode = _flag(flags, "i"), _flag(flags, "u")
        if fold is not None:
            self.fold = fold
        if unicode is not None:
            self.unicode = unicode

    def sequence(self, nodes: Sequence[_Node]) -> _Info:
        result = _EMPTY
        run: list[str] = []  # plain characters, taken as one literal

        def flush() -> _Info:
            self.charge(len(run))
            text = "".join(run)
            run.clear()
            return self.concat(result, self.exact(frozenset({text})))

        for node in nodes:
            if self.exhausted():
                return self.concat(result, _ANY_STRING)  # the rest: any string (the run too)
            plain = self.unicode and not self.fold
            if isinstance(node, _Char) and plain:
                run.append(node.c)
            elif isinstance(node, _Text) and plain:
                run.append(node.text)
            elif isinstance(node, _Text):
                for c in node.text:
                    if self.exhausted():
                        return self.concat(result, _ANY_STRING)
                    result = self.concat(result, self.char(_Char(c, False)))
            else:
                if run:
                    result = flush()
                if isinstance(node, _SetFlags):  # (?flags) changes how the next literals read
                    self.set_flags(node.flags)
                else:
                    result = self.concat(result, self.node(node))
        return flush() if run else result

    def char(self, node: _Char) -> _Info:
        self.charge(1)
        if not node.c.isascii():
            if self.fold or not self.unicode:
                return _ANY_STRING  # case folding beyond ASCII, or a byte: not modelled
            return self.exact(frozenset({node.c}))
        return self.exact(_fold_ascii(node.c) if self.fold else frozenset({node.c}))

    def bracketed(self, node: _Class) -> _Info:
        if not self.unicode or node.negated:
            return _ANY_STRING  # a byte class, or the complement of a set
        chars, _ = self.class_set(node.set)
        if chars is not None and self.fold:
            chars, _ = _fold_set((chars, False))
        if chars is None or len(chars) > MAX_CLASS:
            return _ANY_STRING
        return self.exact(chars)  # one of these characters (none: the class never matches)

    def class_set(self, item: _Item | _Set) -> _CharSet:
        """The characters of a class item, a union or a set operation, as regex-syntax's translator
        computes them (folding both sides of an operation and every nested class under (?i))."""
        if isinstance(item, _Char):
            return frozenset({item.c}), True
        if isinstance(item, _Range):
            lo, hi = ord(item.lo.c), ord(item.hi.c)
            if hi - lo >= MAX_RANGE:
                return _UNKNOWN
            self.charge(hi - lo + 1)
            return frozenset(chr(o) for o in range(lo, hi + 1)), True
        if isinstance(item, _Ascii):
            return _UNKNOWN if item.negated else (_ASCII_SETS[item.name], True)
        if isinstance(item, _Class):
            value = self.class_set(item.set)
            if self.fold:
                value = _fold_set(value)
            return _UNKNOWN if item.negated else value
        if isinstance(item, _Union):
            union: set[str] = set()
            exact = True
            for sub in item.items:
                chars, sub_exact = self.class_set(sub)
                if chars is None:
                    return _UNKNOWN
                self.charge(len(chars))
                union |= chars
                exact = exact and sub_exact
                if len(union) > 4 * MAX_RANGE:
                    return _UNKNOWN  # a superset (all characters), and bounded
            return frozenset(union), exact
        if isinstance(item, _SetOp):
            lhs, rhs = self.class_set(item.lhs), self.class_set(item.rhs)
            if self.fold:
                lhs, rhs = _fold_set(lhs), _fold_set(rhs)
            (left, left_exact), (right, right_exact) = lhs, rhs
            self.charge(len(left or ()) + len(right or ()))
            if item.op == "&&":
                if left is None or right is None:
                    return (right, False) if left is None else (left, False)
                return left & right, left_exact and right_exact
            if item.op == "--":  # only an exact right side may be subtracted from a superset
                if left is None or right is None or not right_exact:
                    return left, False
                return left - right, left_exact
            if left is None or right is None or not (left_exact and right_exact):
                return _UNKNOWN
            return left ^ right, True
        return _UNKNOWN  # _Opaque: \d, \w, \s, \p{..}


def required(pattern: str) -> Query:
    """A condition true of the decoded text of every file in which `rg --no-config -e pattern`
    reports a match (ANY when nothing is known). Never raises."""
    try:
        return _required(pattern)
    except Exception:  # _Bail, RecursionError, MemoryError; and a bug must cost precision, not a search
        return ANY


def _required(pattern: str) -> Query:
    """`required` without its safety net (the tests call this, so that a bug shows)."""
    if len(pattern) > MAX_PATTERN or not _is_scalar_text(pattern):
        return ANY
    tree = _Parser("(?:" + pattern + ")").parse()
    if _depth(tree) > MAX_DEPTH:
        return ANY
    analysis = _Analysis()
    return _shrink(analysis.query(analysis.node(tree)), MAX_NODES)


def _is_scalar_text(text: str) -> bool:
    """Whether text is made of Unicode scalar values (no lone surrogate), as every pattern rg can be
    given is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True

"""What a file must contain for a ripgrep regex to match in it: a formula of required substrings.

`required(pattern)` reads `pattern` as ripgrep 15 does with its defaults (`rg --no-config -e PATTERN`:
Rust's regex syntax, case-sensitive, Unicode, line by line; `fold_case` and `fixed` for the flags that
change that: `required`'s own text has the rule of each) and answers a `Query` that is true of the
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
- **The parser is regex-syntax's** (syntax.py), so a pattern ripgrep accepts is read with the
  structure ripgrep gives it. A pattern it rejects may get any answer (ripgrep searches nothing), so
  errors and anything unfamiliar answer ANY for the whole pattern.
- **Flags as the translator applies them.** `(?flags)` lasts to the end of its group, across `|`;
  `(?flags:...)` for the group. Case-insensitive ASCII letters expand to their simple case folding
  (`k` also matches U+212A KELVIN SIGN, `s` U+017F LONG S); any other character under `(?i)` is one
  unknown character. Under `(?-u)` only ASCII characters are modelled.
- **Classes are character sets, when small.** A bracketed class is evaluated as a set (ranges, ASCII
  classes, nesting, set operations, folding) when that is exact or a safe superset; negated classes,
  `.`, `\\d`, `\\w`, `\\p{..}` and large sets are one unknown character.
- **Bounded.** Sets hold at most `MAX_SET` strings of at most `MAX_LEN` characters (larger ones are
  cut to shorter prefixes or suffixes), queries at most `MAX_NODES` nodes (formula.py), and
  the work of one pattern a budget: when it runs out, the rest of the pattern counts as any string. A
  pattern longer than `MAX_PATTERN` or nested deeper than `MAX_DEPTH` answers ANY. `required` never
  raises.

The analysis is Russ Cox's (codesearch, `index/regexp.go`): for each sub-expression the set of strings
it matches when small (`exact`), else the sets every match starts and ends with and a query every match
satisfies; literals here are whole substrings, not trigrams (plan.py makes trigrams, and drops
literals shorter than it can use). Pure: a string in, a formula out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple

from dsh_search.index.query import syntax
from dsh_search.index.query.formula import (
    ANY,
    MAX_NODES,
    MAX_SET,
    Budget,
    Query,
    conjoin,
    disjoin,
    lit,
    nodes,
    shrink,
)
from dsh_search.index.query.syntax import MAX_DEPTH

MAX_LEN: Final = 128  # characters of a string in a set (prefixes and suffixes are cut to it)
MAX_CROSS: Final = 1024  # a cross product is computed (then shortened) up to this many strings
MAX_CLASS: Final = 16  # a class of more characters is one unknown character
MAX_RANGE: Final = 512  # a class range of more characters is not enumerated
MAX_PATTERN: Final = 1 << 15  # characters of a pattern analysed at all (parsing is not budgeted)
BUDGET: Final = 300_000  # work units for one pattern (one unit is roughly 50-400 ns)
_STEP: Final = 60  # the cost of one step of the walk, in budget units


# --- characters and classes -----------------------------------------------------------------------

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


_ASCII_SETS: Final = {name: _ascii_set(spec) for name, spec in syntax.ASCII_CLASSES.items()}


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


# --- the analysis ---------------------------------------------------------------------------------


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
        self.budget = Budget(BUDGET)
        self.fold = False  # (?i)
        self.unicode = True  # (?u)

    def charge(self, work: int) -> None:
        self.budget.left -= work

    def exhausted(self) -> bool:
        return self.budget.left <= 0

    # -- combinators

    def lits(self, strings: Iterable[str]) -> Query:
        return disjoin(*(lit(s) for s in strings), budget=self.budget)

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
        self.charge(4 * (nodes(x_match) + nodes(y_match) + len(x_suffix) + len(y_prefix)))
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
        return _Info(None, prefix, suffix, conjoin(x_match, y_match, junction, budget=self.budget))

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
            match = disjoin(*(self.query(i) for i in infos), budget=self.budget)
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
        return conjoin(info.match, self.lits(info.prefix), self.lits(info.suffix), budget=self.budget)

    # -- the tree

    def node(self, node: syntax.Node) -> _Info:
        if self.exhausted():
            return _ANY_STRING
        self.charge(1)
        if isinstance(node, syntax.Char):
            return self.char(node)
        if isinstance(node, syntax.Text):
            return self.sequence([node])
        if isinstance(node, syntax.Concat):
            return self.sequence(node.nodes)
        if isinstance(node, syntax.Alt):
            infos: list[_Info] = []
            for branch in node.branches:
                if self.exhausted():
                    return _ANY_STRING
                infos.append(self.node(branch))
            return self.alternate(infos)
        if isinstance(node, syntax.Group):
            saved = self.fold, self.unicode
            self.set_flags(node.flags)
            try:
                return self.node(node.node)
            finally:
                self.fold, self.unicode = saved
        if isinstance(node, syntax.Repeat):
            return self.repeat(self.node(node.node), node.lo, node.hi)
        if isinstance(node, syntax.Class):
            return self.bracketed(node)
        if isinstance(node, syntax.SetFlags):
            self.set_flags(node.flags)
            return _EMPTY
        if isinstance(node, syntax.Look):
            return _EMPTY
        return _ANY_STRING  # syntax.Opaque: one character not modelled

    def set_flags(self, flags: syntax.Flags | None) -> None:
        fold, unicode = syntax.flag(flags, "i"), syntax.flag(flags, "u")
        if fold is not None:
            self.fold = fold
        if unicode is not None:
            self.unicode = unicode

    def sequence(self, nodes: Sequence[syntax.Node]) -> _Info:
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
            if isinstance(node, syntax.Char) and plain:
                run.append(node.c)
            elif isinstance(node, syntax.Text) and plain:
                run.append(node.text)
            elif isinstance(node, syntax.Text):
                for c in node.text:
                    if self.exhausted():
                        return self.concat(result, _ANY_STRING)
                    result = self.concat(result, self.char(syntax.Char(c, False)))
            else:
                if run:
                    result = flush()
                if isinstance(node, syntax.SetFlags):  # (?flags) changes how the next literals read
                    self.set_flags(node.flags)
                else:
                    result = self.concat(result, self.node(node))
        return flush() if run else result

    def char(self, node: syntax.Char) -> _Info:
        self.charge(1)
        if not node.c.isascii():
            if self.fold or not self.unicode:
                return _ANY_STRING  # case folding beyond ASCII, or a byte: not modelled
            return self.exact(frozenset({node.c}))
        return self.exact(_fold_ascii(node.c) if self.fold else frozenset({node.c}))

    def bracketed(self, node: syntax.Class) -> _Info:
        if not self.unicode or node.negated:
            return _ANY_STRING  # a byte class, or the complement of a set
        chars, _ = self.class_set(node.set)
        if chars is not None and self.fold:
            chars, _ = _fold_set((chars, False))
        if chars is None or len(chars) > MAX_CLASS:
            return _ANY_STRING
        return self.exact(chars)  # one of these characters (none: the class never matches)

    def class_set(self, item: syntax.Item | syntax.Set) -> _CharSet:
        """The characters of a class item, a union or a set operation, as regex-syntax's translator
        computes them (folding both sides of an operation and every nested class under (?i))."""
        if isinstance(item, syntax.Char):
            return frozenset({item.c}), True
        if isinstance(item, syntax.Range):
            lo, hi = ord(item.lo.c), ord(item.hi.c)
            if hi - lo >= MAX_RANGE:
                return _UNKNOWN
            self.charge(hi - lo + 1)
            return frozenset(chr(o) for o in range(lo, hi + 1)), True
        if isinstance(item, syntax.Ascii):
            return _UNKNOWN if item.negated else (_ASCII_SETS[item.name], True)
        if isinstance(item, syntax.Class):
            value = self.class_set(item.set)
            if self.fold:
                value = _fold_set(value)
            return _UNKNOWN if item.negated else value
        if isinstance(item, syntax.Union):
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
        if isinstance(item, syntax.SetOp):
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
        return _UNKNOWN  # syntax.Opaque: \d, \w, \s, \p{..}


def required(pattern: str, *, fold_case: bool = False, fixed: bool = False) -> Query:
    """A condition true of the decoded text of every file in which `rg --no-config -e pattern` reports a
    match (ANY when nothing is known), with ripgrep's flags that change what can match:

    - `fold_case` (`--ignore-case`, and `--smart-case`, which folds only when the pattern has no
      upper-case letter: folding is the weaker condition, so it is sound for both): the pattern read as
      if it began with `(?i)`, which is what ripgrep's flag means (an inner `(?-i)` still turns it off);
    - `fixed` (`--fixed-strings`): the pattern is a string of plain characters, not a regex;
    - `--multiline` needs no rule: a literal is a substring of the file's text whatever lines it spans,
      and the text kept and judged holds the newlines.

    Never raises."""
    try:
        return _required(pattern, fold_case=fold_case, fixed=fixed)
    except Exception:  # syntax.Bail, RecursionError, MemoryError; and a bug must cost precision, not a search
        return ANY


def _required(pattern: str, *, fold_case: bool = False, fixed: bool = False) -> Query:
    """`required` without its safety net (the tests call this, so that a bug shows)."""
    if len(pattern) > MAX_PATTERN or not _is_scalar_text(pattern):
        return ANY
    tree: syntax.Node
    if fixed:
        tree = syntax.Text(pattern)
    else:
        tree = syntax.Parser("(?:" + pattern + ")").parse()
        if syntax.depth(tree) > MAX_DEPTH:
            return ANY
    analysis = _Analysis()
    analysis.fold = fold_case
    return shrink(analysis.query(analysis.node(tree)), MAX_NODES)


def _is_scalar_text(text: str) -> bool:
    """Whether text is made of Unicode scalar values (no lone surrogate), as every pattern rg can be
    given is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True

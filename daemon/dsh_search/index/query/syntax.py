"""ripgrep's regex syntax, parsed: a port of regex-syntax 0.8's `ast::parse` (sans IO).

ripgrep hands `(?:PATTERN)` to regex-syntax; `Parser(pattern).parse()` builds the same tree for every
pattern ripgrep accepts — `(?x)` whitespace and comments, nested classes with `&&`, `--`, `~~`,
`\\b{start}`, counted repetitions with spaces — so the analysis (analysis.py) reads a pattern with the
structure ripgrep gives it.

Rules of this module:

- **Structure, not errors.** The checks that only turn a pattern into an error are left out: on a
  pattern regex-syntax rejects, the parser may build anything or raise `Bail` (ripgrep searches nothing
  then, so any answer is sound).
- **Bounded.** Nesting deeper than `MAX_DEPTH` raises `Bail`.
- Pure: a string in, a tree out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, NamedTuple

MAX_DEPTH: Final = 100  # nesting of the parsed pattern (ripgrep's own limit is 250)


class Bail(Exception):
    """A pattern ripgrep rejects, or one past a bound: the answer is ANY."""


class Char(NamedTuple):
    c: str
    byte: bool  # written `\xNN`: a byte, not a character, where Unicode is off


class Text(NamedTuple):
    """Plain characters in a row (the parser's shortcut for as many Char)."""

    text: str


class Range(NamedTuple):
    lo: Char
    hi: Char


class Ascii(NamedTuple):
    name: str
    negated: bool


class Opaque:
    """One character of a set not modelled: `.`, `\\d`, `\\w`, `\\s`, `\\p{..}` and their negations."""

    __slots__ = ()


class Look:
    """A zero-width assertion: `^ $ \\A \\z \\b \\B \\< \\>`, `\\b{start}`..."""

    __slots__ = ()


class Union(NamedTuple):
    items: list[Item]


class SetOp(NamedTuple):
    op: str  # "&&", "--" or "~~"
    lhs: Set
    rhs: Set


class Class(NamedTuple):
    negated: bool
    set: Set


class Repeat(NamedTuple):
    node: Node
    lo: int
    hi: int | None  # None: unbounded


Flags = tuple[tuple[str, bool], ...]  # (flag letter, on) in the order written


class Group(NamedTuple):
    node: Node
    flags: Flags | None


class SetFlags(NamedTuple):
    flags: Flags


class Concat(NamedTuple):
    nodes: list[Node]


class Alt(NamedTuple):
    branches: list[Node]


Item = Char | Range | Ascii | Opaque | Class
Set = Union | SetOp
Node = Char | Text | Opaque | Look | Class | Repeat | Group | SetFlags | Concat | Alt

_OPAQUE: Final = Opaque()
_LOOK: Final = Look()

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
ASCII_CLASSES: Final = {
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


class GroupOpen(NamedTuple):
    concat: list[Node]
    flags: Flags | None
    ignore_whitespace: bool


class ClassOpen(NamedTuple):
    union: list[Item]
    negated: bool


class ClassOp(NamedTuple):
    op: str
    lhs: Set


class Parser:
    """A port of regex-syntax's parser (ripgrep 15.2.0 uses regex-syntax 0.8.11), without the
    checks that only turn a pattern into an error: on a pattern regex-syntax accepts it builds the
    same tree; on one it rejects it may build anything or raise Bail."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.x = False  # ignore whitespace
        self.stack: list[GroupOpen | list[Node]] = []  # a list: an alternation's branches so far

    # -- position

    def eof(self) -> bool:
        return self.i >= len(self.p)

    def char(self) -> str:
        if self.i >= len(self.p):
            raise Bail("unexpected end")
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

    def parse(self) -> Node:
        concat: list[Node] = []
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
                    concat.append(Text(text) if len(text) > 1 else Char(text, False))
                    self.i = run.end()
        return self.pop_group_end(concat)

    def push_alternate(self, concat: list[Node]) -> None:
        if self.stack and isinstance(self.stack[-1], list):
            self.stack[-1].append(Concat(concat))
        else:
            self.stack.append([Concat(concat)])

    def push_group(self, concat: list[Node]) -> list[Node]:
        self.bump()
        self.bump_space()
        if self.bump_if("?=") or self.bump_if("?!") or self.bump_if("?<=") or self.bump_if("?<!"):
            raise Bail("look-around")
        if self.bump_if("?P<") or self.bump_if("?<"):
            self.capture_name()
            flags: Flags | None = None
        elif self.bump_if("?"):
            if self.eof():
                raise Bail("unclosed group")
            flags = self.parse_flags()
            end = self.char()
            self.bump()
            if end == ")":
                if not flags:
                    raise Bail("empty flags")
                x = flag(flags, "x")
                if x is not None:
                    self.x = x
                concat.append(SetFlags(flags))
                return concat
        else:
            flags = None
        x = flag(flags, "x") if flags else None
        self.stack.append(GroupOpen(concat, flags, self.x))
        if len(self.stack) > MAX_DEPTH:
            raise Bail("too deep")
        if x is not None:
            self.x = x
        return []

    def capture_name(self) -> None:
        start = self.i
        end = self.p.find(">", start)
        if end <= start:  # no '>', or an empty name
            raise Bail("bad group name")
        self.i = end + 1

    def parse_flags(self) -> Flags:
        flags: list[tuple[str, bool]] = []
        on = True
        last_was_negation = False
        while self.char() not in ":)":
            c = self.char()
            if c == "-":
                if not on:
                    raise Bail("repeated negation")
                on = False
                last_was_negation = True
            else:
                if c not in _FLAGS or any(f == c for f, _ in flags):
                    raise Bail("bad flag")
                flags.append((c, on))
                last_was_negation = False
            if not self.bump():
                raise Bail("unexpected end in flags")
        if last_was_negation:
            raise Bail("dangling negation")
        return tuple(flags)

    def pop_group(self, concat: list[Node]) -> list[Node]:
        if not self.stack:
            raise Bail("unopened group")
        top = self.stack.pop()
        branches: list[Node] | None = None
        if isinstance(top, list):
            branches = top
            if not self.stack or isinstance(self.stack[-1], list):
                raise Bail("unopened group")
            top = self.stack.pop()
            assert isinstance(top, GroupOpen)
        self.x = top.ignore_whitespace
        self.bump()
        inner: Node = Concat(concat) if branches is None else Alt([*branches, Concat(concat)])
        top.concat.append(Group(inner, top.flags))
        return top.concat

    def pop_group_end(self, concat: list[Node]) -> Node:
        node: Node = Concat(concat)
        if self.stack:
            top = self.stack.pop()
            if not isinstance(top, list) or self.stack:
                raise Bail("unclosed group")
            node = Alt([*top, node])
        return node

    def operand(self, concat: list[Node]) -> Node:
        """The last node, which a repetition applies to (of a run of characters, the last one)."""
        if not concat or isinstance(concat[-1], SetFlags):
            raise Bail("repetition of nothing")
        node = concat.pop()
        if isinstance(node, Text):
            if len(node.text) > 1:
                concat.append(Text(node.text[:-1]))
            node = Char(node.text[-1], False)
        return node

    def uncounted_repetition(self, concat: list[Node], op: str) -> list[Node]:
        node = self.operand(concat)
        if self.bump() and self.char() == "?":
            self.bump()
        lo, hi = {"?": (0, 1), "*": (0, None), "+": (1, None)}[op]
        concat.append(Repeat(node, lo, hi))
        return concat

    def counted_repetition(self, concat: list[Node]) -> list[Node]:
        node = self.operand(concat)
        if not self.bump_and_bump_space():
            raise Bail("unclosed count")
        start = self.decimal()
        if self.eof():
            raise Bail("unclosed count")
        if self.char() == ",":
            if not self.bump_and_bump_space():
                raise Bail("unclosed count")
            if self.char() != "}":
                end = self.decimal()
                if start is None or end is None:
                    raise Bail("bad count")
                lo, hi = start, end
            else:
                if start is None:
                    raise Bail("bad count")
                lo, hi = start, None
        else:
            if start is None:
                raise Bail("bad count")
            lo = hi = start
        if self.eof() or self.char() != "}":
            raise Bail("unclosed count")
        if self.bump_and_bump_space() and self.char() == "?":
            self.bump()
        if hi is not None and lo > hi:
            raise Bail("bad count")
        concat.append(Repeat(node, lo, hi))
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

    def primitive(self) -> Char | Opaque | Look:
        c = self.p[self.i]
        if c == "\\":
            return self.escape()
        self.bump()
        if c == ".":
            return _OPAQUE
        if c in "^$":
            return _LOOK
        return Char(c, False)

    def escape(self) -> Char | Opaque | Look:
        if not self.bump():
            raise Bail("dangling escape")
        c = self.p[self.i]
        if "0" <= c <= "9":
            raise Bail("backreference")
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
            return Char(c, False)
        if c in _SPECIAL:
            return Char(_SPECIAL[c], False)
        if c in "AzB<>":
            return _LOOK
        if c == "b":
            if not self.eof() and self.p[self.i] == "{":
                self.special_word_boundary()
            return _LOOK
        raise Bail("unknown escape")

    def special_word_boundary(self) -> None:
        """`\\b{start}` and the like; a `{` that cannot start one is left for a counted repetition."""
        start = self.i
        if not self.bump_and_bump_space():
            raise Bail("unexpected end")
        if not _word_boundary_char(self.p[self.i]):
            self.i = start
            return
        name: list[str] = []
        while not self.eof() and _word_boundary_char(self.p[self.i]):
            name.append(self.p[self.i])
            self.bump_and_bump_space()
        if self.eof() or self.p[self.i] != "}":
            raise Bail("unclosed word boundary")
        self.bump()
        if "".join(name) not in _WORD_BOUNDARIES:
            raise Bail("unknown word boundary")

    def hex(self, kind: str) -> Char:
        if not self.bump_and_bump_space():
            raise Bail("unexpected end")
        digits: list[str] = []
        if self.p[self.i] == "{":
            while self.bump_and_bump_space() and self.p[self.i] != "}":
                if self.p[self.i] not in _HEX:
                    raise Bail("bad hex")
                digits.append(self.p[self.i])
            if self.eof():
                raise Bail("unexpected end")
            self.bump_and_bump_space()
            byte = False  # only the fixed \xNN form is a byte
        else:
            for n in range({"x": 2, "u": 4, "U": 8}[kind]):
                if n > 0 and not self.bump_and_bump_space():
                    raise Bail("unexpected end")
                if self.p[self.i] not in _HEX:
                    raise Bail("bad hex")
                digits.append(self.p[self.i])
            self.bump_and_bump_space()
            byte = kind == "x"
        text = "".join(digits).lstrip("0") or "0"
        if not digits or len(text) > 8:
            raise Bail("bad hex")
        value = int(text, 16)
        if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
            raise Bail("not a scalar value")
        return Char(chr(value), byte)

    def unicode_class(self) -> None:
        if not self.bump_and_bump_space():
            raise Bail("unexpected end")
        if self.p[self.i] == "{":
            while self.bump_and_bump_space() and self.p[self.i] != "}":
                pass
            if self.eof():
                raise Bail("unexpected end")
            self.bump()
        else:
            if self.p[self.i] == "\\":
                raise Bail("bad class")
            self.bump_and_bump_space()

    # -- bracketed classes

    def parse_set_class(self) -> Class:
        stack: list[ClassOpen | ClassOp] = []
        union: list[Item] = []
        while True:
            self.bump_space()
            if self.eof():
                raise Bail("unclosed class")
            c = self.p[self.i]
            if c == "[":
                if stack:
                    ascii_class = self.ascii_class()
                    if ascii_class is not None:
                        union.append(ascii_class)
                        continue
                negated, nested = self.set_class_open()
                stack.append(ClassOpen(union, negated))
                if len(stack) > MAX_DEPTH:
                    raise Bail("too deep")
                union = nested
            elif c == "]":
                kind = _pop_class_op(stack, Union(union))
                top = stack.pop()
                assert isinstance(top, ClassOpen)
                self.bump()
                cls = Class(top.negated, kind)
                if not stack:
                    return cls
                union = top.union
                union.append(cls)
            elif c in "&-~" and self.peek() == c:
                self.i += 2
                lhs = _pop_class_op(stack, Union(union))
                stack.append(ClassOp(c + c, lhs))
                union = []
            else:
                union.append(self.set_class_range())

    def set_class_open(self) -> tuple[bool, list[Item]]:
        if not self.bump_and_bump_space():
            raise Bail("unclosed class")
        negated = self.p[self.i] == "^"
        if negated and not self.bump_and_bump_space():
            raise Bail("unclosed class")
        union: list[Item] = []
        while self.p[self.i] == "-":
            union.append(Char("-", False))
            if not self.bump_and_bump_space():
                raise Bail("unclosed class")
        if not union and self.p[self.i] == "]":
            union.append(Char("]", False))
            if not self.bump_and_bump_space():
                raise Bail("unclosed class")
        return negated, union

    def ascii_class(self) -> Ascii | None:
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
        if not self.bump_if(":]") or name not in ASCII_CLASSES:
            self.i = start
            return None
        return Ascii(name, negated)

    def set_class_range(self) -> Item:
        first = self.set_class_item()
        self.bump_space()
        if self.eof():
            raise Bail("unclosed class")
        if self.p[self.i] != "-" or self.peek_space() in ("]", "-"):
            if isinstance(first, Look):
                raise Bail("assertion in class")
            return first
        if not self.bump_and_bump_space():
            raise Bail("unclosed class")
        last = self.set_class_item()
        if not isinstance(first, Char) or not isinstance(last, Char) or first.c > last.c:
            raise Bail("bad range")
        return Range(first, last)

    def set_class_item(self) -> Char | Opaque | Look:
        if self.p[self.i] == "\\":
            return self.escape()
        c = self.p[self.i]
        self.bump()
        return Char(c, False)


def flag(flags: Flags | None, letter: str) -> bool | None:
    for f, on in flags or ():
        if f == letter:
            return on
    return None


def _word_boundary_char(c: str) -> bool:
    return c == "-" or ("a" <= c <= "z") or ("A" <= c <= "Z")


def _pop_class_op(stack: list[ClassOpen | ClassOp], rhs: Set) -> Set:
    if stack and isinstance(stack[-1], ClassOp):
        op = stack.pop()
        assert isinstance(op, ClassOp)
        return SetOp(op.op, op.lhs, rhs)
    return rhs


def depth(root: Node) -> int:
    """The nesting depth of a parsed pattern (iteratively: the analysis recurses, this must not)."""
    deepest = 1
    todo: list[tuple[object, int]] = [(root, 1)]
    while todo:
        node, depth = todo.pop()
        children: Sequence[object]
        if isinstance(node, Concat):
            children = node.nodes
        elif isinstance(node, Alt):
            children = node.branches
        elif isinstance(node, Repeat | Group):
            children = (node.node,)
        elif isinstance(node, Class):
            children = (node.set,)
        elif isinstance(node, Union):
            children = node.items
        elif isinstance(node, SetOp):
            children = (node.lhs, node.rhs)
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        todo.extend((child, depth) for child in children if isinstance(child, _CONTAINERS))
    return deepest


_CONTAINERS: Final = (Concat, Alt, Repeat, Group, Class, Union, SetOp)

"""ripgrep's `--glob=!<glob>` as a regex, so that results can be checked the way ripgrep walks.

A port of what ripgrep 15 does with such a glob: the `ignore` crate reads it as the gitignore line
`!<glob>` (`GitignoreBuilder::add_line`), and `globset` compiles what is left with `*` and `?` kept
within a name and `\\` as an escape (`Parser`, `Tokens::to_regex_with`). The regex works on the UTF-8
bytes of a path relative to the search root, as globset's does: `?` is one byte, not one character.

`exclusion(glob)` gives the regex and whether the glob names directories only; `inclusion(glob)` does
the same for a whitelist glob (`--glob=<glob>`, the glob tool's pattern and grep's include, which the
workspace index matches itself). Both raise `GlobError` for a glob ripgrep rejects (then ripgrep fails
every search).
"""

from __future__ import annotations

from typing import NamedTuple

# What Rust's str::trim_end removes (Unicode White_Space); ripgrep trims a glob's end unless it ends
# with an escaped space.
_RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


class GlobError(ValueError):
    """A glob ripgrep refuses (`error parsing glob`)."""


class Exclusion(NamedTuple):
    regex: bytes  # matches (fully) a path relative to the search root, as UTF-8 bytes
    only_dir: bool  # the glob ended with '/': it matches directories only


def exclusion(glob: str) -> Exclusion:
    """The gitignore line `!<glob>`, as `GitignoreBuilder::add_line` reads it (ripgrep's `--glob=!<glob>`)."""
    line = "!" + glob
    if not line.endswith("\\ "):
        line = line.rstrip(_RUST_WHITESPACE)
    return _compiled(line[1:])


def inclusion(glob: str) -> Exclusion | None:
    """ripgrep's `--glob=<glob>` (a whitelist), read as `GitignoreBuilder::add_line` reads the line; None
    when it is no whitelist at all: a comment (`#…`), blank once trimmed, or negated (`!…`, a blacklist).

    The regex matches (fully) a path relative to ripgrep's cwd — the directory it runs in, whatever root
    it walks: that is what ripgrep matches `--glob`s against.
    """
    line = glob
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip(_RUST_WHITESPACE)
    if not line:
        return None
    if line.startswith(("\\!", "\\#")):  # an escaped leading `!` or `#` is that character
        return _compiled(line[1:], anchored_allowed=False)
    if line.startswith("!"):
        return None
    return _compiled(line)


def _compiled(line: str, *, anchored_allowed: bool = True) -> Exclusion:
    absolute = anchored_allowed and line.startswith("/")
    if absolute:
        line = line[1:]
    only_dir = line.endswith("/")
    if only_dir:
        line = line[:-1]
        if line.endswith("\\"):  # an escaped trailing slash
            line = line[:-1]
    actual = line
    if not absolute and "/" not in line and not (actual.startswith("**/") or actual == "**"):
        actual = "**/" + actual  # a name matches at any depth
    if actual.endswith("/**"):
        actual += "/*"  # everything inside, not the directory itself
    return Exclusion(_regex(_Parser(actual).parse()), only_dir)


# globset's tokens: the wildcards, and three kinds of token with contents.
ANY, STAR = "?", "*"
PREFIX, SUFFIX, ZERO_OR_MORE = "**/", "/**", "/**/"  # `**` as a leading, trailing or inner component


class Literal(NamedTuple):
    char: str


class CharClass(NamedTuple):
    negated: bool
    ranges: list[tuple[str, str]]


class Alternation(NamedTuple):
    branches: list[list[Token]]


Token = str | Literal | CharClass | Alternation


class _Parser:
    def __init__(self, glob: str) -> None:
        self.glob = glob
        self.i = 0
        self.prev: str | None = None
        self.cur: str | None = None
        self.alternates: list[int] = []
        self.branches: list[list[Token]] = [[]]

    def parse(self) -> list[Token]:
        while (c := self.bump()) is not None:
            if c == "?":
                self.push(ANY)
            elif c == "*":
                self.star()
            elif c == "[":
                self.char_class()
            elif c == "{":
                self.alternates.append(len(self.branches))
                self.branches.append([])
            elif c == "}":
                if not self.alternates:
                    raise GlobError("unopened alternate group")
                start = self.alternates.pop()
                alternation = self.branches[start:]
                del self.branches[start:]
                self.push(Alternation(alternation))
            elif c == ",":
                if self.alternates:
                    self.branches.append([])
                else:
                    self.push(Literal(","))
            elif c == "\\":
                escaped = self.bump()
                if escaped is None:
                    raise GlobError("dangling '\\'")
                self.push(Literal(escaped))
            else:
                self.push(Literal(c))
        if len(self.branches) > 1:
            raise GlobError("unclosed alternate group")
        return self.branches[0]

    def bump(self) -> str | None:
        self.prev = self.cur
        self.cur = self.glob[self.i] if self.i < len(self.glob) else None
        if self.cur is not None:
            self.i += 1
        return self.cur

    def peek(self) -> str | None:
        return self.glob[self.i] if self.i < len(self.glob) else None

    def push(self, token: Token) -> None:
        self.branches[-1].append(token)

    def star(self) -> None:
        prev = self.prev
        if self.peek() != "*":
            self.push(STAR)
            return
        self.bump()
        if not self.branches[-1]:
            if self.peek() not in (None, "/"):
                self.push(STAR)
                self.push(STAR)
            else:
                self.push(PREFIX)
                self.bump()
            return
        if prev != "/" and (len(self.branches) <= 1 or prev not in (",", "{")):
            self.push(STAR)  # `**` inside a name is `*`
            self.push(STAR)
            return
        following = self.peek()
        if following is None:
            self.bump()
            is_suffix = True
        elif following in (",", "}") and len(self.branches) >= 2:
            is_suffix = True
        elif following == "/":
            self.bump()
            is_suffix = False
        else:
            self.push(STAR)
            self.push(STAR)
            return
        token = self.branches[-1].pop()  # the '/' before `**`
        if token in (PREFIX, SUFFIX):
            self.push(token)
        else:
            self.push(SUFFIX if is_suffix else ZERO_OR_MORE)

    def char_class(self) -> None:
        ranges: list[tuple[str, str]] = []
        negated = self.peek() in ("!", "^")
        if negated:
            self.bump()
        first, in_range = True, False
        while True:
            c = self.bump()
            if c is None:
                raise GlobError("unclosed character class")
            if c == "]" and not first:
                break
            if c in "]-" and first:
                ranges.append((c, c))
            elif c == "-" and in_range:
                ranges[-1] = _extend(ranges[-1], c)
                in_range = False
            elif c == "-":
                in_range = True
            else:
                if in_range:
                    ranges[-1] = _extend(ranges[-1], c)
                else:
                    ranges.append((c, c))
                in_range = False
            first = False
        if in_range:
            ranges.append(("-", "-"))
        self.push(CharClass(negated, ranges))


def _extend(last: tuple[str, str], end: str) -> tuple[str, str]:
    if end < last[0]:
        raise GlobError(f"invalid range {last[0]}-{end}")
    return (last[0], end)


def _literal(c: str) -> bytes:
    try:
        data = c.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: not a glob ripgrep could be given
        raise GlobError("not UTF-8") from None
    return b"".join(b"\\x%02x" % byte for byte in data)


_WILDCARDS = {
    ANY: b"[^/]",
    STAR: b"[^/]*",
    PREFIX: b"(?:/?|.*/)",
    SUFFIX: b"/.*",
    ZERO_OR_MORE: b"(?:/|/.*/)",
}


def _regex(tokens: list[Token]) -> bytes:
    if tokens == [PREFIX]:  # the whole glob is `**`
        return b".*"
    return _tokens(tokens)


def _tokens(tokens: list[Token]) -> bytes:
    out: list[bytes] = []
    for token in tokens:
        match token:
            case str():
                out.append(_WILDCARDS[token])
            case Literal(char):
                out.append(_literal(char))
            case CharClass(negated, ranges):
                members = b"".join(_literal(a) if a == b else _literal(a) + b"-" + _literal(b) for a, b in ranges)
                out.append(b"[" + (b"^" if negated else b"") + members + b"]")
            case Alternation(branches):  # globset drops empty branches, and an empty group altogether
                parts = [part for part in (_tokens(branch) for branch in branches) if part]
                if parts:
                    out.append(b"(?:" + b"|".join(parts) + b")")
    return b"".join(out)

"""A condition on a file's text, in literals: the formula an index asks of its files (sans IO).

`Query` is ANY (no constraint), NONE (nothing matches), `Lit(s)` (the text contains `s`), `And` and
`Or`. `conjoin` and `disjoin` build them simplified — flattened, implied parts dropped, many literals
factored — and bounded: an `And` keeps at most `MAX_AND` conjuncts (the longest literals first), an `Or`
at most `MAX_SET` alternatives, any query at most `MAX_NODES` nodes.

Rules of this module:

- **Only ever weaker.** Simplifying or bounding a formula may make it true of more texts, never of
  fewer: a conjunct may be dropped, never a disjunct, and `shrink` answers a formula the original
  implies. An index that skips files where the formula is false then never loses a match.
- **Budgeted.** Implication tests cost budget units (`Budget`); out of budget, an implication is "not
  known" and nothing is dropped on its account.
- Pure: strings in, formulas out. Nothing here reads a file or knows what regex or index uses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, final


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
        self.size = 1 + sum(nodes(a) for a in self.args)

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


def nodes(q: Query) -> int:
    return q.size if isinstance(q, _Compound) else 1


# Bounds: a query stays small, so that every operation on it is cheap.
MAX_SET: Final = 64  # strings in a set; also alternatives kept in an Or
FACTOR_OVER: Final = 16  # an Or of more literals sharing a substring of >= 3 characters becomes it
MAX_AND: Final = 16  # conjuncts kept in an And, the longest literals first
MAX_NODES: Final = 1024  # nodes in any query
_IMPLY_STEPS: Final = 100_000  # budget of one simplification outside an analysis
_IMPLY_STEP: Final = 10  # the cost of one step of an implication test, in budget units


class Budget:
    """Work left (roughly: steps of a few hundred nanoseconds)."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


def lit(text: str) -> Query:
    return Lit(text) if text else ANY


def _implies(p: Query, q: Query, budget: Budget) -> bool:
    """Whether p ⇒ q is known (sound, incomplete: False when unsure or out of budget)."""
    budget.left -= _IMPLY_STEP
    if budget.left < 0:
        return False
    if q is ANY or p is NONE or p == q:
        return True
    if isinstance(p, Lit) and isinstance(q, Lit):
        return q.text in p.text
    if isinstance(q, Or) and _all_lits(q) and _all_lits(p):  # literals only: the same answer, quicker
        budget.left -= nodes(p) * nodes(q)
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


def conjoin(*qs: Query, budget: Budget | None = None) -> Query:
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
    budget = budget or Budget(_IMPLY_STEPS)
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
    if len(kept) > MAX_AND or sum(nodes(k) for k in kept) > MAX_NODES:
        ranked = sorted(range(len(kept)), key=lambda i: -_value(kept[i]))
        chosen: set[int] = set()
        room = MAX_NODES - 1
        for i in ranked[:MAX_AND]:
            if nodes(kept[i]) <= room:
                chosen.add(i)
                room -= nodes(kept[i])
        kept = [k for i, k in enumerate(kept) if i in chosen]
    if not kept:
        return ANY
    return kept[0] if len(kept) == 1 else And(tuple(kept))


def disjoin(*qs: Query, budget: Budget | None = None) -> Query:
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
    budget = budget or Budget(_IMPLY_STEPS)
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
    if 1 + sum(nodes(k) for k in kept) > MAX_NODES:
        share = (MAX_NODES - 1) // len(kept)
        kept = [shrink(k, share) for k in kept]
        if ANY in kept:
            return ANY
    return Or(tuple(kept))


def _factor(lits: Sequence[Query], budget: Budget) -> Query:
    """Lit(the longest substring every one of these literals contains), or ANY; bounded."""
    texts = [q.text for q in lits if isinstance(q, Lit)]
    cost = len(texts) * 256  # the binary search over the substrings of the shortest one, short-circuiting
    if len(texts) > 16 * MAX_SET or budget.left < cost:
        return ANY
    budget.left -= cost
    return lit(_common_substring(texts))


def shrink(q: Query, room: int) -> Query:
    """A condition implied by q with at most `room` nodes (ANY when nothing fits)."""
    if nodes(q) <= room:
        return q
    if isinstance(q, And):
        kept: list[Query] = []
        left = room - 1
        for a in sorted(q.args, key=lambda a: -_value(a)):
            smaller = shrink(a, left)
            if smaller is not ANY and nodes(smaller) <= left:
                kept.append(smaller)
                left -= nodes(smaller)
        if len(kept) <= 1:
            return kept[0] if kept else ANY
        return And(tuple(kept))
    if isinstance(q, Or) and len(q.args) + 1 <= room:
        share = (room - 1) // len(q.args)
        alternatives = [shrink(a, share) for a in q.args]
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

"""Which trigrams a file must hold for a formula to be true of it, and how many files can (sans IO).

`plan(query, frequency)` turns a formula (formula.py) into a `Need`: a tree of trigrams joined by
"and" and "or" that every file the formula is true of satisfies, with an upper bound on the documents
that can satisfy it when trigram document counts are known. The store (shards.py) spells a `Need` in
its own query language; nothing here knows which.

Rules of this module:

- **Sound.** A `Need` is implied by its formula: a literal needs some of its trigrams (any subset is
  sound), an `And` needs what its parts need (a part with no need is dropped), an `Or` needs one of its
  alternatives' needs — or nothing at all when one alternative constrains nothing. Literals shorter than
  three characters constrain nothing.
- **Every trigram a literal has** (up to `TRIGRAMS_PER_LITERAL`, spread along a longer one): the store
  intersects document lists, and where each trigram is common — a phrase like `struct spinlock`, an
  identifier like `module_exit` — only their intersection is selective (measured on the Linux tree:
  `struct spinlock` 7,245 files by its three rarest trigrams, 4,787 by all thirteen; the cost of the
  lookup barely moves; the store stops reading lists once the next is far longer than the candidates
  left, grams.ENOUGH_RATIO). With document frequencies known, the estimate is the rarest one's count: an
  upper bound, for deciding at once that a pattern is too common to be worth a lookup.
- Pure: formulas and a frequency function in, needs out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from dsh_search.index.query.formula import NONE, And, Lit, Or, Query

TRIGRAMS_PER_LITERAL = 48  # a longer literal asks for this many of its trigrams, spread over it

# Which trigrams a file must hold, as a tree: a trigram, or ("and" | "or", the subtrees).
Need = str | tuple[str, tuple["Need", ...]]


class Plan(NamedTuple):
    need: Need | None  # None: no constraint
    estimate: int  # at most this many documents can satisfy it (by document frequencies; -1: unknown)


NO_FILE = Plan(None, 0)  # the formula NONE: no file can match, so none is looked up


def trigrams(literal: str) -> list[str]:
    """Up to TRIGRAMS_PER_LITERAL distinct trigrams of `literal`, spread along it (any subset is sound)."""
    grams = list(dict.fromkeys(literal[i : i + 3] for i in range(len(literal) - 2)))
    if len(grams) <= TRIGRAMS_PER_LITERAL:
        return grams
    step = (len(grams) - 1) / (TRIGRAMS_PER_LITERAL - 1)
    return list(dict.fromkeys(grams[round(i * step)] for i in range(TRIGRAMS_PER_LITERAL)))


def narrows(query: Query) -> bool:
    """Whether the formula constrains which files can match at all (NONE does: no file can)."""
    return query is NONE or plan(query, None).need is not None


def plan(query: Query, frequency: Callable[[str], int] | None) -> Plan:
    """The need of `query` and an upper bound on the documents that can satisfy it. With `frequency`
    (a trigram's document count), each literal asks only for its rarest trigrams. NONE is the caller's
    (`NO_FILE`): here it constrains nothing."""
    if isinstance(query, Lit):
        grams = trigrams(query.text)
        if not grams:
            return Plan(None, -1)
        if frequency is None:
            return Plan(("and", tuple(grams)), -1)
        counted = sorted((frequency(g), g) for g in grams)  # the rarest first: the store reads it first
        return Plan(("and", tuple(g for _, g in counted)), counted[0][0])
    if isinstance(query, And):
        parts = [p for p in (plan(q, frequency) for q in query.args) if p.need is not None]
        if not parts:
            return Plan(None, -1)
        known = [p.estimate for p in parts if p.estimate >= 0]
        return Plan(("and", tuple(p.need for p in parts if p.need is not None)), min(known) if known else -1)
    if isinstance(query, Or):
        alternatives: list[Plan] = []
        for q in query.args:
            part = plan(q, frequency)
            if part.need is None:  # one alternative unconstrained: the whole OR is
                return Plan(None, -1)
            alternatives.append(part)
        if not alternatives:
            return Plan(None, -1)
        unknown = any(p.estimate < 0 for p in alternatives)
        return Plan(
            ("or", tuple(p.need for p in alternatives if p.need is not None)),
            -1 if unknown else sum(p.estimate for p in alternatives),
        )
    return Plan(None, -1)  # ANY, or anything not understood: no constraint


def grams_of(need: Need) -> set[str]:
    """Every trigram a need names."""
    if isinstance(need, str):
        return {need}
    return set().union(*(grams_of(part) for part in need[1]))


def holders(need: Need, holding: dict[str, set[bytes]]) -> set[bytes]:
    """The files that satisfy `need`, given which files hold each of its trigrams."""
    if isinstance(need, str):
        return holding[need]
    sets = [holders(part, holding) for part in need[1]]
    if need[0] == "and":
        return set.intersection(*sets) if sets else set()
    return set().union(*sets)

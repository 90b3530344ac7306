"""What a glob or a grep asks, as one typed value: `GlobQuery`, `GrepQuery` (sans IO).

A search's parameters are read from the call once, at the method face (methods/tools.py), into one of
these values, checked there (`check_glob`, `check_grep`), and carried unchanged from then on: through the
engine, the file source (the workspace index's planner, engine/source.py), the index's peer protocol
(encoded and decoded in index/peers.py alone) and into ripgrep's argv, which grep spells in one module
(engine/grep/argv.py). Nothing below the face reads a parameter from a dict or passes one by position
(tests/server/test_layout.py checks it).

Adding a parameter to grep is: a field here (its type is its schema type; a default keeps old callers
right), its check in `check_grep`, its argv line in engine/grep/argv.py, its description in
texts.GREP_PARAMETERS and — when it changes which files can match — its rule in the index's analysis
(index/planner.py `narrowing`), which the index's equivalence test then draws (it draws every field).

Profiles (`grepProfile`): `upstream` offers upstream's three parameters (`UPSTREAM_FIELDS`), and every
other field keeps its default, so the search is upstream's; `extended` offers every field
(`EXTENDED_FIELDS`). The host-only fields (`HOST_FIELDS`) are never in a model-facing schema.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from dsh_search import texts
from dsh_search.engine.failures import invalid_args
from dsh_search.engine.jscompat import js_trim

DEFAULT_SESSION = "default"  # the spill session of a call that names none

UPSTREAM, EXTENDED = "upstream", "extended"
PROFILES = (UPSTREAM, EXTENDED)  # config.GREP_PROFILES, which validates grepProfile (tests/server/test_config.py)
MAX_CONTEXT = 10  # lines of context a grep may ask for on each side of a match


class OutputMode(StrEnum):
    """What an extended grep shows: the matching lines (upstream's), the files that hold a match, or
    each such file with ripgrep's count of its matches."""

    CONTENT = "content"
    FILES = "files"
    COUNT = "count"


class GlobQuery(NamedTuple):
    pattern: str  # the glob, as ripgrep's --glob reads it
    path: str | None = None  # the search root, as the caller wrote it
    # host only
    cwd: str | None = None  # the session's directory; None: the scope's home
    session_id: str = DEFAULT_SESSION  # the spill session of the complete result


class GrepQuery(NamedTuple):
    """Every parameter of a grep. The first three are upstream's; the rest the extended profile's (each
    answered as ripgrep answers its flag); the last two the host's."""

    pattern: str  # a ripgrep regex (a literal string with fixed_strings)
    path: str | None = None  # the file or directory searched, as the caller wrote it
    include: str | None = None  # one glob of the files searched
    ignore_case: bool = False  # --ignore-case (wins over smart_case)
    smart_case: bool = False  # --smart-case: case-insensitive unless the pattern has an upper-case letter
    fixed_strings: bool = False  # --fixed-strings: the pattern is a literal string
    before: int | None = None  # --before-context (over context's, for the lines before)
    after: int | None = None  # --after-context (over context's, for the lines after)
    context: int | None = None  # --context
    output_mode: OutputMode = OutputMode.CONTENT  # matching lines, files with matches, counts per file
    multiline: bool = False  # --multiline: a match may span lines
    exclude: str | None = None  # one glob of the files not searched (--glob=!<exclude>)
    offset: int = 0  # the page starts after this many entries of the complete sorted result
    limit: int | None = None  # entries in the page (None: grepMaxMatches)
    # host only
    cwd: str | None = None  # the session's directory; None: the scope's home
    session_id: str = DEFAULT_SESSION  # the spill session of the complete result

    @property
    def context_lines(self) -> tuple[int, int]:
        """(lines before, lines after) each match, as ripgrep resolves -B, -A and -C."""
        both = self.context or 0
        return (both if self.before is None else self.before, both if self.after is None else self.after)

    @property
    def folds_case(self) -> bool:
        """Whether ripgrep may match letters of either case (ignore_case, or smart_case)."""
        return self.ignore_case or self.smart_case


HOST_FIELDS = ("cwd", "session_id")
UPSTREAM_FIELDS = ("pattern", "path", "include")
EXTENDED_FIELDS = tuple(f for f in GrepQuery._fields if f not in HOST_FIELDS)
GLOB_FIELDS = tuple(f for f in GlobQuery._fields if f not in HOST_FIELDS)
CONTEXT_FIELDS = ("before", "after", "context")


def grep_fields(profile: str) -> tuple[str, ...]:
    """The model-facing fields of grep in a profile."""
    return EXTENDED_FIELDS if profile == EXTENDED else UPSTREAM_FIELDS


def wire_name(field: str) -> str:
    """A field's name in a call's params: camelCase (`ignore_case` → `ignoreCase`)."""
    head, *rest = field.split("_")
    return head + "".join(part.title() for part in rest)


def check_glob(query: GlobQuery) -> GlobQuery:
    """The query, or INVALID_ARGS with upstream's message."""
    if not js_trim(query.pattern):
        raise invalid_args(texts.PATTERN_EMPTY)
    if query.path is not None and not js_trim(query.path):
        raise invalid_args(texts.PATH_EMPTY)
    return query


def check_grep(query: GrepQuery, max_matches: int) -> GrepQuery:
    """The query, or INVALID_ARGS: upstream's checks of its three parameters in upstream's order, then the
    extended profile's. `max_matches` (grepMaxMatches) bounds `limit`."""
    if not query.pattern:
        raise invalid_args(texts.PATTERN_EMPTY)
    if query.path is not None and not js_trim(query.path):
        raise invalid_args(texts.PATH_EMPTY)
    _check_glob_filter("include", query.include)
    _check_glob_filter("exclude", query.exclude)
    for name in CONTEXT_FIELDS:
        value = getattr(query, name)
        if value is not None and not 0 <= value <= MAX_CONTEXT:
            raise invalid_args(texts.out_of_range(wire_name(name), 0, MAX_CONTEXT))
    if query.output_mode not in OutputMode.__members__.values():
        raise invalid_args(texts.one_of("outputMode", [m.value for m in OutputMode]))
    if query.offset < 0:
        raise invalid_args(texts.at_least("offset", 0))
    if query.limit is not None and not 1 <= query.limit <= max_matches:
        raise invalid_args(texts.out_of_range("limit", 1, max_matches))
    return query._replace(output_mode=OutputMode(query.output_mode))


def _check_glob_filter(name: str, glob: str | None) -> None:
    """Upstream's checks of `include`, which `exclude` shares: not blank, not negated, one glob — a comma
    outside braces (upstream's simple scan: `[,]` is refused too) would make it a list."""
    if glob is None:
        return
    if not js_trim(glob):
        raise invalid_args(texts.glob_filter_empty(name))
    if glob.startswith("!"):
        raise invalid_args(texts.glob_filter_negated(name))
    depth = 0
    for ch in glob:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            raise invalid_args(texts.glob_filter_list(name))

"""Which files ripgrep reads: its own walk, or the files an index chose (the workspace index, dsh_search/index).

A search asks its `FileSource` first; `None` means "walk as usual". An answer must make the search's
result byte-identical to the walk's, so it says exactly what the walk would have produced:

- for glob, the listing ripgrep would have printed (`GlobFiles`: its paths in the walk's final order,
  and its size for the raw-output cap), so ripgrep need not run at all;
- for grep, the files that can match (`GrepFiles`), handed to ripgrep by name. ripgrep searches a file it
  is given by name a little differently from one it finds by walking — a file with a NUL byte is searched
  whole (NULs converted) instead of abandoned at the first NUL — so files that hold a NUL are not named
  but walked: their directory is a root of its own, limited to depth 1 and to those names by `--glob`s
  (engine/grep/argv.py spells them). Files named are, by the source's word, text; the include, exclude
  and deny globs were applied by the source (ripgrep ignores `--glob`s for files it is given by name).

A source is asked with the search's query as the method face made it (engine/request.py), carried
unchanged, and the directory the search runs in. It answers `None` whenever it cannot promise the
walk's answer; the engine never second-guesses an answer.

A grep answer may leave one check for the time ripgrep runs (`GrepFiles.holds`: the index stats the rule
files of grep's walk, about as long as ripgrep takes to start): the engine starts ripgrep with the files,
calls it while ripgrep reads them, and when it says False stops that run and walks instead — an answer
is only ever read from a run whose files still held.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GlobQuery, GrepQuery


class GlobFiles(NamedTuple):
    paths: list[str]  # as ripgrep prints them, oldest first (ties by path bytes), decoded for display
    stdout_bytes: int  # the size of the listing ripgrep would have written (each path and a NUL)
    growth: int  # what that listing gains decoded as UTF-8 with replacements (jscompat.utf8_growth)


class GrepFiles(NamedTuple):
    named: list[bytes]  # files to give ripgrep by name, as it would print them (text: no NUL byte)
    # (a directory as ripgrep prints it, the paths of the files to walk to in it relative to the search's
    # cwd — what ripgrep matches a `--glob` against)
    walk_to: list[tuple[bytes, list[bytes]]]
    # the check left until ripgrep runs: True while these files still answer the search (None: none left)
    holds: Callable[[], bool] | None = None


class FileSource(Protocol):
    """Chooses the files a search reads (or says None: walk)."""

    async def glob(self, cwd: str, query: GlobQuery, deny: DenyGlobs) -> GlobFiles | None:
        """What `rg --files --glob=<pattern>` from `cwd` (with glob's other flags and the deny globs) would
        list."""
        ...

    async def grep(self, cwd: str, query: GrepQuery, deny: DenyGlobs) -> GrepFiles | None:
        """A superset of the files in which ripgrep's walk from `cwd` (with the query's flags and globs and
        the deny globs) would report a match."""
        ...

    def note_walk(self, cwd: str, seconds: float) -> None:
        """A search walked from `cwd` (the source said None) and ripgrep took this long."""
        ...

    def walk_note(self, cwd: str) -> str | None:
        """Why a search from `cwd` walks because of the source's own state (an index building, say), in
        words for progress reports; None when it is not that."""
        ...

"""Where a search may run: the caller's scope (workspace and confinement) turned into a cwd and a path.

Order of checks (each tool follows it): arguments (`INVALID_ARGS`), then confinement (`locate`, here),
then the search itself (run.py).
"""

from __future__ import annotations

import os
from typing import NamedTuple

from dsh_search import texts
from dsh_search.engine import failures
from dsh_search.engine.paths import DenyCheck, confined, directory_name
from dsh_search.engine.searcher import Searcher


class Scope(NamedTuple):
    """Where searches may run, as the caller's session sees it."""

    workspace: str  # the default cwd, and what a relative cwd joins
    confinements: tuple[tuple[str, ...], ...] = ()  # real root sets; a search must lie inside one of each
    workspace_is_fallback: bool = False  # it is only the daemon's own directory, `/`: refuse implicit searches


class Where(NamedTuple):
    cwd: str  # absolute; rg's cwd and the base of display paths (see paths.directory_name)
    path: str | None  # the search root as the caller wrote it
    named: str | None = None  # the directory as the host named it, when it must be checked against cwd
    deny: DenyCheck | None = None  # denyGlobs for this search's results, when configured


def locate(searcher: Searcher, scope: Scope, cwd: str | None, path: str | None) -> Where:
    """The cwd and path of a search, confined to the scope's roots.

    rg runs in the directory the host named, as the kernel resolves that name: with `w/x/link/..` and
    `link -> ../a/b`, that is `w/a`, not the `w/x` a lexical normalisation gives. Display paths are
    relative to the same directory and confinement looks at its real path, so all three agree.

    A workspace that is only a fallback (`/`, the daemon's directory when neither --workdir nor client roots
    say otherwise) is refused unless cwd or path is absolute (texts.NO_WORKSPACE). Whatever the
    confinement, a search inside the spill directory is allowed: the footers tell the model to grep there.
    """
    if scope.workspace_is_fallback and not os.path.isabs(cwd or "") and not os.path.isabs(path or ""):
        raise failures.invalid_args(texts.NO_WORKSPACE)
    named = scope.workspace if cwd is None else os.path.join(scope.workspace, cwd)
    base = directory_name(named)
    confinements = [roots for roots in scope.confinements if roots]
    if confinements:
        spill = (os.path.realpath(searcher.spill.root),)

        def permitted(where: str) -> bool:
            return all(confined(where, roots) for roots in confinements) or confined(where, spill)

        if not permitted(base) or (path is not None and not permitted(os.path.join(base, path))):
            raise failures.invalid_args(texts.OUTSIDE_ALLOWED_ROOTS)
    return Where(cwd=base, path=path, named=named, deny=searcher.deny_globs.for_search(base, path))

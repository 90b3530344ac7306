"""Where a search may run: the caller's scope (workspace and confinement) turned into a cwd and a path.

Order of checks (each tool follows it): arguments (`INVALID_ARGS`), then confinement (`locate`, here),
then the search itself (run.py).
"""

from __future__ import annotations

import os
from typing import NamedTuple

from dsh_search import private, texts
from dsh_search.engine import failures
from dsh_search.engine.paths import DenyCheck, confined, directory_name
from dsh_search.engine.searcher import Searcher


class Scope(NamedTuple):
    """Where searches may run, as the caller's session sees it."""

    workspace: str  # the default cwd, and what a relative cwd joins
    confinements: tuple[tuple[str, ...], ...] = ()  # real root sets; a search must lie inside one of each
    workspace_is_fallback: bool = False  # it is only the daemon's own directory, `/`: refuse implicit searches
    # A model's call through MCP (tools/call): the real roots the client shared (or the workspace), which
    # its cwd and path must lie in as well — a refusal names them — with a cwd the host passed itself
    # added; and a directory that cannot be entered is named in the model's error. Empty: neither.
    shared: tuple[str, ...] = ()


class Where(NamedTuple):
    cwd: str  # absolute; rg's cwd and the base of display paths (see paths.directory_name)
    path: str | None  # the search root as the caller wrote it
    named: str | None = None  # the directory as the host named it, when it must be checked against cwd
    deny: DenyCheck | None = None  # denyGlobs for this search's results, when configured
    explain: bool = False  # a cwd that cannot be entered is named in the error (run.preflight)


def locate(searcher: Searcher, scope: Scope, cwd: str | None, path: str | None) -> Where:
    """The cwd and path of a search, confined to the scope's roots.

    rg runs in the directory the host named, as the kernel resolves that name: with `w/x/link/..` and
    `link -> ../a/b`, that is `w/a`, not the `w/x` a lexical normalisation gives. Display paths are
    relative to the same directory and confinement looks at its real path, so all three agree.

    A model's call through MCP is also confined to what its session shares (`Scope.shared`, with the cwd
    its host passed): refused with a text that names those roots.

    A workspace that is only a fallback (`/`, the daemon's directory when neither --workdir nor client roots
    say otherwise) is refused unless cwd or path is absolute (texts.NO_WORKSPACE). Whatever the
    confinement, a search inside the spill directory is allowed: the footers tell the model to grep there
    — unless that directory is not this user's alone (private.py), when nothing in it is the daemon's.
    """
    if scope.workspace_is_fallback and not os.path.isabs(cwd or "") and not os.path.isabs(path or ""):
        raise failures.invalid_args(texts.NO_WORKSPACE)
    named = scope.workspace if cwd is None else os.path.join(scope.workspace, cwd)
    base = directory_name(named)
    confinements = [roots for roots in scope.confinements if roots]
    if confinements:
        spill = _spill(searcher)

        def permitted(where: str) -> bool:
            return all(confined(where, roots) for roots in confinements) or (bool(spill) and confined(where, spill))

        if not permitted(base) or (path is not None and not permitted(os.path.join(base, path))):
            raise failures.invalid_args(texts.OUTSIDE_ALLOWED_ROOTS)
    if scope.shared:
        shared = scope.shared if cwd is None else (*scope.shared, _real(base))
        reach = (*shared, *_spill(searcher))
        if not confined(base, reach) or (path is not None and not confined(os.path.join(base, path), reach)):
            raise failures.invalid_args(texts.outside_shared_roots(shared))
    deny = searcher.deny_globs.for_search(base, path)
    # A directory that cannot be entered is named when the call came through MCP (a model's, with roots
    # shared) or the daemon's host reaches it through a channel (`remote`: the directory may well exist on
    # the host's machine only).
    return Where(cwd=base, path=path, named=named, deny=deny, explain=bool(scope.shared) or searcher.config.remote)


def _spill(searcher: Searcher) -> tuple[str, ...]:
    """The spill directory's real path, always reachable — unless it is not this user's alone."""
    root = searcher.spill.root
    return () if private.problem(root, "spill directory") else (os.path.realpath(root),)


def _real(path: str) -> str:
    """The real path of a cwd the host passed; a name with a NUL byte stays as it is (no such directory
    can exist, and the search reports it)."""
    try:
        return os.path.realpath(path)
    except ValueError:
        return path

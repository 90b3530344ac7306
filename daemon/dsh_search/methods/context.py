"""What every method handler can reach: configuration, the engine's collaborators, the stores, the method
table, what is known of the client, and the narrow part of the running server that methods may use.

One `Context` per daemon, made by wiring.py (or by a test, with fakes where it wants them). Nothing in it
is a module-level singleton; the server's side comes in through two small protocols, so a handler can
be run without a server at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from dsh_search.config import Config
from dsh_search.engine.searcher import Searcher
from dsh_search.engine.sidecar import Ripgrep
from dsh_search.index.manager import IndexManager
from dsh_search.methods.registry import MethodTable
from dsh_search.methods.session import Session
from dsh_search.store.scrollback import Terminals
from dsh_search.store.spill import SpillStore


class Control(Protocol):
    """What lifecycle methods may ask of the running server."""

    def running_requests(self, exclude: asyncio.Task[Any] | None = None) -> list[asyncio.Task[Any]]: ...

    def request_exit(self) -> None: ...

    async def input_closed(self) -> None:
        """Return once the daemon's input has ended (or it is exiting)."""
        ...


class Peer(Protocol):
    """The client's side of the connection, as methods may use it: notifications and requests to it."""

    def notify(self, method: str, params: Any = None) -> None: ...

    async def ask(self, method: str, params: Any, wait_s: float) -> Any: ...


@dataclass(eq=False, repr=False)
class Context:
    config: Config
    rg: Ripgrep  # the binary searches run (initialize reports it)
    searcher: Searcher  # the engine's collaborators
    spill: SpillStore  # the spill store behind the searcher's hand-off, for spill/read
    terminals: Terminals  # retained scrollback per terminal session
    methods: MethodTable[Context]
    workspace: str  # the default cwd of a search: --workdir, else the daemon's cwd
    version: str
    workdir_given: bool = True  # --workdir was passed: the client's roots are neither asked for nor used
    stderr_level: int | None = None  # the level of stderr logging (--log-level), once the daemon logs
    index: IndexManager | None = None  # the workspace index (None: the index is off)
    control: Control | None = None
    peer: Peer | None = None
    session: Session = field(default_factory=Session)
    shutting_down: bool = False  # after `shutdown`: only `exit` is served
    first_search: Callable[[], None] | None = None  # run once, by the first search (methods/tools.py)

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification to the client (dropped when no server runs, as in unit tests)."""
        if self.peer is not None:
            self.peer.notify(method, params)

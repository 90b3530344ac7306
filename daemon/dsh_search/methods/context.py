"""What every method handler can reach: configuration, the ripgrep binary, the method table, shared
stores and limits, and the narrow part of the running server that lifecycle methods may ask for."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from dsh_search.config import Config
from dsh_search.memory import ALLOCATOR
from dsh_search.methods.registry import MethodTable
from dsh_search.methods.session import Session
from dsh_search.search.paths import DenyGlobs
from dsh_search.search.ripgrep import Limits, LiveGroups
from dsh_search.sidecar import Ripgrep
from dsh_search.store.scrollback import Terminals
from dsh_search.store.spill import SpillStore


class Control(Protocol):
    """What lifecycle methods may ask of the running server."""

    def running_requests(self, exclude: asyncio.Task[Any] | None = None) -> list[asyncio.Task[Any]]: ...

    def request_exit(self) -> None: ...


class Peer(Protocol):
    """The client's side of the connection, as methods may use it: notifications and requests to it."""

    def notify(self, method: str, params: Any = None) -> None: ...

    async def ask(self, method: str, params: Any, wait_s: float) -> Any: ...


@dataclass
class Context:
    config: Config
    rg: Ripgrep
    rg_env: dict[str, str]  # the scrubbed environment every rg child gets
    workdir: str  # default cwd of a search (--workdir, else the daemon's cwd)
    version: str
    spill: SpillStore
    deny_globs: DenyGlobs
    methods: MethodTable
    groups: LiveGroups = field(default_factory=LiveGroups)
    control: Control | None = None
    peer: Peer | None = None
    workdir_given: bool = True  # --workdir was passed: the client's roots are neither asked for nor used
    session: Session = field(default_factory=Session)
    shutting_down: bool = False  # after `shutdown`: only `exit` is served
    _slots: asyncio.Semaphore | None = None
    _terminals: Terminals | None = None

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification to the client (dropped when no server runs, as in unit tests)."""
        if self.peer is not None:
            self.peer.notify(method, params)

    @property
    def rg_limits(self) -> Limits:
        config = self.config
        return Limits(
            stdout_cap=config.raw_output_max_bytes,
            stderr_cap=config.stderr_max_bytes,
            grace_s=config.grace_ms / 1000,
            memory_cap=config.rg_memory_max_bytes,
        )

    @property
    def search_slots(self) -> asyncio.Semaphore:
        """At most maxConcurrentSearches rg processes at once; the rest wait their turn."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.config.max_concurrent_searches)
        return self._slots

    @property
    def terminals(self) -> Terminals:
        """Retained scrollback per terminal session."""
        if self._terminals is None:
            config = self.config
            self._terminals = Terminals(
                config.scrollback_lines,
                config.scrollback_max_bytes,
                config.scrollback_total_max_bytes,
                on_release=ALLOCATOR.release,
            )
        return self._terminals

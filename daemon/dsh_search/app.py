"""What every method handler can reach: configuration, the ripgrep binary, shared stores and limits."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .config import Config
from .paths import DenyGlobs
from .ripgrep import LiveGroups
from .scrollback import Terminals
from .sidecar import Ripgrep
from .spill import SpillStore

if TYPE_CHECKING:
    from .server import Server


@dataclass
class App:
    config: Config
    rg: Ripgrep
    rg_env: dict[str, str]  # the scrubbed environment every rg child gets
    workdir: str  # default cwd of a search (--workdir)
    version: str
    spill: SpillStore
    deny_globs: DenyGlobs
    groups: LiveGroups = field(default_factory=LiveGroups)
    server: Server | None = None
    _slots: asyncio.Semaphore | None = None
    _terminals: Terminals | None = None

    @property
    def search_slots(self) -> asyncio.Semaphore:
        """At most maxConcurrentSearches rg processes at once; the rest wait their turn."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.config.max_concurrent_searches)
        return self._slots

    @property
    def terminals(self) -> Terminals:
        """Retained scrollback per terminal session (SPEC §8)."""
        if self._terminals is None:
            self._terminals = Terminals(self.config.scrollback_lines, self.config.scrollback_max_bytes)
        return self._terminals

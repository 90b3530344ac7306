"""The wiring: every method the daemon serves, the collaborators they share, and the server that runs them.

`METHODS` is the one list of methods, in the order `tools/list` and `rpc.discover` show them. `assemble`
makes every collaborator once — the ripgrep launcher, worker pools, spill store, scrollback store,
allocator — and hands each to whoever needs it; nothing below this module makes a singleton of its
own. `serve` is the daemon's life: assemble, run the server until it exits. Tests assemble a daemon the
same way over pipes of their own (tests/support/inprocess.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from dsh_search import __version__, extraction, memory, osdep
from dsh_search.config import Config
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import EXTENDED
from dsh_search.engine.ripgrep import Launcher, Limits, child_environment
from dsh_search.engine.searcher import Searcher, Workers, walk_threads
from dsh_search.engine.sidecar import Ripgrep, is_frozen
from dsh_search.engine.source import FileSource
from dsh_search.index.glance import Glancing
from dsh_search.index.lister import GrepLister
from dsh_search.index.manager import IndexManager, ask_wait
from dsh_search.methods import (
    index,
    lifecycle,
    logs,
    mcp,
    resources,
    roots,
    scrollback,
    session,
    spill_read,
    subscriptions,
    tools,
)
from dsh_search.methods.context import Context
from dsh_search.methods.dispatch import Dispatcher
from dsh_search.methods.registry import MethodSpec, MethodTable
from dsh_search.store.scrollback import Terminals
from dsh_search.store.spill import SpillStore
from dsh_search.transport.framing import Framing
from dsh_search.transport.stdio import Server

log = logging.getLogger("dsh_search")

GIL_SWITCH_S = 0.001  # see serve
HOUSEKEEPING_AFTER_S = 1.0  # see run

METHODS: tuple[MethodSpec[Context], ...] = (
    *lifecycle.SPECS,
    *roots.SPECS,
    logs.SPEC,
    *mcp.SPECS,
    *resources.SPECS,
    subscriptions.SPEC,
    *tools.SPECS,
    spill_read.SPEC,
    *scrollback.SPECS,
    index.SPEC,
)


def methods(config: Config) -> tuple[MethodSpec[Context], ...]:
    """`METHODS` as this configuration serves them: grep as its profile (grepProfile) declares it."""
    if config.grep_profile == EXTENDED:
        return tuple(tools.GREP_EXTENDED if spec is tools.GREP else spec for spec in METHODS)
    return METHODS


def rg_limits(config: Config) -> Limits:
    return Limits(
        stdout_cap=config.raw_output_max_bytes,
        stderr_cap=config.stderr_max_bytes,
        grace_s=config.grace_ms / 1000,
        memory_cap=config.rg_memory_max_bytes,
    )


class Daemon(NamedTuple):
    """An assembled daemon: its server, the context its methods share, and the ripgrep launcher (whose
    children the way out kills)."""

    server: Server
    ctx: Context
    launcher: Launcher


def assemble(
    *,
    config: Config,
    rg: Ripgrep,
    workdir: str,
    framing: Framing | None = None,
    workdir_given: bool = True,
    allocator: memory.Allocator | None = None,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    handle_signals: bool = True,
) -> Daemon:
    allocator = allocator or memory.Allocator()
    env = child_environment(os.environ, frozen=is_frozen())
    launcher = Launcher(rg.path, env, rg_limits(config))
    lister = GrepLister.create(rg.path, env, config.grace_ms / 1000, config.rg_memory_max_bytes)
    index_manager = None
    if config.index_mode != "off":
        index_manager = IndexManager(
            mode=config.index_mode,
            index_dir=config.index_dir,
            grep_lister=lister,
            max_bytes=config.index_max_bytes,
            version=__version__,
            ask_wait_s=ask_wait(config.timeout_ms),
        )
    source: FileSource | None = index_manager
    # A small tree's glob listed in process (index/glance.py): beside the pinned ripgrep, and where the index's
    # spelling of paths is the platform's (POSIX; on Windows, where the index is off, ripgrep lists).
    if rg.listing_known and osdep.index_unavailable_reason() is None:
        source = Glancing(index_manager)
    spill = SpillStore(
        config.spill_dir,
        max_bytes=config.spill_max_bytes,
        max_age_s=config.spill_max_age_seconds,
        hint=config.spill_retrieval_hint,
    )
    searcher = Searcher(
        config=config,
        launch=launcher,
        spill=spill,
        deny_globs=DenyGlobs(config.deny_globs),
        workers=Workers.start(),
        walk_threads=walk_threads(),
        source=source,
    )
    terminals = Terminals(
        config.scrollback_lines,
        config.scrollback_max_bytes,
        config.scrollback_total_max_bytes,
        on_release=allocator.release,
    )
    ctx = Context(
        config=config,
        rg=rg,
        searcher=searcher,
        spill=spill,
        terminals=terminals,
        methods=MethodTable(methods(config)),
        workspace=workdir,
        version=__version__,
        workdir_given=workdir_given,
        index=index_manager,
    )
    dispatcher = Dispatcher(ctx)
    server = Server(
        dispatch=dispatcher.dispatch,
        cancelled_answer=dispatcher.cancelled_answer,
        max_message_bytes=config.max_message_bytes,
        grace_s=config.grace_ms / 1000,
        framing=framing,
        stdin_fd=stdin_fd,
        stdout_fd=stdout_fd,
        on_exit=lambda: _stop_all(index_manager, launcher, lister.launcher),
        handle_signals=handle_signals,
        eof_window=lambda: session.eof_window(ctx.session, ctx.config.grace_ms),
        relayed=config.remote,
    )
    ctx.control = server
    ctx.peer = server
    # Housekeeping (spill retention, the sweep of killed daemons' extraction directories) runs once, soon
    # after start (see run) or at the first search, whichever comes first, off the event loop so that
    # search is not delayed.
    ctx.first_search = _once(
        lambda: threading.Thread(target=_housekeeping, args=(spill,), name="housekeeping", daemon=True).start()
    )
    server.requests.on_idle = allocator.on_idle
    allocator.is_idle = lambda: server.requests.idle
    return Daemon(server, ctx, launcher)


async def run(daemon: Daemon) -> int:
    """Serve until the daemon exits; warnings also go to the client as notifications/message. Nothing
    starts before it is asked for: the workspace index opens with the first search (or index/status),
    for the workspace that search names (methods/tools.py `search_scope`), so a copy of the daemon a
    client starts only to ask `server/discover` opens no index and walks nothing."""
    handler = logs.install(daemon.ctx)
    ctx = daemon.ctx
    # Housekeeping runs HOUSEKEEPING_AFTER_S after start, or with the first search if that comes sooner:
    # a copy a client starts only to probe is gone within a few hundred milliseconds and scans nothing, a
    # daemon that lives on cleans up as it always did.
    retention = (
        asyncio.get_running_loop().call_later(HOUSEKEEPING_AFTER_S, ctx.first_search)
        if ctx.first_search is not None
        else None
    )
    try:
        return await daemon.server.serve()
    finally:
        if retention is not None:
            retention.cancel()
        if ctx.index is not None:
            ctx.index.close()
        logs.uninstall(handler)


def serve(*, config: Config, rg: Ripgrep, workdir: str, framing: str | None, workdir_given: bool = True) -> int:
    allocator = memory.Allocator()
    allocator.tune()  # before any thread starts
    daemon = assemble(
        config=config,
        rg=rg,
        workdir=workdir,
        framing=Framing(framing) if framing else None,
        workdir_given=workdir_given,
        allocator=allocator,
    )
    memory.tune_collector()
    # The thread reading ripgrep's output waits for the GIL whenever the parse worker holds it, and
    # meanwhile ripgrep fills its 1 MiB pipe and stops. Python hands the GIL over after 5 ms by default;
    # after 1 ms, ripgrep reaches the raw-output cap of grep `static` in drivers/net ~15 % sooner.
    sys.setswitchinterval(GIL_SWITCH_S)
    return asyncio.run(run(daemon))


def _stop_all(index_manager: IndexManager | None, *launchers: Launcher) -> None:
    """The way out: the index stops (its background work would start ripgrep again), then every ripgrep
    still running is killed."""
    if index_manager is not None:
        index_manager.close()
    for launcher in launchers:
        launcher.groups.kill_all()


def _once(action: Callable[[], None]) -> Callable[[], None]:
    """`action`, run by the first call only."""
    pending = [action]

    def run_once() -> None:
        if pending:
            pending.pop()()

    return run_once


def _housekeeping(store: SpillStore) -> None:
    """Spill retention, and the sweep of killed daemons' extraction directories."""
    _retain(store)
    if extraction.own_directory() is not None:
        _sweep_extractions()


def _sweep_extractions() -> None:
    """Remove what killed daemons left in the temporary directory (daemon/dsh_search/extraction.py); again
    when a leftover that was too young to judge has aged enough."""
    while True:
        try:
            swept = extraction.sweep()
        except OSError as exc:
            log.warning("sweeping old extraction directories failed: %s", exc)
            return
        for name in swept.removed:
            log.info("removed %s, the extraction directory a killed dsh-search left", name)
        if swept.retry_in is None:
            return
        time.sleep(swept.retry_in + 0.1)


def _retain(store: SpillStore) -> None:
    try:
        store.enforce_retention()
    except OSError as exc:
        log.warning("spill retention at start failed: %s", exc)

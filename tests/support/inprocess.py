"""The daemon in this process: the real server, dispatcher, methods and engine, assembled by the daemon's
own wiring over `os.pipe()`s instead of stdin and stdout, with the real ripgrep of the test environment.

What it leaves out is only what makes a process: PyInstaller's launcher, signal handlers and the sidecar
check at start-up (the end-to-end tests cover those with the frozen executable). So the request layer —
framing, dispatch, cancellation, `tools/call`, progress, roots, logging — is tested in `scripts/test
--fast`, in milliseconds, with coverage.

    with InProcessDaemon(workdir=tree) as d:
        assert d.result("ping") == {}
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from dsh_search import config as config_mod
from dsh_search import wiring
from dsh_search.engine.sidecar import verify
from dsh_search.transport.framing import Framing
from tests.support.daemon import Conversation
from tests.support.locations import VENV_RG


class InProcessDaemon(Conversation):
    """A daemon served by a thread of this process; `config` takes camelCase keys as --config does."""

    def __init__(
        self,
        *,
        workdir: Path | str,
        framing: str = "ndjson",
        workdir_given: bool = True,
        rg: Path | str = VENV_RG,
        **config: Any,
    ) -> None:
        values = {"sampleOverCapGlobResults": True, **config}
        values.setdefault("spillDir", str(Path(workdir) / ".." / f"{Path(workdir).name}-spill"))
        self.config = config_mod.build(values)
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        self._fds = [in_r, in_w, out_r, out_w]
        self.daemon = wiring.assemble(
            config=self.config,
            rg=verify(str(rg), os.environ),
            workdir=str(workdir),
            framing=None if framing == "auto" else Framing(framing),
            workdir_given=workdir_given,
            stdin_fd=in_r,
            stdout_fd=out_w,
            handle_signals=False,
        )
        self.exit_status: int | None = None
        self._thread = threading.Thread(target=self._serve, name="in-process-daemon", daemon=True)
        self._thread.start()
        super().__init__(in_w, out_r, "ndjson" if framing == "auto" else framing)

    def _serve(self) -> None:
        self.exit_status = asyncio.run(wiring.run(self.daemon))

    @property
    def ctx(self) -> Any:
        return self.daemon.ctx

    def close_stdin(self) -> None:
        """The host closes its end of stdin: the daemon answers what runs, then exits."""
        if self._fds[1] >= 0:
            os.close(self._fds[1])
            self._fds[1] = -1

    def wait_exit(self, timeout: float = 10.0) -> int:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the in-process daemon did not exit"
        assert self.exit_status is not None
        return self.exit_status

    def stop(self) -> None:
        """EOF on its stdin, then every descriptor closed once it has exited: its stdout's write end
        first (our reader sees EOF), then the read end (its stdout watcher sees the reader gone)."""
        self.close_stdin()
        self._thread.join(timeout=15)
        in_r, _, out_r, out_w = self._fds
        for index, fd in ((3, out_w), (2, out_r), (0, in_r)):
            if fd >= 0:
                os.close(fd)
                self._fds[index] = -1
            if index == 3:
                self._reader.join(timeout=5)
        assert not self._thread.is_alive(), "the in-process daemon did not exit"

    def __enter__(self) -> InProcessDaemon:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

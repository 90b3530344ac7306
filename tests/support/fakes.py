"""Unit-level fakes: a handler context whose spill store is fake, glob and grep over faked ripgrep output,
and ripgrep outcomes and JSON records made to order. The spill fake is upstream's: its locator is
`/spill/<name>` and its hint `Use the fake retrieval hint.`"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import orjson
import pytest

from dsh_search import config as config_mod
from dsh_search.methods.context import Context
from dsh_search.methods.registry import MethodTable
from dsh_search.search import glob as glob_mod
from dsh_search.search import grep as grep_mod
from dsh_search.search.core import RgResult
from dsh_search.search.paths import DenyGlobs
from dsh_search.search.ripgrep import Outcome, StderrTally
from dsh_search.sidecar import Ripgrep
from dsh_search.store.spill import SpillRef
from dsh_search.wiring import METHODS

NO_DENY = DenyGlobs(())
FAKE_HINT = "Use the fake retrieval hint."


class FakeSpill:
    """A spill store whose locator is `/spill/<name>`, as upstream's fake; can be told to fail."""

    root = "/spill"

    def __init__(self, fail: bool = False) -> None:
        self.saves: list[tuple[str, str, str]] = []
        self.fail = fail

    def save_text(self, session_id: str, name: str, content: str | Iterable[str]) -> SpillRef:
        if self.fail:
            raise OSError("no space left on device")
        content = content if isinstance(content, str) else "".join(content)
        self.saves.append((session_id, name, content))
        return SpillRef(f"/spill/{name}", len(content.encode()), FAKE_HINT)


def make_app(spill: Any = None, **overrides: Any) -> Context:
    values = {"sampleOverCapGlobResults": True, **overrides}
    cfg = config_mod.build(values, environ={"XDG_STATE_HOME": "/nonexistent-state"})
    return Context(
        config=cfg,
        rg=Ripgrep(path="/bin/rg", version="15.2.0", version_text="ripgrep 15.2.0"),
        rg_env={},
        workdir="/sessions/s1",
        version="0.1.0",
        spill=spill or FakeSpill(),  # type: ignore[arg-type]
        deny_globs=DenyGlobs(cfg.deny_globs),
        methods=MethodTable(METHODS),
    )


def run_glob(monkeypatch: pytest.MonkeyPatch, app: Context, paths: list[str], **params: Any) -> dict[str, Any]:
    async def fake_list(*_: Any) -> tuple[list[str], RgResult]:
        return paths, RgResult(b"", no_matches=not paths, unreadable=0)

    monkeypatch.setattr(glob_mod, "_list", fake_list)
    return asyncio.run(glob_mod.glob(app, {"pattern": "*", **params}))


def run_grep(
    monkeypatch: pytest.MonkeyPatch, app: Context, matches: list[tuple[str, int, str]], **params: Any
) -> dict[str, Any]:
    async def fake_search(*_: Any) -> tuple[list[grep_mod.FileMatches], RgResult]:
        return grep_mod.ordered([grep_mod.group_runs(matches)]), RgResult(b"", no_matches=not matches, unreadable=0)

    monkeypatch.setattr(grep_mod, "_search", fake_search)
    return asyncio.run(grep_mod.grep(app, {"pattern": "x", **params}))


def outcome(code: int | None, stderr: bytes = b"", *, sig: int | None = None, **kw: Any) -> Outcome:
    tally = StderrTally()  # what the runner counts while stderr streams past
    tally.feed(stderr)
    tally.finish()
    return Outcome(
        exit_code=code,
        signal=sig,
        stdout=kw.get("stdout", b""),
        stdout_overflow=kw.get("overflow", False),
        stderr=stderr,
        stderr_lossy=kw.get("lossy", False),
        reported_paths=tally.paths,
        bad_ignore_files=tally.ignore_files,
    )


def match_record(path: str, line: int, text: str | None = None, **data: Any) -> bytes:
    record: dict[str, Any] = {
        "type": "match",
        "data": {"path": {"text": path}, "line_number": line, "lines": {"text": text}, **data},
    }
    return orjson.dumps(record)

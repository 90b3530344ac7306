"""Where and how ripgrep is started: the cwd, the caps and grace it is given, and failing to start
(docs/behaviour.md, "Caps and configuration" and "Failures")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from dsh_search import texts
from dsh_search.methods.errors import (
    SEARCH_FAILED,
    ToolError,
)
from dsh_search.search import grep as grep_mod
from dsh_search.search.ripgrep import Outcome
from dsh_search.sidecar import Ripgrep
from tests.support.fakes import make_app, outcome
from tests.support.upstream import case


@case("T27", "T28")
def test_a_search_runs_in_its_cwd_else_the_workdir() -> None:
    from dsh_search.search.core import resolve

    app = make_app()
    assert resolve(app, {"cwd": "/sessions/other"}).cwd == "/sessions/other"
    assert resolve(app, {}).cwd == "/sessions/s1"  # the daemon's --workdir
    assert resolve(app, {"cwd": "sub"}).cwd == "/sessions/s1/sub"


@case("T29", "T30")
def test_output_caps_and_grace_reach_the_runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from dsh_search.search import core, ripgrep

    seen: dict[str, Any] = {}

    async def fake_run(rg_path: str, args: list[str], **kw: Any) -> Outcome:
        seen.update(kw, rg_path=rg_path, args=args)
        return outcome(1)

    monkeypatch.setattr(ripgrep, "run", fake_run)
    app = make_app(rawOutputMaxBytes=1234, graceMs=5000, stderrMaxBytes=4096)
    app.workdir = str(tmp_path)  # rg is launched only in a directory that exists
    result = asyncio.run(grep_mod.grep(app, {"pattern": "needle"}))
    assert result["text"] == "No matches found"
    assert seen["rg_path"] == "/bin/rg" and seen["args"] == ["--json", "--regexp=needle"]
    limits = seen["limits"]
    assert limits.stdout_cap == 1234 and limits.stderr_cap == 4096 and limits.grace_s == 5.0
    assert seen["cwd"] == str(tmp_path)
    app = make_app()
    asyncio.run(core.run_rg(app, "grep", ["x"], core.Where("/w", None), lambda _: False))
    assert seen["limits"].stderr_cap == 65536 and seen["limits"].grace_s == 3.0


@case("T35", "T36")
def test_a_ripgrep_that_cannot_start_is_search_failed_could_not_start(tmp_path: Path) -> None:
    app = make_app()
    app.rg = Ripgrep(path=str(tmp_path / "missing-rg"), version="15.2.0", version_text="")
    with pytest.raises(ToolError) as err:
        asyncio.run(grep_mod.grep(app, {"pattern": "x", "cwd": str(tmp_path)}))
    assert err.value.code == SEARCH_FAILED and "could not start" in err.value.text
    app.rg = Ripgrep(path="/bin/true", version="", version_text="")
    with pytest.raises(ToolError) as err:
        asyncio.run(grep_mod.grep(app, {"pattern": "a\0b", "cwd": str(tmp_path)}))
    assert err.value.code == SEARCH_FAILED and err.value.message == texts.could_not_start("grep")

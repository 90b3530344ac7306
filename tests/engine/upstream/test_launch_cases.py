"""Where and how ripgrep is started: the cwd, the caps and grace it is given, and failing to start
(docs/behaviour.md, "Caps and configuration" and "Failures")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dsh_search import texts
from dsh_search.engine.failures import SEARCH_FAILED, ToolError
from dsh_search.engine.ripgrep import Launcher, Limits
from dsh_search.methods import tools
from dsh_search.wiring import rg_limits
from tests.support.fakes import FakeLaunch, make_app
from tests.support.upstream import case


@case("T27", "T28")
def test_a_search_runs_in_its_cwd_else_the_workdir(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "other").mkdir()
    app = make_app(workdir=str(tmp_path))
    launch = app.searcher.launch
    assert isinstance(launch, FakeLaunch)
    for params in ({"cwd": str(tmp_path / "other")}, {}, {"cwd": "sub"}):
        asyncio.run(tools.run_grep(app, {"pattern": "x", **params}, None))
    # Each grep reads ripgrep's standard output first; the fake's output is not that, so each goes on to
    # --json in the same cwd.
    assert [cwd for argv, cwd in launch.calls if "--json" in argv] == [
        str(tmp_path / "other"),
        str(tmp_path),
        str(tmp_path / "sub"),
    ]
    assert len(launch.calls) == 6


@case("T29", "T30")
def test_output_caps_and_grace_reach_the_runner() -> None:
    app = make_app(rawOutputMaxBytes=1234, graceMs=5000, stderrMaxBytes=4096)
    limits = rg_limits(app.config)
    assert limits.stdout_cap == 1234 and limits.stderr_cap == 4096 and limits.grace_s == 5.0
    limits = rg_limits(make_app().config)
    assert limits.stderr_cap == 65536 and limits.grace_s == 3.0


@case("T35", "T36")
def test_a_ripgrep_that_cannot_start_is_search_failed_could_not_start(tmp_path: Path) -> None:
    app = make_app(workdir=str(tmp_path))
    app.searcher.launch = Launcher(str(tmp_path / "missing-rg"), {}, Limits(1000, 1000, 1))
    with pytest.raises(ToolError) as err:
        asyncio.run(tools.run_grep(app, {"pattern": "x"}, None))
    assert err.value.kind == SEARCH_FAILED and "could not start" in err.value.text
    app.searcher.launch = Launcher("/bin/true", {}, Limits(1000, 1000, 1))
    with pytest.raises(ToolError) as err:
        asyncio.run(tools.run_grep(app, {"pattern": "a\0b"}, None))
    assert err.value.kind == SEARCH_FAILED and err.value.message == texts.could_not_start("grep")

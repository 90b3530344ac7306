"""examples/go-host (the Go client library, NDJSON framing) against the frozen executable."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.hosts import (
    check_common_transcript,
    find_line,
    go_run,
    go_toolchain,
    gofmt_clean,
    kill_host_mid_search,
    lonely_copy,
    path_without,
    run_failing_host,
    run_host,
    run_host_without_sidecar,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
GO_HOST = ROOT / "examples" / "go-host"
CLIENT_MODULE = "github.com/dsh-search/dsh-search/clients/go"
GO_LINES = [
    r"concurrent: 5 requests from 5 goroutines, answered in this order: (?P<fast>.+), slow grep",
    r'grep "export": Found 1 match in src/util\.js',
    r"ping: \{\}",
    r"slow grep: context deadline exceeded after 1500 ms, answered after (?P<after>\d+) ms: error -32800 "
    r"SEARCH_ABORTED: Error: grep was aborted before completion \(tool timeout or caller cancellation\)",
]


@pytest.fixture(scope="module")
def go_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go, env = go_toolchain()
    gofmt_clean(go, GO_HOST)
    binary = tmp_path_factory.mktemp("go-host") / "go-host"
    go_run(go, env, ["vet", "./..."], GO_HOST)
    go_run(go, env, ["build", "-o", str(binary), "."], GO_HOST)
    return binary


def check_go_transcript(lines: list[str], exe: Path) -> None:
    check_common_transcript(lines, exe, "ndjson")
    concurrent = find_line(lines, GO_LINES[0])
    assert sorted(concurrent["fast"].split(", ")) == ['glob "**/*.js"', 'grep "TODO"', 'grep "export"', "ping"]
    for pattern in GO_LINES[1:]:
        find_line(lines, pattern)
    timed_out = find_line(lines, GO_LINES[3])
    assert int(timed_out["after"]) < 1500 + 3000, timed_out.group(0)


def test_go_host_session(go_host: Path, exe: Path, slow_corpus: Path, tmp_path: Path) -> None:
    lines = run_host([str(go_host), "-exe", str(exe), "-corpus", str(slow_corpus)], GO_HOST, tmp_path)
    check_go_transcript(lines, exe)


def test_go_host_copied_out_of_the_repository(exe: Path, slow_corpus: Path, tmp_path: Path) -> None:
    """The example as a user would start from it: copied elsewhere, the client module's replace pointed at
    a checkout, the executable found through $DSH_SEARCH_EXE."""
    go, env = go_toolchain()
    copy = tmp_path / "my-host"
    copy.mkdir()
    for name in ("main.go", "go.mod", "README.md"):
        shutil.copy2(GO_HOST / name, copy / name)
    go_run(go, env, ["mod", "edit", f"-replace={CLIENT_MODULE}={ROOT / 'clients' / 'go'}"], copy)
    go_run(go, env, ["build", "-o", "my-host", "."], copy)
    lines = run_host(
        [str(copy / "my-host"), "-corpus", str(slow_corpus)], copy, tmp_path / "tmp", env={"DSH_SEARCH_EXE": str(exe)}
    )
    check_go_transcript(lines, exe)
    # Without an argument, DSH_SEARCH_EXE or a dsh-search on PATH, it says how to point it at one.
    path = path_without(exe.parent)
    if shutil.which("dsh-search", path=path) is None:
        lines, _ = run_failing_host([str(copy / "my-host")], copy, tmp_path / "tmp2", {"PATH": path})
        assert any(line.startswith("FAILED: ") and "DSH_SEARCH_EXE" in line for line in lines), lines


def test_daemon_exits_when_go_host_is_sigkilled(go_host: Path, exe: Path, slow_corpus: Path, tmp_path: Path) -> None:
    argv = [str(go_host), "-exe", str(exe), "-corpus", str(slow_corpus), "-block-in-slow-grep"]
    output = kill_host_mid_search(argv, GO_HOST, tmp_path, exe)
    assert "slow grep: started" in output


def test_go_host_reports_a_missing_sidecar(go_host: Path, exe: Path, tmp_path: Path) -> None:
    lonely = lonely_copy(exe, tmp_path / "bin")
    _, stderr = run_host_without_sidecar([str(go_host), "-exe", str(lonely)], GO_HOST, tmp_path / "tmp")
    assert f"dsh-search: ripgrep sidecar {lonely}-rg is missing" in stderr

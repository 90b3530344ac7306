"""The SDK wheel for win_amd64, installed into the Windows Python under wine: `dsh-search --version` prints
both versions, and the wheel's Python client drives its daemon (spawn, grep, cancel, error, close).

The wheel is DSH_SDK_WHEEL when scripts/release-wheel --platform win_amd64 names it, else built here from
dist/win_amd64 by packaging/build_wheel.py (as the release does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.locations import ROOT
from tests.support.processes import processes_named
from tests.support.trees import SLOW_PATTERN
from tests.windows.conftest import HERE, as_text, run_wine, wine_python, winpath


@pytest.fixture(scope="session")
def win_wheel(exe: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("DSH_SDK_WHEEL")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("win-wheel")
    done = subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "build_wheel.py"), "--dist", str(exe.parent), "--out", str(out)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def installed(win_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("win-site")
    done = wine_python(
        ["-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--disable-pip-version-check",
         "--target", winpath(target), winpath(win_wheel)],
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return target


def test_the_wheel_is_tagged_and_holds_both_executables(win_wheel: Path) -> None:
    assert win_wheel.name == "dsh_search_bin-0.1.0-py3-none-win_amd64.whl"
    names = zipfile.ZipFile(win_wheel).namelist()
    assert "dsh_search_bin/bin/dsh-search.exe" in names and "dsh_search_bin/bin/dsh-search-rg.exe" in names


def test_the_installed_command_prints_both_versions(installed: Path) -> None:
    command = installed / "bin" / "dsh-search.exe"  # pip's launcher for the console script
    assert command.is_file(), sorted(p.name for p in (installed / "bin").iterdir())
    environ = {**os.environ, "PYTHONPATH": winpath(installed)}
    done = as_text(run_wine([str(command), "--version"], env=environ, stdin_pipe=True))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    bundled = winpath(installed / "dsh_search_bin" / "bin" / "dsh-search-rg.exe")
    assert lines[0] == "dsh-search 0.1.0" and lines[1].startswith("ripgrep 15.2.0 ") and bundled in lines[1], lines


def test_the_wheels_python_client_drives_its_daemon(installed: Path, slow_corpus: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "src").mkdir(parents=True)
    (corpus / "src" / "a.txt").write_text("needle\n")
    (corpus / "b.txt").write_text("no match\n")
    done = wine_python(
        [winpath(HERE / "client_host.py"), winpath(corpus), winpath(slow_corpus), SLOW_PATTERN],
        env={**os.environ, "PYTHONPATH": winpath(installed)}, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["executable"] == winpath(installed / "dsh_search_bin" / "bin" / "dsh-search.exe")
    assert seen["grep"] == "Found 1 match\n\nsrc\\a.txt\nLine 1: needle" and seen["grep_files"] == ["src\\a.txt"]
    assert seen["glob"] in ("src\\a.txt\nb.txt", "b.txt\nsrc\\a.txt")
    assert seen["cancel"] == "cancelled" and seen["cancel_s"] < 2.0  # graceMs + 1 s
    assert seen["error"]["kind"] == "SEARCH_INVALID_PATTERN"
    assert seen["error"]["text"].startswith("Error: grep pattern rejected by ripgrep: rg: regex parse error")
    assert seen["ping_after"] == {} and seen["returncode"] == 0
    assert not processes_named("dsh-search-rg.exe")

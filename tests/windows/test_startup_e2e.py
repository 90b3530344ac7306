"""Start-up on Windows: the sidecar is dsh-search-rg.exe beside dsh-search.exe; missing or unusable, the
daemon writes the same one line as elsewhere and exits 3; --version, --check and configuration errors as on
every platform; the index is off on Windows (`auto`), and `--index on` says why."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.support.daemon import Daemon, MakeDaemon
from tests.support.locations import sidecar_of
from tests.windows.conftest import run_wine, winpath


def run(exe: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    # Pipes for every std handle (Windows python.exe under wine dies when one is a regular file).
    return run_wine([str(exe), *args], timeout=60, stdin_pipe=True)


def test_version_prints_both_versions(exe: Path) -> None:
    done = run(exe, "--version")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert lines[0] == "dsh-search 0.1.0"
    assert lines[1].startswith("ripgrep 15.2.0 ") and lines[1].endswith(f"({winpath(sidecar_of(exe))})")


def test_a_missing_sidecar_is_exit_3_with_the_same_text(exe: Path, tmp_path: Path) -> None:
    lone = tmp_path / "bin" / "dsh-search.exe"
    lone.parent.mkdir()
    shutil.copy2(exe, lone)
    done = run(lone, "--sample-over-cap-glob-results", "true")
    expected = f"dsh-search: ripgrep sidecar {winpath(lone.parent / 'dsh-search-rg.exe')} is missing\n"
    assert (done.returncode, done.stdout, done.stderr.decode()) == (3, b"", expected)
    # A sidecar named as on POSIX (`dsh-search.exe-rg`) is not the Windows sidecar.
    shutil.copy2(sidecar_of(exe), lone.parent / "dsh-search.exe-rg")
    assert run(lone, "--version").returncode == 3
    # Not ripgrep: named, exit 3.
    (lone.parent / "dsh-search-rg.exe").write_bytes(b"MZ not really a program")
    done = run(lone, "--version")
    assert done.returncode == 3 and done.stderr.decode().startswith(
        f"dsh-search: ripgrep sidecar {winpath(lone.parent / 'dsh-search-rg.exe')} "
    )


def test_check_reports_windows_paths_and_config(exe: Path, tmp_path: Path) -> None:
    done = run(exe, "--check", "--sample-over-cap-glob-results", "true", "--workdir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ripgrep"] == {"path": winpath(sidecar_of(exe)), "version": "15.2.0"}
    assert report["executable"] == winpath(exe) and report["frozen"] is True
    assert report["workdir"] == winpath(tmp_path)
    # The default spill directory is the user's local application data, as Windows programs keep theirs.
    assert report["config"]["spillDir"].endswith("\\AppData\\Local\\dsh-search\\spill")


def test_invalid_configuration_is_exit_2(exe: Path) -> None:
    done = run(exe, "--glob-max-results", "0", "--sample-over-cap-glob-results", "true")
    assert (done.returncode, done.stderr.decode()) == (2, "dsh-search: globMaxResults must be a positive integer\n")


def test_the_index_is_off_on_windows_and_on_says_why(start: MakeDaemon, tmp_path: Path) -> None:
    d: Daemon = start("--workdir", str(tmp_path), raw=True)
    assert d.result("index/status")["state"] == "off"  # auto: off on Windows
    on = start("--workdir", str(tmp_path), "--index", "on", raw=True)
    status = on.result("index/status")
    assert status["state"] == "off" and "Windows" in json.dumps(status), status
    assert on.result("ping") == {}

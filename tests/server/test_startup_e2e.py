"""Start-up of the frozen executable: sidecar checks (exit 3), configuration errors (exit 2), CLI modes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SAMPLING = ["--sample-over-cap-glob-results", "false"]


def run(exe: Path | str, *args: str, stdin: bytes = b"", timeout: float = 20) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(exe), *args], input=stdin, capture_output=True, timeout=timeout, check=False)


def one_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert text.endswith("\n") and text.count("\n") == 1, text
    return text.rstrip("\n")


def test_missing_sidecar_exits_3_naming_the_path(lone_exe: Path) -> None:
    done = run(lone_exe, *SAMPLING, stdin=b'{"jsonrpc":"2.0","method":"ping","id":1}\n')
    assert done.returncode == 3
    assert done.stdout == b""
    assert one_line(done.stderr) == f"dsh-search: ripgrep sidecar {lone_exe}-rg is missing"


def test_missing_sidecar_wins_over_missing_config(lone_exe: Path) -> None:
    done = run(lone_exe)
    assert done.returncode == 3 and f"{lone_exe}-rg" in one_line(done.stderr)


def test_sidecar_not_executable(lone_exe: Path, exe: Path) -> None:
    sidecar = Path(f"{lone_exe}-rg")
    shutil.copyfile(f"{exe}-rg", sidecar)
    sidecar.chmod(0o644)
    done = run(lone_exe, *SAMPLING)
    assert done.returncode == 3 and done.stdout == b""
    assert one_line(done.stderr) == f"dsh-search: ripgrep sidecar {sidecar} is not executable"


def test_sidecar_not_ripgrep(lone_exe: Path) -> None:
    sidecar = Path(f"{lone_exe}-rg")
    sidecar.write_text("#!/bin/sh\necho 'grep (GNU grep) 3.8'\n")
    sidecar.chmod(0o755)
    done = run(lone_exe, *SAMPLING)
    assert done.returncode == 3 and done.stdout == b""
    assert one_line(done.stderr) == (
        f"dsh-search: ripgrep sidecar {sidecar} is not ripgrep (--version gave: grep (GNU grep) 3.8)"
    )


def test_sidecar_that_is_a_directory(lone_exe: Path) -> None:
    Path(f"{lone_exe}-rg").mkdir()
    done = run(lone_exe, *SAMPLING)
    assert done.returncode == 3
    assert one_line(done.stderr).endswith("is not a regular file")


def test_sidecar_is_found_beside_the_real_executable(exe: Path, tmp_path: Path) -> None:
    link = tmp_path / "elsewhere"
    link.symlink_to(exe)
    done = run(link, "--version")
    assert done.returncode == 0, done.stderr
    assert f"{exe}-rg" in done.stdout.decode()


def test_frozen_daemon_never_uses_path_rg(lone_exe: Path, exe: Path, tmp_path: Path) -> None:
    fake_bin = tmp_path / "path-bin"
    fake_bin.mkdir()
    shutil.copyfile(f"{exe}-rg", fake_bin / "rg")
    (fake_bin / "rg").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}", "DSH_SEARCH_RG": str(fake_bin / "rg")}
    done = subprocess.run([str(lone_exe), *SAMPLING], input=b"", capture_output=True, env=env, check=False)
    assert done.returncode == 3


def test_missing_sampling_flag_exits_2(exe: Path) -> None:
    done = run(exe, stdin=b'{"jsonrpc":"2.0","method":"ping","id":1}\n')
    assert done.returncode == 2 and done.stdout == b""
    assert one_line(done.stderr) == "dsh-search: sampleOverCapGlobResults is required (true or false)"


@pytest.mark.parametrize(
    ("flag", "value", "key"),
    [
        ("--glob-max-results", "0", "globMaxResults"),
        ("--grep-max-matches", "-1", "grepMaxMatches"),
        ("--grep-max-line-bytes", "1.5", "grepMaxLineBytes"),
        ("--search-meta-max-bytes", "0", "searchMetaMaxBytes"),
        ("--raw-output-max-bytes", "0", "rawOutputMaxBytes"),
        ("--grace-ms", "0", "graceMs"),
        ("--stderr-max-bytes", "-1", "stderrMaxBytes"),
        ("--timeout-ms", "-100", "timeoutMs"),
        ("--max-concurrent-searches", "x", "maxConcurrentSearches"),
        ("--max-message-bytes", "0", "maxMessageBytes"),
    ],
)
def test_invalid_numeric_flag_exits_2(exe: Path, flag: str, value: str, key: str) -> None:
    done = run(exe, *SAMPLING, f"{flag}={value}")
    assert done.returncode == 2 and done.stdout == b""
    assert one_line(done.stderr) == f"dsh-search: {key} must be a positive integer"


def test_grace_too_large_exits_2(exe: Path) -> None:
    done = run(exe, *SAMPLING, "--grace-ms", "2147483648")
    assert done.returncode == 2
    assert one_line(done.stderr) == "dsh-search: graceMs must be no greater than 2147483647"


def test_config_file_errors_exit_2(exe: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"sampleOverCapGlobResults": True, "timeoutMs": 0}))
    done = run(exe, "--config", str(cfg))
    assert done.returncode == 2 and one_line(done.stderr) == "dsh-search: timeoutMs must be a positive integer"
    done = run(exe, "--config", str(tmp_path / "nope.json"))
    assert done.returncode == 2 and str(tmp_path / "nope.json") in one_line(done.stderr)
    cfg.write_text('{"sampleOverCapGlobResults": true, "colour": 1}')
    done = run(exe, "--config", str(cfg))
    assert done.returncode == 2 and '"colour"' in one_line(done.stderr)


def test_flags_override_the_file(exe: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"sampleOverCapGlobResults": True, "globMaxResults": 5, "denyGlobs": ["*.a"]}))
    done = run(exe, "--config", str(cfg), "--glob-max-results", "9", "--deny-glob", "*.pem", "--check")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["config"]["globMaxResults"] == 9 and report["config"]["denyGlobs"] == ["*.pem"]
    assert report["config"]["sampleOverCapGlobResults"] is True


def test_unknown_flag_is_one_line_exit_2(exe: Path) -> None:
    done = run(exe, *SAMPLING, "--frobnicate")
    assert done.returncode == 2 and "--frobnicate" in one_line(done.stderr)


def test_check_reports_versions_paths_and_config(exe: Path) -> None:
    done = run(exe, *SAMPLING, "--check")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["version"] == "0.1.0" and report["frozen"] is True
    assert report["ripgrep"] == {"path": f"{exe}-rg", "version": "15.2.0"}
    assert report["config"]["sampleOverCapGlobResults"] is False and report["config"]["globMaxResults"] == 100


def test_check_reports_the_workspace_a_session_gets(exe: Path, tmp_path: Path) -> None:
    def check(*args: str, cwd: Path | str) -> dict[str, object]:
        done = subprocess.run([str(exe), *SAMPLING, *args, "--check"], capture_output=True, cwd=cwd, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    in_root = check(cwd="/")  # a session started here refuses relative searches: no default directory
    assert in_root["workdir"] is None and str(in_root["workspace"]).startswith("none: started in / without")
    assert check("--workdir", "/", cwd="/")["workdir"] == "/"  # asked for explicitly: allowed
    here = check(cwd=tmp_path)
    assert here["workdir"] == str(tmp_path)
    assert here["workspace"] == f"{tmp_path}, or an MCP client's first root when it shares its roots"
    assert check("--workdir", str(tmp_path), cwd="/")["workspace"] == str(tmp_path)


def test_check_failures(exe: Path, lone_exe: Path) -> None:
    done = run(exe, "--check")
    assert done.returncode == 2 and done.stdout == b"" and "sampleOverCapGlobResults" in one_line(done.stderr)
    done = run(lone_exe, *SAMPLING, "--check")
    assert done.returncode == 3 and done.stdout == b"" and "sidecar" in one_line(done.stderr)


def test_version_and_help(exe: Path) -> None:
    done = run(exe, "--version")
    assert done.returncode == 0
    assert done.stdout.decode().splitlines()[0] == "dsh-search 0.1.0"
    assert "ripgrep 15.2.0" in done.stdout.decode()
    done = run(exe, "--help")
    assert done.returncode == 0 and b"--sample-over-cap-glob-results" in done.stdout
    text = " ".join(done.stdout.decode().split())  # argparse wraps at the terminal's width
    assert "--sample-over-cap-glob-results true|false REQUIRED. How a glob result over globMaxResults" in text
    assert "[globMaxResults: a positive integer; default: 100]" in text
    assert "[graceMs: a positive integer, at most 2147483647; default: 3000]" in text
    assert "--rg " not in text  # frozen: the sidecar only


def test_workdir_must_exist(exe: Path, tmp_path: Path) -> None:
    done = run(exe, *SAMPLING, "--workdir", str(tmp_path / "missing"))
    assert done.returncode == 2 and "workdir" in one_line(done.stderr)


def test_stdin_eof_exits_0(exe: Path) -> None:
    done = run(exe, *SAMPLING)
    assert done.returncode == 0 and done.stdout == b""

"""The installed wheel, used as a newcomer would: the `dsh-search` command from the venv's PATH, and a
search through the bundled Python client run by the venv's own interpreter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.packaging import Venv, install_wheel

pytestmark = pytest.mark.slow

# Run by the venv's python: a grep and a glob through dsh_search_bin.Client with its default executable.
CLIENT_SCRIPT = """\
import asyncio, json, sys
from dsh_search_bin import Client, RequestError

async def main(tree):
    async with Client(sample_over_cap_glob_results=True, workdir=tree, spill_dir=tree + "/../spill") as client:
        found = await client.grep("WHEEL_CLIENT_OK", include="*.txt")
        listed = await client.glob("**/*.txt")
        try:
            await client.grep("(")
        except RequestError as exc:
            error = [exc.code, exc.rpc_code, exc.text.split(":")[0]]
        info = client.initialize_result
    print(json.dumps({
        "text": found.text, "files": [f["path"] for f in found.meta["files"]], "globbed": listed.meta["paths"],
        "error": error, "exe": info.ripgrep_path, "returncode": client.returncode,
    }))

asyncio.run(main(sys.argv[1]))
"""


def venv_env(venv: Venv) -> dict[str, str]:
    """An environment whose PATH starts with the venv's bin/ (as after `activate`, or under pipx/uvx)."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "DSH_SEARCH_EXE", "VIRTUAL_ENV"}}
    env["PATH"] = os.pathsep.join([str(venv.root / "bin"), env.get("PATH", os.defpath)])
    return env


def test_command_is_on_the_venv_path_and_is_the_daemon(installed: Venv) -> None:
    env = venv_env(installed)
    command = shutil.which("dsh-search", path=env["PATH"])
    assert command == str(installed.root / "bin" / "dsh-search")
    done = subprocess.run(["dsh-search", "--version"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()[:2]
    assert first.startswith("dsh-search ")
    assert second.startswith("ripgrep ") and str(installed.package / "bin" / "dsh-search-rg") in second


def test_command_passes_stdio_and_exit_status_through(installed: Venv, tmp_path: Path) -> None:
    env = venv_env(installed)
    # Protocol over the command's own stdin/stdout, exit 0 at EOF.
    proc = subprocess.Popen(
        ["dsh-search", "--sample-over-cap-glob-results", "true", "--spill-dir", str(tmp_path / "spill")],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"ping","id":1}\n')
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline()) == {"jsonrpc": "2.0", "result": {}, "id": 1}
    if sys.platform.startswith("linux"):
        # execv: the process the host started *is* the daemon's launcher, no Python in between.
        assert os.path.realpath(f"/proc/{proc.pid}/exe") == str(installed.package / "bin" / "dsh-search")
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()
    assert proc.stderr is not None
    proc.stderr.close()

    # The daemon's own exit status and stderr line for an invalid configuration.
    done = subprocess.run(
        ["dsh-search", "--sample-over-cap-glob-results", "maybe"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("dsh-search: sampleOverCapGlobResults")

    # `python -m dsh_search_bin` is the same command.
    done = subprocess.run(
        [str(installed.python), "-m", "dsh_search_bin", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("dsh-search ")


def test_python_client_from_the_installed_wheel(installed: Venv, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "needle.txt").write_text("WHEEL_CLIENT_OK\n")
    (tree / "other.txt").write_text("nothing\n")
    done = subprocess.run(
        [str(installed.python), "-I", "-c", CLIENT_SCRIPT, str(tree)],
        env=venv_env(installed),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["text"].startswith("Found 1 match")
    assert found["files"] == ["sub/needle.txt"]
    assert sorted(found["globbed"]) == ["other.txt", "sub/needle.txt"]
    assert found["error"] == ["SEARCH_INVALID_PATTERN", 1001, "Error"]
    assert found["exe"] == str(installed.package / "bin" / "dsh-search-rg")
    assert found["returncode"] == 0


def test_command_reports_a_broken_install_like_the_daemon(sdk_wheel: Path, tmp_path: Path) -> None:
    venv = install_wheel(sdk_wheel, tmp_path / "venv")
    Path(f"{venv.package / 'bin' / 'dsh-search'}-rg").unlink()
    done = subprocess.run(
        ["dsh-search", "--version"], env=venv_env(venv), capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 3
    assert done.stderr.startswith("dsh-search: dsh-search-bin is missing the ripgrep sidecar at ")

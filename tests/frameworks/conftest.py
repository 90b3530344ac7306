"""What the framework tests share: each framework set installed once per run (a venv per hashed
requirements file, the Node project from its lock file), the scripted model, and the project searched."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.frameworks import scripted_model
from tests.support.hosts import node_toolchain, npm_ci
from tests.support.locations import ROOT

NODE_PROJECT = Path(__file__).resolve().parent / "node"
VENVS = ROOT / ".cache"


def framework_venv(name: str) -> Path:
    """The Python of the venv .cache/frameworks-<name>, made from requirements/frameworks-<name>.txt
    (hashes required) unless it already holds exactly that file's pins."""
    requirements = ROOT / "requirements" / f"frameworks-{name}.txt"
    venv = VENVS / f"frameworks-{name}"
    stamp = venv / ".dsh-requirements"
    python = venv / "bin" / "python"
    VENVS.mkdir(exist_ok=True)
    with open(VENVS / f"frameworks-{name}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # one install at a time, even across concurrent runs
        if python.exists() and stamp.exists() and stamp.read_bytes() == requirements.read_bytes():
            return python
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        done = subprocess.run(
            [*install, "--require-hashes", "--no-deps", "-r", str(requirements)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(f"installing {requirements.name} failed:\n{done.stdout}\n{done.stderr}")
        stamp.write_bytes(requirements.read_bytes())
    return python


_POOL = ThreadPoolExecutor(3, thread_name_prefix="install")
_INSTALLS: dict[str, Future[Any]] = {}


def installs() -> dict[str, Future[Any]]:
    """Both Python framework sets and the Node project, installed side by side (each mostly waits for its
    registry), started by whichever test needs one first."""
    if not _INSTALLS:
        node_bin, npm = node_toolchain()
        _INSTALLS["mcp1"] = _POOL.submit(framework_venv, "mcp1")
        _INSTALLS["mcp2"] = _POOL.submit(framework_venv, "mcp2")
        _INSTALLS["node"] = _POOL.submit(lambda: (npm_ci(npm, NODE_PROJECT), node_bin)[1])
    return _INSTALLS


@pytest.fixture(scope="session")
def pythons() -> dict[str, Path]:
    return {name: installs()[name].result() for name in ("mcp1", "mcp2")}


@pytest.fixture(scope="session")
def node() -> str:
    return str(installs()["node"].result())


@pytest.fixture(scope="session")
def model_url() -> Iterator[str]:
    server = scripted_model.serve()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()

"""What the framework tests share: each framework set installed once per run (a venv per hashed
requirements file, the Node project from its lock file), the scripted model, and the project searched."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture(scope="session")
def pythons() -> dict[str, Path]:
    """Both Python framework sets, installed side by side (each is mostly waiting for the registry)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        found = dict(zip(("mcp1", "mcp2"), pool.map(framework_venv, ("mcp1", "mcp2")), strict=True))
    return found


@pytest.fixture(scope="session")
def node() -> str:
    node_bin, npm = node_toolchain()
    npm_ci(npm, NODE_PROJECT)
    return node_bin


@pytest.fixture(scope="session")
def model_url() -> Iterator[str]:
    server = scripted_model.serve()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()

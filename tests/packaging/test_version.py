"""One version everywhere: pyproject.toml, dsh_search.__version__, `--version`, initialize, the wheel, CHANGELOG."""

from __future__ import annotations

import os
import subprocess
import tomllib
import zipfile
from pathlib import Path

import pytest

import dsh_search
from tests.support.daemon import Daemon
from tests.support.locations import ROOT
from tests.support.packaging import Venv


@pytest.fixture(scope="module")
def version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def test_package_version_is_the_project_version(version: str) -> None:
    assert dsh_search.__version__ == version


def test_executable_reports_the_version(dist_dir: Path, version: str) -> None:
    done = subprocess.run(
        [str(dist_dir / "dsh-search"), "--version"], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.splitlines()[0] == f"dsh-search {version}"


def test_initialize_reports_the_version(dist_dir: Path, version: str, tmp_path: Path) -> None:
    daemon = Daemon(
        ["--sample-over-cap-glob-results", "false", "--spill-dir", str(tmp_path / "spill")],
        exe=dist_dir / "dsh-search",
    )
    try:
        result = daemon.result("initialize", {})
    finally:
        daemon.stop()
    assert result["serverInfo"] == {"name": "dsh-search", "version": version}


def test_wheel_carries_the_version(sdk_wheel: Path, installed: Venv, version: str) -> None:
    assert sdk_wheel.name.startswith(f"dsh_search_bin-{version}-py3-none-")
    with zipfile.ZipFile(sdk_wheel) as zf:
        metadata = zf.read(f"dsh_search_bin-{version}.dist-info/METADATA").decode()
    assert f"\nVersion: {version}\n" in metadata
    assert installed.probe()["version"] == version


def test_changelog_describes_the_version(version: str) -> None:
    """The newest released entry is the project version; changes not released yet are listed above it, under
    "## Unreleased", which a release (RELEASE_TAG set, as in the release workflow) must have renamed."""
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = [line for line in changelog.splitlines() if line.startswith("## ")]
    if headings and headings[0] == "## Unreleased" and not os.environ.get("RELEASE_TAG"):
        headings = headings[1:]
    assert "## Unreleased" not in headings, "## Unreleased must be the first entry, and is not in a release"
    assert headings and version in headings[0], "the newest CHANGELOG.md entry must be the project version"

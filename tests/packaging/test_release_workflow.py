"""The release workflow runs the repository's own scripts on the platforms the docs promise."""

from __future__ import annotations

import os
import re

from tests.support.locations import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def test_release_workflow_calls_existing_scripts_on_every_supported_platform() -> None:
    text = WORKFLOW.read_text()
    scripts = set(re.findall(r"\bscripts/[\w.-]+", text))
    assert "scripts/release-wheel" in scripts
    for script in scripts:
        path = ROOT / script
        assert path.is_file() and os.access(path, os.X_OK), script
    runners = re.findall(r"^\s+runner: (\S+)", text, re.MULTILINE)
    assert runners == ["ubuntu-22.04", "ubuntu-22.04-arm", "macos-14", "macos-15-intel"], runners
    assert "windows" not in text.lower().replace("windows is not built", "")
    # The script runs the wheel and client tests that it names; they must exist.
    release = (ROOT / "scripts" / "release-wheel").read_text()
    for target in re.findall(r"\btests/[\w/.]+", release):
        assert (ROOT / target).exists(), target

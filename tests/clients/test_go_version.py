"""The Go version the Go client needs is written once, in clients/go/go.mod, and stated wherever a newcomer
looks for it: the client's install steps and its Tests section, the package documentation, the example
host's go.mod, and the check of scripts/test's Go toolchain (tests/support/hosts.py reads go.mod)."""

from __future__ import annotations

import re

from tests.support.hosts import GO_NEEDED, go_min_version
from tests.support.locations import ROOT

CLIENT = ROOT / "clients" / "go"


def section(markdown: str, heading: str) -> str:
    """The text under `heading` (a `## ` line) up to the next heading of the same level."""
    start = markdown.index(f"\n{heading}\n")
    following = re.search(r"^## ", markdown[start + len(heading) + 2 :], re.MULTILINE)
    return markdown[start : start + len(heading) + 2 + following.start()] if following else markdown[start:]


def test_the_go_version_is_stated_where_a_newcomer_looks() -> None:
    major, minor = go_min_version()
    assert f"Go {major}.{minor} or newer" == GO_NEEDED
    readme = (CLIENT / "README.md").read_text()
    install = section(readme, "## Install")
    assert GO_NEEDED in install, install
    assert "apt-get install golang-go" in install, install  # where a Debian or Ubuntu machine gets it
    assert GO_NEEDED in section(readme, "## Tests")
    assert f"Go {major}.{minor} or newer" in (CLIENT / "doc.go").read_text()
    assert go_min_version(ROOT / "examples" / "go-host" / "go.mod") == (major, minor)

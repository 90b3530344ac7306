"""The documentation stands alone: every relative link in README.md and docs/ leads to a file of the
repository, and every #anchor to a heading of that file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the headings of a page."""
    found = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_relative_links_lead_to_files_and_headings_of_the_repository() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(FENCE.sub("", page.read_text())):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists() or ROOT not in linked.parents:
                broken.append(f"{page.name}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken

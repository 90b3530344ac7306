"""The documentation stands alone and tells the truth about the tree: every relative link in README.md and
docs/ leads to a file of the repository, and every #anchor to a heading of that file; docs/design.md's
module table names every module of the package once, and its sans-IO list is the one the layout test
checks."""

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


PACKAGE = ROOT / "daemon" / "dsh_search"


def _design_section(title: str) -> str:
    text = (ROOT / "docs" / "design.md").read_text()
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def design_modules() -> list[str]:
    """The modules docs/design.md's module table names, as paths inside the package, in its order."""
    names: list[str] = []
    group = ""
    for line in _design_section("Modules").splitlines():
        if not line.startswith("| ") or line.startswith("| module"):
            continue
        first = line.split("|")[1].strip()
        heading = re.fullmatch(r"\*\*`([^`]+)`\*\*", first)
        if heading:
            group = heading.group(1)
        elif first == "**top level**":
            group = ""
        else:
            names += [group + name for name in re.findall(r"`([^`]+)`", first)]
    return names


def test_the_module_table_names_every_module_once() -> None:
    modules = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    named = design_modules()
    assert len(named) == len(set(named)), sorted(n for n in named if named.count(n) > 1)
    assert set(named) == modules, {"not in the table": modules - set(named), "no such module": set(named) - modules}


def test_the_sans_io_list_is_the_layout_tests() -> None:
    from tests.server.test_layout import SANS_IO

    bullet = _design_section("Why it looks like this").split("- **Sans-IO modules.**", 1)[1].split("\n- ", 1)[0]
    listed: set[str] = set()
    for name in re.findall(r"`([^`]+)`", bullet):
        if name.endswith("/"):
            listed |= {str(p.relative_to(PACKAGE)) for p in (PACKAGE / name).glob("*.py") if p.name != "__init__.py"}
        elif name.endswith(".py") and not name.startswith("tests/"):
            listed.add(name)
    assert listed == set(SANS_IO)

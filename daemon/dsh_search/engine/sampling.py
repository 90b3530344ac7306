"""Round-robin sampling of an over-cap glob page across top-level entries (docs/behaviour.md, "Glob").

Paths are grouped by their first segment below the search root; groups keep first-appearance order
(so each group's oldest file decides its place); rounds take one path from every group still holding
some until the cap is reached; the page lists each group's taken paths together, in group order.
Linear in the number of paths: 125,000 groups or 25,000 paths cost milliseconds.
"""

from __future__ import annotations

from typing import NamedTuple


class Sample(NamedTuple):
    items: list[str]
    shown_groups: int  # groups that contributed at least one path
    total_groups: int


def group_keys(paths: list[str], root: str, sep: str = "/") -> list[str]:
    """Each path's first segment below `root` (the whole path's first segment when it is not below it).
    `sep` is the platform's path separator (`os.sep`): ripgrep joins the names it finds with it, and upstream
    splits display paths at Node's `path.sep` — `\\` on Windows."""
    if root == ".":
        prefix = "." + sep
    else:
        trimmed = root.rstrip(sep)
        prefix = trimmed + sep if trimmed else ""
        if trimmed and trimmed in paths:  # the root itself: its own group, ""
            return ["" if p == trimmed else p.removeprefix(prefix).lstrip(sep).split(sep, 1)[0] for p in paths]
    return [p.removeprefix(prefix).lstrip(sep).split(sep, 1)[0] for p in paths]


def sample_across_top_level(paths: list[str], max_items: int, root: str, sep: str = "/") -> Sample:
    groups: dict[str, list[str]] = {}
    for key, path in zip(group_keys(paths, root, sep), paths, strict=True):
        members = groups.get(key)
        if members is None:
            groups[key] = [path]
        else:
            members.append(path)
    ordered = list(groups.values())
    quota = [0] * len(ordered)
    remaining = max_items
    active = list(range(len(ordered)))
    while remaining > 0 and active:
        still = []
        for index in active:
            if remaining == 0:
                break
            quota[index] += 1
            remaining -= 1
            if quota[index] < len(ordered[index]):
                still.append(index)
        active = still
    items: list[str] = []
    shown = 0
    for members, taken in zip(ordered, quota, strict=True):
        if taken:
            shown += 1
            items.extend(members[:taken])
    return Sample(items=items, shown_groups=shown, total_groups=len(ordered))

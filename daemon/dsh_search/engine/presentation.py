"""Presentation metadata for a search card, bounded by searchMetaMaxBytes (docs/reference.md, "Results
of glob and grep").

grep: `{"shape":"matches","files":[{"path","matches":[{"lineNumber","line"}]}],"truncated","total"}`;
glob: `{"shape":"paths","paths":[…],"truncated","total"}`. The extended grep's listings are paths too (a
card that lists files reads them): outputMode files as glob's, outputMode count with `counts` (each
path's, in the same order) and `matches` (their sum) beside them. While the compact JSON is larger than the cap,
trailing files (or paths) are dropped, never below one, and `truncated` becomes true; `total` stays.
Sizes are computed per item once, so bounding is linear, not a re-serialisation per drop.
`view_from_meta` is upstream's read-back check, which hosts can use to decide between a search card
and a generic one; our tests run every meta the daemon produces through it.
"""

from __future__ import annotations

from typing import Any

import orjson


def _bounded(shape: str, key: str, items: list[Any], truncated: bool, total: int, cap: int) -> dict[str, Any]:
    def size_of(count: int, trunc: bool) -> int:
        head = len(orjson.dumps({"shape": shape, key: [], "truncated": trunc, "total": total}))
        return head + sum(sizes[:count]) + max(0, count - 1)

    sizes = [len(orjson.dumps(item)) for item in items]
    count = len(items)
    if size_of(count, truncated) > cap:
        truncated = True
        running = size_of(count, True)
        while count > 1 and running > cap:
            count -= 1
            running -= sizes[count] + 1
    return {"shape": shape, key: items[:count], "truncated": truncated, "total": total}


def grep_meta(page: list[tuple[str, int, str]], truncated: bool, total: int, cap: int) -> dict[str, Any]:
    """`page`: the previewed matches shown inline, as (path, lineNumber, line), grouped by path."""
    files: list[dict[str, Any]] = []
    by_path: dict[str, list[dict[str, Any]]] = {}
    for path, line_number, line in page:
        matches = by_path.get(path)
        if matches is None:
            matches = by_path[path] = []
            files.append({"path": path, "matches": matches})
        matches.append({"lineNumber": line_number, "line": line})
    return _bounded("matches", "files", files, truncated, total, cap)


def glob_meta(page: list[str], truncated: bool, total: int, cap: int) -> dict[str, Any]:
    return _bounded("paths", "paths", list(page), truncated, total, cap)


def count_meta(
    page: list[str], counts: list[int], truncated: bool, total: int, matches: int, cap: int
) -> dict[str, Any]:
    """A count listing's page: the paths as glob's meta has them, each one's count beside it."""
    width = len(orjson.dumps({"counts": counts, "matches": matches})) + 2  # the two keys, and their commas
    meta = _bounded("paths", "paths", list(page), truncated, total, max(0, cap - width))
    return {**meta, "counts": counts[: len(meta["paths"])], "matches": matches}


def view_from_meta(meta: Any) -> dict[str, Any] | None:
    """Upstream's `searchViewFromMeta`: a card view for well-formed meta, else None."""
    if not isinstance(meta, dict):
        return None
    if not isinstance(meta.get("truncated"), bool) or not _is_number(meta.get("total")):
        return None
    shape = meta.get("shape")
    if shape == "matches":
        files = meta.get("files")
        if not isinstance(files, list) or not all(_is_file_group(f) for f in files):
            return None
    elif shape == "paths":
        paths = meta.get("paths")
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            return None
    else:
        return None
    return {"card": "search", **meta}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_file_group(group: Any) -> bool:
    if not isinstance(group, dict) or not isinstance(group.get("path"), str):
        return False
    matches = group.get("matches")
    return isinstance(matches, list) and all(
        isinstance(m, dict) and _is_number(m.get("lineNumber")) and isinstance(m.get("line"), str) for m in matches
    )

"""Round-robin sampling across top-level entries when a glob result is over the cap (docs/behaviour.md, "Glob")."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from dsh_search.engine import sampling
from dsh_search.engine.sampling import sample_across_top_level
from tests.support.upstream import case


def sample(paths: list[str], cap: int, root: str = ".") -> tuple[list[str], int, int]:
    s = sample_across_top_level(paths, cap, root)
    return s.items, s.shown_groups, s.total_groups


@case("T51")
def test_sampling_takes_one_path_per_top_level_entry_per_round() -> None:
    paths = ["v/a", "v/b", "v/c", "v/d", "src/e", "guide/f"]
    assert sample(paths, 3) == (["v/a", "src/e", "guide/f"], 3, 3)
    assert sample(paths, 5) == (["v/a", "v/b", "v/c", "src/e", "guide/f"], 3, 3)


@case("T52")
def test_sampling_leaves_out_an_entry_once_it_runs_out() -> None:
    assert sample(["solo/a", "many/b", "many/c", "many/d"], 3) == (["solo/a", "many/b", "many/c"], 2, 2)


def steps(paths: list[str], cap: int) -> int:
    """The lines of sampling.py run for one sample (traced): its work, counted rather than timed."""
    count = 0

    def trace(frame: FrameType, event: str, _arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename != sampling.__file__:
            return None
        if event == "line":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        sample_across_top_level(paths, cap, ".")
    finally:
        sys.settrace(None)
    return count


@case("T53")
def test_sampling_is_linear_in_the_number_of_paths() -> None:
    """Upstream's worst case for a naive round robin: many groups of one and one large group, so that
    every round after the first visits one group. The steps taken grow with the paths, not their square."""

    def worst(n: int) -> list[str]:
        return [f"group-{i}/only" for i in range(n)] + [f"late/{i}" for i in range(n)]

    paths = worst(12500)
    items, shown, total = sample(paths, len(paths) - 1)
    assert shown == total == 12501 and len(items) == len(paths) - 1
    small, large = steps(worst(1000), 2000 - 1), steps(worst(4000), 8000 - 1)
    assert large <= 4.5 * small, (small, large)  # four times the paths: about four times the steps
    assert small <= 20 * 2000, small  # a few steps a path


@case("T54")
def test_sampling_counts_the_entries_it_could_not_show() -> None:
    assert sample(["a/1", "b/1", "c/1", "d/1"], 2) == (["a/1", "b/1"], 2, 4)


@case("T55")
def test_sampling_groups_absolute_paths_by_their_first_component() -> None:
    assert sample(["/out/a", "/out/b", "/away/c", "/away/d"], 2) == (["/out/a", "/away/c"], 2, 2)


@case("T56")
def test_sampling_counts_each_top_level_file_as_an_entry() -> None:
    assert sample(["a.ts", "b.ts", "c.ts"], 2) == (["a.ts", "b.ts"], 2, 3)


@case("T57")
def test_sampling_groups_by_the_entry_below_the_search_root() -> None:
    ws = ["workspace/vendor/a", "workspace/vendor/b", "workspace/source/c", "workspace/guides/d"]
    assert sample(ws, 3, "workspace") == (["workspace/vendor/a", "workspace/source/c", "workspace/guides/d"], 3, 3)
    assert sample(["./vendor/a.ts", "./src/b.ts"], 5, ".") == (["./vendor/a.ts", "./src/b.ts"], 2, 2)
    assert sample(["/vendor/a.ts", "/src/b.ts"], 5, "/") == (["/vendor/a.ts", "/src/b.ts"], 2, 2)
    assert sample(["root/a/one", "root/a/two", "root/b/three"], 2, "root")[0] == ["root/a/one", "root/b/three"]
    assert sample(["other/a.ts"], 5, "src")[1:] == (1, 1)
    assert sample(["src"], 5, "src")[1:] == (1, 1)


@case("T58")
def test_sampling_treats_a_backslash_as_a_filename_character() -> None:
    assert sample(["old\\one", "old\\two", "src/a"], 2) == (["old\\one", "old\\two"], 2, 3)


@case("T59")
def test_sampling_handles_a_hundred_thousand_entries() -> None:
    items, shown, total = sample([f"g{i}/f" for i in range(125_000)], 100)
    assert (len(items), shown, total) == (100, 100, 125_000)

"""What hosts draw: `meta` for search cards within searchMetaMaxBytes, its read-back check, and the display
helpers (docs/behaviour.md, "Caps and configuration")."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from dsh_search.engine.grep import json_parse, page
from dsh_search.engine.paths import cwd_relative
from dsh_search.engine.presentation import glob_meta, grep_meta, view_from_meta
from tests.support.fakes import as_files, make_app, run_glob, run_grep
from tests.support.upstream import case


@case("T100")
def test_grep_meta_holds_the_shown_matches_by_file() -> None:
    result = run_grep(make_app(grepMaxMatches=2), [("a.ts", 1, "one"), ("a.ts", 2, "two"), ("b.ts", 3, "three")])
    assert result["meta"] == {
        "shape": "matches",
        "files": [{"path": "a.ts", "matches": [{"lineNumber": 1, "line": "one"}, {"lineNumber": 2, "line": "two"}]}],
        "truncated": True,
        "total": 3,
    }
    assert view_from_meta(result["meta"]) == {"card": "search", **result["meta"]}


@case("T101")
def test_glob_meta_holds_the_shown_paths() -> None:
    result = run_glob(make_app(globMaxResults=2), ["a.ts", "b.ts", "c.ts"])
    assert result["meta"] == {"shape": "paths", "paths": ["a.ts", "b.ts"], "truncated": True, "total": 3}


@case("T104")
def test_malformed_meta_has_no_view() -> None:
    assert view_from_meta({"shape": "matches", "files": "nope", "truncated": False, "total": 0}) is None
    assert view_from_meta(42) is None


@case("T105")
def test_display_paths_are_relative_only_strictly_inside_the_workdir() -> None:
    assert cwd_relative("/w/a/b.ts", "/w") == "a/b.ts"
    assert cwd_relative("/w", "/w") == "."
    assert cwd_relative("/other/b.ts", "/w") == "/other/b.ts"
    assert cwd_relative("/w-sibling/b.ts", "/w") == "/w-sibling/b.ts"
    assert cwd_relative("rel/b.ts", "/w") == "rel/b.ts"
    assert cwd_relative("/w/../up.ts", "/w") == "/w/../up.ts"


@case("T106")
def test_a_line_within_the_cap_is_shown_whole() -> None:
    assert page.preview_line("short", 100) == "short"
    assert page.preview_line("x" * 7, 7) == "x" * 7  # exactly the cap is untouched


@case("T107")
def test_matches_are_listed_by_file_in_first_seen_order() -> None:
    text = page.format_files(
        json_parse.sections(as_files([("b.ts", 2, "x"), ("b.ts", 5, "z"), ("a.ts", 1, "y")]), None)
    )
    assert text == "b.ts\nLine 2: x\nLine 5: z\n\na.ts\nLine 1: y"


@case("P1", "P2")
def test_meta_groups_matches_by_file_in_first_seen_order() -> None:
    meta = grep_meta([("b.ts", 2, "x"), ("a.ts", 1, "y"), ("b.ts", 5, "z")], False, 3, 65536)
    assert meta["files"] == [
        {"path": "b.ts", "matches": [{"lineNumber": 2, "line": "x"}, {"lineNumber": 5, "line": "z"}]},
        {"path": "a.ts", "matches": [{"lineNumber": 1, "line": "y"}]},
    ]
    assert grep_meta([], False, 0, 65536)["files"] == []


@case("P3", "P4")
def test_grep_meta_says_whether_the_matches_were_capped() -> None:
    assert grep_meta([("a.ts", 1, "x"), ("b.ts", 2, "y")], False, 2, 65536)["truncated"] is False
    meta = grep_meta([("a.ts", 1, "one"), ("a.ts", 2, "two")], True, 3, 65536)
    assert [f["path"] for f in meta["files"]] == ["a.ts"] and meta["truncated"] is True and meta["total"] == 3


@case("P5")
def test_grep_meta_cuts_long_lines_as_the_text_does() -> None:
    result = run_grep(make_app(grepMaxLineBytes=7), [("a.ts", 1, "aéaéaéaé")])
    assert result["meta"]["files"][0]["matches"][0]["line"] == "aéaéa (line truncated)"


@case("P6", "P7")
def test_grep_meta_stays_within_its_byte_cap_but_keeps_one_file() -> None:
    page = [(f"f{i}.ts", 1, "x" * 60) for i in range(3)]
    meta = grep_meta(page, False, 3, 260)
    assert meta["truncated"] is True and meta["total"] == 3 and len(meta["files"]) < 3
    assert len(orjson.dumps(meta)) <= 260
    meta = grep_meta([("a.ts", 1, "y" * 500)], False, 1, 50)
    assert len(meta["files"]) == 1 and meta["truncated"] is True


@case("P8", "P9", "P10")
def test_glob_meta_counts_paths_and_stays_within_its_byte_cap() -> None:
    assert glob_meta(["a", "b"], False, 2, 65536) == {
        "shape": "paths",
        "paths": ["a", "b"],
        "truncated": False,
        "total": 2,
    }
    assert glob_meta(["a.ts", "b.ts"], True, 3, 65536) == {
        "shape": "paths",
        "paths": ["a.ts", "b.ts"],
        "truncated": True,
        "total": 3,
    }
    meta = glob_meta(["p" * 100 + f"{i}.ts" for i in range(3)], False, 3, 180)
    assert meta["truncated"] is True and meta["total"] == 3 and len(meta["paths"]) < 3
    assert len(orjson.dumps(meta)) <= 180


def test_meta_bound_matches_a_naive_reserialisation() -> None:
    page = [(f"dir/{i}.ts", i, "é" * (i % 37)) for i in range(300)]
    for cap in (100, 500, 2000, 9000):
        meta = grep_meta(page, False, 300, cap)
        files = meta["files"]
        assert len(orjson.dumps(meta)) <= cap or len(files) == 1
        if len(files) < 300:  # one more file would not have fitted
            bigger = {**meta, "files": grep_meta(page, False, 300, 10**9)["files"][: len(files) + 1]}
            assert len(orjson.dumps(bigger)) > cap


@case("P11", "P12", "P13")
def test_well_formed_meta_has_a_search_card_view() -> None:
    payload = {
        "shape": "matches",
        "files": [{"path": "a", "matches": [{"lineNumber": 1, "line": "x"}]}],
        "truncated": False,
        "total": 1,
    }
    assert view_from_meta(payload) == {"card": "search", **payload}
    paths = {"shape": "paths", "paths": ["a"], "truncated": True, "total": 9}
    assert view_from_meta(paths) == {"card": "search", **paths}
    assert view_from_meta({"shape": "matches", "files": [], "truncated": False, "total": 0}) is not None
    assert view_from_meta({"shape": "paths", "paths": [], "truncated": False, "total": 0}) is not None


@pytest.mark.parametrize("meta", [None, "nope", [], 42], ids=["P14-null", "P14-string", "P14-array", "P14-number"])
def test_meta_that_is_not_an_object_has_no_view(meta: Any) -> None:
    assert view_from_meta(meta) is None


@pytest.mark.parametrize(
    "meta",
    [
        {"shape": "paths", "paths": []},
        {"shape": "paths", "paths": [], "truncated": "no", "total": 0},
        {"shape": "paths", "paths": [], "truncated": False},
        {"shape": "paths", "paths": [], "truncated": False, "total": "0"},
    ],
    ids=["P15-no-counts", "P15-truncated-not-boolean", "P15-no-total", "P15-total-not-integer"],
)
def test_meta_with_missing_or_mistyped_counts_has_no_view(meta: dict[str, Any]) -> None:
    assert view_from_meta(meta) is None


@case("P16")
def test_meta_with_an_unknown_or_missing_shape_has_no_view() -> None:
    assert view_from_meta({"shape": "other", "truncated": False, "total": 0}) is None
    assert view_from_meta({"truncated": False, "total": 0}) is None


@pytest.mark.parametrize(
    "files",
    [
        "x",
        [None],
        ["x"],
        [[]],
        [{"path": 1, "matches": []}],
        [{"path": "a", "matches": "x"}],
        [{"path": "a", "matches": [None]}],
        [{"path": "a", "matches": [{"lineNumber": "1", "line": "x"}]}],
        [{"path": "a", "matches": [{"lineNumber": 1, "line": 2}]}],
    ],
    ids=[
        "P17-files-string",
        "P17-null-file",
        "P17-string-file",
        "P17-array-file",
        "P17-path-not-string",
        "P17-matches-string",
        "P17-null-match",
        "P17-line-number-string",
        "P17-line-not-string",
    ],
)
def test_meta_with_malformed_files_has_no_view(files: Any) -> None:
    assert view_from_meta({"shape": "matches", "files": files, "truncated": False, "total": 0}) is None


@pytest.mark.parametrize("paths", ["x", [1]], ids=["P18-paths-string", "P18-path-not-string"])
def test_meta_with_malformed_paths_has_no_view(paths: Any) -> None:
    assert view_from_meta({"shape": "paths", "paths": paths, "truncated": False, "total": 0}) is None

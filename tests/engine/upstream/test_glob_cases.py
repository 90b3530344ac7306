"""glob's results: display paths, validation, the cap, its footers and the spill (docs/behaviour.md, "Glob")."""

from __future__ import annotations

import pytest

from dsh_search.engine import glob as glob_mod
from dsh_search.engine.failures import INVALID_ARGS, ToolError
from dsh_search.engine.paths import cwd_relative
from dsh_search.engine.request import GlobQuery, check_glob
from dsh_search.store.spill import SpillStore
from tests.support.fakes import FAKE_HINT, NO_DENY, FakeSpill, make_app, run_glob
from tests.support.upstream import case


@case("T60")
def test_glob_shows_paths_inside_the_workdir_relative_and_others_as_given() -> None:
    rel = [cwd_relative(p, "/sessions/s1") for p in ("/sessions/s1/src/a.ts", "/elsewhere/b.ts", "rel/c.ts")]
    assert rel == ["src/a.ts", "/elsewhere/b.ts", "rel/c.ts"]


@case("T61")
def test_glob_rejects_a_blank_pattern_or_path_and_trims_nothing() -> None:
    with pytest.raises(ToolError) as err:
        check_glob(GlobQuery("  "))
    assert err.value.kind == INVALID_ARGS and err.value.message == "pattern must be a non-empty string"
    with pytest.raises(ToolError) as err:
        check_glob(GlobQuery("*", " "))
    assert err.value.message == "path must be a non-empty string when given"
    check_glob(GlobQuery(" *.ts "))  # accepted, and searched as it is: not trimmed
    assert "--glob= *.ts " in glob_mod.build_argv(GlobQuery(" *.ts "), NO_DENY, 1)


@case("T62")
def test_glob_passes_the_path_after_double_dash() -> None:
    assert glob_mod.build_argv(GlobQuery("*.ts", "sub"), NO_DENY, 1)[-2:] == ["--", "sub"]


@case("T63")
def test_glob_over_the_cap_shows_the_head_and_spills_the_full_sorted_list() -> None:
    spill = FakeSpill()
    app = make_app(spill, globMaxResults=2)
    result = run_glob(app, ["a.ts", "b.ts", "c.ts", "d.ts"], sessionId="session-1")
    assert result["text"] == (
        "a.ts\nb.ts\n\n(Showing 2 of 4 paths. Full sorted result stored at: /spill/glob-results.txt. "
        "Use the fake retrieval hint.)"
    )
    assert spill.saves == [("session-1", "glob-results.txt", "a.ts\nb.ts\nc.ts\nd.ts")]
    assert result["spill"] == {"locator": "/spill/glob-results.txt", "bytes": 19, "retrievalHint": FAKE_HINT}


@case("T64")
def test_glob_sampled_footer_counts_entries_and_hints_at_narrowing() -> None:
    paths = ["vendor/a.ts", "vendor/b.ts", "vendor/c.ts", "src/d.ts", "guide/e.md", "top.txt"]
    page = glob_mod.render(paths, root=".", max_results=3, sample=True, spill=None)
    assert page.text == (
        "vendor/a.ts\nsrc/d.ts\nguide/e.md\n\n(Showing 3 of 6 paths, sampled across 3 of the 4 top-level entries "
        "this pattern matched instead of taken in modification-time order. Narrow path to inspect a specific "
        "subtree. The complete result could not be saved; narrow pattern or path to see more.)"
    )


@case("T65")
def test_glob_with_sampling_off_shows_the_head_with_the_plain_footer() -> None:
    paths = ["vendor/a.ts", "vendor/b.ts", "vendor/c.ts", "src/d.ts", "guide/e.md"]
    page = glob_mod.render(paths, root=".", max_results=3, sample=False, spill=None)
    assert page.text == (
        "vendor/a.ts\nvendor/b.ts\nvendor/c.ts\n\n(Showing 3 of 5 paths. The complete result could not be saved; "
        "narrow pattern or path to see more.)"
    )


@case("T66", "T67")
def test_glob_samples_below_a_relative_or_absolute_path_alike() -> None:
    paths = ["workspace/vendor/a.ts", "workspace/vendor/b.ts", "workspace/source/c.ts", "workspace/guides/d.md"]
    page = glob_mod.render(paths, root="workspace", max_results=3, sample=True, spill=None)
    assert "workspace/vendor/a.ts\nworkspace/source/c.ts\nworkspace/guides/d.md" in page.text
    assert "sampled across 3 of the 3 top-level entries" in page.text
    root = cwd_relative("/w/workspace", "/w")
    shown = [cwd_relative("/w/" + p, "/w") for p in paths]
    assert glob_mod.render(shown, root=root, max_results=3, sample=True, spill=None).text == page.text


@case("T68")
def test_glob_gives_no_narrowing_hint_when_every_entry_is_shown() -> None:
    paths = ["vendor/a.ts", "vendor/b.ts", "vendor/c.ts", "src/d.ts"]
    assert glob_mod.render(paths, root=".", max_results=3, sample=True, spill=None).text == (
        "vendor/a.ts\nvendor/b.ts\nsrc/d.ts\n\n(Showing 3 of 4 paths, sampled across 2 of the 2 top-level entries "
        "this pattern matched instead of taken in modification-time order. The complete result could not be "
        "saved; narrow pattern or path to see more.)"
    )


@case("T69")
def test_glob_result_that_fits_comes_in_ripgrep_order_without_a_footer() -> None:
    assert glob_mod.render(["c.ts", "a.ts", "b.ts"], root=".", max_results=4, sample=True, spill=None).text == (
        "c.ts\na.ts\nb.ts"
    )


@case("T70")
def test_glob_over_flat_files_uses_the_plain_footer() -> None:
    assert glob_mod.render(["a.ts", "b.ts", "c.ts"], root=".", max_results=2, sample=True, spill=None).text == (
        "a.ts\nb.ts\n\n(Showing 2 of 3 paths. The complete result could not be saved; narrow pattern or path to "
        "see more.)"
    )


@case("T71")
def test_glob_result_that_fits_is_not_spilled() -> None:
    spill = FakeSpill()
    result = run_glob(make_app(spill), ["a.ts"])
    assert spill.saves == [] and result["spill"] is None


@pytest.mark.parametrize("fail", [True, False], ids=["T74-T75-T76-save-fails", "T74-T75-T76-store-refuses"])
def test_glob_result_that_cannot_be_saved_is_not_an_error(fail: bool) -> None:
    app = make_app(FakeSpill(fail=fail), globMaxResults=1)
    if not fail:  # a spill root that is a regular file: the real store refuses, the search does not
        app.searcher.spill = SpillStore("/dev/null/spill", max_bytes=1 << 20, max_age_s=60, hint="h")
    result = run_glob(app, ["a.ts", "b.ts"])
    assert result["text"] == (
        "a.ts\n\n(Showing 1 of 2 paths. The complete result could not be saved; narrow pattern or path to see more.)"
    )
    assert result["spill"] is None


def test_a_spill_without_a_session_goes_to_the_default_session() -> None:
    spill = FakeSpill()
    run_glob(make_app(spill, globMaxResults=1), ["a", "b"])
    assert spill.saves[0][0] == "default"

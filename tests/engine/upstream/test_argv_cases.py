"""The exact ripgrep command lines, each value one inert argument (docs/behaviour.md, "Glob" and "Grep")."""

from __future__ import annotations

import pytest

from dsh_search.engine import glob as glob_mod
from dsh_search.engine.grep import argv as grep_argv
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GlobQuery, GrepQuery
from tests.support.fakes import NO_DENY
from tests.support.upstream import case

VCS = [
    "--glob=!**/.git",
    "--glob=!**/.git/**",
    "--glob=!**/.svn",
    "--glob=!**/.svn/**",
    "--glob=!**/.hg",
    "--glob=!**/.hg/**",
    "--glob=!**/.bzr",
    "--glob=!**/.bzr/**",
    "--glob=!**/.jj",
    "--glob=!**/.jj/**",
    "--glob=!**/.sl",
    "--glob=!**/.sl/**",
]
# Upstream's glob argv has `--sort=modified` where ours has `--null` (deliberate differences, docs/behaviour.md,
# "Glob": NUL-separated output, and the daemon sorts by (mtime, path) itself) and a walk thread count
# (performance.md): the daemon's own CPU count less one, here 3.
GLOB_HEAD = ["--files", "--glob={}", "--null", "--no-ignore", "--hidden", "--threads=3"]


def glob_argv(pattern: str, path: str | None = None) -> list[str]:
    head = [a.format(pattern) for a in GLOB_HEAD]
    return head + VCS + (["--", path] if path is not None else [])


@case("T16")
def test_glob_lists_files_hidden_and_ignored_included_vcs_excluded() -> None:
    assert glob_mod.build_argv(GlobQuery("**/*.ts"), NO_DENY, 3) == glob_argv("**/*.ts")


@case("T17")
def test_glob_path_with_a_space_is_one_argument_after_double_dash() -> None:
    assert glob_mod.build_argv(GlobQuery("*.md", "docs dir"), NO_DENY, 3) == glob_argv("*.md", "docs dir")


@case("T18")
def test_grep_asks_for_json_with_the_pattern_as_one_regexp() -> None:
    assert grep_argv.search(GrepQuery("foo.*bar"), grep_argv.JSON, NO_DENY) == ["--json", "--regexp=foo.*bar"]


@case("T19")
def test_grep_include_is_a_glob_and_a_dash_path_follows_double_dash() -> None:
    assert grep_argv.search(GrepQuery("x", "-leading-dash", "*.{ts,tsx}"), grep_argv.JSON, NO_DENY) == [
        "--json",
        "--regexp=x",
        "--glob=*.{ts,tsx}",
        "--",
        "-leading-dash",
    ]


@pytest.mark.parametrize(
    "raw",
    ["$(rm -rf /)", "`touch pwned`", 'say "hi there"', "it's", "a\nb", "--flag", "*?[a-z]{x,y}"],
    ids=["T20", "T21", "T22", "T23", "T24", "T25", "T26"],
)
def test_hostile_values_stay_one_inert_argument(raw: str) -> None:
    assert grep_argv.search(GrepQuery(raw), grep_argv.JSON, NO_DENY) == ["--json", f"--regexp={raw}"]
    assert glob_mod.build_argv(GlobQuery(raw), NO_DENY, 3)[1] == f"--glob={raw}"


def test_deny_globs_are_appended_before_the_path() -> None:
    deny = DenyGlobs((".env*", "*.pem"))
    assert glob_mod.build_argv(GlobQuery("*", "src"), deny, 3)[-4:] == ["--glob=!.env*", "--glob=!*.pem", "--", "src"]
    assert grep_argv.search(GrepQuery("x", include="*.ts"), grep_argv.JSON, deny) == [
        "--json",
        "--regexp=x",
        "--glob=*.ts",
        "--glob=!.env*",
        "--glob=!*.pem",
    ]

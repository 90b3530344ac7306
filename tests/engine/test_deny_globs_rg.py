"""The deny globs hide exactly what ripgrep hides: DenyGlobs against the real ripgrep, on generated trees.

The daemon passes each deny glob to ripgrep as `--glob=!<glob>` and also checks every result (and its
real location) with `DenyGlobs.denies`, which must agree with ripgrep: deny less and a symlink's target
would show; deny more and a search would lose files it should show. ripgrep's rules: a glob without
'/' matches a name at any depth, one with '/' (or a leading '/') is anchored to the search root, a glob
that matches a directory hides everything under it, and a trailing '/' matches directories only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dsh_search.engine.paths import DenyGlobs
from tests.support.examples import examples

# Names are drawn from a small alphabet, so that generated globs hit them, with the characters globs
# treat specially, a hidden name and a two-byte one.
NAMES = ["a", "b", "ab", "ba", "a.b", ".a", "é", "a b", "[a]", "{a,b}", "a,b", "!a", "a-b", "a\\b", "*", "?"]
NAME_CHARS = "ab.-[]{},!^*?\\ é"
GLOB_CHARS = "ab./-[]{},!^*?\\ é"


def write_tree(root: Path, files: Iterable[str]) -> None:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")


def rg_hides(rg: str, root: Path, files: set[str], globs: Sequence[str]) -> set[str] | None:
    """The files ripgrep leaves out of `rg --files` run in root with the globs denied; None when it
    rejects a glob."""
    argv = [rg, "--no-config", "--files", "--hidden", "--no-ignore", "--null", *(f"--glob=!{g}" for g in globs)]
    done = subprocess.run(argv, cwd=root, capture_output=True, timeout=60, check=False)
    if done.returncode == 2 and b"error parsing glob" in done.stderr:
        return None
    assert done.returncode in (0, 1), done.stderr
    listed = {os.fsdecode(p) for p in done.stdout.split(b"\0") if p}
    assert listed <= files, listed - files
    return files - listed


def check(rg: str, files: set[str], globs: Sequence[str]) -> None:
    root = Path(tempfile.mkdtemp(prefix="dsh-deny-"))
    try:
        write_tree(root, files)
        hidden = rg_hides(rg, root, files, globs)
    finally:
        shutil.rmtree(root)
    deny = DenyGlobs(tuple(globs))
    denied = {f for f in files if deny.denies(f)}
    if hidden is None:  # every search fails on such a glob: nothing may show
        assert denied == files, (globs, sorted(files - denied))
        return
    assert not hidden - denied, f"ripgrep hides {sorted(hidden - denied)} that {globs!r} does not deny"
    assert not denied - hidden, f"{globs!r} denies {sorted(denied - hidden)} that ripgrep shows"


# --- one tree, one construct at a time --------------------------------------------------------------------

TREE = {
    "a",
    "b.txt",
    ".env",
    ".env.local",
    "src/a.ts",
    "src/.env",
    "src/deep/b.ts",
    "src/deep/a/c.ts",
    "c/a/b/x",
    "a.b/x",
    "ab/ba/a",
    "vault/key.pem",
    "vault/sub/key.pem",
    "docs/vault/readme",
    "[a]/x",
    "{a,b}/x",
    "a,b",
    "!a",
    "a-b/c",
    "a\\b",
    "é/x",
    "x y/z",
}


@pytest.mark.parametrize(
    "glob",
    [
        # literal names, at any depth, files and directories alike
        "a",
        ".env",
        "key.pem",
        "vault",
        # * and ? stay within a name
        "*.ts",
        ".env*",
        "?",
        "??",
        "a?b",
        "*a*",
        # classes: members, ranges, negation (which also matches '/'), ']' and '-' as members, no escapes
        "[ab]",
        "[a-c].ts",
        "[!a]",
        "[^a]",
        "a[!x]b",
        "[]a]",
        "[a-]",
        "[\\]",
        "[é]",
        "[a-c-e]",
        # alternation, nested, with empty branches dropped
        "{a,b}",
        "*.{ts,pem}",
        "{a,{b,ab}}",
        "a{,b}",
        "{}",
        "{a,b/x}",
        # ** as a whole component, and as a plain * inside one
        "**",
        "**/a",
        "**/deep/**",
        "src/**",
        "src/**/c.ts",
        "**/vault/*",
        "a**",
        "**a",
        "src/**a",
        # anchored: a '/' inside, or a leading '/'
        "src/a.ts",
        "/a",
        "/src",
        "/vault/key.pem",
        "deep/b.ts",
        # a trailing '/': directories only
        "a/",
        "vault/",
        "/vault/",
        "src/deep/",
        "*/",
        # escapes
        "\\[a\\]",
        "\\{a,b\\}",
        "\\*",
        "a\\,b",
        "\\!a",
        "a\\\\b",
        "a\\/",
        # ripgrep trims trailing whitespace; a blank glob hides everything
        "a ",
        " ",
        "x\\ ",
        # rejected by ripgrep: every search fails, so everything is denied
        "[",
        "[z-a]",
        "{a",
        "a}",
        "a\\",
    ],
)
def test_each_construct_hides_what_ripgrep_hides(rg_path: str, glob: str) -> None:
    check(rg_path, TREE, [glob])


def test_a_directory_only_glob_asks_whether_the_path_is_a_directory(tmp_path: Path) -> None:
    deny = DenyGlobs(("vault/",))
    assert deny.denies("vault/key.pem") and deny.denies("docs/vault/key.pem")
    assert not deny.denies("vault") and deny.denies("vault", is_dir=True)
    (tmp_path / "vault").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "vault").write_text("a file, not a directory")
    check = deny.for_search(str(tmp_path), "vault")
    assert check is not None and check.root_denied()  # a search rooted in a denied directory does not run
    check = deny.for_search(str(tmp_path), "notes/vault")
    assert check is not None and not check.root_denied()


# --- generated globs on generated trees -------------------------------------------------------------------


def name_strategy() -> st.SearchStrategy[str]:
    generated = st.text(alphabet=NAME_CHARS, min_size=1, max_size=3).filter(lambda n: n not in (".", ".."))
    return st.one_of(st.sampled_from(NAMES), generated)


@st.composite
def trees(draw: st.DrawFn) -> set[str]:
    """3-14 files up to 4 deep; no path is both a file and a directory."""
    paths = draw(st.lists(st.lists(name_strategy(), min_size=1, max_size=4), min_size=3, max_size=14))
    files: set[tuple[str, ...]] = set()
    dirs: set[tuple[str, ...]] = set()
    for parts in paths:
        path = tuple(parts)
        prefixes = {path[:i] for i in range(1, len(path))}
        if path in dirs or path in files or prefixes & files:
            continue
        files.add(path)
        dirs |= prefixes
    return {"/".join(p) for p in files}


def weighted(*choices: tuple[int, st.SearchStrategy[str]]) -> st.SearchStrategy[str]:
    """One of the strategies, each drawn `weight` times as often (st.one_of would merge repeats)."""
    return st.sampled_from([s for weight, s in choices for _ in range(weight)]).flatmap(lambda s: s)


def literal(c: str) -> str:
    return "\\" + c if c in "[]{},*?\\!" else c


CLASS_MEMBERS = st.one_of(st.sampled_from(list("ab.é-]!^/\\")), st.sampled_from(["a-b", "a-c", "-a", "a-"]))


def classes() -> st.SearchStrategy[str]:
    negation = st.sampled_from(["", "", "!", "^"])
    members = st.lists(CLASS_MEMBERS, min_size=1, max_size=3).map("".join)
    return st.builds(lambda neg, body: f"[{neg}{body}]", negation, members)


def segments(names: Sequence[str]) -> st.SearchStrategy[str]:
    """One path component of a glob: names from the tree (escaped), literals, wildcards, classes,
    escapes, nested alternations."""
    name = st.sampled_from(sorted(names)).map(lambda name: "".join(map(literal, name)))
    atom = weighted(
        (3, name),
        (1, st.sampled_from(["a", "b", "ab", ".", "é", "-", " "])),
        (1, st.sampled_from(list(NAME_CHARS)).map(literal)),
        (2, st.sampled_from(["*", "?", "**", "*.", ".*"])),
        (1, classes()),
        (1, st.sampled_from(["\\a", "\\é", ""])),
    )
    return st.recursive(
        st.lists(atom, min_size=1, max_size=2).map("".join),
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map(lambda alts: "{" + ",".join(alts) + "}"),
            st.tuples(inner, inner).map("".join),
        ),
        max_leaves=4,
    )


@st.composite
def globs(draw: st.DrawFn, names: Sequence[str]) -> str:
    segment = segments(names)
    parts = draw(st.lists(weighted((4, segment), (1, st.just("**"))), min_size=1, max_size=2))
    lead = draw(st.sampled_from(["", "", "", "/", "**/"]))
    trail = draw(st.sampled_from(["", "", "", "/", "/**", "/*"]))
    return lead + "/".join(parts) + trail


@st.composite
def trees_and_globs(draw: st.DrawFn) -> tuple[set[str], list[str]]:
    """A tree, and 1-3 deny globs: mostly built from its names, sometimes any string of glob characters
    (which ripgrep often rejects)."""
    files = draw(trees())
    names = {part for f in files for part in f.split("/")}
    glob = weighted((9, globs(names)), (1, st.text(alphabet=GLOB_CHARS, min_size=1, max_size=8)))
    return files, draw(st.lists(glob, min_size=1, max_size=3))


@settings(
    max_examples=examples(200),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=trees_and_globs())
@example(case=({"a/b/c", "x"}, ["a[!x]b"]))  # a negated class matches '/' too
@example(case=({"a", "b/a/x"}, ["a/"]))  # directories only
@example(case=({"é", "ab"}, ["??"]))  # `?` is one byte
@example(case=({"a", "ab"}, ["a{,b}"]))  # empty alternatives are dropped
def test_generated_globs_hide_what_ripgrep_hides(rg_path: str, case: tuple[set[str], list[str]]) -> None:
    check(rg_path, *case)

"""What the tool definitions and the guidance say (docs/behaviour.md, "Glob" and "Grep")."""

from __future__ import annotations

from dsh_search import texts
from dsh_search.methods import lifecycle, mcp
from tests.support.fakes import make_app
from tests.support.upstream import case


@case("T1")
def test_glob_and_grep_are_listed_with_guidance_about_top_level_entries() -> None:
    app = make_app()
    names = [t["name"] for t in mcp.definitions(app)]
    assert names[:2] == ["glob", "grep"]
    prompt = lifecycle.instructions(app)
    assert "Use the glob tool" in prompt and "Use the grep tool" in prompt
    assert "sampled across top-level entries" in prompt and "sampled across top-level directories" not in prompt
    glob_tool = mcp.definitions(app)[0]
    assert "sampled across top-level entries" in glob_tool["description"]
    assert glob_tool["annotations"] == {"readOnlyHint": True}
    assert set(glob_tool["inputSchema"]["properties"]) == {"pattern", "path"}  # no host-only fields
    grep_tool = mcp.definitions(app)[1]
    assert set(grep_tool["inputSchema"]["properties"]) == {"pattern", "path", "include"}


@case("T6")
def test_with_sampling_off_the_texts_promise_the_modification_time_head() -> None:
    app = make_app(sampleOverCapGlobResults=False)
    prompt = lifecycle.instructions(app)
    assert "a larger one keeps the modification-time-ordered head" in prompt
    assert "sampled across" not in prompt
    description = mcp.definitions(app)[0]["description"]
    assert "a larger result returns the first 100 paths in modification-time order" in description


def test_guidance_and_descriptions_word_for_word() -> None:
    assert texts.glob_guidance(True) == (
        'Use the glob tool — not shell find — to discover files by path pattern. A pattern with no "/" matches '
        'basenames at any depth, so "*" matches every file in the tree rather than its top level. Results are '
        "files only, never directories, and include hidden and ignored files: a result that fits comes back in "
        "modification-time order, while a larger one is sampled across top-level entries, so it spans the tree "
        "instead of one subtree."
    )
    assert texts.glob_description(True, 100) == (
        "Find files whose paths match a glob pattern. Returns matching file paths — never directories — including "
        "hidden and ignored files (VCS metadata directories are excluded). Up to 100 paths come back in "
        "modification-time order; a larger result instead returns 100 paths sampled across top-level entries, "
        "says so, and reports where the complete sorted list was saved. This tool does not enumerate directory "
        "entries."
    )
    assert texts.GREP_GUIDANCE == (
        "Use the grep tool — not shell grep or rg — to search file contents. Use read on a matched file when you "
        "need surrounding context."
    )
    assert texts.grep_description(250) == (
        "Search file contents with a ripgrep regular expression. Returns matching lines with line numbers, grouped "
        "by file. Returns the first 250 matches inline; a capped result reports where the complete match list was "
        "saved. Use read on a matched file for surrounding context."
    )

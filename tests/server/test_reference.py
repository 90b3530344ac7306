"""docs/reference.md says what the code does: its generated blocks are what scripts/reference.py renders
from the method table, the error table, the configuration keys and the command-line parser."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from dsh_search.__main__ import _parser, key_help
from dsh_search.config import KEYS
from dsh_search.methods.registry import MethodTable
from dsh_search.wiring import METHODS

ROOT = Path(__file__).resolve().parents[2]


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference", ROOT / "scripts" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["reference"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


reference = load_generator()


def test_reference_md_is_what_the_generator_renders() -> None:
    current = (ROOT / "docs" / "reference.md").read_text()
    assert reference.render(current) == current, "docs/reference.md is out of date: run scripts/reference --write"


def test_every_method_has_an_example_and_every_example_a_method() -> None:
    names = [spec.name for spec in MethodTable(METHODS)]
    sections = {example.section for example in reference.EXAMPLES}
    assert set(names) <= sections, f"methods without an example: {set(names) - sections}"
    assert sections <= {*names, "errors"}


def test_every_key_says_what_it_means() -> None:
    for key in KEYS:
        assert key.help.strip().endswith("."), key.name
        assert key.default_description, key.name
    required = [key.name for key in KEYS if key.required]
    assert required == ["sampleOverCapGlobResults"]


def test_help_shows_meaning_default_and_the_required_flag() -> None:
    text = _parser().format_help()
    for key in KEYS:
        assert key.flag in text
    assert key_help(KEYS[0]).startswith("REQUIRED. ")
    glob_max = next(key for key in KEYS if key.name == "globMaxResults")
    assert key_help(glob_max) == (
        "Paths a glob shows inline; a larger result is cut to this many and saved whole in the spill store. "
        "[globMaxResults: a positive integer; default: 100]"
    )


def test_placeholders_match_what_varies_and_nothing_else() -> None:
    matches = reference.matches
    assert matches("<version>", "0.1.0") and matches("<anything>", {"a": [1]})
    assert matches("stored at: <dir>/x.txt. Done", "stored at: /tmp/s/x.txt. Done")
    assert not matches("stored at: <dir>/x.txt. Done", "stored at: /tmp/s/y.txt. Done")
    assert matches({"a": 1, "b": None}, {"a": 1, "b": None})
    assert not matches({"a": 1}, {"a": 1, "b": 2}) and not matches({"a": 1}, {"a": True})
    assert not matches([1, 2], [1]) and not matches(False, 0)

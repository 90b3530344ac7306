"""Configuration validation: upstream's rules and order, one-line messages naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh_search.config import KEYS, ConfigError, build, load_file, parse_flag_value

BASE = {"sampleOverCapGlobResults": False}


def test_defaults() -> None:
    cfg = build(BASE, environ={"XDG_STATE_HOME": "/state"})
    assert cfg.glob_max_results == 100 and cfg.grep_max_matches == 250 and cfg.grep_max_line_bytes == 2000
    assert cfg.search_meta_max_bytes == 65536 and cfg.raw_output_max_bytes == 20_000_000
    assert cfg.timeout_ms == 30000 and cfg.grace_ms == 3000 and cfg.stderr_max_bytes == 65536
    assert cfg.max_message_bytes == 67108864 and cfg.spill_max_bytes == 1 << 30
    assert cfg.spill_max_age_seconds == 604800 and cfg.scrollback_lines == 10000
    assert cfg.scrollback_max_bytes == 4194304 and cfg.terminal_search_max_result_bytes == 262144
    assert cfg.spill_dir == "/state/dsh-search/spill"
    assert cfg.spill_retrieval_hint == "Use read with offset/limit, or grep this path to search within it."
    assert cfg.allowed_roots == () and cfg.deny_globs == () and cfg.max_concurrent_searches >= 1
    assert set(cfg.as_json()) == {k.name for k in KEYS}


def test_spill_dir_default_without_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/u")
    assert build(BASE, environ={}).spill_dir == "/home/u/.local/state/dsh-search/spill"


def test_sampling_flag_is_required() -> None:
    with pytest.raises(ConfigError, match=r"^dsh-search: sampleOverCapGlobResults is required \(true or false\)$"):
        build({})
    with pytest.raises(ConfigError, match="sampleOverCapGlobResults must be true or false"):
        build({"sampleOverCapGlobResults": "yes"})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("globMaxResults", 0),
        ("grepMaxMatches", -1),
        ("grepMaxLineBytes", 1.5),
        ("rawOutputMaxBytes", 0),
        ("graceMs", 0),
        ("stderrMaxBytes", -1),
        ("timeoutMs", -100),
        ("searchMetaMaxBytes", True),
        ("maxConcurrentSearches", "4"),
        ("maxMessageBytes", [1]),
        ("scrollbackLines", 0),
    ],
)
def test_positive_integer_keys(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as err:
        build({**BASE, key: value})
    assert str(err.value) == f"dsh-search: {key} must be a positive integer"


def test_integral_floats_count_as_integers() -> None:
    assert build({**BASE, "globMaxResults": 3.0}).glob_max_results == 3


def test_grace_upper_bound() -> None:
    assert build({**BASE, "graceMs": 2147483647}).grace_ms == 2147483647
    with pytest.raises(ConfigError) as err:
        build({**BASE, "graceMs": 2147483648})
    assert str(err.value) == "dsh-search: graceMs must be no greater than 2147483647"


def test_check_order_follows_upstream() -> None:
    with pytest.raises(ConfigError, match="globMaxResults"):
        build({**BASE, "timeoutMs": 0, "globMaxResults": 0})


def test_unknown_key_and_bad_lists() -> None:
    with pytest.raises(ConfigError, match='unknown configuration key "nope"'):
        build({**BASE, "nope": 1})
    with pytest.raises(ConfigError, match="denyGlobs must be a list of non-empty strings"):
        build({**BASE, "denyGlobs": "*.pem"})


def test_config_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"sampleOverCapGlobResults": True, "globMaxResults": 7}))
    assert build(load_file(str(path))).glob_max_results == 7
    path.write_text("{not json")
    with pytest.raises(ConfigError, match=f"config file {path} is not valid JSON"):
        load_file(str(path))
    path.write_text("[1]")
    with pytest.raises(ConfigError, match="must hold a JSON object"):
        load_file(str(path))
    path.write_text('{"bogus": 1}')
    with pytest.raises(ConfigError, match=f'unknown configuration key "bogus" in {path}'):
        load_file(str(path))
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_file(str(tmp_path / "missing.json"))


def test_flag_values() -> None:
    key = {k.name: k for k in KEYS}
    assert parse_flag_value(key["sampleOverCapGlobResults"], "true") is True
    assert parse_flag_value(key["globMaxResults"], "12") == 12
    with pytest.raises(ConfigError, match="globMaxResults must be a positive integer"):
        parse_flag_value(key["globMaxResults"], "1.5")
    with pytest.raises(ConfigError, match="sampleOverCapGlobResults must be true or false"):
        parse_flag_value(key["sampleOverCapGlobResults"], "1")
    assert key["allowedRoots"].flag == "--allowed-root" and key["globMaxResults"].flag == "--glob-max-results"


def test_the_grep_profile_is_upstream_unless_asked_and_one_of_two() -> None:
    from dsh_search.config import GREP_PROFILES
    from dsh_search.engine.request import PROFILES

    assert GREP_PROFILES == PROFILES
    assert build(BASE).grep_profile == "upstream"
    assert build({**BASE, "grepProfile": "extended"}).grep_profile == "extended"
    with pytest.raises(ConfigError) as err:
        build({**BASE, "grepProfile": "claude"})
    assert str(err.value) == "dsh-search: grepProfile must be one of upstream, extended"

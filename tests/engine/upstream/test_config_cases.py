"""Configuration: defaults and validation with upstream's messages (docs/behaviour.md, "Caps and configuration")."""

from __future__ import annotations

import pytest

from dsh_search import config as config_mod
from dsh_search.config import ConfigError
from tests.support.fakes import make_app
from tests.support.upstream import case


@case("T4", "T5")
def test_timeout_ms_reaches_the_config_and_defaults_to_30_s() -> None:
    assert make_app(timeoutMs=5000).config.timeout_ms == 5000
    assert make_app().config.timeout_ms == 30000


@case("T7")
def test_the_sampling_flag_is_required() -> None:
    with pytest.raises(ConfigError, match="sampleOverCapGlobResults"):
        config_mod.build({})
    assert config_mod.build({"sampleOverCapGlobResults": False}).glob_max_results == 100


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
    ],
    ids=["T8", "T9", "T10", "T11", "T12", "T13", "T14"],
)
def test_caps_and_times_must_be_positive_integers(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as err:
        config_mod.build({"sampleOverCapGlobResults": True, key: value})
    assert str(err.value) == f"dsh-search: {key} must be a positive integer"


@case("T15")
def test_grace_ms_is_bounded_by_what_a_timer_can_wait() -> None:
    with pytest.raises(ConfigError) as err:
        config_mod.build({"sampleOverCapGlobResults": True, "graceMs": 2147483648})
    assert str(err.value) == "dsh-search: graceMs must be no greater than 2147483647"

"""Configuration: keys, defaults and validation (SPEC §6), from a JSON file and command-line flags.

Validation follows upstream's rules and check order, with the product name in the messages:
`dsh-search: <key> must be a positive integer`. Every failure is a `ConfigError` whose message is the
one stderr line the CLI prints before exiting with status 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dsh_search import texts

MAX_GRACE_MS = 2_147_483_647


class ConfigError(Exception):
    """An invalid configuration; `str(err)` is the complete one-line message."""


@dataclass(frozen=True)
class Key:
    name: str
    kind: str  # "bool" | "posint" | "str" | "list"
    default: Any = None

    @property
    def flag(self) -> str:
        """The command-line flag: camelCase → --kebab-case (lists use the singular, see LIST_FLAGS)."""
        if self.name in LIST_FLAGS:
            return LIST_FLAGS[self.name]
        return "--" + "".join("-" + c.lower() if c.isupper() else c for c in self.name)


LIST_FLAGS = {"allowedRoots": "--allowed-root", "denyGlobs": "--deny-glob"}


def default_spill_dir(environ: Mapping[str, str]) -> str:
    state = environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "dsh-search", "spill")


# Upstream's keys first, in upstream's check order, then the daemon's own keys.
KEYS: tuple[Key, ...] = (
    Key("sampleOverCapGlobResults", "bool"),
    Key("globMaxResults", "posint", 100),
    Key("grepMaxMatches", "posint", 250),
    Key("grepMaxLineBytes", "posint", 2000),
    Key("searchMetaMaxBytes", "posint", 65536),
    Key("rawOutputMaxBytes", "posint", 20_000_000),
    Key("graceMs", "posint", 3000),
    Key("stderrMaxBytes", "posint", 65536),
    Key("timeoutMs", "posint", 30000),
    Key("maxConcurrentSearches", "posint", None),  # default: CPU count
    Key("rgMemoryMaxBytes", "posint", None),  # default: rg_memory_default(rawOutputMaxBytes)
    Key("maxMessageBytes", "posint", 67_108_864),
    Key("spillDir", "str", None),  # default: default_spill_dir()
    Key("spillMaxBytes", "posint", 1 << 30),
    Key("spillMaxAgeSeconds", "posint", 7 * 24 * 3600),
    Key("spillRetrievalHint", "str", texts.DEFAULT_RETRIEVAL_HINT),
    Key("scrollbackLines", "posint", 10000),
    Key("scrollbackMaxBytes", "posint", 4_194_304),
    Key("scrollbackTotalMaxBytes", "posint", 268_435_456),
    Key("terminalSearchMaxResultBytes", "posint", 262_144),
    Key("terminalSearch", "str", "auto"),  # auto | always | never: when tools/list shows terminal_search
    Key("allowedRoots", "list", ()),
    Key("denyGlobs", "list", ()),
)
KEYS_BY_NAME = {k.name: k for k in KEYS}
# terminalSearch: auto lists the MCP tool once a scrollback exists (the host appends one), always from the
# start, never not at all (the native method is served whatever the mode).
TERMINAL_SEARCH_MODES = ("auto", "always", "never")


@dataclass(frozen=True)
class Config:
    sample_over_cap_glob_results: bool
    glob_max_results: int
    grep_max_matches: int
    grep_max_line_bytes: int
    search_meta_max_bytes: int
    raw_output_max_bytes: int
    grace_ms: int
    stderr_max_bytes: int
    timeout_ms: int
    max_concurrent_searches: int
    rg_memory_max_bytes: int
    max_message_bytes: int
    spill_dir: str
    spill_max_bytes: int
    spill_max_age_seconds: int
    spill_retrieval_hint: str
    scrollback_lines: int
    scrollback_max_bytes: int
    scrollback_total_max_bytes: int
    terminal_search_max_result_bytes: int
    terminal_search: str
    allowed_roots: tuple[str, ...]
    deny_globs: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        """The effective configuration under its camelCase keys, as `initialize` and `--check` show it."""
        out: dict[str, Any] = {}
        for key in KEYS:
            value = getattr(self, _attr(key.name))
            out[key.name] = list(value) if isinstance(value, tuple) else value
        return out


# An rg child's address space: what ripgrep needs to run with its default 12 threads (measured: ~7 MiB
# per thread, ~120 MiB at 12), plus room for three times the raw-output cap. ripgrep buffers each file's
# output while it searches in parallel; a buffer larger than that could only end as an overflow anyway.
RG_MEMORY_BASE = 256 << 20


def rg_memory_default(raw_output_max_bytes: int) -> int:
    return RG_MEMORY_BASE + 3 * raw_output_max_bytes


def _posint_default(key: Key, resolved: Mapping[str, Any]) -> Any:
    if key.name == "maxConcurrentSearches":
        return os.cpu_count() or 1
    if key.name == "rgMemoryMaxBytes":
        return rg_memory_default(resolved["raw_output_max_bytes"])
    return key.default


def _attr(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def _is_positive_integer(value: Any) -> bool:
    # JSON numbers, as upstream's Number.isInteger(v) && v >= 1: 3.0 counts, 1.5, 0, -1 and true do not.
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 1
    return isinstance(value, float) and value.is_integer() and value >= 1


def build(values: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Config:
    """Validate raw values (already merged: file, then flags) and fill defaults."""
    environ = os.environ if environ is None else environ
    for name in values:
        if name not in KEYS_BY_NAME:
            raise ConfigError(f'dsh-search: unknown configuration key "{name}"')
    resolved: dict[str, Any] = {}
    for key in KEYS:
        value = values.get(key.name)
        if key.kind == "bool":
            if value is None:
                raise ConfigError(f"dsh-search: {key.name} is required (true or false)")
            if not isinstance(value, bool):
                raise ConfigError(f"dsh-search: {key.name} must be true or false")
        elif key.kind == "posint":
            if value is None:
                value = _posint_default(key, resolved)
            if not _is_positive_integer(value):
                raise ConfigError(f"dsh-search: {key.name} must be a positive integer")
            value = int(value)
            if key.name == "graceMs" and value > MAX_GRACE_MS:
                raise ConfigError(f"dsh-search: graceMs must be no greater than {MAX_GRACE_MS}")
        elif key.kind == "str":
            if value is None:
                value = default_spill_dir(environ) if key.name == "spillDir" else key.default
            if not isinstance(value, str) or not value.strip() or "\0" in value:
                raise ConfigError(f"dsh-search: {key.name} must be a non-empty string")
            if key.name == "spillDir":
                value = os.path.abspath(os.path.expanduser(value))
            if key.name == "terminalSearch" and value not in TERMINAL_SEARCH_MODES:
                raise ConfigError(f"dsh-search: terminalSearch must be one of {', '.join(TERMINAL_SEARCH_MODES)}")
        else:  # list
            if value is None:
                value = ()
            if not isinstance(value, list | tuple) or not all(
                isinstance(v, str) and v.strip() and "\0" not in v for v in value
            ):
                raise ConfigError(f"dsh-search: {key.name} must be a list of non-empty strings")
            if key.name == "allowedRoots":
                value = tuple(os.path.realpath(os.path.expanduser(v)) for v in value)
            else:
                value = tuple(value)
        resolved[_attr(key.name)] = value
    return Config(**resolved)


def load_file(path: str) -> dict[str, Any]:
    """Read a `--config` file: a JSON object whose keys are those of SPEC §6."""
    import orjson

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConfigError(f"dsh-search: cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"dsh-search: config file {path} is not valid JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise ConfigError(f"dsh-search: config file {path} must hold a JSON object")
    for name in parsed:
        if name not in KEYS_BY_NAME:
            raise ConfigError(f'dsh-search: unknown configuration key "{name}" in {path}')
    return parsed


def parse_flag_value(key: Key, raw: str) -> Any:
    """Turn one command-line flag's text into the JSON-typed value the validator expects."""
    if key.kind == "bool":
        if raw in ("true", "false"):
            return raw == "true"
        raise ConfigError(f"dsh-search: {key.name} must be true or false")
    if key.kind == "posint":
        text = raw.strip()
        if not text.isascii() or not text.isdigit():
            raise ConfigError(f"dsh-search: {key.name} must be a positive integer")
        return int(text)
    return raw

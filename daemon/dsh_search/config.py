"""Configuration: keys, defaults and validation, from a JSON file and command-line flags.

`KEYS` is the one table of keys: each with its type, default, bounds and a help text that says what it
means. `--help`, `--check`, `initialize` and docs/reference.md are all rendered from it.

Validation follows upstream's rules and check order, with the product name in the messages:
`dsh-search: <key> must be a positive integer`. Every failure is a `ConfigError` whose message is the
one stderr line the CLI prints before exiting with status 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from dsh_search import osdep, texts

MAX_GRACE_MS = 2_147_483_647


class ConfigError(Exception):
    """An invalid configuration; `str(err)` is the complete one-line message."""


class Key(NamedTuple):
    name: str
    kind: str  # "bool" | "posint" | "str" | "list"
    default: Any = None
    help: str = ""  # what the key means, for --help and docs/reference.md
    default_text: str | None = None  # how a default computed at start-up is worded
    maximum: int | None = None  # a posint's upper bound, when it has one

    @property
    def flag(self) -> str:
        """The command-line flag: camelCase → --kebab-case (lists use the singular, see LIST_FLAGS)."""
        if self.name in LIST_FLAGS:
            return LIST_FLAGS[self.name]
        return "--" + "".join("-" + c.lower() if c.isupper() else c for c in self.name)

    @property
    def required(self) -> bool:
        """A key without a default must be given (by --config or its flag)."""
        return self.kind == "bool" and self.default is None

    @property
    def default_description(self) -> str:
        """The default as --help and the reference show it."""
        if self.required:
            return "none (required)"
        if self.default_text is not None:
            return self.default_text
        if self.kind == "list":
            return "empty"
        if isinstance(self.default, int) and not isinstance(self.default, bool):
            return str(self.default)
        return f'"{self.default}"' if self.kind == "str" else str(self.default).lower()

    @property
    def values(self) -> str:
        """The values the key accepts."""
        text = {
            "bool": "true or false",
            "posint": "a positive integer",
            "str": "a non-empty string",
            "list": "a list of non-empty strings",
        }[self.kind]
        return text if self.maximum is None else f"{text}, at most {self.maximum}"


LIST_FLAGS = {"allowedRoots": "--allowed-root", "denyGlobs": "--deny-glob"}


def default_spill_dir(environ: Mapping[str, str]) -> str:
    state = osdep.state_home(environ)
    return os.path.join(state, "dsh-search", "spill")


def default_index_dir(environ: Mapping[str, str]) -> str:
    cache = osdep.cache_home(environ)
    return os.path.join(cache, "dsh-search", "index")


_DIRECTORY_DEFAULTS = {"spillDir": default_spill_dir, "indexDir": default_index_dir}


# Upstream's keys first, in upstream's check order, then the daemon's own keys.
# The index's modes (the key `index`), each with what it does. The one table: the manager, the flag's
# help and index/status's schema read it.
INDEX_MODES: dict[str, str] = {
    "auto": "builds it in the background once a walk of the workspace was slow (or at the first search when "
    "an index of it is on disk), on Linux and local filesystems, and searches walk until it is ready",
    "on": "builds it for the workspace of the first search (or index/status), whatever the heuristics say, "
    "and searches walk until it is ready",
    "off": "never builds one",
}

KEYS: tuple[Key, ...] = (
    Key(
        "sampleOverCapGlobResults",
        "bool",
        help="How a glob result over globMaxResults is cut: true samples the paths round-robin across the "
        "top-level entries below the search root, false keeps the oldest globMaxResults paths.",
    ),
    Key(
        "globMaxResults",
        "posint",
        100,
        help="Paths a glob shows inline; a larger result is cut to this many and saved whole in the spill store.",
    ),
    Key(
        "grepMaxMatches",
        "posint",
        250,
        help="Matches a grep shows inline; a larger result is cut to this many and saved whole in the spill store.",
    ),
    Key(
        "grepMaxLineBytes",
        "posint",
        2000,
        help="UTF-8 bytes of a matched line that grep shows; a longer line is cut on a character boundary and "
        'marked " (line truncated)".',
    ),
    Key(
        "searchMetaMaxBytes",
        "posint",
        65536,
        help="Size bound of a search result's meta (compact JSON); trailing files or paths are dropped, never "
        "the last one, and meta.truncated is set.",
    ),
    Key(
        "rawOutputMaxBytes",
        "posint",
        20_000_000,
        help="Bound on ripgrep's raw output for one search; past it ripgrep is stopped and the search fails "
        "with SEARCH_RAW_OUTPUT_OVERFLOW.",
    ),
    Key(
        "graceMs",
        "posint",
        3000,
        maximum=MAX_GRACE_MS,
        help="Milliseconds between SIGTERM and SIGKILL when a ripgrep process group is stopped (cancellation, "
        "timeout, exit); the daemon exits within graceMs + 1 s.",
    ),
    Key(
        "stderrMaxBytes",
        "posint",
        65536,
        help="Tail of ripgrep's stderr kept for error texts; an excerpt that lost its head ends "
        '" [stderr truncated]".',
    ),
    Key(
        "timeoutMs",
        "posint",
        30000,
        help="Budget of one search in milliseconds, the wait for a search slot included; past it the search is "
        "stopped and answered SEARCH_ABORTED.",
    ),
    Key(
        "maxConcurrentSearches",
        "posint",
        None,
        default_text="the CPU count",
        help="ripgrep processes running at once; further searches wait for a slot.",
    ),
    Key(
        "rgMemoryMaxBytes",
        "posint",
        None,
        default_text="256 MiB + 3 × rawOutputMaxBytes",
        help="Address-space limit of each ripgrep process (Linux); a ripgrep that reaches it is answered as a "
        "raw-output overflow.",
    ),
    Key(
        "maxMessageBytes",
        "posint",
        67_108_864,
        help="Largest incoming JSON-RPC message; a larger one is answered -32600 with id null and skipped.",
    ),
    Key(
        "spillDir",
        "str",
        None,
        default_text="$XDG_STATE_HOME/dsh-search/spill, else ~/.local/state/dsh-search/spill "
        "(Windows: %LOCALAPPDATA%\\dsh-search\\spill)",
        help="Directory of the spill store, where the complete results of capped searches are saved (created 0700).",
    ),
    Key(
        "spillMaxBytes",
        "posint",
        1 << 30,
        help="Total size of the spill store; after each save and at start the oldest artifacts are removed "
        "until it fits (never the one just saved).",
    ),
    Key(
        "spillMaxAgeSeconds",
        "posint",
        7 * 24 * 3600,
        help="Age (by modification time) past which spill artifacts are removed, after each save and at start.",
    ),
    Key(
        "spillRetrievalHint",
        "str",
        texts.DEFAULT_RETRIEVAL_HINT,
        default_text=f'"{texts.DEFAULT_RETRIEVAL_HINT}"; with remote: "{texts.REMOTE_RETRIEVAL_HINT}"',
        help="The sentence after the locator in a capped search's footer, telling the model how to read "
        "the saved result.",
    ),
    Key("scrollbackLines", "posint", 10000, help="Newest lines of output kept per terminal session."),
    Key(
        "scrollbackMaxBytes",
        "posint",
        4_194_304,
        help="Newest UTF-8 bytes of output kept per terminal session, after the line limit.",
    ),
    Key(
        "scrollbackTotalMaxBytes",
        "posint",
        268_435_456,
        help="Bound on the scrollback of all terminal sessions together; past it the least recently used "
        "sessions are evicted whole.",
    ),
    Key(
        "terminalSearchMaxResultBytes",
        "posint",
        262_144,
        help="Size bound of a terminal_search text; whole match lines are dropped from the end of the page, "
        "never the summary line.",
    ),
    Key(
        "terminalSearch",
        "str",
        "auto",
        help="When tools/list shows terminal_search: auto, once a scrollback exists (announced with "
        "notifications/tools/list_changed); always; never. The native method is served in every mode.",
    ),
    Key(
        "remote",
        "bool",
        False,
        help="Whether the daemon runs on another machine than its host and is started through a channel (ssh, "
        "docker exec, kubectl exec, wsl.exe): the host cannot open the daemon's paths, so a capped search's "
        "footer says where the saved result can be read (the default of spillRetrievalHint) and readTool "
        "defaults to true; and at stdin EOF, while searches still run, the daemon writes a notification "
        "($/dsh-search/draining) once a second, so that a channel whose host has died notices it and closes, "
        "which stops them. The clients pass it when they are given a launcher (docs/hosts.md).",
    ),
    Key(
        "readTool",
        "bool",
        False,
        default_text="false; true with remote",
        help="Whether tools/list offers read, a file reader with numbered lines and offset/limit paging, "
        "confined as searches are (spill artifacts included), for hosts that have no reader of their own: "
        'the search tools\' texts tell the model to "use read". The native method is served either way.',
    ),
    Key(
        "grepProfile",
        "str",
        "upstream",
        help="The grep tool's parameters: upstream, upstream's three (pattern, path, include) and its texts "
        "word for word; extended, also ignoreCase, smartCase, fixedStrings, before, after, context, "
        "outputMode (content, files, count), multiline, exclude, offset and limit, each answered as ripgrep "
        'answers its flag (docs/behaviour.md, "The extended grep profile").',
    ),
    Key(
        "index",
        "str",
        "auto",
        help="The workspace index, which answers glob and grep from a warm, always-fresh index of the "
        "workspace directory (the same answers as a walk, byte for byte): "
        + "; ".join(f"{mode} {meaning}" for mode, meaning in INDEX_MODES.items())
        + ".",
    ),
    Key(
        "indexDir",
        "str",
        None,
        default_text="$XDG_CACHE_HOME/dsh-search/index, else ~/.cache/dsh-search/index "
        "(Windows: %LOCALAPPDATA%\\dsh-search\\index)",
        help="Directory of the workspace indexes (one subdirectory per workspace, created 0700); daemons "
        "may share it. Deleting it while a daemon runs loses nothing: searches walk and the index is built "
        "again.",
    ),
    Key(
        "indexMaxBytes",
        "posint",
        4 << 30,
        help="Total size of the workspace indexes under indexDir: when an index is built past it, the least "
        "recently used workspaces' indexes are removed until it fits (never one a daemon is using).",
    ),
    Key(
        "allowedRoots",
        "list",
        (),
        help="Directories searches are confined to (symlinks resolved); a cwd or path outside every one is "
        "INVALID_ARGS. Empty: no confinement.",
    ),
    Key(
        "mcpResult",
        "str",
        "auto",
        help="What a tool result carries through MCP: structured, the tool's text and, with an outputSchema per "
        "tool, a structuredContent of the same text and a few counts; text, the text alone (no outputSchema); "
        "full, the native result as structuredContent under its own outputSchema, and a capped result's "
        "resource_link; auto, structured for every client except those whose framework shows its model more "
        "than the text, which get text (LangChain.js, and fastmcp's client as pydantic-ai uses it).",
    ),
    Key(
        "mcpConfine",
        "bool",
        True,
        help="Whether a tool called through MCP (tools/call) is confined to what the client shared: its roots, "
        "else the workspace (--workdir or the server's directory), plus a cwd the host passes in _meta and the "
        "spill directory. false: anywhere allowedRoots permits, as the native methods.",
    ),
    Key(
        "denyGlobs",
        "list",
        (),
        help="Globs (ripgrep --glob syntax) of files that glob and grep treat as absent, e.g. .env* or *.pem, "
        "whatever name reaches them.",
    ),
)
KEYS_BY_NAME = {k.name: k for k in KEYS}
TERMINAL_SEARCH_MODES = ("auto", "always", "never")
GREP_PROFILES = ("upstream", "extended")  # engine/request.py PROFILES: which grep parameters a model sees
MCP_RESULT_MODES = ("auto", "structured", "text", "full")


class Config(NamedTuple):
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
    remote: bool
    read_tool: bool
    grep_profile: str
    index_mode: str  # the key `index`
    index_dir: str
    index_max_bytes: int
    allowed_roots: tuple[str, ...]
    mcp_result: str
    mcp_confine: bool
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


# Keys whose attribute name would shadow a tuple method.
_ATTRS = {"index": "index_mode"}


def _attr(name: str) -> str:
    return _ATTRS.get(name) or "".join("_" + c.lower() if c.isupper() else c for c in name)


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
                value = key.default
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
            if key.maximum is not None and value > key.maximum:
                raise ConfigError(f"dsh-search: {key.name} must be no greater than {key.maximum}")
        elif key.kind == "str":
            if value is None:
                default = _DIRECTORY_DEFAULTS.get(key.name)
                value = default(environ) if default is not None else key.default
            if not isinstance(value, str) or not value.strip() or "\0" in value:
                raise ConfigError(f"dsh-search: {key.name} must be a non-empty string")
            if key.name in _DIRECTORY_DEFAULTS:
                value = os.path.abspath(os.path.expanduser(value))
            if key.name == "terminalSearch" and value not in TERMINAL_SEARCH_MODES:
                raise ConfigError(f"dsh-search: terminalSearch must be one of {', '.join(TERMINAL_SEARCH_MODES)}")
            if key.name == "grepProfile" and value not in GREP_PROFILES:
                raise ConfigError(f"dsh-search: grepProfile must be one of {', '.join(GREP_PROFILES)}")
            if key.name == "mcpResult" and value not in MCP_RESULT_MODES:
                raise ConfigError(f"dsh-search: mcpResult must be one of {', '.join(MCP_RESULT_MODES)}")
            if key.name == "index" and value not in INDEX_MODES:
                raise ConfigError(f"dsh-search: index must be one of {', '.join(INDEX_MODES)}")
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
    if resolved["remote"]:
        # The defaults of a daemon its host reaches through a channel: the host cannot open its paths.
        if values.get("spillRetrievalHint") is None:
            resolved["spill_retrieval_hint"] = texts.REMOTE_RETRIEVAL_HINT
        if values.get("readTool") is None:
            resolved["read_tool"] = True
    return Config(**resolved)


def load_file(path: str) -> dict[str, Any]:
    """Read a `--config` file: a JSON object whose keys are those of `KEYS`."""
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

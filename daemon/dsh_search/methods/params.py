"""Check a method's params against the JSON Schema it advertises (type and required only).

The same schema objects are published by `tools/list` and `rpc.discover`, so what a caller is told
and what is enforced cannot drift apart. Objects are open, as upstream's: unknown keys are ignored.
Messages follow upstream's registry: `invalid arguments: missing required property "pattern"` and
`invalid arguments: "pattern" must be a string`, several joined by "; ".
"""

from __future__ import annotations

from typing import Any

from dsh_search import texts
from dsh_search.engine.failures import invalid_args

_TYPE_NAMES = {"string": "a string", "boolean": "a boolean", "integer": "an integer", "object": "an object"}


def _has_type(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if kind == "object":
        return isinstance(value, dict)
    raise AssertionError(f"unsupported schema type {kind}")


def check(schema: dict[str, Any], params: Any, *, wellformed: bool = True) -> dict[str, Any]:
    """Return params as a dict (integers normalised) or raise INVALID_ARGS.

    With `wellformed`, a string holding a lone UTF-16 surrogate (JSON allows `"\\ud800"`) has it
    replaced by U+FFFD, as a JavaScript host encodes such a string for the operating system: every
    later step (paths, argv, hashing, file names) then sees valid Unicode. Methods that join surrogate
    halves across calls themselves (scrollback/append) or refuse them with their own message
    (terminal_search) opt out.
    """
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise invalid_args(texts.invalid_arguments(["params must be an object"]))
    required = schema.get("required", ())
    violations: list[str] = []
    for name, prop in schema["properties"].items():
        if name not in params:
            if name in required:
                violations.append(texts.missing_property(name))
            continue
        if not _has_type(prop["type"], params[name]):
            violations.append(texts.must_be_type(name, _TYPE_NAMES[prop["type"]]))
    if violations:
        raise invalid_args(texts.invalid_arguments(violations))
    out = dict(params)
    for name, prop in schema["properties"].items():
        if name not in out:
            continue
        if prop["type"] == "integer":
            out[name] = int(out[name])
        elif prop["type"] == "string" and wellformed:
            out[name] = wellformed_text(out[name])
    return out


def wellformed_text(value: str) -> str:
    """`value` with each lone surrogate replaced by U+FFFD (pairs, if any, joined)."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return value


def object_schema(properties: dict[str, dict[str, Any]], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}

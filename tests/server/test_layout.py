"""The layout keeps its promises: the sans-IO modules touch no IO, and every method is listed once."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from dsh_search.methods.context import Context
from dsh_search.methods.registry import MethodTable
from dsh_search.wiring import METHODS

PACKAGE = Path(importlib.util.find_spec("dsh_search").origin).parent  # type: ignore[arg-type,union-attr]

# Bytes or values in, values out: no process, file, clock-driven or concurrent machinery.
SANS_IO = [
    "transport/framing.py",
    "transport/jsonrpc.py",
    "methods/era.py",
    "methods/errors.py",
    "methods/params.py",
    "engine/failures.py",
    "engine/globsyntax.py",
    "engine/jscompat.py",
    "engine/presentation.py",
    "engine/request.py",
    "engine/grep/json_records.py",
    "engine/grep/page.py",
    "engine/grep/standard_parse.py",
    "engine/sampling.py",
    "store/scrollback.py",
    "index/query/syntax.py",
    "index/query/formula.py",
    "index/query/analysis.py",
    "index/query/plan.py",
    "index/files.py",
    "index/status.py",
    "index/globlist.py",
    "texts.py",
]
FORBIDDEN = {"os", "asyncio", "threading", "subprocess", "socket", "select", "selectors", "signal", "io", "time"}


def is_module(dotted: str) -> bool:
    """Whether `dsh_search.a.b` names a module (a file) of this package."""
    relative = Path(*dotted.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").is_file()


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, anywhere in it (`from p import m` counts m when m is a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(
                f"{node.module}.{alias.name}" for alias in node.names if is_module(f"{node.module}.{alias.name}")
            )
    return names


def test_sans_io_modules_import_no_io() -> None:
    sans_io_modules = {"dsh_search." + p.removesuffix(".py").replace("/", ".") for p in SANS_IO}
    for relative in SANS_IO:
        for name in imported_modules(PACKAGE / relative):
            assert name.split(".")[0] not in FORBIDDEN, f"{relative} imports {name}"
            if name.startswith("dsh_search.") and is_module(name):
                assert name in sans_io_modules, f"{relative} imports {name}, which is not sans IO"


def test_every_method_is_listed_once_and_tools_come_in_order() -> None:
    table = MethodTable[Context](METHODS)
    names = [spec.name for spec in table]
    assert len(names) == len(set(names))
    assert [spec.name for spec in table.tools()] == ["glob", "grep", "terminal_search", "read"]
    assert {"initialize", "ping", "shutdown", "exit", "rpc.discover", "tools/list", "tools/call", "spill/read"} <= set(
        names
    )


def test_no_module_registers_by_import() -> None:
    """Registration is the explicit list in wiring.py: no module-level registry is left to fill."""
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text()
        assert "REGISTRY" not in source and "@method(" not in source, path


# --- a search's parameters travel as one value (engine/request.py) ------------------------------------------

# The modules below the method faces that a query passes through, or could: the engine and the index.
# Pure readers of a pattern string (the index's query analysis) and the terminal search (not glob or
# grep) take strings of their own; the peer protocol decodes the wire.
BELOW_THE_FACE = ["engine", "index"]
NOT_CARRIERS = {"engine/terminal.py", "engine/request.py", "index/peers.py"}
NOT_CARRIER_DIRS = ("index/query/",)


def _grep_parameters() -> tuple[set[str], set[str]]:
    """(names a parameter may not have below the face, keys a dict may not be read with there)."""
    from dsh_search.engine.request import HOST_FIELDS, GlobQuery, GrepQuery, wire_name

    fields = {f for f in (*GrepQuery._fields, *GlobQuery._fields) if f not in HOST_FIELDS}
    keys = fields | {wire_name(f) for f in fields}
    # `path`, `offset` and `limit` name other things too (a file, a page of a file, a lookup's bound).
    return fields - {"path", "offset", "limit"}, keys - {"path"}


def _carriers() -> list[Path]:
    found = []
    for top in BELOW_THE_FACE:
        for path in sorted((PACKAGE / top).rglob("*.py")):
            relative = str(path.relative_to(PACKAGE))
            if relative not in NOT_CARRIERS and not relative.startswith(NOT_CARRIER_DIRS):
                found.append(path)
    return found


def grep_parameter_leaks(path: Path) -> list[str]:
    """Where a module below the face reads a search parameter from a dict, takes one as a parameter of its
    own, or builds a query value by position."""
    names, keys = _grep_parameters()
    leaks = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in keys:
            leaks.append(f"line {node.lineno}: [{node.slice.value!r}]")
        elif isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("get", "pop")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in keys
            ):
                leaks.append(f"line {node.lineno}: .{func.attr}({node.args[0].value!r})")
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in ("GrepQuery", "GlobQuery") and node.args:
                leaks.append(f"line {node.lineno}: {name}(…) by position")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = node.args
            for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
                if arg.arg in names:
                    leaks.append(f"line {node.lineno}: a parameter named {arg.arg!r}")
    return leaks


def test_search_parameters_travel_as_one_value_below_the_method_face() -> None:
    """glob's and grep's parameters are read from the call once, at the face (methods/tools.py), into a
    GlobQuery or GrepQuery; below it they travel inside that value (index/peers.py spells it for the
    wire), so adding a parameter cannot miss a layer."""
    leaks = {str(p.relative_to(PACKAGE)): found for p in _carriers() if (found := grep_parameter_leaks(p))}
    assert not leaks, leaks


def test_the_leak_check_sees_each_kind_of_leak(tmp_path: Path) -> None:
    sample = tmp_path / "leaky.py"
    sample.write_text(
        "def grep(cwd, pattern, include): ...\n"
        "def ask(params): return params['include'], params.get('ignoreCase')\n"
        "query = GrepQuery('x', None, '*.c')\n"
        "fine = GrepQuery(pattern='x', include='*.c')\n"
    )
    leaks = sorted(leak.split(": ", 1)[1] for leak in grep_parameter_leaks(sample))
    assert leaks == sorted(
        [
            "['include']",
            ".get('ignoreCase')",
            "GrepQuery(…) by position",
            "a parameter named 'include'",
            "a parameter named 'pattern'",
        ]
    ), leaks


def test_grep_argv_is_spelled_in_one_module() -> None:
    """Only engine/grep/argv.py spells grep's ripgrep flags; only texts.py a grep line's `Line N: `."""
    flags = re.compile(
        r"--(regexp|glob|json|ignore-case|smart-case|fixed-strings|multiline|before-context|"
        r"after-context|context|files-with-matches|count|heading)\b"
    )
    for path in sorted((PACKAGE / "engine" / "grep").glob("*.py")):
        if path.name == "argv.py":
            continue
        for value in _strings(path):
            assert not flags.match(value), (path.name, value)  # an argv element starts with its flag
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "texts.py":
            continue
        for value in _strings(path):
            assert not re.search(r"Line \{|Line \d|Line $|\nLine ", value), (str(path.relative_to(PACKAGE)), value)


def _strings(path: Path) -> list[str]:
    """The string and bytes constants of a module, its docstrings left out."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value if isinstance(node.value, str) else node.value.decode("latin-1")
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes) and id(node) not in docstrings
    ]

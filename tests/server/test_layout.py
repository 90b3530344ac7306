"""The layout keeps its promises: the sans-IO modules touch no IO, and every method is listed once."""

from __future__ import annotations

import ast
import importlib.util
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
    "engine/rgjson.py",
    "engine/rgstd.py",
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

"""The search engine: what glob, grep and terminal_search do, from validated arguments to the text a
model reads.

argv → one ripgrep run (`ripgrep.py`, within `core.Searcher`'s limits) → parsed records (`batches.py`,
`grep.py`, `glob.py`) → ordering, sampling, rendering (`sampling.py`, `presentation.py`) → text + meta +
the complete result handed to a spill store (`spill.py`, an interface the store implements).

The engine knows nothing of JSON-RPC, MCP, method specs or the daemon's request context: a caller (the
method faces in `dsh_search.methods`) gives it its collaborators (`core.Searcher`), the arguments and
where a search may run (`core.Scope`), and gets back a value or a `failures.ToolError`. The layers
contract in pyproject.toml (`lint-imports`) keeps it that way.
"""

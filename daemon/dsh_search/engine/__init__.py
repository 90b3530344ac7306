"""The search engine: what glob, grep and terminal_search do, from validated arguments to the text a
model reads.

a query value (`request.py`) → argv → one ripgrep run (`run.py`, `ripgrep.py`, within the limits of the
`searcher.Searcher`) → parsed records (`batches.py`, `glob.py`, `grep/`) → ordering, sampling,
rendering (`sampling.py`, `presentation.py`, `grep/page.py`) → text + meta + the complete result handed to
a spill store (`spill.py`, an interface the store implements).

The engine knows nothing of JSON-RPC, MCP, method specs or the daemon's request context: a caller (the
method faces in `dsh_search.methods`) gives it its collaborators (`searcher.Searcher`), the query value
and where a search may run (`scope.Scope`, confined by `scope.locate`), and gets back a value or a
`failures.ToolError`. The layers contract in pyproject.toml (`lint-imports`) keeps it that way.
"""

"""Upstream's own test cases as input → expected output, one test per behaviour.

Each test is named after the behaviour it checks and carries upstream's case number as its pytest id
(tests/support/upstream.py): T<n> from tools.spec.ts, P<n> from presentation.spec.ts, E/D/F/S<n> from
spill-local.spec.ts; `pytest -k T51` finds case T51. Expected texts are upstream's, word for word.
ripgrep's output is faked here (unit level, tests/support/fakes.py); tests/e2e runs the real thing,
including upstream's integration.spec.ts cases (tests/engine/test_search_e2e.py).

Where we deliberately differ from upstream the test's id is `fix` and it asserts our behaviour. Tests
with no id are ours, beside the upstream cases they extend.

Skipped, and why (they test plugin-loader or registry internals that a daemon does not have):
- T2, T3: loading without a subprocess service / disposing the plugin — no plugin registry here.
- T31, T33, T34, T37: JS AbortSignal plumbing and pre-dispatch aborts (ABORTED_BEFORE_DISPATCH) — a
  JSON-RPC request cannot be aborted before it is dispatched; cancellation is tested end to end.
- T38, T39: memoised rg-path resolution and the seam's collected-reader objects — the daemon verifies
  its sidecar once at start (tests/server/test_startup_e2e.py) and owns its pipes.
- T72, T73, T84, T85: downstream hook replacements and nested Code-mode calls — the registry's hook
  pipeline; every daemon call is a direct call.
- T98, T99, T102, T103: pending-card titles and `presentResult` of the host UI — the daemon returns
  `meta`; cards are drawn by hosts (the read-back check, `view_from_meta`, is covered by P11–P18).
- load-path.spec.ts (module load shape), rg-path.spec.ts and rg-sidecar.spec.ts (npm rg-path and pkg
  sidecar lookup): Node packaging internals; our own sidecar lookup is tested in
  tests/server/test_startup_e2e.py.
"""

"""How many examples a property test runs: its own default, an explicit count from the environment, or a
small share of the default in the fast loop (`scripts/test --fast` sets DSH_TEST_EXAMPLES=fast).

A test's own variable (DSH_INDEX_EXAMPLES, …) always wins, so a long run by hand is one setting away:
`DSH_INDEX_EXAMPLES=1000 scripts/test --area index`.
"""

from __future__ import annotations

import os

FAST_SHARE = 5  # the fast loop runs one example in this many (at least FAST_MIN)
FAST_MIN = 3


def examples(default: int, variable: str | None = None) -> int:
    """The example count for a test whose default is `default`, overridden by `variable` if it is set."""
    if variable and os.environ.get(variable):
        return int(os.environ[variable])
    if os.environ.get("DSH_TEST_EXAMPLES") == "fast":
        return max(FAST_MIN, default // FAST_SHARE)
    return default

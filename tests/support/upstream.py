"""Upstream's case numbers as pytest ids, so that `pytest -k T51` finds the test that checks case T51.

Upstream's test files number their cases: T<n> in tools.spec.ts, P<n> in presentation.spec.ts, and
E/D/F/S<n> in spill-local.spec.ts. A test covering several cases joins them (`T29-T30`); a test that
pins a deliberate difference from upstream has the id `fix`.
"""

from __future__ import annotations

import pytest


def case(*ids: str) -> pytest.MarkDecorator:
    """Run the test once, with upstream's case ids as its pytest id: `test_name[T29-T30]`."""
    return pytest.mark.parametrize((), [pytest.param(id="-".join(ids))])

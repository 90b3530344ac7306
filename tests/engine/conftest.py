"""The runner's tests run twice: on this machine's Linux calls, and as on a platform without them."""

from __future__ import annotations

import fcntl
import os
import resource
import sys

import pytest

# Calls the daemon uses where Linux has them, each with a fallback elsewhere (macOS): a pidfd to learn
# of a child's exit, waitid(WNOWAIT) to wait for it without reaping it, a memfd for rg's stdin, a
# bigger pipe, an address-space limit set from outside, the CPUs this process may run on.
LINUX_ONLY = [
    (os, "pidfd_open"),
    (os, "waitid"),
    (os, "memfd_create"),
    (os, "sched_getaffinity"),
    (fcntl, "F_SETPIPE_SZ"),
    (resource, "prlimit"),
]


@pytest.fixture(params=["linux", "portable"])
def platform_calls(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """'linux': as the machine is. 'portable': the Linux-only calls are gone and sys.platform says
    darwin, so every fallback path runs, as it would on macOS."""
    if request.param == "portable":
        for module, name in LINUX_ONLY:
            monkeypatch.delattr(module, name, raising=False)
        monkeypatch.setattr(sys, "platform", "darwin")
    return str(request.param)

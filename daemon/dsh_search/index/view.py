"""A daemon's view of the files: what decides which files its ripgrep can read and which it skips.

A guest asks the owner which files ripgrep should read (peers.py), and runs ripgrep on the answer. That
is exact only when the owner's ripgrep would have read the same files as the guest's own walk: the same
user, groups and privileges (a directory one can read and the other cannot), the same filesystem (mount
namespace and root directory), and the same rules — git's global excludes, which ripgrep finds through
`HOME`, `XDG_CONFIG_HOME` and the git configuration they lead to, and git's own variables (`GIT_*`,
conservatively: ripgrep reads none of them today, a later one may). Two daemons whose views differ in
any of these do not share answers: the guest walks, and `index/status` says what differs.

A `View` is that, as one value: taken once per daemon (none of it changes while a process runs), sent
with each question, compared by the owner.

Rules of this module: reads the process's own credentials and environment only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NamedTuple

# The environment that decides what ripgrep's walk reads (besides the daemon's own scrub, which both
# sides apply alike): where git's global configuration and excludes file are found.
NAMES = ("HOME", "XDG_CONFIG_HOME")
PREFIXES = ("GIT_",)

_FIELDS = {
    "uid": "user",
    "gid": "group",
    "groups": "supplementary groups",
    "capabilities": "privileges (capabilities)",
    "filesystem": "filesystem (mount namespace or root directory)",
}


def _capabilities() -> str:
    """The effective capabilities (Linux; a root without CAP_DAC_OVERRIDE reads less), or ''."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"CapEff:"):
                    return line.split()[1].decode()
    except OSError:
        pass
    return ""


def _filesystem() -> str:
    """The mount namespace and the root directory this process sees."""
    try:
        namespace = os.readlink("/proc/self/ns/mnt")
    except OSError:
        namespace = ""
    try:
        root = os.stat("/")
        return f"{namespace} {root.st_dev}:{root.st_ino}"
    except OSError:
        return namespace


class View(NamedTuple):
    uid: int
    gid: int
    groups: tuple[int, ...]
    capabilities: str
    filesystem: str
    environment: tuple[tuple[str, str], ...]  # the variables that decide ripgrep's rules, sorted

    @classmethod
    def of_process(cls, environ: Mapping[str, str]) -> View:
        """This process's view, with `environ` as ripgrep's environment."""
        return cls(
            uid=os.geteuid(),
            gid=os.getegid(),
            groups=tuple(sorted(set(os.getgroups()))),
            capabilities=_capabilities(),
            filesystem=_filesystem(),
            environment=tuple(sorted((k, v) for k, v in environ.items() if k in NAMES or k.startswith(PREFIXES))),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "gid": self.gid,
            "groups": list(self.groups),
            "capabilities": self.capabilities,
            "filesystem": self.filesystem,
            "environment": [list(pair) for pair in self.environment],
        }

    @classmethod
    def from_json(cls, data: Any) -> View:
        """A view as `as_json` wrote it; ValueError for anything else."""
        try:
            return cls(
                uid=int(data["uid"]),
                gid=int(data["gid"]),
                groups=tuple(int(g) for g in data["groups"]),
                capabilities=str(data["capabilities"]),
                filesystem=str(data["filesystem"]),
                environment=tuple((str(k), str(v)) for k, v in data["environment"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a view: {exc}") from None

    def differs(self, other: View) -> str | None:
        """What differs between two views, for people (values left out), or None when they are the same."""
        different = [label for field, label in _FIELDS.items() if getattr(self, field) != getattr(other, field)]
        mine, theirs = dict(self.environment), dict(other.environment)
        names = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
        if names:
            different.append("environment (" + ", ".join(names) + ")")
        return ", ".join(different) or None

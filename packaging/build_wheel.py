"""Build the SDK wheel `dsh_search_bin-<version>-py3-none-<platform>.whl` from a built dist directory.

    python packaging/build_wheel.py [--dist dist] [--out DIR] [--platform-tag TAG]

The wheel holds `dsh_search_bin/__init__.py` (the accessor, packaging/sdk/), `dsh_search_bin/bin/dsh-search`
and `dsh_search_bin/bin/dsh-search-rg` with their exec bits, and its dist-info. It is written with zipfile
deterministically: sorted members, one timestamp (SOURCE_DATE_EPOCH, else 1980-01-01), fixed modes, so the
same inputs give the same bytes.

The version is the project's (pyproject.toml, which must agree with dsh_search.__version__ and with what the
executable's `--version` prints). The platform tag is derived from the executable: `manylinux_2_<N>_<arch>`,
N being the highest `GLIBC_2.N` symbol version that the bootloader or any library bundled inside the onefile
(libpython included) needs — read from each ELF's version-needs table (.gnu.version_r) — so pip installs the
wheel only where that glibc is present. See docs/building.md.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import re
import stat
import struct
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SDK = ROOT / "packaging" / "sdk" / "dsh_search_bin"
DISTRIBUTION = "dsh-search-bin"
PACKAGE = "dsh_search_bin"
ZIP_EPOCH = 315532800  # 1980-01-01, the earliest time a zip entry can carry

SHT_GNU_VERNEED = 0x6FFFFFFE
ELF_MAGIC = b"\x7fELF"
MACHINES = {3: "i686", 62: "x86_64", 183: "aarch64"}  # ELF e_machine → wheel platform arch

DESCRIPTION = """\
# dsh-search-bin

The frozen dsh-search daemon — a JSON-RPC search service (glob, grep,
terminal scrollback search) for AI coding agents — with its ripgrep sidecar, for hosts that talk to it over
stdin/stdout.

```python
import subprocess
from dsh_search_bin import executable_path

daemon = subprocess.Popen([str(executable_path()), "--sample-over-cap-glob-results", "true"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
```

`executable_path()` raises `FileNotFoundError` naming the missing executable or ripgrep sidecar.
"""


# -- versions ------------------------------------------------------------------------------------------


def project_version() -> str:
    """pyproject.toml's version, checked against dsh_search.__version__."""
    version = str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])
    init = (ROOT / "daemon" / "dsh_search" / "__init__.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"$', init, re.MULTILINE)
    if not match or match[1] != version:
        found = match[1] if match else "nothing"
        raise SystemExit(f"build_wheel: pyproject.toml says {version}, dsh_search.__version__ says {found}")
    return version


def executable_version(executable: Path) -> str:
    done = subprocess.run([str(executable), "--version"], capture_output=True, timeout=60, check=False)
    first = done.stdout.decode("utf-8", "replace").partition("\n")[0]
    if done.returncode != 0 or not first.startswith("dsh-search "):
        err = done.stderr.decode("utf-8", "replace").strip()
        raise SystemExit(f"build_wheel: {executable} --version failed (exit {done.returncode}): {first or err}")
    return first.split()[1]


# -- platform tag ----------------------------------------------------------------------------------------


def _cstring(data: memoryview, offset: int) -> str:
    end = offset
    while data[end] != 0:
        end += 1
    return bytes(data[offset:end]).decode("ascii", "replace")


def elf_needed_versions(data: memoryview, base: int = 0) -> set[str]:
    """The symbol version names (e.g. GLIBC_2.34) an ELF image at `base` needs; empty if it is not one."""
    if bytes(data[base : base + 4]) != ELF_MAGIC:
        return set()
    try:
        elf_class, encoding = data[base + 4], data[base + 5]
        end = {1: "<", 2: ">"}[encoding]
        if elf_class == 2:
            (shoff,) = struct.unpack_from(end + "Q", data, base + 0x28)
            shentsize, shnum = struct.unpack_from(end + "HH", data, base + 0x3A)
            section_format = end + "IIQQQQIIQQ"
        else:
            (shoff,) = struct.unpack_from(end + "I", data, base + 0x20)
            shentsize, shnum = struct.unpack_from(end + "HH", data, base + 0x2E)
            section_format = end + "IIIIIIIIII"
        sections = [struct.unpack_from(section_format, data, base + shoff + i * shentsize) for i in range(shnum)]
        names: set[str] = set()
        for _name, kind, _flags, _addr, offset, _size, link, info, _align, _entsize in sections:
            if kind != SHT_GNU_VERNEED:
                continue
            strings = base + sections[link][4]
            entry = base + offset
            for _ in range(info):
                _version, count, _file, aux, next_entry = struct.unpack_from(end + "HHIII", data, entry)
                where = entry + aux
                for _ in range(count):
                    _hash, _flags2, _other, name, next_aux = struct.unpack_from(end + "IHHII", data, where)
                    names.add(_cstring(data, strings + name))
                    where += next_aux
                if not next_entry:
                    break
                entry += next_entry
        return names
    except (KeyError, IndexError, struct.error):
        return set()


def elf_machine(data: memoryview) -> int:
    encoding = {1: "<", 2: ">"}.get(data[5], "<")
    return int(struct.unpack_from(encoding + "H", data, 0x12)[0])


def bundled_images(path: Path) -> Iterator[memoryview]:
    """The ELF images inside a PyInstaller onefile, via PyInstaller's archive reader (compressed or not)."""
    try:
        from PyInstaller.archive.readers import ArchiveReadError, CArchiveReader, NotAnArchiveError
    except ImportError:
        return
    try:
        archive = CArchiveReader(str(path))
    except (ArchiveReadError, NotAnArchiveError, OSError, ValueError):
        return
    for name, entry in archive.toc.items():
        if entry[-1] in {"b", "x"}:
            data = archive.extract(name)
            if isinstance(data, bytes) and data.startswith(ELF_MAGIC):
                yield memoryview(data)


def glibc_requirement(paths: Iterable[Path]) -> tuple[tuple[int, int] | None, str]:
    """The highest GLIBC_x.y needed by the files, their bundled libraries and any ELF image embedded in them."""
    highest: tuple[int, int] | None = None
    arch = ""
    for path in paths:
        raw = path.read_bytes()
        data = memoryview(raw)
        if not arch and bytes(data[:4]) == ELF_MAGIC:
            arch = MACHINES.get(elf_machine(data), "")
        names: set[str] = set()
        # Every ELF image stored uncompressed in the file (the onefile keeps its libraries so), then every
        # library the archive reader can extract (covers compressed entries too).
        start = 0
        while (start := raw.find(ELF_MAGIC, start)) != -1:
            names |= elf_needed_versions(data, start)
            start += 1
        for image in bundled_images(path):
            names |= elf_needed_versions(image)
        for name in names:
            match = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", name)
            if match:
                version = (int(match[1]), int(match[2]))
                highest = max(highest or version, version)
    return highest, arch


def linux_platform_tag(executable: Path, sidecar: Path) -> str:
    glibc, arch = glibc_requirement([executable, sidecar])
    if glibc is None:
        raise SystemExit(f"build_wheel: {executable} needs no GLIBC_* symbol versions; pass --platform-tag")
    if not arch:
        raise SystemExit(f"build_wheel: {executable} is not an ELF file of a known machine; pass --platform-tag")
    return f"manylinux_{glibc[0]}_{glibc[1]}_{arch}"


# -- the wheel -------------------------------------------------------------------------------------------


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={digest}"


def source_date_epoch() -> int:
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", ZIP_EPOCH)), ZIP_EPOCH)


def wheel_members(dist: Path, version: str, tag: str) -> list[tuple[str, bytes, int]]:
    """(name, bytes, mode) of every member but RECORD, in archive order."""
    init = (SDK / "__init__.py").read_text()
    init, count = re.subn(r'^__version__ = "[^"]*"', f'__version__ = "{version}"', init, count=1, flags=re.MULTILINE)
    if count != 1:
        raise SystemExit(f"build_wheel: no __version__ line in {SDK / '__init__.py'}")
    package = [
        (f"{PACKAGE}/__init__.py", init.encode(), 0o644),
        (f"{PACKAGE}/py.typed", b"", 0o644),
        (f"{PACKAGE}/bin/dsh-search", (dist / "dsh-search").read_bytes(), 0o755),
        (f"{PACKAGE}/bin/dsh-search-rg", (dist / "dsh-search-rg").read_bytes(), 0o755),
    ]
    info = f"{PACKAGE}-{version}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {DISTRIBUTION}\n"
        f"Version: {version}\n"
        "Summary: The dsh-search JSON-RPC search daemon (frozen) with its ripgrep sidecar, and an accessor.\n"
        "License: MIT\n"
        "Requires-Python: >=3.8\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + DESCRIPTION
    )
    wheel = "".join(
        f"{line}\n"
        for line in (
            "Wheel-Version: 1.0",
            "Generator: dsh-search packaging/build_wheel.py",
            "Root-Is-Purelib: false",
            f"Tag: py3-none-{tag}",
        )
    )
    return [
        *sorted(package),
        (f"{info}/METADATA", metadata.encode(), 0o644),
        (f"{info}/WHEEL", wheel.encode(), 0o644),
    ]


def write_wheel(path: Path, members: list[tuple[str, bytes, int]], record_name: str) -> None:
    date_time = time.gmtime(source_date_epoch())[:6]
    record = io.StringIO()
    for name, data, _mode in members:
        record.write(f"{name},{record_hash(data)},{len(data)}\n")
    record.write(f"{record_name},,\n")
    entries = [*members, (record_name, record.getvalue().encode(), 0o644)]
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, date_time=date_time)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so that installers honour the mode bits below
            info.external_attr = (stat.S_IFREG | mode) << 16
            zf.writestr(info, data, compresslevel=6)
    os.replace(tmp, path)


def build(dist: Path, out: Path, platform_tag: str | None, run_check: bool) -> Path:
    version = project_version()
    executable, sidecar = dist / "dsh-search", dist / "dsh-search-rg"
    for path in (executable, sidecar):
        if not path.is_file():
            raise SystemExit(f"build_wheel: {path} is missing: run scripts/build (or scripts/build-offline) first")
        if not os.access(path, os.X_OK):
            raise SystemExit(f"build_wheel: {path} is not executable")
    if run_check and (built := executable_version(executable)) != version:
        raise SystemExit(f"build_wheel: {executable} is version {built}, the project is {version}: rebuild it")
    if platform_tag is None:
        if not sys.platform.startswith("linux"):
            raise SystemExit("build_wheel: the platform tag is derived on Linux only; pass --platform-tag")
        platform_tag = linux_platform_tag(executable, sidecar)
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{PACKAGE}-{version}-py3-none-{platform_tag}.whl"
    write_wheel(wheel, wheel_members(dist, version, platform_tag), f"{PACKAGE}-{version}.dist-info/RECORD")
    return wheel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="holds dsh-search and dsh-search-rg")
    parser.add_argument("--out", type=Path, help="where to write the wheel (default: --dist)")
    parser.add_argument("--platform-tag", help="override the derived tag, e.g. macosx_11_0_arm64")
    parser.add_argument("--no-run-check", action="store_true", help="do not run `dsh-search --version` (cross builds)")
    args = parser.parse_args()
    wheel = build(args.dist, args.out or args.dist, args.platform_tag, not args.no_run_check)
    print(wheel)


if __name__ == "__main__":
    main()

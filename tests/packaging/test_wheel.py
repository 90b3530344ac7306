"""The SDK wheel: its layout, its honest platform tag, and the installed accessor and daemon at work."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.support.daemon import Daemon
from tests.support.packaging import PROBE, Venv, archive_members, build_wheel, install_wheel
from tests.support.processes import processes_named

pytestmark = pytest.mark.slow

WHEEL_NAME = re.compile(r"^dsh_search_bin-(?P<version>[^-]+)-py3-none-(?P<platform>manylinux_(\d+)_(\d+)_(\w+))\.whl$")


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_wheel_layout_modes_and_record(sdk_wheel: Path, dist_dir: Path) -> None:
    match = WHEEL_NAME.match(sdk_wheel.name)
    assert match, sdk_wheel.name
    version, platform = match["version"], match["platform"]
    info = f"dsh_search_bin-{version}.dist-info"
    with zipfile.ZipFile(sdk_wheel) as zf:
        names = zf.namelist()
        assert names == [
            "dsh_search_bin/__init__.py",
            "dsh_search_bin/__main__.py",
            "dsh_search_bin/bin/dsh-search",
            "dsh_search_bin/bin/dsh-search-rg",
            "dsh_search_bin/client.py",
            "dsh_search_bin/py.typed",
            "dsh_search_bin/remote-install.sh",
            "dsh_search_bin/remote.py",
            f"{info}/METADATA",
            f"{info}/WHEEL",
            f"{info}/entry_points.txt",
            f"{info}/RECORD",
        ]
        for item in zf.infolist():
            mode = item.external_attr >> 16
            assert stat.S_ISREG(mode), item.filename
            expected = 0o755 if "/bin/" in item.filename else 0o644
            assert stat.S_IMODE(mode) == expected, item.filename
        assert zf.read("dsh_search_bin/bin/dsh-search") == (dist_dir / "dsh-search").read_bytes()
        assert zf.read("dsh_search_bin/bin/dsh-search-rg") == (dist_dir / "dsh-search-rg").read_bytes()
        wheel = zf.read(f"{info}/WHEEL").decode()
        assert f"Tag: py3-none-{platform}\n" in wheel and "Root-Is-Purelib: false\n" in wheel
        assert zf.read(f"{info}/entry_points.txt") == b"[console_scripts]\ndsh-search = dsh_search_bin.__main__:main\n"
        metadata = zf.read(f"{info}/METADATA").decode()
        assert "Name: dsh-search-bin\n" in metadata and f"Version: {version}\n" in metadata
        rows = [line.split(",") for line in zf.read(f"{info}/RECORD").decode().splitlines()]
        assert sorted(row[0] for row in rows) == sorted(names)
        for name, digest, size in rows:
            if name.endswith("/RECORD"):
                assert (digest, size) == ("", "")
            else:
                data = zf.read(name)
                assert (digest, size) == (record_hash(data), str(len(data))), name


def test_wheel_is_deterministic(dist_dir: Path, tmp_path: Path) -> None:
    first = build_wheel(dist_dir, tmp_path / "one", epoch="1735689600")
    second = build_wheel(dist_dir, tmp_path / "two", epoch="1735689600")
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as zf:
        assert {item.date_time for item in zf.infolist()} == {(2025, 1, 1, 0, 0, 0)}


def objdump_glibc(path: Path) -> tuple[int, int] | None:
    done = subprocess.run(["objdump", "-p", str(path)], capture_output=True, text=True, check=False)
    versions = [(int(a), int(b)) for a, b in re.findall(r"\bGLIBC_(\d+)\.(\d+)", done.stdout)]
    return max(versions, default=None)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="binutils' objdump is not installed")
def test_platform_tag_is_the_glibc_the_bundle_needs(sdk_wheel: Path, dist_dir: Path, tmp_path: Path) -> None:
    """The tag's glibc is the newest symbol version that objdump finds in the bootloader or a bundled library."""
    needed = [objdump_glibc(dist_dir / "dsh-search")]
    for name, data in archive_members(dist_dir / "dsh-search").items():
        if data.startswith(b"\x7fELF"):
            member = tmp_path / name.replace("/", "_")
            member.write_bytes(data)
            needed.append(objdump_glibc(member))
    newest = max(v for v in needed if v is not None)
    match = WHEEL_NAME.match(sdk_wheel.name)
    assert match
    assert (int(match[3]), int(match[4])) == newest
    assert match[5] == os.uname().machine
    host = os.confstr("CS_GNU_LIBC_VERSION") or ""
    host_version = tuple(int(x) for x in host.split()[-1].split(".")[:2])
    assert newest <= host_version, f"the bundle needs glibc {newest}, the build host has {host}"


def test_installed_wheel_runs_glob_and_grep(installed: Venv, tmp_path: Path) -> None:
    found = installed.probe()
    assert "error" not in found, found
    exe = Path(found["path"])
    assert exe == installed.package / "bin" / "dsh-search"
    assert os.access(exe, os.X_OK) and os.access(f"{exe}-rg", os.X_OK)

    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "needle.txt").write_text("PACKAGED_FS_SEARCH_OK\n")
    (tree / "other.txt").write_text("nothing to see\n")
    (tree / "code.py").write_text("print('PACKAGED_FS_SEARCH_OK')\n")
    daemon = Daemon(
        ["--sample-over-cap-glob-results", "true", "--spill-dir", str(tmp_path / "spill")], exe=exe, cwd=tree
    )
    try:
        init = daemon.result("initialize", {})
        assert init["serverInfo"] == {"name": "dsh-search", "version": found["version"]}
        assert init["ripgrep"]["path"] == f"{exe}-rg"
        globbed = daemon.result("glob", {"pattern": "**/*.txt"})["text"]
        assert "sub/needle.txt" in globbed and "other.txt" in globbed and "code.py" not in globbed
        grepped = daemon.result("grep", {"pattern": "PACKAGED_FS_SEARCH_OK", "path": ".", "include": "*.txt"})["text"]
        assert "needle.txt" in grepped and "PACKAGED_FS_SEARCH_OK" in grepped
        assert "code.py" not in grepped and "other.txt" not in grepped
    finally:
        daemon.stop()
    assert daemon.proc.returncode == 0, daemon.stderr
    assert not processes_named(f"{exe}-rg")


def test_missing_sidecar_is_named_by_the_accessor_and_exits_3(sdk_wheel: Path, tmp_path: Path) -> None:
    venv = install_wheel(sdk_wheel, tmp_path / "venv")
    exe = venv.package / "bin" / "dsh-search"
    Path(f"{exe}-rg").unlink()

    found = venv.probe()
    assert found["error"] == "FileNotFoundError"
    assert found["message"].startswith(f"dsh-search-bin is missing the ripgrep sidecar at {exe}-rg. ")
    assert len(found["message"]) > len(f"dsh-search-bin is missing the ripgrep sidecar at {exe}-rg. ")  # a hint

    done = subprocess.run(
        [str(exe), "--sample-over-cap-glob-results", "true"],
        input=b'{"jsonrpc":"2.0","method":"ping","id":1}\n',
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 3
    assert done.stdout == b""
    assert done.stderr.decode() == f"dsh-search: ripgrep sidecar {exe}-rg is missing\n"


def test_missing_executable_and_lost_exec_bit(installed: Venv, tmp_path: Path) -> None:
    # A copy of the installed package, so the shared venv stays intact.
    package = tmp_path / "site" / "dsh_search_bin"
    shutil.copytree(installed.package, package, symlinks=True)
    exe = package / "bin" / "dsh-search"

    def probe() -> dict[str, str]:
        env = {"PYTHONPATH": str(package.parent), "PATH": os.environ.get("PATH", "")}
        done = subprocess.run(
            [str(installed.python), "-c", PROBE], capture_output=True, text=True, env=env, check=False
        )
        assert done.returncode == 0, done.stderr
        result: dict[str, str] = json.loads(done.stdout)
        return result

    Path(f"{exe}-rg").chmod(0o644)
    found = probe()
    assert found["error"] == "PermissionError"
    assert found["message"].startswith(f"dsh-search-bin's ripgrep sidecar at {exe}-rg is not executable. ")

    exe.unlink()
    found = probe()
    assert found["error"] == "FileNotFoundError"
    assert found["message"].startswith(f"dsh-search-bin is missing the dsh-search executable at {exe}. ")

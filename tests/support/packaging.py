"""Helpers for the packaging tests: venvs with the SDK wheel installed, and the Python code in a onefile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from tests.support.locations import ROOT

# Run in the venv's interpreter: what the accessor returns or raises, as one JSON line.
PROBE = """\
import json, dsh_search_bin
try:
    found = {"path": str(dsh_search_bin.executable_path()), "version": dsh_search_bin.__version__}
except OSError as exc:
    found = {"error": type(exc).__name__, "message": str(exc)}
print(json.dumps(found))
"""


def pip_env() -> dict[str, str]:
    """The environment for a pip that may only use what it is given: no config files, no PIP_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


@dataclass(frozen=True)
class Venv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def package(self) -> Path:
        """The installed dsh_search_bin package directory."""
        (found,) = self.root.glob("lib/python*/site-packages/dsh_search_bin")
        return found

    def probe(self) -> dict[str, Any]:
        done = subprocess.run(
            [str(self.python), "-I", "-c", PROBE], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        result: dict[str, Any] = json.loads(done.stdout)
        return result


def install_wheel(wheel: Path, where: Path) -> Venv:
    """A fresh venv with the wheel installed by `pip install --no-index` (nothing else is reachable)."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=120)
    venv = Venv(where)
    subprocess.run(
        [str(venv.python), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", str(wheel)],
        check=True,
        timeout=120,
        env=pip_env(),
    )
    return venv


def build_wheel(dist: Path, out: Path, epoch: str | None = None) -> Path:
    env = dict(os.environ)
    if epoch is not None:
        env["SOURCE_DATE_EPOCH"] = epoch
    done = subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "build_wheel.py"), "--dist", str(dist), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def python_code(executable: Path) -> dict[str, bytes]:
    """Every piece of Python code in a onefile, read with PyInstaller's archive readers.

    Keys: `PYZ:<module>` (the PYZ archive's modules, as marshalled code), `<name>` (the bootstrap modules
    and scripts stored in the CArchive itself) and `base_library.zip:<member>` (the stdlib modules the
    bootloader needs before the PYZ can be read).
    """
    from PyInstaller.archive.readers import CArchiveReader

    archive = CArchiveReader(str(executable))
    code: dict[str, bytes] = {}
    for name, entry in archive.toc.items():
        typecode = entry[-1]
        if typecode == "z":
            pyz = archive.open_embedded_archive(name)
            for module in pyz.toc:
                data = pyz.extract(module, raw=True)
                code[f"PYZ:{module}"] = data if isinstance(data, bytes) else b""
        elif typecode in {"m", "M", "s"}:
            code[name] = archive.extract(name)
        elif name == "base_library.zip":
            with zipfile.ZipFile(BytesIO(archive.extract(name))) as zf:
                for member in zf.namelist():
                    code[f"{name}:{member}"] = zf.read(member)
    return code


def archive_members(executable: Path) -> dict[str, bytes]:
    """Every member of the onefile's CArchive, extracted."""
    from PyInstaller.archive.readers import CArchiveReader

    archive = CArchiveReader(str(executable))
    return {name: archive.extract(name) for name in archive.toc}

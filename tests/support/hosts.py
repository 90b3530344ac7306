"""What the Node and Go host (and client) tests share: the toolchains, running a host, checking its
transcript, killing it mid-search."""

from __future__ import annotations

import fcntl
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.support.locations import ROOT
from tests.support.processes import TAG_VARIABLE, alive, descendants, new_tag, tagged

# Lines every host prints for the shared part of the session (see examples/*/README.md).
COMMON_LINES = [
    r"initialize: dsh-search \S+, ripgrep \S+, protocol \S+",
    # terminal_search may be listed only once a scrollback exists (notifications/tools/list_changed).
    r"tools/list: glob, grep(, terminal_search)?",
    r'glob "\*\*/\*\.js": src/app\.js, src/util\.js',
    r'grep "TODO": Found 2 matches in docs/notes\.md, src/app\.js',
    r'grep "\(": error 1001 SEARCH_INVALID_PATTERN: Error: grep pattern rejected by ripgrep: .*',
    r"slow grep: cancelled after (?P<after>\d+) ms, answered (?P<answered>\d+) ms later: error -32800 SEARCH_ABORTED: "
    r"Error: grep was aborted before completion \(tool timeout or caller cancellation\)",
    r"scrollback/append: totalLines=6 truncated=false",
    r'terminal_search "error": 2 matches: \[offset 1\] error: 2 tests failed \| \[offset 4\] error: missing semicolon',
    r"shutdown: null",
    r"exit: daemon exited with code 0 signal none",
    r"done",
]

# How long the daemon may take to cancel a running search (it kills rg's process group at once; the
# slack is for a loaded CI machine).
CANCEL_ANSWER_MS = 3000


def find_line(lines: Sequence[str], pattern: str) -> re.Match[str]:
    for line in lines:
        match = re.fullmatch(pattern, line)
        if match:
            return match
    raise AssertionError(f"no line matches {pattern!r} in the transcript:\n" + "\n".join(lines))


def path_without(directory: Path) -> str:
    """$PATH without `directory`."""
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != str(directory))


def check_common_transcript(lines: Sequence[str], exe: Path, framing: str) -> None:
    find_line(lines, rf"spawned {re.escape(str(exe))} pid=\d+ framing={framing}")
    for pattern in COMMON_LINES:
        find_line(lines, pattern)
    cancelled = find_line(lines, COMMON_LINES[5])
    assert int(cancelled["answered"]) < CANCEL_ANSWER_MS, cancelled.group(0)
    assert lines[-1] == "done", lines
    assert not [line for line in lines if line.startswith(("FAILED", "teardown:", "client:"))], lines


def host_env(tmpdir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The host's environment: its own TMPDIR, where the host's scratch files and the PyInstaller
    launcher's _MEI* extraction directory go, so the test can see that nothing is left behind."""
    tmpdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["TMPDIR"] = str(tmpdir)
    env.pop("DSH_SEARCH_EXE", None)  # the hosts get the executable on the command line, unless `extra` says
    env.update(extra or {})
    return env


def run_host(
    argv: Sequence[str], cwd: Path, tmpdir: Path, timeout: float = 90, env: Mapping[str, str] | None = None
) -> list[str]:
    proc = subprocess.run(
        list(argv), cwd=cwd, env=host_env(tmpdir, env), capture_output=True, text=True, timeout=timeout, check=False
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, f"host failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    # A clean run leaves nothing in TMPDIR: the host removed its scratch directory and the launcher its
    # extraction directory.
    assert sorted(p.name for p in tmpdir.iterdir()) == [], list(tmpdir.iterdir())
    return lines


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def kill_host_mid_search(argv: Sequence[str], cwd: Path, tmpdir: Path, exe: Path) -> str:
    """Start a host that blocks in a slow grep, SIGKILL the host alone once rg runs, and check that the
    daemon notices (stdin EOF, stdout closed), exits, and leaves no process (rg included) behind.
    Returns what the host printed."""
    sidecar = f"{exe}-rg"
    tag = new_tag()  # in the host's environment, which its daemon and ripgrep inherit
    host = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=host_env(tmpdir, {TAG_VARIABLE: tag}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    transcript: list[str] = []

    def pump() -> None:
        assert host.stdout is not None
        for line in host.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    errors: list[str] = []

    def pump_err() -> None:
        # The daemon inherits the host's stderr and keeps writing to it after the host is gone.
        assert host.stderr is not None
        errors.extend(host.stderr)

    threading.Thread(target=pump, daemon=True).start()
    err_thread = threading.Thread(target=pump_err, daemon=True)
    err_thread.start()
    try:
        deadline = time.monotonic() + 60
        while not (transcript and transcript[-1].startswith("slow grep: started")):
            item = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert item is not None, "host ended early:\n" + "\n".join(transcript) + "".join(errors)
            transcript.append(item)

        # Wait until ripgrep really runs under the daemon, then take a census of the host's tree.
        deadline = time.monotonic() + 15
        while True:
            tree = descendants(host.pid)
            rg = [pid for pid in tree if sidecar in _cmdline(pid)]
            if rg:
                break
            assert time.monotonic() < deadline, "no rg process appeared under the host"
            time.sleep(0.05)
        assert len(tree) >= 2, tree  # launcher, daemon (PyInstaller onefile), rg
        assert set(rg) <= set(tagged(tag, sidecar)), "the host's rg does not carry its tag"

        os.kill(host.pid, signal.SIGKILL)
        host.wait(timeout=10)

        # The daemon must notice and leave within graceMs (3 s) + 1 s; allow some slack for CI.
        deadline = time.monotonic() + 10
        while (left := [pid for pid in tree if alive(pid)]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left, f"still running after the host was killed: {[(p, _cmdline(p)) for p in left]}"
        leaked_rg = set(tagged(tag, sidecar))
        assert not leaked_rg, f"rg processes left behind: {[(p, _cmdline(p)) for p in leaked_rg]}"
        # The launcher was not SIGKILLed, so it removed its extraction directory on the way out.
        err_thread.join(timeout=5)
        assert not list(tmpdir.glob("_MEI*")), list(tmpdir.iterdir())
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    return "\n".join(transcript) + "\n" + "".join(errors)


def run_failing_host(
    argv: Sequence[str], cwd: Path, tmpdir: Path, env: Mapping[str, str] | None = None
) -> tuple[list[str], str]:
    """Run a host that must fail (exit 1) rather than hang; returns its stdout lines and stderr."""
    proc = subprocess.run(
        list(argv), cwd=cwd, env=host_env(tmpdir, env), capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 1, f"host exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout.splitlines(), proc.stderr


def run_host_without_sidecar(argv: Sequence[str], cwd: Path, tmpdir: Path) -> tuple[list[str], str]:
    """Run a host whose daemon (argv names it) has no ripgrep beside it: the host must report the daemon's
    exit 3 and fail, not hang. Returns the host's stdout lines and stderr (where the daemon's line goes)."""
    lines, stderr = run_failing_host(argv, cwd, tmpdir)
    find_line(lines, r"exit: daemon exited with code 3 signal none")
    find_line(lines, r"FAILED: daemon exited unexpectedly.* code 3 .*")
    return lines, stderr


def lonely_copy(exe: Path, where: Path) -> Path:
    """A copy of the executable without its sidecar."""
    where.mkdir(parents=True, exist_ok=True)
    copy = where / exe.name
    shutil.copy2(exe, copy)
    return copy


# -- toolchains ------------------------------------------------------------------------------------------


def go_min_version(go_mod: Path = ROOT / "clients" / "go" / "go.mod") -> tuple[int, int]:
    """The Go version the client needs: the `go` line of its go.mod."""
    found = re.search(r"^go (\d+)\.(\d+)$", go_mod.read_text(), re.MULTILINE)
    assert found, f"{go_mod} has no go line"
    return int(found[1]), int(found[2])


GO_NEEDED = "Go {}.{} or newer".format(*go_min_version())


def _install_go() -> str:
    """Debian's golang-go (Go 1.19 on bookworm), installed when missing, as scripts/test promises."""
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        pytest.fail(f"the Go tests need {GO_NEEDED} (`go` is not on PATH): apt-get install golang-go as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in ([apt, "update"], [apt, "install", "-y", "--no-install-recommends", "golang-go"]):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
        if proc.returncode != 0:
            pytest.fail(
                f"could not install Go ({' '.join(argv)} failed):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            )
    go = shutil.which("go") or ("/usr/bin/go" if Path("/usr/bin/go").exists() else None)
    if go is None:
        pytest.fail("golang-go was installed but `go` is not on PATH")
    return go


def go_toolchain() -> tuple[str, dict[str, str]]:
    """`go` (the version clients/go/go.mod names, or newer) and the environment to run it in: standard
    library only, nothing downloaded."""
    with open(Path(tempfile.gettempdir()) / "dsh-search-go-install.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # one apt-get at a time, even across concurrent test runs
        go = shutil.which("go") or _install_go()
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"go(\d+)\.(\d+)", version)
    if not found or (int(found[1]), int(found[2])) < go_min_version():
        pytest.fail(f"the Go tests need {GO_NEEDED}; {go} is {version.strip()}")
    env = {
        **os.environ,
        "GOPROXY": "off",  # standard library only (the client comes by a local replace): nothing to download
        "GOTOOLCHAIN": "local",  # a newer Go must not try to fetch another toolchain
        "GOFLAGS": "-mod=mod",
        "CGO_ENABLED": "0",
    }
    env.setdefault("GOCACHE", str(ROOT / ".cache" / "go-build"))
    return go, env


def gofmt_clean(go: str, directory: Path) -> None:
    gofmt = Path(go).with_name("gofmt")
    unformatted = subprocess.run(
        [str(gofmt) if gofmt.exists() else "gofmt", "-l", "."],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert not unformatted, f"gofmt would change in {directory}: {unformatted}"


def go_run(go: str, env: Mapping[str, str], argv: Sequence[str], cwd: Path, timeout: float = 300) -> str:
    proc = subprocess.run(
        [go, *argv], cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"go {' '.join(argv)} in {cwd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def node_toolchain() -> tuple[str, str]:
    """`node` (20+) and `npm`."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("the Node tests need Node.js 20+ with npm on PATH (node or npm is missing)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    found = re.match(r"v(\d+)", version)
    if not found or int(found[1]) < 20:
        pytest.fail(f"the Node tests need Node.js 20+, found {version}")
    return node, npm


def npm_ci(npm: str, directory: Path) -> None:
    """`npm ci` from the committed lock file. Always run (it is quick from npm's cache): a package that
    depends on clients/node by a file: path gets a fresh copy of it each time."""
    # One npm at a time, even across concurrent test runs.
    with open(Path(tempfile.gettempdir()) / "dsh-search-npm.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        proc = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    if proc.returncode != 0:
        pytest.fail(f"npm ci in {directory} failed:\n{proc.stdout}\n{proc.stderr}")


def run_node_test_suite(node: str, directory: Path, test_file: str, env: Mapping[str, str], at_least: int) -> None:
    """`node --test <test_file>` in `directory`: it passes, and every test ran — none failed, skipped
    (the suites skip only without DSH_SEARCH_EXE) or cancelled — and there are at least `at_least`."""
    done = subprocess.run(
        [node, "--test", test_file],
        cwd=directory,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    counts = dict(re.findall(r"^# (tests|pass|fail|skipped|cancelled) (\d+)$", report, re.MULTILINE))
    assert counts.get("fail") == "0" and counts.get("skipped") == "0" and counts.get("cancelled") == "0", report
    assert int(counts["tests"]) == int(counts["pass"]) >= at_least, report

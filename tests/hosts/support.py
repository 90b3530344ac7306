"""What the Node and Go host tests share: running a host, checking its transcript, killing it mid-search."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from tests.daemon_client import descendants, processes_named

# Lines every host prints for the shared part of the session (see examples/*/README.md).
COMMON_LINES = [
    r"initialize: dsh-search \S+, ripgrep \S+, protocol \S+",
    r"tools/list: glob, grep, terminal_search",
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


def check_common_transcript(lines: Sequence[str], exe: Path, framing: str) -> None:
    find_line(lines, rf"spawned {re.escape(str(exe))} pid=\d+ framing={framing}")
    for pattern in COMMON_LINES:
        find_line(lines, pattern)
    cancelled = find_line(lines, COMMON_LINES[5])
    assert int(cancelled["answered"]) < CANCEL_ANSWER_MS, cancelled.group(0)
    assert lines[-1] == "done", lines
    assert not [line for line in lines if line.startswith(("FAILED", "teardown:", "client:"))], lines


def host_env(tmpdir: Path) -> dict[str, str]:
    """The host's environment: its own TMPDIR, where the host's scratch files and the PyInstaller
    launcher's _MEI* extraction directory go, so the test can see that nothing is left behind."""
    tmpdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["TMPDIR"] = str(tmpdir)
    env.pop("DSH_SEARCH_EXE", None)  # the hosts get the executable on the command line
    return env


def run_host(argv: Sequence[str], cwd: Path, tmpdir: Path, timeout: float = 90) -> list[str]:
    proc = subprocess.run(
        list(argv), cwd=cwd, env=host_env(tmpdir), capture_output=True, text=True, timeout=timeout, check=False
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, f"host failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    # A clean run leaves nothing in TMPDIR: the host removed its scratch directory and the launcher its
    # extraction directory.
    assert sorted(p.name for p in tmpdir.iterdir()) == [], list(tmpdir.iterdir())
    return lines


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"  # a zombie has exited; it waits for init to reap it


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
    rg_before = set(processes_named(sidecar))
    host = subprocess.Popen(
        list(argv), cwd=cwd, env=host_env(tmpdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
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

        os.kill(host.pid, signal.SIGKILL)
        host.wait(timeout=10)

        # The daemon must notice and leave within graceMs (3 s) + 1 s; allow some slack for CI.
        deadline = time.monotonic() + 10
        while (left := [pid for pid in tree if _alive(pid)]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left, f"still running after the host was killed: {[(p, _cmdline(p)) for p in left]}"
        leaked_rg = set(processes_named(sidecar)) - rg_before
        assert not leaked_rg, f"rg processes left behind: {[(p, _cmdline(p)) for p in leaked_rg]}"
        # The launcher was not SIGKILLed, so it removed its extraction directory on the way out.
        err_thread.join(timeout=5)
        assert not list(tmpdir.glob("_MEI*")), list(tmpdir.iterdir())
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    return "\n".join(transcript) + "\n" + "".join(errors)


def run_host_without_sidecar(argv: Sequence[str], cwd: Path, tmpdir: Path) -> tuple[list[str], str]:
    """Run a host whose daemon (argv names it) has no ripgrep beside it: the host must report the daemon's
    exit 3 and fail, not hang. Returns the host's stdout lines and stderr (where the daemon's line goes)."""
    env = host_env(tmpdir)
    proc = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1, f"host exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    find_line(lines, r"exit: daemon exited with code 3 signal none")
    find_line(lines, r"FAILED: daemon exited unexpectedly.* code 3 .*")
    return lines, proc.stderr


def lonely_copy(exe: Path, where: Path) -> Path:
    """A copy of the executable without its sidecar."""
    where.mkdir(parents=True, exist_ok=True)
    copy = where / exe.name
    shutil.copy2(exe, copy)
    return copy

"""The `dsh-search` command that the wheel installs: it becomes the bundled daemon.

    dsh-search --sample-over-cap-glob-results true --workdir .     # the same as the executable itself
    python -m dsh_search_bin --version

On POSIX the process replaces itself with the bundled executable (`os.execv`), as ruff's wheel does:
the host's argv, stdin, stdout, stderr, process id and signals all reach the daemon unchanged, and the
daemon's exit status is the command's. No Python stays in between.

Windows has no exec: the command starts the daemon with the same std handles (the daemon reads and writes
them directly, nothing is copied through Python), leaves Ctrl-C and Ctrl-Break to it (they reach both, on
one console), waits for it and exits with its status. The daemon runs in a Job Object that ends with the
command, so a host that terminates the command (`dsh-search.exe`, pip's launcher) takes the daemon too.
"""

from __future__ import annotations

import os
import sys

from . import executable_path


def main() -> None:
    try:
        executable = executable_path()
    except OSError as exc:
        # The daemon's own status for an unusable installation (a missing or broken ripgrep sidecar).
        sys.stderr.write(f"dsh-search: {exc}\n")
        sys.exit(3)
    if os.name == "nt":
        sys.exit(_run_on_windows(str(executable), sys.argv[1:]))
    try:
        os.execv(executable, [str(executable), *sys.argv[1:]])  # noqa: S606 (argv list, no shell)
    except OSError as exc:
        sys.stderr.write(f"dsh-search: could not run {executable}: {exc}\n")
        sys.exit(126)


def _run_on_windows(executable: str, args: list[str]) -> int:  # pragma: no cover - Windows only
    import signal
    import subprocess

    for name in ("SIGINT", "SIGBREAK"):  # the daemon, on the same console, handles them and exits 0
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    try:
        proc = subprocess.Popen([executable, *args])  # inherits stdin, stdout, stderr
    except OSError as exc:
        sys.stderr.write(f"dsh-search: could not run {executable}: {exc}\n")
        return 126
    _job_that_ends_with_us(proc)  # its handle stays open until this process ends
    return proc.wait()


def _job_that_ends_with_us(proc: object) -> object:  # pragma: no cover - Windows only
    """A Job Object holding the daemon, with kill-on-close: its handle closes when this process ends, however
    it ends. None when one cannot be made."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    kernel32.CreateJobObjectW.restype = wintypes.HANDLE
    kernel32.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD]
    kernel32.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
    job = kernel32.CreateJobObjectW(None, None)
    if not job:
        return None
    info = (ctypes.c_byte * 144)()  # JOBOBJECT_EXTENDED_LIMIT_INFORMATION (x64): LimitFlags at offset 16
    ctypes.c_uint32.from_buffer(info, 16).value = 0x2000  # JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
    handle = int(proc._handle)  # type: ignore[attr-defined]
    if kernel32.SetInformationJobObject(job, 9, info, ctypes.sizeof(info)):
        kernel32.AssignProcessToJobObject(job, handle)
    return job


if __name__ == "__main__":
    main()

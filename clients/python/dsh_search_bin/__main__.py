"""The `dsh-search` command that the wheel installs: it becomes the bundled daemon.

    dsh-search --sample-over-cap-glob-results true --workdir .     # the same as the executable itself
    python -m dsh_search_bin --version

On POSIX the process replaces itself with the bundled executable (`os.execv`), as ruff's wheel does:
the host's argv, stdin, stdout, stderr, process id and signals all reach the daemon unchanged, and the
daemon's exit status is the command's. No Python stays in between.
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
    if os.name != "posix":
        sys.stderr.write("dsh-search: only Linux and macOS are supported\n")
        sys.exit(3)
    try:
        os.execv(executable, [str(executable), *sys.argv[1:]])  # noqa: S606 (argv list, no shell)
    except OSError as exc:
        sys.stderr.write(f"dsh-search: could not run {executable}: {exc}\n")
        sys.exit(126)


if __name__ == "__main__":
    main()

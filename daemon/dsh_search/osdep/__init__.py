"""What differs by operating system, behind one small seam: everything above it asks no OS question.

Two sides with one set of names: `posix` (Linux, macOS) and `windows` (win_amd64). This module picks
one at import and re-exports its names; the engine, the stores, the index, the methods and the
transport call them and never look at `sys.platform` or import `fcntl`, `msvcrt`, `ctypes`, `resource`
or `selectors` themselves (pyproject.toml's import contracts keep it so).

What the seam covers:
- process trees: `spawn_options()` for Popen, `Tree.adopt(proc)` — a process group (POSIX: its own
  session; SIGTERM, SIGKILL) or a Job Object with kill-on-close (Windows: the job is terminated, and
  closing it — the daemon ending by any means — ends every process in it); `limit_memory`, `aborted`,
  `wait_exit` (wait for a child's exit without reaping it);
- child IO: `pipe()`, `memory_file()`, `ChildStreams` (ripgrep's stdout, stderr, stdin and exit as
  events: a selector on POSIX, a thread per pipe on Windows, whose pipes cannot be selected on);
  `NULL_DEVICE`;
- the daemon's own lifetime: `on_stop_signals` (SIGTERM/SIGINT/SIGHUP; Windows: Ctrl-C, Ctrl-Break and
  the console's close, log-off and shutdown events), `watch_reader_gone` (the reader of stdout gone);
- files: `lock`, `fsync_directory`, `pread`, `stat_at` (stat relative to a directory), `O_NONBLOCK`;
  files pinned by descriptor — `pin_file`, `own_executable`, `pinned_name`, `pinned_spawn_options` (Linux:
  `/proc/self/fd`, so a running daemon reads its own archive and runs its ripgrep whatever their paths
  name later; nothing elsewhere: Windows keeps a running executable in place); `user_id`, the owner a
  private directory must have (None on Windows: ACLs, not judged);
- where things live: `sidecar_path_for`, `unfrozen_rg_name`, `state_home`, `cache_home`;
- the frozen launcher's extraction directory: `extraction_suffix_ok`, `lock_extraction`,
  `try_lock_extraction`, `watch_parent`, `process_alive`, `owned_by_me`, `request_stop`;
- the index: `index_unsupported_reason`; the C allocator: `glibc`.
"""

from __future__ import annotations

import sys

if sys.platform == "win32":
    from dsh_search.osdep.windows import *  # noqa: F403
    from dsh_search.osdep.windows import __all__ as _names
else:
    from dsh_search.osdep.posix import *  # noqa: F403
    from dsh_search.osdep.posix import __all__ as _names

__all__ = list(_names)

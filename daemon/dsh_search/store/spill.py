"""The local spill store (docs/behaviour.md, "Spill store"): complete results saved as files the model can page through.

Layout as upstream's spill-local: `<root>/session-<12 hex of sha256(sessionId)>/<12 random hex>-<escaped
name>`, directories 0700, files 0600. Fixes: a write is atomic and exclusive (temporary file in the same
directory, fsync, then a hard link to the final name, which fails rather than replace anything), so a
reader never sees a partial artifact and a failed write leaves nothing behind; and artifacts are
retired by age and total size. `read` pages an artifact by lines for `spill/read`, refusing any
locator that is not an artifact inside the root. The engine hands results over through its `Spill`
interface (engine/spill.py), which this store implements.

The root and its session directories are this user's alone (private.py): made 0700, and an existing
one — another user's, writable by others, under a directory others can write — is never used: a save
there fails (the inline page stays, the footer says the result could not be saved, the log names the
directory and the fix), `spill/read` refuses it with that message, and retention leaves it alone.
Otherwise another user who made `session-<digest of "default">` first could swap in an artifact of
theirs under the victim's locator. An artifact is opened without blocking and checked on its open
descriptor, and paged with a bound (engine/files.py).
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import re
import stat
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from dsh_search import osdep, private
from dsh_search.engine import files
from dsh_search.engine.spill import SpillRef

log = logging.getLogger("dsh_search.spill")

_ARTIFACT_NAME = re.compile(r"^[0-9a-f]{12}-.+$")
_SESSION_NAME = re.compile(r"^session-[0-9a-f]{12}$")
_LITERAL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


class SpillReadError(Exception):
    """A `spill/read` request the store refuses; the message is shown to the caller."""


def encode_segment(name: str) -> str:
    """Upstream's injective file-name escape, over UTF-16 code units."""
    if name == "":
        return "~"
    if name in (".", ".."):
        return "~002E" * len(name)
    out = []
    units = name.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        unit = int.from_bytes(units[i : i + 2], "big")
        ch = chr(unit)
        out.append(ch if ch in _LITERAL else f"~{unit:04X}")
    return "".join(out)


def session_dir(root: str, session_id: str) -> str:
    import hashlib  # here, not at the top: the first spill needs it, not the start (~1.5 ms)

    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return os.path.join(root, f"session-{digest}")


_WRITE_BYTES = 1 << 20


def _write_all(fd: int, data: bytes | bytearray) -> int:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    return len(data)


class SpillStore:
    def __init__(self, root: str, *, max_bytes: int, max_age_s: int, hint: str, rescan_every_s: float = 1.0) -> None:
        self.root = os.path.abspath(root)
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self.hint = hint
        self._rescan_every_s = rescan_every_s
        self._lock = threading.Lock()  # saves run on worker threads
        self._total = 0  # bytes of all artifacts, as of the last scan plus the saves since
        self._oldest: deque[tuple[float, int, str]] = deque()  # (mtime, size, path), oldest first
        self._queue_complete = True  # the queue holds every artifact the last scan saw
        self._scanned_at: float | None = None
        self._unsafe_said: str | None = None  # the last unsafe root retention warned of (said once)

    # -- writing ---------------------------------------------------------------------------------------

    ROOT = "spill directory"
    SESSION = "spill session directory"

    def _ensure_root(self) -> None:
        """The root, made 0700 (its missing parents too) or checked safe; raises `private.Unsafe`. A root
        of ours readable by others is made private: its session directories are named by digests of
        session ids."""
        private.ensure(self.root, self.ROOT)
        private.tighten(self.root)

    def _ensure_session(self, path: str) -> None:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            private.check(path, self.SESSION)

    def save_text(self, session_id: str, suggested_name: str, content: str | Iterable[str]) -> SpillRef:
        """Write content atomically; raises OSError when it cannot be saved (nothing is left behind).

        `content` may come in pieces (written in that order, nothing between them), so that a large
        result is written without first being joined into one string and encoded whole.
        """
        self._ensure_root()
        directory = session_dir(self.root, session_id)
        self._ensure_session(directory)
        pieces = [content] if isinstance(content, str) else content
        size = 0
        tmp = os.path.join(directory, f".tmp-{os.urandom(8).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | osdep.O_CLOEXEC | getattr(os, "O_BINARY", 0), 0o600)
        try:
            try:
                buffer = bytearray()  # pieces are gathered into writes of about _WRITE_BYTES: not a syscall each
                for piece in pieces:
                    buffer += piece.encode("utf-8", "surrogatepass")
                    if len(buffer) >= _WRITE_BYTES:
                        size += _write_all(fd, buffer)
                        buffer.clear()
                size += _write_all(fd, buffer)
                os.fsync(fd)
            finally:
                os.close(fd)
            name = encode_segment(suggested_name)
            while True:
                final = os.path.join(directory, f"{os.urandom(6).hex()}-{name}")
                try:
                    os.link(tmp, final)  # exclusive: never replaces an existing file
                    break
                except FileExistsError:
                    continue
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        osdep.fsync_directory(directory)
        self._counted(final, size)
        try:
            self.enforce_retention(keep=final)
        except OSError as exc:
            log.warning("spill retention failed: %s", exc)
        return SpillRef(locator=final, bytes=size, retrieval_hint=self.hint)

    # -- retention ---------------------------------------------------------------------------------------
    #
    # Retention runs after every save, so it must not cost a scan of the whole store each time (a scan per
    # save made each capped search tens of milliseconds slower once the store held a few thousand
    # artifacts), nor an index of every artifact in memory (a full 1 GiB store of small artifacts is
    # hundreds of thousands of them). A scan counts the total size and keeps the oldest artifacts in a
    # short queue; saves add to the total, and removals are taken from the front of the queue. The store
    # is scanned again when the queue runs dry while something still has to go, and at least every
    # `rescan_every_s`, which also picks up what another daemon sharing the root wrote, and what was
    # deleted or touched behind our back.

    _QUEUE = 1024  # the oldest artifacts a scan keeps at hand for removal

    def _artifacts(self) -> list[tuple[float, int, str]]:
        found: list[tuple[float, int, str]] = []
        unsafe = private.problem(self.root, self.ROOT)
        if unsafe is not None:  # another user's, or one others can write: nothing in it is ours to remove
            if os.path.lexists(self.root) and unsafe != self._unsafe_said:
                log.warning("spill retention skipped: %s", unsafe)
                self._unsafe_said = unsafe
            return found
        try:
            sessions = os.scandir(self.root)
        except (FileNotFoundError, NotADirectoryError):
            return found
        with sessions:
            for session in sessions:
                if not _SESSION_NAME.match(session.name):
                    continue
                try:
                    if not private.private_entry(session.stat(follow_symlinks=False)):
                        continue  # not ours alone: left alone
                except OSError:
                    continue
                with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(session.path) as entries:
                    for entry in entries:
                        if not _ARTIFACT_NAME.match(entry.name):  # a save in progress (.tmp-*), or a stranger
                            continue
                        try:
                            if entry.is_file(follow_symlinks=False):
                                info = entry.stat(follow_symlinks=False)
                                found.append((info.st_mtime, info.st_size, entry.path))
                        except FileNotFoundError:  # removed while we looked
                            continue
        return found

    def _rescan(self) -> None:
        artifacts = self._artifacts()
        self._total = sum(size for _, size, _ in artifacts)
        self._oldest = deque(heapq.nsmallest(self._QUEUE, artifacts))
        self._queue_complete = len(artifacts) <= self._QUEUE
        self._scanned_at = time.monotonic()

    def _counted(self, path: str, size: int) -> None:
        with self._lock:
            self._total += size
            if self._queue_complete and self._scanned_at is not None:
                if len(self._oldest) < self._QUEUE:
                    self._oldest.append((time.time(), size, path))  # the newest: the queue stays complete
                else:
                    self._queue_complete = False  # it holds the oldest, as a scan's queue does

    def enforce_retention(self, keep: str | None = None, now: float | None = None) -> int:
        """Remove artifacts older than the age limit, then the oldest until within the size limit.
        `keep` (the artifact just written) is never removed. Returns how many were removed."""
        now = time.time() if now is None else now
        removed = 0
        with self._lock:
            rescanned = self._scanned_at is None or time.monotonic() - self._scanned_at >= self._rescan_every_s
            if rescanned:
                self._rescan()
            aside = []  # the artifact just written, should the queue hold it: never removed, kept queued
            while True:
                oldest = self._oldest
                while oldest and (oldest[0][2] == keep or not os.path.lexists(oldest[0][2])):
                    entry = oldest.popleft()
                    if entry[2] == keep:
                        aside.append(entry)
                    else:  # it vanished behind our back: gone already, and no longer counted
                        self._total -= entry[1]
                if oldest:
                    mtime, size, path = oldest[0]
                    if now - mtime <= self.max_age_s and self._total <= self.max_bytes:
                        break
                    oldest.popleft()
                    self._total -= size
                    removed += self._remove(path)
                elif rescanned or self._total <= self.max_bytes:
                    break  # what one rescan in this call cannot find is not there
                else:  # something newer than the queue reached must go: look again
                    self._rescan()
                    rescanned = True
            self._oldest.extendleft(reversed(aside))
        return removed

    @staticmethod
    def _remove(path: str) -> int:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return 0
        return 1

    # -- reading ---------------------------------------------------------------------------------------

    def resolve_locator(self, locator: str) -> str:
        """The artifact a locator names; refuses anything outside the root or not an artifact, and any
        artifact of a root or session directory that is not this user's alone."""
        if not locator or "\0" in locator or not os.path.isabs(locator):
            raise SpillReadError("locator must be the absolute path of a spill artifact")
        root = os.path.realpath(self.root)
        real = os.path.realpath(locator)
        if not real.startswith(root + os.sep):
            raise SpillReadError("locator is outside the spill store")
        session, _, name = os.path.relpath(real, root).partition(os.sep)
        if not _SESSION_NAME.match(session) or os.sep in name or not _ARTIFACT_NAME.match(name):
            raise SpillReadError("locator names no spill artifact")
        try:
            info = os.stat(real)
        except OSError:
            raise SpillReadError("locator names no spill artifact") from None
        if not stat.S_ISREG(info.st_mode):
            raise SpillReadError("locator names no spill artifact")
        unsafe = private.problem(self.root, self.ROOT) or private.problem(os.path.join(root, session), self.SESSION)
        if unsafe is not None:
            raise SpillReadError(unsafe)
        return real

    def read(self, locator: str, offset: int, limit: int) -> dict[str, Any]:
        """Lines offset..offset+limit-1 of an artifact, split on `\\n` (a final `\\n` starts an empty
        last line), paged with a bound (engine/files.py): a page stops at `files.PAGE_MAX_BYTES`."""
        path = self.resolve_locator(locator)
        try:
            # Resolved already: a symbolic link or anything but a regular file here now was put there since.
            fd = files.open_regular(path, follow=False)
        except (OSError, files.NotRegular):
            raise SpillReadError("locator names no spill artifact") from None
        try:
            found = files.page(fd, offset, limit, final_empty_line=True)
        finally:
            os.close(fd)
        total = 0 if found.empty else found.newlines + 1
        if offset > total:
            return {"text": "", "startLine": offset, "endLine": total, "totalLines": total, "nextOffset": None}
        end = offset + len(found.lines) - 1
        return {
            "text": "\n".join(line.decode("utf-8", "replace") for line in found.lines),
            "startLine": offset,
            "endLine": end,
            "totalLines": total,
            "nextOffset": end + 1 if end < total else None,
        }

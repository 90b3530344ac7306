"""The spill store: names, layout, modes, atomic saves, retention and paged reads (docs/behaviour.md,
"Spill store")."""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from dsh_search import config as config_mod
from dsh_search import texts
from dsh_search.store.spill import SpillStore, encode_segment, session_dir
from tests.support.upstream import case


@case("E1", "E2", "E3", "E4")
def test_names_are_encoded_so_none_leaves_its_directory() -> None:
    assert encode_segment("web_fetch.txt") == "web_fetch.txt"
    assert encode_segment("a-B_9.z") == "a-B_9.z"
    assert encode_segment("../etc/passwd") == "..~002Fetc~002Fpasswd"
    assert encode_segment("a/b") == "a~002Fb"
    assert encode_segment("~") == "~007E"
    assert encode_segment(".") == "~002E"
    assert encode_segment("..") == "~002E~002E"
    assert encode_segment("") == "~"
    assert encode_segment("😀") == "~D83D~DE00"


@case("D1")
def test_each_session_has_a_stable_hashed_directory() -> None:
    d = session_dir("/spill", "sess-1")
    assert d == session_dir("/spill", "sess-1") and os.path.dirname(d) == "/spill"
    assert re.fullmatch(r"session-[0-9a-f]{12}", os.path.basename(d))
    assert os.path.basename(d) == "session-" + hashlib.sha256(b"sess-1").hexdigest()[:12]
    assert d != session_dir("/spill", "sess-2")


def store(root: Path, **kw: Any) -> SpillStore:
    return SpillStore(
        str(root),
        max_bytes=kw.get("max_bytes", 1 << 30),
        max_age_s=kw.get("max_age_s", 3600),
        hint=texts.DEFAULT_RETRIEVAL_HINT,
        rescan_every_s=0,  # see every utime a test makes at once
    )


@case("F1", "F2", "F3", "F4")
def test_saves_are_private_atomic_and_uniquely_named_in_the_session_directory(tmp_path: Path) -> None:
    s = store(tmp_path / "root")
    ref = s.save_text("sess-1", "r.txt", "héllo")
    path = Path(ref.locator)
    assert path.read_text() == "héllo" and ref.bytes == 6
    assert str(path.parent) == session_dir(str(tmp_path / "root"), "sess-1")
    assert re.fullmatch(r"[0-9a-f]{12}-r\.txt", path.name)
    evil = Path(s.save_text("sess-1", "../../evil", "x").locator)
    assert evil.parent == path.parent and "/.." not in str(evil)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "root").stat().st_mode) == 0o700
    assert path.parent.is_dir() and path.is_file()
    assert s.save_text("sess-1", "r.txt", "again").locator != ref.locator
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp")]  # nothing half-written


@case("S1", "S2", "S3")
def test_the_store_resolves_its_root_and_gives_the_retrieval_hint(tmp_path: Path) -> None:
    ref = store(tmp_path).save_text("sess-1", "grep-results.txt", "the full body")
    assert os.path.dirname(ref.locator) == session_dir(str(tmp_path), "sess-1")
    assert Path(ref.locator).read_text() == "the full body" and ref.bytes == 13
    assert ref.retrieval_hint == "Use read with offset/limit, or grep this path to search within it."
    assert os.path.isabs(SpillStore(".", max_bytes=1, max_age_s=1, hint="h").root)
    cfg = config_mod.build({"sampleOverCapGlobResults": True}, environ={"XDG_STATE_HOME": "/x"})
    assert cfg.spill_dir == "/x/dsh-search/spill"


@case("S4")
def test_saving_fails_when_the_root_is_a_file(tmp_path: Path) -> None:
    root = tmp_path / "file"
    root.write_text("not a dir")
    with pytest.raises(OSError):
        store(root).save_text("s", "a.txt", "x")


@case("fix")
def test_a_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = store(tmp_path)
    real_write = os.write

    def failing_write(fd: int, data: Any) -> int:
        if len(data) > 100:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", failing_write)
    with pytest.raises(OSError):
        s.save_text("s", "big.txt", "x" * 1000)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_retention_removes_by_age_then_the_oldest_by_size(tmp_path: Path) -> None:
    s = store(tmp_path, max_bytes=25, max_age_s=100)
    refs = [s.save_text("s", f"{i}.txt", "x" * 10) for i in range(2)]
    now = time.time()
    os.utime(refs[0].locator, (now - 500, now - 500))  # past the age limit
    os.utime(refs[1].locator, (now - 50, now - 50))
    newest = s.save_text("other", "n.txt", "y" * 10)
    assert not os.path.exists(refs[0].locator) and os.path.exists(refs[1].locator)
    big = s.save_text("s", "big.txt", "z" * 20)  # total over 25: the oldest go first, never the new one
    assert os.path.exists(big.locator)
    assert not os.path.exists(refs[1].locator) and not os.path.exists(newest.locator)


def test_retention_between_scans_uses_the_queue_of_oldest(tmp_path: Path) -> None:
    s = SpillStore(str(tmp_path), max_bytes=35, max_age_s=3600, hint="h", rescan_every_s=3600)
    refs = [s.save_text("s", f"{i}.txt", "x" * 10) for i in range(3)]
    assert all(os.path.exists(r.locator) for r in refs)
    fourth = s.save_text("s", "3.txt", "x" * 10)  # 40 bytes > 35: the oldest goes, without a rescan
    assert not os.path.exists(refs[0].locator) and os.path.exists(fourth.locator)
    os.unlink(refs[1].locator)  # removed behind the store's back: its index entry is just stale
    s.save_text("s", "4.txt", "x" * 10)
    assert os.path.exists(refs[2].locator)
    # Retention at start on an empty store, then saves past the size limit before any rescan is due.
    fresh = SpillStore(str(tmp_path / "fresh"), max_bytes=25, max_age_s=3600, hint="h", rescan_every_s=3600)
    fresh.enforce_retention()
    saved = [fresh.save_text("s", f"{i}.txt", "x" * 10) for i in range(3)]
    assert [os.path.exists(r.locator) for r in saved] == [False, True, True]
    # Saves in progress (.tmp-*) are never counted nor removed.
    tmp = Path(refs[2].locator).parent / ".tmp-0123456789abcdef"
    tmp.write_text("partial")
    assert SpillStore(str(tmp_path), max_bytes=1, max_age_s=1, hint="h").enforce_retention(now=time.time() + 10)
    assert tmp.exists()


def test_spill_read_pages_by_line_and_refuses_anything_outside_the_store(tmp_path: Path) -> None:
    from dsh_search.store.spill import SpillReadError

    s = store(tmp_path)
    ref = s.save_text("s", "r.txt", "\n".join(f"line {i}" for i in range(1, 6)))
    assert s.read(ref.locator, 1, 2) == {
        "text": "line 1\nline 2",
        "startLine": 1,
        "endLine": 2,
        "totalLines": 5,
        "nextOffset": 3,
    }
    assert s.read(ref.locator, 5, 2000) == {
        "text": "line 5",
        "startLine": 5,
        "endLine": 5,
        "totalLines": 5,
        "nextOffset": None,
    }
    assert s.read(ref.locator, 9, 10) == {"text": "", "startLine": 9, "endLine": 5, "totalLines": 5, "nextOffset": None}
    outside = tmp_path.parent / "outside.txt"
    outside.write_text("secret")
    for bad in (
        str(outside),
        f"{tmp_path}/../outside.txt",
        "relative/path",
        f"{tmp_path}/{os.path.basename(os.path.dirname(ref.locator))}",
    ):
        with pytest.raises(SpillReadError):
            s.read(bad, 1, 10)
    link = Path(os.path.dirname(ref.locator)) / "0123456789ab-link.txt"
    link.symlink_to(outside)
    with pytest.raises(SpillReadError, match="outside the spill store"):
        s.read(str(link), 1, 10)
    with pytest.raises(SpillReadError, match="names no spill artifact"):
        s.read(os.path.dirname(ref.locator) + "/0123456789ab-missing.txt", 1, 10)

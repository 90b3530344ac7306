"""The workspace index through the frozen executable: read-your-writes in both framings, a watcher queue
that overflows, and an index directory deleted or corrupted while searches run. Every answer is checked
against a daemon with the index off over the same tree."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import Daemon, MakeDaemon, error_of
from tests.support.processes import wait_until
from tests.support.trees import files_named, write

pytestmark = pytest.mark.e2e

FRAMINGS = ["ndjson", "lsp"]


def tree(root: Path) -> Path:
    for i in range(40):
        write(root, f"src/m{i % 4}/f{i}.c", f"int f{i}(void) {{ return {i}; }}\n// SUSPEND_{i}\n", 1000 + i)
    write(root, "README.md", "a readme\n", 900)
    write(root, ".gitignore", "*.log\nbuild/\n", 901)
    write(root, "build/out.c", "SUSPEND_BUILD\n", 902)
    write(root, "x.log", "SUSPEND_LOG\n", 903)
    os.mkdir(root / ".git")
    return root


def ready(d: Daemon, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = d.result("index/status")
        if status["state"] == "ready":
            return status  # type: ignore[no-any-return]
        assert status["state"] == "building" and time.monotonic() < deadline, status
        time.sleep(0.02)


def answered(d: Daemon) -> int:
    counts = d.result("index/status")["answered"]
    return int(counts["glob"]) + int(counts["grep"])


def indexed_and_plain(start: MakeDaemon, root: Path, index_dir: Path, framing: str = "ndjson") -> tuple[Daemon, Daemon]:
    on = start("--workdir", str(root), "--index", "on", "--index-dir", str(index_dir), framing=framing)
    off = start("--workdir", str(root), "--index", "off", framing=framing)
    ready(on)
    return on, off


def normalised(answer: dict[str, Any]) -> tuple[Any, bytes | None]:
    """An answer without its id, its spill locator (a random name) replaced, and the artifact's bytes."""
    answer = dict(answer)
    answer.pop("id")
    spill = (answer.get("result") or {}).get("spill")
    if not spill:
        return answer, None
    locator = spill["locator"]
    artifact = Path(locator).read_bytes()
    return json.loads(json.dumps(answer).replace(json.dumps(locator)[1:-1], "<locator>")), artifact


def same(on: Daemon, off: Daemon, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Both daemons' answers (and saved results), which must be equal; the indexed one's."""
    got, expected = on.call(method, params), off.call(method, params)
    assert normalised(got) == normalised(expected), (method, params)
    return got


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_file_written_before_a_request_is_seen_by_it(start: MakeDaemon, tmp_path: Path, framing: str) -> None:
    root = tree(tmp_path / "w")
    on, off = indexed_and_plain(start, root, tmp_path / "index", framing)
    for i in range(30):
        token = f"FRESH_TOKEN_{i}_{framing}"
        path = root / "src" / f"m{i % 4}" / f"new{i}.c"
        path.write_text(f"// {token}\n")  # written and closed: the request below must see it
        found = same(on, off, "grep", {"pattern": token})
        assert found["result"]["text"] == f"Found 1 match\n\nsrc/m{i % 4}/new{i}.c\nLine 1: // {token}"
        listed = same(on, off, "glob", {"pattern": f"new{i}.c"})
        assert listed["result"]["text"] == f"src/m{i % 4}/new{i}.c"
        path.write_text("// rewritten\n")
        assert same(on, off, "grep", {"pattern": token})["result"]["text"] == "No matches found"
        if i % 3 == 0:
            path.unlink()
            assert same(on, off, "glob", {"pattern": f"new{i}.c"})["result"]["text"] == "No files found"
        if i % 5 == 0:
            path.parent.rename(root / "src" / f"moved{i}")
            same(on, off, "grep", {"pattern": "SUSPEND_[0-9]+"})
            (root / "src" / f"moved{i}").rename(path.parent)
    same(on, off, "grep", {"pattern": "SUSPEND"})  # the ignored ones stay out, as in a walk
    same(on, off, "glob", {"pattern": "*"})
    # How many of those the index answered depends on how soon the background re-walks a renamed
    # directory (in doubt until then, so searches walk): a count, not a time, is asserted once it has.
    assert wait_until(lambda: not on.result("index/status").get("inDoubtCount"), timeout=60)
    settled = answered(on)
    for i in range(0, 30, 6):
        assert same(on, off, "grep", {"pattern": f"FRESH_TOKEN_{i}_{framing}"})["result"]["text"] == "No matches found"
    same(on, off, "glob", {"pattern": "new*.c"})
    assert answered(on) - settled == 6, on.result("index/status")  # every one from the index, and right


def test_an_ignore_file_change_is_followed(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    on, off = indexed_and_plain(start, root, tmp_path / "index")
    assert "build/out.c" not in same(on, off, "grep", {"pattern": "SUSPEND_BUILD"})["result"]["text"]
    (root / ".gitignore").write_text("*.log\n")
    assert "build/out.c" in same(on, off, "grep", {"pattern": "SUSPEND_BUILD"})["result"]["text"]
    (root / "src" / ".ignore").write_text("m1/\n")
    text = same(on, off, "grep", {"pattern": "SUSPEND_[0-9]+"})["result"]["text"]
    assert "src/m1/" not in text and "src/m2/" in text


def test_a_watcher_queue_that_overflows_costs_a_rescan_not_an_answer(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    on, off = indexed_and_plain(start, root, tmp_path / "index")
    with open("/proc/sys/fs/inotify/max_queued_events") as f:
        queue = int(f.read())
    burst = root / "src" / "m0"  # a watched directory: every file made in it is an event or more
    os.kill(on.server_pid, signal.SIGSTOP)  # the daemon reads no event while we make more than fit
    try:
        for i in range(queue // 2 + 1000):
            (burst / f"b{i}.c").write_text("x\n")  # a create, a modify and a close-write each
        (burst / "needle.c").write_text("OVERFLOW_NEEDLE\n")
    finally:
        os.kill(on.server_pid, signal.SIGCONT)
    found = same(on, off, "grep", {"pattern": "OVERFLOW_NEEDLE"})
    assert found["result"]["text"] == "Found 1 match\n\nsrc/m0/needle.c\nLine 1: OVERFLOW_NEEDLE"
    same(on, off, "glob", {"pattern": "src/m0/needle.c"})
    assert wait_until(lambda: on.result("index/status").get("rescans", 0) >= 1, 30), on.result("index/status")
    assert wait_until(lambda: on.result("index/status")["state"] == "ready", 60)
    same(on, off, "glob", {"pattern": "**/b1*.c"})
    same(on, off, "grep", {"pattern": "OVERFLOW_NEEDLE"})


@pytest.mark.parametrize("damage", ["delete", "corrupt"])
def test_an_index_deleted_or_corrupted_while_searches_run_loses_nothing(
    start: MakeDaemon, tmp_path: Path, damage: str
) -> None:
    root = tree(tmp_path / "w")
    index_dir = tmp_path / "index"
    on, off = indexed_and_plain(start, root, index_dir)
    same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]"})
    if damage == "delete":
        shutil.rmtree(index_dir)
    else:
        for shard in files_named(index_dir, "content-*.sqlite*"):
            shard.write_bytes(b"this is not a database" * 1000)
    for i in range(20):  # searches while the index notices, fails and is built again
        (root / "src" / f"later{i}.c").write_text(f"// LATER_{i} SUSPEND_{i}\n")
        same(on, off, "grep", {"pattern": f"LATER_{i}"})
        same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]"})
        same(on, off, "glob", {"pattern": "*.c"})
    assert wait_until(lambda: on.result("index/status")["state"] == "ready", 60), on.result("index/status")
    assert index_dir.is_dir()  # built again
    before = answered(on)

    def answers_again() -> bool:  # once grep's files are listed again after the rebuild (a moment after ready)
        same(on, off, "grep", {"pattern": "LATER_7"})
        return answered(on) > before

    assert wait_until(answers_again, 30)  # and answering again
    assert "error" not in on.call("index/status")


def test_index_status_off_and_a_bad_mode(start: MakeDaemon, tmp_path: Path, exe: Path) -> None:
    d = start("--workdir", str(tmp_path), "--index", "off")
    status = d.result("index/status")
    assert status["state"] == "off" and status["files"] == 0 and status["bytes"] == 0
    import subprocess

    done = subprocess.run(
        [str(exe), "--sample-over-cap-glob-results", "true", "--index", "sometimes"],
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.decode().strip() == "dsh-search: index must be one of auto, on, off"


def test_a_search_outside_the_workspace_walks(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    other = tree(tmp_path / "other")
    on, off = indexed_and_plain(start, root, tmp_path / "index")
    status = on.result("index/status")
    before, because = status["walked"], status.get("walkedBecause", {})
    same(on, off, "grep", {"pattern": "SUSPEND_3", "cwd": str(other)})
    same(on, off, "grep", {"pattern": "SUSPEND_3", "path": str(other)})
    status = on.result("index/status")
    assert status["walked"] == before + 2
    # Each named by the planner's reason: a cwd outside the workspace; a root it cannot spell (absolute,
    # outside the cwd).
    assert status["walkedBecause"]["outside"] == because.get("outside", 0) + 1
    assert status["walkedBecause"]["root-unspelled"] == because.get("root-unspelled", 0) + 1
    assert error_of(on.call("grep", {"pattern": "x", "cwd": str(tmp_path / "nope")}))[1] == "SEARCH_FAILED"


def test_an_include_that_brings_back_a_skipped_file_walks(start: MakeDaemon, tmp_path: Path) -> None:
    """ripgrep lets an include glob override its hidden-file and ignore rules, and `*` enters `.git`: such
    files are searched with the include and not without, so the index, which holds only the latter,
    must not answer those calls (and still answers the others)."""
    root = tree(tmp_path / "w")
    write(root, "src/.hidden.c", "SUSPEND_HIDDEN\n", 950)
    write(root, ".git/config", "SUSPEND_GIT\n", 951)
    on, off = indexed_and_plain(start, root, tmp_path / "index")
    for include in ("*", "*.c", "*.log", "src/*", ".*", "*.md"):
        for pattern in ("SUSPEND_(HIDDEN|BUILD|LOG|GIT)", "SUSPEND_17"):
            same(on, off, "grep", {"pattern": pattern, "include": include})
    assert "SUSPEND_HIDDEN" in same(on, off, "grep", {"pattern": "SUSPEND_HIDDEN", "include": "*.c"})["result"]["text"]
    assert "SUSPEND_GIT" in same(on, off, "grep", {"pattern": "SUSPEND_GIT", "include": "*"})["result"]["text"]
    # A hidden file created now is judged too, and an include that reaches nothing skipped is answered.
    write(root, "src/m1/.late.c", "SUSPEND_LATE\n", 960)
    assert "SUSPEND_LATE" in same(on, off, "grep", {"pattern": "SUSPEND_LATE", "include": "*.c"})["result"]["text"]
    before = answered(on)
    same(on, off, "grep", {"pattern": "SUSPEND_17", "include": "*.md"})
    same(on, off, "grep", {"pattern": "SUSPEND_17", "include": "src/m1/*.c"})  # .late.c: walks
    assert answered(on) == before + 1

"""The workspace index at the filesystem's edges, through the frozen executable: every case where a tree
can change without an ordinary event on a watched directory — a repository made after start, hard links,
a directory's mode, mounts, an ignore file that is a link, names longer than the kernel takes, the root
moved or made again, renames over a directory and exchanges — and faults of the index's own files.

Each answer of a daemon with the index on is checked against a daemon with the index off over the same
tree (`same`); where the case is about what status says, that is checked too. Cases where permissions
matter run both daemons as an unprivileged user (root reads everything); mounts run in a mount namespace
of the daemons' own."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.index.test_index_e2e import FRAMINGS, answered, normalised, ready, same, tree
from tests.support.daemon import Daemon, MakeDaemon
from tests.support.processes import wait_until
from tests.support.trees import files_named, write
from tests.support.unprivileged import NOBODY, unprivileged_tree

pytestmark = pytest.mark.e2e

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (to run the daemons as another user, or mount)")


def pair(start: MakeDaemon, root: Path, index_dir: Path, *extra: str, **kw: Any) -> tuple[Daemon, Daemon]:
    on = start("--workdir", str(root), "--index", "on", "--index-dir", str(index_dir), *extra, **kw)
    off = start("--workdir", str(root), "--index", "off", *extra, **kw)
    ready(on)
    return on, off


def as_nobody(spill: Path) -> dict[str, Any]:
    return {"user": NOBODY, "group": NOBODY, "extra_groups": [], "cwd": "/"}


@pytest.fixture
def shared() -> Iterator[Path]:
    """A scratch directory the unprivileged daemons can reach and write (tree, index, spill)."""
    with unprivileged_tree() as base:
        yield base


def chown_tree(path: Path, uid: int = NOBODY) -> None:
    for base, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(base, name), uid, uid)
    os.lchown(path, uid, uid)


def status_of(d: Daemon) -> dict[str, Any]:
    return d.result("index/status")  # type: ignore[no-any-return]


def doubts(d: Daemon) -> list[dict[str, str]]:
    return list(status_of(d).get("inDoubt", []))


def quiet(d: Daemon) -> None:
    """Let the background catch up (grep's list asked again, changes indexed), so that what follows is
    answered from the index if it can be, not walked because the last change is still in doubt."""
    assert wait_until(lambda: not doubts(d) and status_of(d)["changed"] == 0, 30), (doubts(d), status_of(d))


def settles(d: Daemon, timeout: float = 30) -> dict[str, Any]:
    """The status once the background has caught up (nothing changed is left to index again)."""
    assert wait_until(lambda: status_of(d)["changed"] == 0 and status_of(d)["state"] == "ready", timeout), status_of(d)
    return status_of(d)


# --- 1: a repository made after start, its exclude file, its info directory made later -------------------


def test_a_repository_made_after_start_and_its_exclude_file_are_followed(start: MakeDaemon, tmp_path: Path) -> None:
    root = tmp_path / "w"
    for i in range(12):
        write(root, f"src/f{i}.c", f"int f{i}; // SUSPEND_{i}\n", 1000 + i)
    write(root, ".gitignore", "*.log\n", 900)
    write(root, "x.log", "SUSPEND_LOG\n", 901)
    on, off = pair(start, root, tmp_path / "index")
    assert "x.log" in same(on, off, "grep", {"pattern": "SUSPEND_LOG"})["result"]["text"]  # no repository yet
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    else:
        (root / ".git").mkdir()
    assert same(on, off, "grep", {"pattern": "SUSPEND_LOG"})["result"]["text"] == "No matches found"  # .gitignore
    info = root / ".git" / "info"
    shutil.rmtree(info, ignore_errors=True)  # made later, below
    quiet(on)
    same(on, off, "grep", {"pattern": "SUSPEND_7"})
    info.mkdir()
    quiet(on)
    (info / "exclude").write_text("*.c\n")
    # Every file excluded: the walk searches nothing ("No files were searched…"), and so must the index.
    same(on, off, "grep", {"pattern": "SUSPEND_7"})
    quiet(on)
    (info / "exclude").write_text("f1*.c\n")
    assert same(on, off, "grep", {"pattern": "SUSPEND_10"})["result"]["text"] == "No matches found"
    assert "src/f7.c" in same(on, off, "grep", {"pattern": "SUSPEND_7"})["result"]["text"]
    shutil.rmtree(root / ".git")
    assert "x.log" in same(on, off, "grep", {"pattern": "SUSPEND_LOG"})["result"]["text"]
    # The index answers again once ripgrep has listed grep's files with the rules as they are now.
    assert wait_until(lambda: not doubts(on), 30), doubts(on)
    before = answered(on)
    same(on, off, "grep", {"pattern": "SUSPEND_7"})
    assert answered(on) == before + 1


# --- 2: hard links ------------------------------------------------------------------------------------------


@needs_root
def test_a_file_with_another_name_is_never_answered_from_the_index_alone(start: MakeDaemon, shared: Path) -> None:
    root = shared / "w"
    for i in range(10):
        write(root, f"src/f{i}.c", f"int f{i};\n", 1000 + i)
    write(root, "a.c", "old text\n", 2000)
    os.link(root / "a.c", root / "src" / "b.c")  # two names in the workspace
    write(shared, "outside.c", "outside old\n", 2001)
    os.link(shared / "outside.c", root / "o.c")  # one name outside it
    chown_tree(shared)
    on, off = pair(start, root, shared / "index", "--spill-dir", str(shared / "spill"), **as_nobody(shared))
    same(on, off, "glob", {"pattern": "**/*.c"})
    with open(root / "a.c", "r+") as f:  # written through one name: the other's event never comes
        f.write("NEW_TEXT\n")
    found = same(on, off, "grep", {"pattern": "NEW_TEXT"})["result"]["text"]
    assert "a.c" in found and "src/b.c" in found
    same(on, off, "glob", {"pattern": "**/*.c"})  # the mtime moved for both names
    os.utime(shared / "outside.c", ns=(1_500_000_000_000_000_000, 1_500_000_000_000_000_000))
    with open(shared / "outside.c", "r+") as f:
        f.write("OUTSIDE_NEW")
    assert "o.c" in same(on, off, "grep", {"pattern": "OUTSIDE_NEW"})["result"]["text"]
    same(on, off, "glob", {"pattern": "*.c"})
    for _ in range(3):
        same(on, off, "grep", {"pattern": "NEW_TEXT|OUTSIDE_NEW"})
        same(on, off, "glob", {"pattern": "**/*.c"})


# --- 3: a directory's mode ----------------------------------------------------------------------------------


@needs_root
def test_a_directory_made_unreadable_and_readable_again(start: MakeDaemon, shared: Path) -> None:
    root = tree(shared / "w")
    chown_tree(shared)
    on, off = pair(start, root, shared / "index", "--spill-dir", str(shared / "spill"), **as_nobody(shared))
    locked = root / "src" / "m1"
    locked.chmod(0)
    try:
        listed = same(on, off, "glob", {"pattern": "*"})["result"]["text"]
        assert listed.endswith("(1 path could not be read)")
        same(on, off, "grep", {"pattern": "SUSPEND_[0-9]+"})
        same(on, off, "grep", {"pattern": "SUSPEND_2", "path": "src/m2"})
        assert on.result("ping") == {}
        assert any(d["path"] == "src/m1" and "unreadable" in d["reason"] for d in doubts(on)), doubts(on)
        before = answered(on)
        same(on, off, "glob", {"pattern": "*.c", "path": "src/m2"})  # elsewhere: still the index's
        assert answered(on) == before + 1
    finally:
        locked.chmod(0o755)
    same(on, off, "glob", {"pattern": "*"})
    same(on, off, "grep", {"pattern": "SUSPEND_[0-9]+"})
    assert wait_until(lambda: not doubts(on), 30), doubts(on)


# --- 4: mounts ------------------------------------------------------------------------------------------------


@pytest.fixture
def namespace_command(exe: Path) -> list[str]:
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None:
        pytest.skip("needs root and unshare/nsenter to mount in a namespace of the daemons' own")
    return ["unshare", "-m", "--propagation", "private", str(exe)]


def inside(d: Daemon, *command: str) -> None:
    """Run a command in the daemon's mount namespace."""
    subprocess.run(["nsenter", "-t", str(d.proc.pid), "-m", *command], check=True, capture_output=True)


def test_a_filesystem_mounted_and_a_directory_bound_inside_the_workspace(
    start: MakeDaemon, tmp_path: Path, namespace_command: list[str]
) -> None:
    root = tree(tmp_path / "w")
    (root / "mnt").mkdir()
    (root / "bound").mkdir()
    on, off = pair(start, root, tmp_path / "index", command=namespace_command)
    same(on, off, "glob", {"pattern": "*"})
    for d in (on, off):
        inside(d, "mount", "-t", "tmpfs", "none", str(root / "mnt"))
        inside(d, "sh", "-c", f"echo MOUNTED_NEEDLE > {root}/mnt/on-tmpfs.c")
        inside(d, "mount", "--bind", str(root / "src" / "m0"), str(root / "bound"))
    assert "mnt/on-tmpfs.c" in same(on, off, "glob", {"pattern": "*.c"})["result"]["text"]
    assert "bound/" in same(on, off, "grep", {"pattern": "SUSPEND_4"})["result"]["text"]  # the bind mount's copy
    same(on, off, "grep", {"pattern": "MOUNTED_NEEDLE"})
    for d in (on, off):
        inside(d, "sh", "-c", f"echo LATER_ON_TMPFS > {root}/mnt/later.c; echo THROUGH_BIND >> {root}/bound/f0.c")
    same(on, off, "grep", {"pattern": "LATER_ON_TMPFS"})
    assert "bound/f0.c" in same(on, off, "grep", {"pattern": "THROUGH_BIND"})["result"]["text"]
    for d in (on, off):
        inside(d, "umount", str(root / "mnt"))
        inside(d, "umount", str(root / "bound"))
    same(on, off, "glob", {"pattern": "*"})
    same(on, off, "grep", {"pattern": "THROUGH_BIND|LATER_ON_TMPFS|MOUNTED_NEEDLE"})


# --- 5: an ignore file that is a link to a file elsewhere ----------------------------------------------------


def test_an_ignore_file_that_is_a_link_follows_its_target(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    rules = tmp_path / "shared-rules"
    rules.write_text("*.log\n")
    (root / ".gitignore").unlink()
    (root / ".gitignore").symlink_to(rules)
    on, off = pair(start, root, tmp_path / "index")
    assert "build/out.c" in same(on, off, "grep", {"pattern": "SUSPEND_BUILD"})["result"]["text"]
    quiet(on)
    rules.write_text("*.log\nbuild/\n")  # no event in the workspace
    assert same(on, off, "grep", {"pattern": "SUSPEND_BUILD"})["result"]["text"] == "No matches found"
    quiet(on)
    rules.write_text("src/m2/\n")
    assert "src/m2/" not in same(on, off, "grep", {"pattern": "SUSPEND_[0-9]+"})["result"]["text"]


def test_the_rules_above_the_workspace_and_gits_global_excludes_are_followed(start: MakeDaemon, tmp_path: Path) -> None:
    base = tmp_path / "parent"
    root = tree(base / "w")
    shutil.rmtree(root / ".git")
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "")}
    on, off = pair(start, root, tmp_path / "index", env=env)
    assert "x.log" in same(on, off, "grep", {"pattern": "SUSPEND_LOG"})["result"]["text"]
    assert "src/m1/f13.c" in same(on, off, "grep", {"pattern": "SUSPEND_13"})["result"]["text"]
    (base / ".git").mkdir()  # a repository above the workspace: its .gitignore files count now
    assert same(on, off, "grep", {"pattern": "SUSPEND_LOG"})["result"]["text"] == "No matches found"
    (base / ".gitignore").write_text("m1/\n")  # relative to the repository above: any m1 directory
    assert same(on, off, "grep", {"pattern": "SUSPEND_13"})["result"]["text"] == "No matches found"
    assert "src/m2/f14.c" in same(on, off, "grep", {"pattern": "SUSPEND_14"})["result"]["text"]
    (home / ".config" / "git" / "ignore").write_text("m2/\n")  # git's global excludes file
    assert same(on, off, "grep", {"pattern": "SUSPEND_14"})["result"]["text"] == "No matches found"
    (base / ".ignore").write_text("w/src/m3/\n")
    assert same(on, off, "grep", {"pattern": "SUSPEND_15"})["result"]["text"] == "No matches found"
    assert wait_until(lambda: not doubts(on), 30), doubts(on)
    before = answered(on)
    assert "src/m0/f12.c" in same(on, off, "grep", {"pattern": "SUSPEND_12"})["result"]["text"]
    assert answered(on) == before + 1


# --- 6: names longer than the kernel takes ---------------------------------------------------------------------


def _deep_chain(root: Path, depth: int = 40, width: int = 120) -> Path:
    """A chain of directories whose full path is longer than PATH_MAX (4096), made one level at a time."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for i in range(depth):
            name = f"{i:03d}" + "d" * (width - 3)
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open("deep.c", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"DEEP_NEEDLE\n")
        os.close(leaf)
    finally:
        os.close(fd)
    return root / (f"{0:03d}" + "d" * (width - 3))


def test_a_directory_chain_longer_than_path_max(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    on, off = pair(start, root, tmp_path / "index")
    top = _deep_chain(root / "src")
    try:
        same(on, off, "glob", {"pattern": "*"})
        same(on, off, "grep", {"pattern": "DEEP_NEEDLE|SUSPEND_1"})
        same(on, off, "glob", {"pattern": "*.c", "path": "src/m2"})
        assert on.result("ping") == {}
        assert doubts(on), status_of(on)
    finally:
        shutil.rmtree(top)
    same(on, off, "glob", {"pattern": "*"})


# --- 7: the root moved away and back, removed and made again ----------------------------------------------------


def test_the_workspace_moved_away_and_back(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    on, off = pair(start, root, tmp_path / "index")
    same(on, off, "glob", {"pattern": "*"})
    away = tmp_path / "away"
    root.rename(away)
    for victim in sorted(away.rglob("f*.c"))[:30]:
        victim.unlink()
    write(away, "src/while_away.c", "WHILE_AWAY\n", 5000)
    away.rename(root)
    same(on, off, "glob", {"pattern": "*"})
    same(on, off, "grep", {"pattern": "WHILE_AWAY|SUSPEND_3"})
    write(root, "src/after.c", "AFTER_RETURN\n", 6000)
    same(on, off, "grep", {"pattern": "AFTER_RETURN"})
    assert wait_until(lambda: status_of(on)["state"] == "ready" and not doubts(on), 30), status_of(on)
    assert status_of(on)["files"] == len([p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts])


def test_the_workspace_removed_and_made_again(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    on, off = pair(start, root, tmp_path / "index")
    shutil.rmtree(root)
    time.sleep(0.1)
    assert status_of(on)["state"] in ("ready", "failed")
    root.mkdir()
    for i in range(5):
        write(root, f"new/g{i}.c", f"AGAIN_{i}\n", 7000 + i)
    same(on, off, "glob", {"pattern": "*"})
    same(on, off, "grep", {"pattern": "AGAIN_[0-9]"})
    write(root, "new/later.c", "AGAIN_LATER\n", 8000)
    same(on, off, "grep", {"pattern": "AGAIN_LATER"})
    assert wait_until(lambda: not doubts(on) and status_of(on)["state"] == "ready", 30), status_of(on)
    assert status_of(on)["files"] == 6


# --- 8: a directory renamed over an empty one, two directories exchanged -------------------------------------


def _exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        raise OSError(ctypes.get_errno(), f"renameat2({a}, {b}, RENAME_EXCHANGE)")


def test_a_directory_renamed_over_an_empty_one_and_two_exchanged(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    (root / "empty").mkdir()
    write(root, "other/o1.c", "OTHER_SIDE\n", 3000)
    on, off = pair(start, root, tmp_path / "index")
    os.rename(root / "src" / "m1", root / "empty")  # `mv -T src/m1 empty`
    same(on, off, "glob", {"pattern": "*"})
    write(root, "empty/later.c", "LATER_IN_MOVED\n", 3100)
    assert "empty/later.c" in same(on, off, "grep", {"pattern": "LATER_IN_MOVED"})["result"]["text"]
    _exchange(root / "src" / "m2", root / "other")
    same(on, off, "glob", {"pattern": "*"})
    same(on, off, "grep", {"pattern": "OTHER_SIDE|SUSPEND_2"})
    write(root, "other/after.c", "AFTER_EXCHANGE\n", 3200)
    write(root, "src/m2/after.c", "AFTER_EXCHANGE\n", 3201)
    assert same(on, off, "grep", {"pattern": "AFTER_EXCHANGE"})["result"]["text"].startswith("Found 2 matches")
    _exchange(root / "src" / "m2" / "o1.c", root / "other" / "f2.c")  # two files
    same(on, off, "grep", {"pattern": "OTHER_SIDE|SUSPEND_2"})
    same(on, off, "glob", {"pattern": "**/*.c"})


# --- 9 and the fault test: the index's own files -----------------------------------------------------------------


def test_no_file_of_the_index_is_mapped_into_memory(start: MakeDaemon, tmp_path: Path) -> None:
    """The -shm file SQLite maps for WAL is what a truncation turned into SIGBUS: there is none."""
    root = tree(tmp_path / "w")
    index_dir = tmp_path / "index"
    on, off = pair(start, root, index_dir)
    same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]"})
    assert not files_named(index_dir, "*-shm")
    with open(f"/proc/{on.server_pid}/maps") as f:
        mapped = f.read()
    assert str(index_dir) not in mapped


# --- 10: an unreadable directory at start ----------------------------------------------------------------------------


@needs_root
def test_a_tree_with_an_unreadable_directory_is_indexed_around_it(start: MakeDaemon, shared: Path) -> None:
    root = tree(shared / "w")
    write(root, "locked/inside.c", "SUSPEND_LOCKED\n", 4000)
    chown_tree(shared)
    (root / "locked").chmod(0)
    try:
        on, off = pair(start, root, shared / "index", "--spill-dir", str(shared / "spill"), **as_nobody(shared))
        status = status_of(on)
        assert status["state"] == "ready" and status["grepFiles"] > 0, status
        assert any(d["path"] == "locked" for d in status["inDoubt"]), status
        text = same(on, off, "grep", {"pattern": "SUSPEND_[0-9]+"})["result"]["text"]
        assert text.endswith("(1 path could not be read)")
        same(on, off, "glob", {"pattern": "*"})
        before = answered(on)
        same(on, off, "grep", {"pattern": "SUSPEND_17", "path": "src"})  # the rest is the index's
        same(on, off, "glob", {"pattern": "*.c", "path": "src"})
        assert answered(on) == before + 2
    finally:
        (root / "locked").chmod(0o755)


# --- 11: random bytes in a shard before start ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["content-*.sqlite", "content-*.grams"])
def test_a_set_damaged_before_start_is_set_aside_not_reused(start: MakeDaemon, tmp_path: Path, kind: str) -> None:
    root = tree(tmp_path / "w")
    index_dir = tmp_path / "index"
    first, off = pair(start, root, index_dir)
    same(first, off, "grep", {"pattern": "SUSPEND_1[0-9]"})
    first.stop()
    shards = files_named(index_dir, kind)
    assert shards
    damaged = shards[0]
    with open(damaged, "r+b") as f:
        f.seek(min(4096, damaged.stat().st_size // 2))
        f.write(os.urandom(64))
    damaged_set = damaged.parent
    second = start("--workdir", str(root), "--index", "on", "--index-dir", str(index_dir))
    ready(second)
    for pattern in ("SUSPEND_1[0-9]", "SUSPEND_2", "int f3"):
        same(second, off, "grep", {"pattern": pattern})
    assert not damaged_set.exists()  # set aside, never reused
    assert status_of(second)["state"] == "ready"


# --- 12: what status says ------------------------------------------------------------------------------------


def test_status_counts_follow_deletions(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    on, off = pair(start, root, tmp_path / "index")
    before = status_of(on)
    for victim in sorted((root / "src").rglob("f*.c"))[:10]:
        victim.unlink()
    same(on, off, "glob", {"pattern": "*"})
    after = settles(on)
    assert after["grepFiles"] == before["grepFiles"] - 10, after
    assert after["files"] == before["files"] - 10, after


@needs_root
def test_no_inotify_instance_is_a_reason_that_names_inotify(start: MakeDaemon, shared: Path) -> None:
    """A user out of inotify instances (fs.inotify.max_user_instances): taken here by a user of its own,
    so that nothing else on the machine is short of them."""
    uid = 65533
    root = tree(shared / "w")
    chown_tree(shared, uid)
    with open("/proc/sys/fs/inotify/max_user_instances") as f:
        limit = int(f.read())
    hog = subprocess.Popen(
        [
            "python3",
            "-c",
            "import ctypes,sys,time\n"
            "libc=ctypes.CDLL(None)\n"
            f"fds=[libc.inotify_init() for _ in range({limit})]\n"
            "print(sum(1 for fd in fds if fd>=0), flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        user=uid,
        group=uid,
        extra_groups=[],
    )
    try:
        assert hog.stdout is not None and int(hog.stdout.readline()) > 0
        on = start(
            "--workdir",
            str(root),
            "--index",
            "on",
            "--index-dir",
            str(shared / "index"),
            "--spill-dir",
            str(shared / "spill"),
            user=uid,
            group=uid,
            extra_groups=[],
            cwd="/",
        )
        assert wait_until(lambda: status_of(on)["state"] == "failed", 30), status_of(on)
        assert "max_user_instances" in status_of(on)["reason"], status_of(on)
        assert on.result("grep", {"pattern": "SUSPEND_1"})["text"].startswith("Found")  # it walks
    finally:
        hog.send_signal(signal.SIGKILL)
        hog.wait()


# --- faults: every kind of index file truncated, corrupted or deleted while searches run ---------------------------

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("grep", {"pattern": "SUSPEND_1[0-9]"}),
    ("grep", {"pattern": "SUSPEND_17"}),
    ("glob", {"pattern": "*.c"}),
    ("grep", {"pattern": "int f2"}),
    ("glob", {"pattern": "src/m1/*"}),
    ("grep", {"pattern": "SUSPEND_3", "path": "src/m3"}),
]
INDEX_FILES = [
    "content-*.sqlite",
    "content-*.sqlite-wal",
    "content-*.sqlite-shm",
    "content-*.grams",
    "lock",
    "trust",
    "used",
]


def damage(index_dir: Path, pattern: str, how: str) -> int:
    """Damage every file of this kind under the index directory; how many there were (a file the
    daemon removed before it was damaged does not count)."""
    hit = 0
    for path in files_named(index_dir, pattern):
        try:
            if how == "delete":
                path.unlink()
            elif how == "truncate":
                os.truncate(path, 0)
            else:
                size = path.stat().st_size
                with open(path, "r+b") as f:
                    for offset in range(0, max(size, 1), 4096):
                        f.seek(offset + 100 if size > offset + 200 else 0)
                        f.write(os.urandom(64))
        except FileNotFoundError:
            continue
        hit += 1
    return hit


@pytest.mark.parametrize("framing", FRAMINGS)
def test_every_index_file_damaged_while_searches_run_loses_no_request(
    start: MakeDaemon, tmp_path: Path, framing: str
) -> None:
    root = tree(tmp_path / "w")
    index_dir = tmp_path / "index"
    on = start("--workdir", str(root), "--index", "on", "--index-dir", str(index_dir), framing=framing)
    off = start("--workdir", str(root), "--index", "off", framing=framing)
    ready(on)
    expected = [normalised(off.call(method, params)) for method, params in CALLS]
    for how in ("truncate", "corrupt", "delete"):
        for kind in INDEX_FILES:
            assert wait_until(lambda: status_of(on)["state"] == "ready", 60), status_of(on)
            sent: list[tuple[int, Any]] = []
            for round_ in range(3):
                for i, (method, params) in enumerate(CALLS):
                    sent.append((i, on.request(method, params)))
                if round_ == 1:
                    damage(index_dir, kind, how)
            for i, request_id in sent:
                assert normalised(on.wait_for(request_id, timeout=60)) == expected[i], (how, kind, CALLS[i])
            assert on.no_response(0.2), (how, kind)  # each request answered once, nothing more
            assert on.result("ping") == {}
    assert not files_named(index_dir, "*-shm")
    assert wait_until(lambda: status_of(on)["state"] == "ready", 60), status_of(on)
    for i, (method, params) in enumerate(CALLS):
        assert normalised(on.call(method, params)) == expected[i]

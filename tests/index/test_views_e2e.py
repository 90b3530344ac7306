"""The workspace index where a file's content can change without an event for the name it watches, through
the frozen executable: other names (hard links made after the index is ready, hard-linked rule files), other
views (a single file bound into the workspace, an overlay whose lower directory is edited, a `.git` that
links to a repository elsewhere) and time (a file rewritten within one timestamp tick while no daemon runs).

Each answer of a daemon with the index on is checked against a daemon with the index off over the same
tree (`same`). Cases that mount run both daemons in one mount namespace of their own (`Namespace`: a
holder process made by `unshare`; the daemons join it with `nsenter`), and reach what is mounted there
through `/proc/<holder>/root`."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.index.test_edges_e2e import doubts, pair, quiet, settles
from tests.index.test_index_e2e import answered, ready, same, tree
from tests.support.daemon import MakeDaemon
from tests.support.processes import wait_until
from tests.support.trees import write

pytestmark = pytest.mark.e2e


class Namespace:
    """A mount namespace of the test's own, held by a sleeping process."""

    def __init__(self, exe: Path) -> None:
        self.exe = exe
        self.holder = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sleep", "600"])
        ours = os.readlink("/proc/self/ns/mnt")
        assert wait_until(lambda: self._ns() not in (None, ours), 10), "unshare did not make a namespace"

    def _ns(self) -> str | None:
        try:
            return os.readlink(f"/proc/{self.holder.pid}/ns/mnt")
        except OSError:
            return None

    def run(self, *command: str) -> None:
        subprocess.run(["nsenter", "-t", str(self.holder.pid), "-m", "--", *command], check=True, capture_output=True)

    def mount_or_skip(self, *arguments: str, needs: str) -> None:
        """`mount` with these arguments, or skip the test when this machine cannot (`needs` says what)."""
        done = subprocess.run(
            ["nsenter", "-t", str(self.holder.pid), "-m", "--", "mount", *arguments], capture_output=True, check=False
        )
        if done.returncode != 0:
            pytest.skip(f"needs {needs}: {done.stderr.decode(errors='replace').strip()}")

    def path(self, path: Path) -> Path:
        """`path` as the namespace sees it (its mounts), from outside it."""
        return Path(f"/proc/{self.holder.pid}/root{path}")

    def command(self) -> list[str]:
        """The daemon, started inside the namespace."""
        return ["nsenter", "-t", str(self.holder.pid), "-m", "--", str(self.exe)]

    def close(self) -> None:
        self.holder.kill()
        self.holder.wait()


@pytest.fixture
def namespace(exe: Path) -> Iterator[Namespace]:
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None:
        pytest.skip("needs root and unshare/nsenter to mount in a namespace of the test's own")
    ns = Namespace(exe)
    try:
        yield ns
    finally:
        ns.close()


def rewrite(path: Path, text: str, mtime_s: float | None = None) -> None:
    """Write through this name, in place (the same inode: every other name sees it)."""
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(text.encode())
    if mtime_s is not None:
        ns = int(mtime_s * 10**9)
        os.utime(path, ns=(ns, ns))


def text_of(answer: dict[str, Any]) -> str:
    result = answer.get("result")
    return str(result["text"]) if result else str(answer["error"]["data"]["text"])


# --- row 1: a hard link made after the index is ready ------------------------------------------------------


def test_a_hard_link_made_after_start_makes_every_name_untrusted(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    on, off = pair(start, root, tmp_path / "index")
    quiet(on)
    os.link(root / "src/m1/f5.c", root / "src/m2/y.c")  # no event in src/m1: link(2) raises none there
    rewrite(root / "src/m2/y.c", "LINKED_NEW\n", 5000)
    found = text_of(same(on, off, "grep", {"pattern": "LINKED_NEW"}))
    assert "src/m1/f5.c" in found and "src/m2/y.c" in found, found
    same(on, off, "glob", {"pattern": "**/*.c"})  # both names moved to the end of the order
    quiet(on)  # the background has caught up: the old name stays untrusted
    rewrite(root / "src/m2/y.c", "LINKED_AGAIN\n", 500)
    assert "src/m1/f5.c" in text_of(same(on, off, "grep", {"pattern": "LINKED_AGAIN"}))
    same(on, off, "glob", {"pattern": "**/*.c"})
    # A file from outside the workspace given a name inside it, then written through the outside one.
    write(tmp_path, "outside.c", "OUTSIDE_OLD\n", 100)
    os.link(tmp_path / "outside.c", root / "src/in.c")
    quiet(on)
    rewrite(tmp_path / "outside.c", "OUTSIDE_NEW\n", 6000)
    assert "src/in.c" in text_of(same(on, off, "grep", {"pattern": "OUTSIDE_NEW"}))
    same(on, off, "glob", {"pattern": "**/*.c"})
    # Once its other name is gone, a file is read into the index again and answered from it.
    (root / "src/m2/y.c").unlink()
    same(on, off, "glob", {"pattern": "**/*.c"})
    quiet(on)
    before = answered(on)
    assert "src/m1/f5.c" in text_of(same(on, off, "grep", {"pattern": "LINKED_AGAIN"}))
    assert answered(on) == before + 1


# --- row 2: a single file bound into the workspace -----------------------------------------------------------


def test_a_single_file_bound_into_the_workspace_is_never_answered_from_the_index_alone(
    start: MakeDaemon, tmp_path: Path, namespace: Namespace
) -> None:
    root = tree(tmp_path / "w")
    host = tmp_path / "host"
    write(host, "conf.c", "HOST_ONE\n", 100)
    write(host, "other.c", "OTHER_ONE\n", 200)
    write(root, "bound.c", "placeholder\n", 300)
    write(root, "src/later.c", "later placeholder\n", 400)
    namespace.run("mount", "--bind", str(host / "conf.c"), str(root / "bound.c"))  # before the daemons start
    on, off = pair(start, root, tmp_path / "index", command=namespace.command())
    assert "bound.c" in text_of(same(on, off, "grep", {"pattern": "HOST_ONE"}))
    rewrite(host / "conf.c", "HOST_TWO\n", 7000)  # through the source: its directory's event, not ours
    assert "bound.c" in text_of(same(on, off, "grep", {"pattern": "HOST_TWO"}))
    same(on, off, "glob", {"pattern": "*.c"})
    quiet(on)
    rewrite(namespace.path(root / "bound.c"), "THROUGH_THE_WORKSPACE\n", 150)  # the workspace's own name
    assert "bound.c" in text_of(same(on, off, "grep", {"pattern": "THROUGH_THE_WORKSPACE"}))
    same(on, off, "glob", {"pattern": "*.c"})
    namespace.run("mount", "--bind", str(host / "other.c"), str(root / "src/later.c"))  # while running
    assert "src/later.c" in text_of(same(on, off, "grep", {"pattern": "OTHER_ONE"}))
    quiet(on)
    rewrite(host / "other.c", "OTHER_TWO\n", 8000)
    assert "src/later.c" in text_of(same(on, off, "grep", {"pattern": "OTHER_TWO"}))
    same(on, off, "glob", {"pattern": "**/*.c"})
    namespace.run("umount", str(root / "src/later.c"))
    assert "src/later.c" in text_of(same(on, off, "grep", {"pattern": "later placeholder"}))
    same(on, off, "glob", {"pattern": "**/*.c"})
    quiet(on)
    before = answered(on)
    same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]"})  # the rest is still the index's
    assert answered(on) == before + 1


# --- row 4: `.git` as a symbolic link to a repository elsewhere ---------------------------------------------


def test_a_git_that_links_to_a_repository_elsewhere_has_its_exclude_file_followed(
    start: MakeDaemon, tmp_path: Path
) -> None:
    root = tree(tmp_path / "w")
    (root / ".git").rmdir()
    repo = tmp_path / "repos" / "one.git"
    (repo / "info").mkdir(parents=True)
    (repo / "info" / "exclude").write_text("# nothing\n")
    (root / ".git").symlink_to(repo)
    on, off = pair(start, root, tmp_path / "index")
    assert text_of(same(on, off, "grep", {"pattern": "SUSPEND_LOG"})) == "No matches found"  # a repository
    quiet(on)
    (repo / "info" / "exclude").write_text("src/m1/\n")  # no event in the workspace
    assert "src/m1/" not in text_of(same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]"}))
    quiet(on)
    other = tmp_path / "repos" / "two.git"
    (other / "info").mkdir(parents=True)
    (other / "info" / "exclude").write_text("src/m2/\n")
    (root / ".git.new").symlink_to(other)
    os.replace(root / ".git.new", root / ".git")  # the link retargeted
    text = text_of(same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]"}))
    assert "src/m1/" in text and "src/m2/" not in text
    quiet(on)
    (other / "info" / "exclude").write_text("src/m3/\n")
    text = text_of(same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]"}))
    assert "src/m2/" in text and "src/m3/" not in text
    shutil.rmtree(other)  # the link dangles: no repository, the .gitignore no longer counts
    assert "x.log" in text_of(same(on, off, "grep", {"pattern": "SUSPEND_LOG"}))
    assert wait_until(lambda: not doubts(on), 30), doubts(on)
    before = answered(on)
    same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]"})
    assert answered(on) == before + 1


# --- row 5: rule files that are hard links -------------------------------------------------------------------


def test_an_ignore_file_edited_through_another_name_is_followed(start: MakeDaemon, tmp_path: Path) -> None:
    root = tree(tmp_path / "w")
    shared = tmp_path / "shared-ignore"
    os.link(root / ".gitignore", shared)  # a shared ignore file, outside the workspace
    os.link(root / ".gitignore", root / "ignore-copy.txt")  # and another name inside it
    write(root, "src/m3/.ignore", "# nothing\n")
    on, off = pair(start, root, tmp_path / "index")
    assert text_of(same(on, off, "grep", {"pattern": "SUSPEND_BUILD"})) == "No matches found"
    quiet(on)
    rewrite(shared, "*.log\n")  # build/ is no longer ignored
    assert "build/out.c" in text_of(same(on, off, "grep", {"pattern": "SUSPEND_BUILD"}))
    quiet(on)
    rewrite(root / "ignore-copy.txt", "*.log\nbuild/\nsrc/m0/\n")  # an event, for another name
    text = text_of(same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]|SUSPEND_BUILD"}))
    assert "build/out.c" not in text and "src/m0/" not in text
    quiet(on)
    os.link(root / "src/m3/.ignore", tmp_path / "late-link")  # a link made after start, from outside
    rewrite(tmp_path / "late-link", "f1*\n")
    assert "src/m3/f15.c" not in text_of(same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]"}))
    quiet(on)
    # Everything ignored: the walk fails "No files were searched", and so must the index's answer.
    rewrite(shared, "*\n")
    failed = same(on, off, "grep", {"pattern": "SUSPEND_17"})
    assert "error" in failed and "No files were searched" in text_of(failed), failed
    rewrite(shared, "*.log\n")
    assert "src/m1/f17.c" in text_of(same(on, off, "grep", {"pattern": "SUSPEND_17"}))


# --- row 6: racily clean files across a restart ----------------------------------------------------------------


def test_a_file_rewritten_within_one_tick_while_no_daemon_runs_is_read_again(
    start: MakeDaemon, tmp_path: Path, namespace: Namespace
) -> None:
    """On a filesystem whose timestamps tick once a second (ext4 with 128-byte inodes, on a loop image), a
    same-size rewrite in the second of the last one leaves size, times and inode as they were. The rewrite's
    times are put back with debugfs, so the case does not depend on when the second ends."""
    if shutil.which("mkfs.ext4") is None or shutil.which("debugfs") is None:
        pytest.skip("needs mkfs.ext4 and debugfs (e2fsprogs)")
    image = tmp_path / "coarse.img"
    with open(image, "wb") as f:
        f.truncate(32 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-I", "128", str(image)], check=True, capture_output=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    namespace.mount_or_skip("-o", "loop", str(image), str(mnt), needs="a loop device")
    root = mnt / "w"
    seen = namespace.path(root)
    tree(seen)
    index_dir = tmp_path / "index"
    first = start("--workdir", str(root), "--index", "on", "--index-dir", str(index_dir), command=namespace.command())
    ready(first)
    target = seen / "src" / "racy.c"
    write(seen, "src/racy.c", "RACY_OLD_0001\n")
    settles(first)  # indexed by the first daemon, a moment after it was written
    before = os.stat(target)
    first.stop()
    rewrite(target, "RACY_NEW_0001\n")  # the same size, while no daemon runs
    namespace.run("umount", str(mnt))
    for field in ("mtime", "ctime"):
        subprocess.run(
            ["debugfs", "-w", "-R", f"set_inode_field /w/src/racy.c {field} @{int(before.st_mtime)}", str(image)],
            check=True,
            capture_output=True,
        )
    namespace.run("mount", "-o", "loop", str(image), str(mnt))
    after = os.stat(target)
    same_version = (after.st_size, after.st_mtime_ns, after.st_ctime_ns, after.st_ino)
    assert same_version == (before.st_size, before.st_mtime_ns, before.st_ctime_ns, before.st_ino)
    on, off = pair(start, root, index_dir, command=namespace.command())
    assert "src/racy.c" in text_of(same(on, off, "grep", {"pattern": "RACY_NEW"}))
    assert text_of(same(on, off, "grep", {"pattern": "RACY_OLD"})) == "No matches found"
    quiet(on)
    before_count = answered(on)
    assert "src/racy.c" in text_of(same(on, off, "grep", {"pattern": "RACY_NEW"}))
    assert answered(on) == before_count + 1


# --- row 7: an overlay inside the workspace -------------------------------------------------------------------


def test_an_overlay_inside_the_workspace_is_walked(start: MakeDaemon, tmp_path: Path, namespace: Namespace) -> None:
    root = tree(tmp_path / "w")
    layers = tmp_path / "layers"
    for name in ("lower", "upper", "work", "lower2", "upper2", "work2"):
        (layers / name).mkdir(parents=True)
    write(layers / "lower", "a.c", "LOWER_A\n", 100)
    write(layers / "lower", "sub/b.c", "LOWER_B\n", 200)
    write(layers / "lower2", "c.c", "LOWER_C\n", 300)
    for point in ("ov", "src/ov2"):
        (root / point).mkdir()

    def overlay(n: str, point: str) -> None:
        options = f"lowerdir={layers}/lower{n},upperdir={layers}/upper{n},workdir={layers}/work{n}"
        namespace.mount_or_skip("-t", "overlay", "overlay", "-o", options, str(root / point), needs="overlayfs")

    overlay("", "ov")  # at start
    on, off = pair(start, root, tmp_path / "index", command=namespace.command())
    assert "ov/a.c" in text_of(same(on, off, "grep", {"pattern": "LOWER_[A-Z]"}))
    write(layers / "lower", "added.c", "LOWER_ADDED\n", 400)  # the lower directory, edited directly
    rewrite(layers / "lower" / "a.c", "LOWER_CHANGED\n", 500)
    (layers / "lower" / "sub" / "b.c").unlink()
    for pattern in ("LOWER_[A-Z]+", "LOWER_ADDED", "LOWER_CHANGED", "LOWER_B"):
        same(on, off, "grep", {"pattern": pattern})
    same(on, off, "glob", {"pattern": "**/*.c"})
    same(on, off, "glob", {"pattern": "*", "path": "ov"})
    assert any(d["path"] == "ov" and "overlay" in d["reason"] for d in doubts(on)), doubts(on)
    overlay("2", "src/ov2")  # while running
    assert "src/ov2/c.c" in text_of(same(on, off, "grep", {"pattern": "LOWER_C"}))
    write(layers / "lower2", "d.c", "LOWER_D\n", 600)
    same(on, off, "grep", {"pattern": "LOWER_D"})
    same(on, off, "glob", {"pattern": "**/*.c"})
    time.sleep(0.3)
    before = answered(on)
    same(on, off, "grep", {"pattern": "SUSPEND_1[0-9]", "path": "src/m1"})  # elsewhere: the index's
    assert answered(on) == before + 1

"""What the index watches, and how: the watcher's names by inode (aliases, moves, a watch it may not add),
the mount table's parsing and polling, and the rule files no watch covers (dsh_search.index.watch,
.mounts, .rules)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from array import array
from pathlib import Path

import pytest

from dsh_search.engine import native
from dsh_search.index import files, mounts, rules
from dsh_search.index.rules import RuleFiles, git_dir_excludes, git_entry_rules, global_sources, parent_sources
from dsh_search.index.watch import DIRECTORY, GONE, NEW, ROOT, Unwatchable, Watcher
from tests.support.unprivileged import NOBODY, unprivileged_tree

# --- the watcher ---------------------------------------------------------------------------------------------


def test_events_are_reported_under_every_name_of_a_watched_directory(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    w = Watcher(os.fsencode(tmp_path))
    try:
        assert w.watch(b"") and w.watch(b"a")
        (tmp_path / "a" / "f").write_text("x")
        (tmp_path / "a" / "f").unlink()
        (tmp_path / "a" / "sub").mkdir()
        got = w.drain()
        assert (b"a/f", NEW) in got and (b"a/f", GONE) in got and (b"a/sub", DIRECTORY) in got
        # A directory moved is the same watch under its new name; the old name goes.
        (tmp_path / "a").rename(tmp_path / "b")
        assert w.watch(b"b")
        assert w.directories() == [b"", b"b"]
        (tmp_path / "b" / "g").write_text("y")
        assert (b"b/g", NEW) in w.drain()
    finally:
        w.close()


def test_the_root_itself_moved_is_everything_to_look_at_again(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    w = Watcher(os.fsencode(root))
    try:
        w.watch(b"")
        root.rename(tmp_path / "away")
        assert (b"", ROOT) in w.drain()
    finally:
        w.close()


def test_a_directory_it_may_not_read_is_unwatchable_with_the_reason() -> None:
    """As a user other than root (root may watch any directory): in a child that drops root's rights."""
    with unprivileged_tree() as base:
        (base / "locked").mkdir(mode=0)
        os.chown(base / "locked", NOBODY, NOBODY)
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                if os.geteuid() == 0:
                    os.setgroups([])
                    os.setgid(NOBODY)
                    os.setuid(NOBODY)
                w = Watcher(os.fsencode(base))
                try:
                    w.watch(b"locked")
                except Unwatchable as exc:
                    code = 0 if "permission denied" in str(exc) else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        (base / "locked").chmod(0o755)
        assert os.waitstatus_to_exitcode(status) == 0


def test_a_name_past_path_max_is_unwatchable_with_the_reason(tmp_path: Path) -> None:
    w = Watcher(os.fsencode(tmp_path))
    try:
        with pytest.raises(Unwatchable, match="PATH_MAX"):
            w.watch(b"/".join([b"d" * 200] * 30))
    finally:
        w.close()


# --- the mount table ---------------------------------------------------------------------------------------------


def test_mountinfo_lines_are_read_as_the_kernel_writes_them() -> None:
    text = (
        "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
        "37 36 0:5 / /mnt/parent/with\\040space rw shared:2 - nfs4 server:/x rw\n"
        "garbage line\n"
    )
    table = mounts.parse(text)
    assert table == [mounts.Mount(36, "/mnt/parent", "ext3"), mounts.Mount(37, "/mnt/parent/with space", "nfs4")]
    assert mounts.holding("/mnt/parent/with space/f", table) == table[1]
    assert mounts.under("/mnt/parent", table) == {b"": table[0], b"with space": table[1]}
    assert mounts.remote("nfs4") and mounts.remote("fuse.sshfs") and not mounts.remote("ext4")


def test_network_and_stacked_filesystems_hide_changes_and_say_why() -> None:
    assert mounts.hidden_changes("ext4") is None and mounts.hidden_changes("tmpfs") is None
    assert "made elsewhere" in (mounts.hidden_changes("nfs4") or "")
    assert mounts.hidden_changes("overlay") == (
        "on an overlay filesystem, whose layers' own changes raise no inotify event in it"
    )
    assert mounts.stacked("aufs") and not mounts.stacked("nfs") and not mounts.stacked("ext4")


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root to mount in a namespace of its own"
)
def test_a_mount_made_is_seen_by_the_next_poll(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    script = (
        "import subprocess, sys\n"
        "from dsh_search.index.mounts import MountWatch\n"
        "w = MountWatch(); assert w.changed() and not w.changed()\n"
        f"subprocess.run(['mount', '-t', 'tmpfs', 'none', {str(tmp_path / 'm')!r}], check=True)\n"
        "assert w.changed() and not w.changed()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), "daemon") if p)}
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "python3", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stderr


# --- the rule files no watch covers --------------------------------------------------------------------------------


def test_the_rules_above_the_workspace_and_gits_global_files_are_the_ones_checked(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b" / "w"
    root.mkdir(parents=True)
    (tmp_path / "a" / ".git").write_text("gitdir: ../repo/.git/worktrees/x\n")
    parents = parent_sources(str(root))
    assert str(tmp_path / "a" / "b" / ".gitignore") in parents and str(tmp_path / "a" / ".rgignore") in parents
    assert str(tmp_path / "repo" / ".git" / "worktrees" / "x" / "info" / "exclude") in parents
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text('[core]\n\texcludesFile = "~/my-ignores"\n')
    found = global_sources({"HOME": str(home)})
    assert str(home / "my-ignores") in found and str(home / ".config" / "git" / "ignore") in found


def test_a_worktree_git_file_names_its_git_directory_and_its_common_one(tmp_path: Path) -> None:
    gitdir = tmp_path / "repo" / ".git" / "worktrees" / "x"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {gitdir}\n")
    found = git_dir_excludes(str(tmp_path / "wt" / ".git"))
    assert str(gitdir / "info" / "exclude") in found
    assert found[-1] == str(tmp_path / "repo" / ".git" / "info" / "exclude")


def test_a_change_to_a_checked_file_is_seen_until_the_next_refresh(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    target = tmp_path / "rules"
    target.write_text("*.log\n")
    (root / ".gitignore").symlink_to(target)
    rules = RuleFiles(str(root), {"HOME": str(tmp_path / "home")})
    rules.add_inside([str(root / ".gitignore")])
    assert rules.changed() is None
    target.write_text("*.log\nbuild/\n")
    assert rules.changed() == str(root / ".gitignore")
    rules.refresh()
    assert rules.changed() is None
    (tmp_path / ".ignore").write_text("x\n")  # a parent's rule file appears
    assert rules.changed() == str(tmp_path / ".ignore")


def test_every_rule_file_is_checked_whatever_name_it_is_edited_through(tmp_path: Path) -> None:
    """A hard link from outside, made after the refresh, raises no event: the stat check sees the edit."""
    root = tmp_path / "w"
    root.mkdir()
    (root / ".gitignore").write_text("*.log\n")
    checked = RuleFiles(str(root), {"HOME": str(tmp_path / "home")})
    checked.add_inside([str(root / ".gitignore")])
    os.link(root / ".gitignore", tmp_path / "elsewhere")
    checked.refresh()
    assert checked.changed() is None
    (tmp_path / "elsewhere").write_text("*.tmp\n")
    assert checked.changed() == str(root / ".gitignore")


def test_a_racily_clean_rule_file_is_compared_by_content_until_its_times_are_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rewritten within the timestamp tick of its last change (on a filesystem of one-second or jiffy
    timestamps), a rule file keeps its size and times: its content tells."""
    rule = tmp_path / ".ignore"
    rule.write_text("a\n")
    name = os.fsencode(rule)
    taken = rules.stat_all([name])
    checked = RuleFiles(str(tmp_path / "w"), {})
    checked.add_inside([str(rule)])
    rule.write_text("b\n")  # the same size
    real = rules.stat_all

    def one_tick(names: list[bytes]) -> array[int]:  # the rule file keeps the times it had
        fields = real(names)
        at = names.index(name) * native.FIELDS
        fields[at : at + native.FIELDS] = taken
        return fields

    monkeypatch.setattr(rules, "stat_all", one_tick)
    assert checked.changed() == str(rule)
    rule.write_text("a\n")
    assert checked.changed() is None
    monkeypatch.setattr(files, "RACY_NS", 0)  # its times are old now: any later write must change them
    assert checked.changed() is None
    rule.write_text("c\n")
    assert checked.changed() is None  # no longer compared by content: the signature alone decides


def test_a_rule_file_that_is_a_fifo_is_never_waited_on(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    os.mkfifo(root / ".gitignore")
    os.mkfifo(root / ".git")
    done = threading.Event()

    def check() -> None:
        checked = RuleFiles(str(root), {})
        checked.add_inside([str(root / ".gitignore"), *git_entry_rules(str(root / ".git"))])
        checked.changed()
        done.set()

    threading.Thread(target=check, daemon=True).start()
    assert done.wait(10), "a FIFO held the rule check up"


def test_a_git_link_to_a_repository_elsewhere_names_its_exclude_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    (repo / "info").mkdir(parents=True)
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / ".git").symlink_to(repo)
    git = str(tmp_path / "w" / ".git")
    assert git_entry_rules(git) == [git, os.path.join(git, "info", "exclude")]
    # A directory is compared by identity: what git does inside it is not a change of the rules.
    checked = RuleFiles(str(tmp_path / "w"), {})
    checked.add_inside([git])
    (repo / "index").write_text("x")
    assert checked.changed() is None

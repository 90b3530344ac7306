"""A newcomer's first host, in each language, from the client's README alone (tests/hosts/readme/): copied
to a directory outside the repository, the client installed by the README's own install steps (Python: the
SDK wheel in a fresh venv; Node: the README's `npm install` of a fresh copy of clients/node; Go: the
README's `go mod edit` require and replace), then run. Each host greps, pages the spill, gets a progress
report, cancels a slow grep with the language's own mechanism (asyncio.timeout, AbortSignal, context),
prints the daemon's answer to the cancellation, stops the daemon, and exits: at once, which is checked with
a bound of 3 s after its last line (a timer left running by the client kept a Node host alive ~5 s)."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.support.hosts import find_line, go_run, go_toolchain, gofmt_clean, host_env, node_toolchain
from tests.support.locations import ROOT
from tests.support.packaging import install_wheel
from tests.support.trees import SLOW_PATTERN

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HOSTS = Path(__file__).with_name("readme")
PLACEHOLDER = "/path/to/dsh-search"  # how the READMEs name a checkout of this repository

# What every host prints, in this order (progress may come more than once before the cancellation lands).
TRANSCRIPT = [
    r"grep: Found 250 of 600 matches",
    r"spill: (?P<pages>\d+) pages, (?P<lines>\d+) of (?P<total>\d+) lines",
    r"progress: grep: (\d+ matches in \d+ files so far( \(walking the tree: .+\))?|waiting for a free search slot)",
    r"cancelled: -32800 SEARCH_ABORTED Error: grep was aborted before completion "
    r"\(tool timeout or caller cancellation\)",
    r"closed: 0",
    r"done",
]
EXIT_BOUND_S = 3.0  # after "done": a generous bound, not a measurement


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """600 matching lines: more than a grep shows inline, so the complete result is spilled."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "many.txt").write_text("".join(f"hit {i}\n" for i in range(600)))
    return root


def install_steps(readme: Path) -> str:
    """The shell block of a README's "## Install" section."""
    text = readme.read_text()
    install = text[text.index("\n## Install\n") :]
    install = install[: install.index("\n## ", 1)]
    blocks = re.findall(r"^```sh\n(.*?)^```", install, re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, f"{readme}: one ```sh block expected under ## Install, found {len(blocks)}"
    block: str = blocks[0]
    assert PLACEHOLDER in block, block
    return block


def run_to_exit(argv: Sequence[str], cwd: Path, tmpdir: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """Run a host until it prints "done"; it must then exit 0 within EXIT_BOUND_S, and leave nothing in its
    TMPDIR (the onefile launcher's _MEI* directory is removed when the daemon stops gracefully)."""
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=host_env(tmpdir, env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()
    errors: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def pump_err() -> None:
        assert proc.stderr is not None
        errors.extend(proc.stderr)

    threading.Thread(target=pump, daemon=True).start()
    err_thread = threading.Thread(target=pump_err, daemon=True)
    err_thread.start()
    transcript: list[str] = []
    try:
        while True:
            try:
                line = lines.get(timeout=120)
            except queue.Empty:
                pytest.fail("host silent for 120 s:\n" + "\n".join(transcript) + "".join(errors))
            assert line is not None, "host ended before done:\n" + "\n".join(transcript) + "\n" + "".join(errors)
            transcript.append(line)
            if line == "done":
                break
        try:
            code = proc.wait(timeout=EXIT_BOUND_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"host still running {EXIT_BOUND_S} s after it printed done:\n" + "\n".join(transcript))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err_thread.join(timeout=10)
    assert code == 0, f"host exited {code}:\n" + "\n".join(transcript) + "\n" + "".join(errors)
    assert sorted(p.name for p in tmpdir.iterdir()) == [], list(tmpdir.iterdir())
    return transcript


def check_transcript(lines: list[str]) -> None:
    at = -1
    for pattern in TRANSCRIPT:
        match = find_line(lines[at + 1 :], pattern)
        at = lines.index(match.group(0), at + 1)
    spill = find_line(lines, TRANSCRIPT[1])
    assert int(spill["pages"]) > 1 and spill["lines"] == spill["total"], spill.group(0)
    assert not [line for line in lines if line.startswith("FAILED")], lines


def test_python_host_from_the_readme(sdk_wheel: Path, tree: Path, slow_corpus: Path, tmp_path: Path) -> None:
    venv = install_wheel(sdk_wheel, tmp_path / "venv")  # the README: pip install the wheel
    host = tmp_path / "my-host"
    host.mkdir()
    shutil.copy2(HOSTS / "host.py", host / "host.py")
    # The venv's interpreter, its bin/ first on PATH (as after `activate`), no DSH_SEARCH_EXE: the client
    # runs the wheel's own daemon.
    env = {"PATH": os.pathsep.join([str(venv.root / "bin"), os.environ.get("PATH", "")])}
    argv = [str(venv.python), "-I", "host.py", str(tree), str(slow_corpus), SLOW_PATTERN]
    lines = run_to_exit(argv, host, tmp_path / "tmp", env)
    check_transcript(lines)


def test_node_host_from_the_readme(exe: Path, tree: Path, slow_corpus: Path, tmp_path: Path) -> None:
    node, npm = node_toolchain()
    # A fresh checkout of the client: its tracked files, without the node_modules a test run leaves there.
    checkout = tmp_path / "checkout"
    fresh = shutil.ignore_patterns("node_modules")
    shutil.copytree(ROOT / "clients" / "node", checkout / "clients" / "node", ignore=fresh)
    host = tmp_path / "my-host"
    host.mkdir()
    shutil.copy2(HOSTS / "host.mjs", host / "host.mjs")
    steps = install_steps(ROOT / "clients" / "node" / "README.md").replace(PLACEHOLDER, str(checkout))
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(npm).parent), os.environ.get("PATH", "")]),
        "npm_config_audit": "false",
        "npm_config_fund": "false",
        "npm_config_prefer_offline": "true",
    }
    done = subprocess.run(
        ["bash", "-ec", steps], cwd=host, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{steps}\n{done.stdout}\n{done.stderr}"
    lines = run_to_exit(
        [node, "host.mjs", str(tree), str(slow_corpus), SLOW_PATTERN],
        host,
        tmp_path / "tmp",
        {"DSH_SEARCH_EXE": str(exe)},
    )
    check_transcript(lines)


def test_go_host_from_the_readme(exe: Path, tree: Path, slow_corpus: Path, tmp_path: Path) -> None:
    go, env = go_toolchain()
    host = tmp_path / "my-host"
    host.mkdir()
    shutil.copy2(HOSTS / "main.go", host / "main.go")
    go_run(go, env, ["mod", "init", "example.com/my-host"], host)
    steps = install_steps(ROOT / "clients" / "go" / "README.md").replace(PLACEHOLDER, str(ROOT))
    env = {**env, "PATH": os.pathsep.join([str(Path(go).parent), env.get("PATH", "")])}
    done = subprocess.run(
        ["bash", "-ec", steps], cwd=host, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{steps}\n{done.stdout}\n{done.stderr}"
    gofmt_clean(go, host)
    go_run(go, env, ["vet", "./..."], host)
    go_run(go, env, ["build", "-o", "my-host", "."], host)
    lines = run_to_exit(
        [str(host / "my-host"), str(tree), str(slow_corpus), SLOW_PATTERN],
        host,
        tmp_path / "tmp",
        {"DSH_SEARCH_EXE": str(exe)},
    )
    check_transcript(lines)

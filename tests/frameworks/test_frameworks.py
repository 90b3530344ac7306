"""Every agent framework docs/mcp.md names, first try: its snippet, run as written against the pinned
framework, a scripted model behind the framework's own OpenAI provider, the real frozen daemon over stdio.

For each framework the scripted model (scripted_model.py) asks for an uncapped and a capped grep and
glob, follows the capped glob's footer to the end of its saved result with the read tool, and makes a
grep fail. The test holds, from what the framework actually sent its model:

- the text a model is handed for each grep and glob is our text (the native method's), at most 1.1
  times its size — no framework wraps it in JSON or adds what the model cannot use;
- the capped result's footer is followed to the artifact's last line;
- the error reaches the model as its `Error: …` text;
- the framework started one daemon per connection (two for @openai/agents, whose MCP client probes a
  throwaway copy first), and after it closed, no daemon, ripgrep or extraction directory is left.

`dsh-search` on the snippet's PATH is a shim that records each start and points the daemon's TMPDIR,
state and cache directories into the test's scratch directory (the snippets name the command as a user
would; the MCP SDKs pass the daemon only HOME, PATH, SHELL and TERM, so the shim, not the host, sets them).
The sizes measured are written to .cache/framework-sizes.txt."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.frameworks import scripted_model
from tests.frameworks.conftest import NODE_PROJECT
from tests.support.daemon import Daemon
from tests.support.locations import ROOT
from tests.support.processes import alive, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DOC = ROOT / "docs" / "mcp.md"
SNIPPET = re.compile(r"<!-- tested: (\S+) -->\n```(python|js)\n(.*?)```", re.S)
LOCATOR = re.compile(r"/\S*/session-[0-9a-f]{12}/[0-9a-f]{12}-(?:glob|grep)-results\.txt")
SIZES = ROOT / ".cache" / "framework-sizes.txt"


class Framework(NamedTuple):
    runtime: str  # "mcp1" / "mcp2": the Python venv; "node"
    daemons: int  # daemons one run starts


FRAMEWORKS = {
    "pydantic-ai": Framework("mcp2", 1),
    "fastmcp": Framework("mcp2", 1),
    "openai-agents": Framework("mcp1", 1),
    "langchain-mcp-adapters": Framework("mcp1", 1),
    "mcp-use": Framework("mcp1", 1),
    "smolagents": Framework("mcp1", 1),
    "@openai/agents": Framework("node", 2),  # TypeScript client 2.x, auto mode: a probed copy, then the session's
    "ai": Framework("node", 1),
    "@langchain/mcp-adapters": Framework("node", 1),
    "@mastra/mcp": Framework("node", 2),  # the same client, in the same mode
}
CALLS = [(tool, arguments) for tool, arguments in scripted_model.FIRST_STEPS]


def snippets() -> dict[str, tuple[str, str]]:
    return {name: (language, code) for name, language, code in SNIPPET.findall(DOC.read_text())}


def test_every_framework_in_the_docs_is_tested() -> None:
    assert set(snippets()) == set(FRAMEWORKS)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """150 text files of two `needle` lines (a capped grep and a capped glob at the default caps) and 20
    guides that mention a rare word (an uncapped grep and glob), each file its own mtime."""
    root = tmp_path_factory.mktemp("frameworks") / "project"
    files = {f"src/d{i % 5}/f{i:03}.txt": f"needle {i} one\nneedle {i} two\n" for i in range(150)}
    files |= {f"docs/guide-{i:02}-configuration.md": f"retry budget: a rare setting, {i}\n" for i in range(20)}
    for age, (name, body) in enumerate(files.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        os.utime(path, (1_700_000_000 + age, 1_700_000_000 + age))
    return root


@pytest.fixture(scope="module")
def ours(exe: Path, project: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Our texts for the scripted calls (the native methods', in the same tree), and the capped glob's
    saved result."""
    spill = tmp_path_factory.mktemp("reference-spill")
    d = Daemon(
        ["--sample-over-cap-glob-results", "true", "--spill-dir", str(spill), "--index", "off"], exe=exe, cwd=project
    )
    try:
        texts = [d.result(tool, arguments)["text"] for tool, arguments in CALLS]
        capped = d.result("glob", {"pattern": "**/*.txt"})
        artifact = Path(capped["spill"]["locator"]).read_text()
    finally:
        d.stop()
    return {"texts": texts, "artifact": artifact}


def shim(scratch: Path, exe: Path) -> Path:
    """A `dsh-search` for the snippet's PATH: records its pid, keeps the daemon's files in `scratch`."""
    bin_dir = scratch / "bin"
    bin_dir.mkdir(parents=True)
    for sub in ("tmp", "state", "cache"):
        (scratch / sub).mkdir()
    script = bin_dir / "dsh-search"
    script.write_text(
        "#!/bin/sh\n"
        f'echo $$ >> "{scratch}/spawns"\n'
        f'export TMPDIR="{scratch}/tmp" XDG_STATE_HOME="{scratch}/state" XDG_CACHE_HOME="{scratch}/cache"\n'
        f'exec "{exe}" "$@"\n'
    )
    script.chmod(0o755)
    return bin_dir


def in_tree(root: Path) -> list[int]:
    """Live processes whose working directory is in `root`: a daemon, or a ripgrep it started."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if (cwd == str(root) or cwd.startswith(f"{root}/")) and alive(int(entry)):
                found.append(int(entry))
    return found


def masked(text: str) -> str:
    return LOCATOR.sub("<saved result>", text)


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_framework_snippet(
    name: str,
    exe: Path,
    project: Path,
    ours: dict[str, Any],
    tmp_path: Path,
    model_url: str,
    request: pytest.FixtureRequest,
) -> None:
    framework = FRAMEWORKS[name]
    language, code = snippets()[name]
    bin_dir = shim(tmp_path, exe)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": "sk-scripted",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",  # the SDKs' trace exports would go to the network
        "MCP_USE_ANONYMIZED_TELEMETRY": "false",
        "HF_HUB_OFFLINE": "1",
    }
    if language == "python":
        python = request.getfixturevalue("pythons")[framework.runtime]
        program = tmp_path / "snippet.py"
        program.write_text(code)
        argv = [str(python), str(program)]
    else:
        node = request.getfixturevalue("node")
        program = NODE_PROJECT / f".snippet-{re.sub(r'[^a-z]+', '-', name)}.mjs"  # resolves the project's packages
        program.write_text(code)
        argv = [node, str(program)]
    before = len(scripted_model.SCRIPT.runs)
    try:
        done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=180, check=False)
    finally:
        if language == "js":
            program.unlink()
    runs = scripted_model.SCRIPT.runs[before:]
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    assert scripted_model.FINAL in done.stdout, done.stdout[-2000:]
    assert len(runs) == 1, [r["steps"][:1] for r in runs]
    steps = runs[0]["steps"]
    assert [s["tool"] for s in steps] == ["grep", "grep", "glob", "glob", "read", "read", "read", "grep"], steps

    sizes = []
    for step, text in zip(steps[:4], ours["texts"], strict=True):
        seen = step["seen"]
        assert masked(text).strip() in masked(seen), f"{name}: {step['arguments']} reached the model as {seen[:500]!r}"
        locators = LOCATOR.findall(text), LOCATOR.findall(seen)
        size = len(text) + sum(map(len, locators[1][:1])) - sum(map(len, locators[0][:1]))  # same saved-result path
        assert len(seen) <= 1.1 * size, f"{name}: {step['arguments']}: {len(seen)} characters for our {size}"
        sizes.append(f"{len(seen)}/{size}")
    # The capped glob's footer, followed to the end of the saved result: every line, in three pages.
    numbered = [line for s in steps[4:7] for line in s["seen"].splitlines() if re.match(r"\s*\d+\t", line)]
    assert [line.split("\t", 1)[1] for line in numbered] == ours["artifact"].split("\n")
    assert "Use offset" not in steps[6]["seen"]
    error = steps[7]["seen"]
    assert "Error: grep pattern rejected by ripgrep" in error, error

    spawned = [int(pid) for pid in (tmp_path / "spawns").read_text().split()]
    assert len(spawned) == framework.daemons, spawned
    deadline = time.monotonic() + 5
    while (in_tree(project) or any(map(alive, spawned))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not in_tree(project), f"{name} left a daemon or ripgrep running"
    assert not any(map(alive, spawned)), f"{name} left a daemon running"
    assert list((tmp_path / "tmp").iterdir()) == [], f"{name} left an extraction directory"
    line = f"{name}: grep uncapped {sizes[0]}, capped {sizes[1]}; glob uncapped {sizes[2]}, capped {sizes[3]}; "
    line += f"{len(spawned)} daemon(s); error as {len(error)} characters: {error[:80]!r}\n"
    SIZES.parent.mkdir(exist_ok=True)
    with SIZES.open("a") as f:
        f.write(line)


KEEP_ALIVE = """
import asyncio, os, sys

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.test import TestModel


def live(pids):
    return sum(os.path.exists(f"/proc/{p}") and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
               for p in pids)


async def main(keep_alive):
    counts = []
    before = len(open(os.environ["SPAWNS"]).read().split()) if os.path.exists(os.environ["SPAWNS"]) else 0
    for _ in range(3):  # a new toolset per run, as a host that builds its agent per request does
        server = StdioTransport(command="dsh-search", args=["--sample-over-cap-glob-results", "true"], **keep_alive)
        agent = Agent(TestModel(call_tools=["glob"]), toolsets=[MCPToolset(server)])
        async with agent:
            await agent.run("find the guides")
        spawned = open(os.environ["SPAWNS"]).read().split()[before:]
        counts.append(live(spawned))
    print(counts, flush=True)


asyncio.run(main({"keep_alive": False}))  # as the docs' snippet: none is left after its run
asyncio.run(main({}))  # the default: each run's daemon lives on until the event loop ends
"""


def test_fastmcp_keep_alive_piles_up_daemons_unless_turned_off(
    exe: Path, project: Path, tmp_path: Path, pythons: dict[str, Path]
) -> None:
    """fastmcp's StdioTransport (under pydantic-ai's MCPToolset) keeps its daemon after `async with` by
    default, until the event loop ends: a toolset per run piles them up. `keep_alive=False`, as the
    docs' snippet sets, leaves none. pydantic-ai's own TestModel is the scripted model here."""
    bin_dir = shim(tmp_path, exe)
    program = tmp_path / "keep_alive.py"
    program.write_text(KEEP_ALIVE)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPAWNS": str(tmp_path / "spawns"),
    }
    done = subprocess.run(
        [str(pythons["mcp2"]), str(program)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split("\n")[:2] == ["[0, 0, 0]", "[1, 2, 3]"], done.stdout
    spawned = [int(pid) for pid in (tmp_path / "spawns").read_text().split()]
    assert len(spawned) == 6
    assert wait_until(lambda: not any(map(alive, spawned)), 5), "daemons outlived the host"
    assert list((tmp_path / "tmp").iterdir()) == []

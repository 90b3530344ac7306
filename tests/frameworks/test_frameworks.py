"""Every agent framework docs/mcp.md names, first try: its snippet, run as written against the pinned
framework, a scripted model behind the framework's own OpenAI provider, the real frozen daemon over stdio.

For each framework the scripted model (scripted_model.py) asks for an uncapped and a capped grep and
glob, follows the capped glob's footer to the end of its saved result with the read tool, and makes a
grep fail. The test holds, from what the framework actually sent its model:

- the text a model is handed for each grep and glob is our text (the native method's), at most 1.1
  times its size — no framework wraps it in JSON or adds what the model cannot use — with the default
  result shape (SPEC §3: an outputSchema per tool, structuredContent of the text and its counts; the
  text alone for the two clients recognised as showing their model more, docs/decisions.md);
- what the framework's MCP client sends to be recognised — its clientInfo, capabilities, protocol and
  log level, as the daemon logs them at info — is the record in CLIENTS, and so is the shape it got;
- the capped result's footer is followed to the artifact's last line;
- the error reaches the model as its `Error: …` text;
- the framework started one daemon per connection (two for @openai/agents, whose MCP client probes a
  throwaway copy first), and after it closed, no daemon, ripgrep or extraction directory is left.

`dsh-search` on the snippet's PATH is a shim that records each start, points the daemon's TMPDIR, state
and cache directories into the test's scratch directory and keeps its stderr (at info) in a file there
(the snippets name the command as a user would; the MCP SDKs pass the daemon only HOME, PATH, SHELL and
TERM, so the shim, not the host, sets them). The sizes measured are written to .cache/framework-sizes.txt.

`test_recognised_clients_need_the_text_alone` runs the two recognised frameworks with the contract's
shape forced on them (`--mcp-result structured`): the day either stops showing its model more than the
text, it fails, and the recognition can go."""

from __future__ import annotations

import json
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


class Client(NamedTuple):
    """What a framework's MCP client says of itself when it lists and calls tools, and the result shape it
    is given under mcpResult auto (the daemon's info log line, methods/mcp.py note_client)."""

    info: dict[str, Any]  # clientInfo
    protocol: str
    capabilities: dict[str, Any]
    log_level: str | None  # a 2026-07-28 request's io.modelcontextprotocol/logLevel
    shape: str  # "structured" (SPEC §3) or "text"


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
MODERN, LEGACY = "2026-07-28", "2025-11-25"
PYTHON_SDK = {"name": "mcp", "version": "0.1.0"}  # the MCP Python SDK's default clientInfo (1.x and 2.x)
CLIENTS = {
    # fastmcp's Client: the SDK's clientInfo, and log level debug asked on every modern request.
    "pydantic-ai": Client(PYTHON_SDK, MODERN, {}, "debug", "text"),
    "fastmcp": Client(PYTHON_SDK, MODERN, {}, "debug", "text"),
    "openai-agents": Client(PYTHON_SDK, LEGACY, {}, None, "structured"),
    "langchain-mcp-adapters": Client(PYTHON_SDK, LEGACY, {}, None, "structured"),
    "mcp-use": Client(
        {"name": "mcp-use", "version": "1.7.1", "websiteUrl": "https://github.com/mcp-use/mcp-use"},
        LEGACY,
        {"roots": {"listChanged": True}},
        None,
        "structured",
    ),
    "smolagents": Client(PYTHON_SDK, LEGACY, {}, None, "structured"),
    "@openai/agents": Client({"name": "stdio: dsh-search", "version": "1.0.0"}, MODERN, {}, None, "structured"),
    "ai": Client({"name": "ai-sdk-mcp-client", "version": "1.0.0"}, MODERN, {}, None, "structured"),
    "@langchain/mcp-adapters": Client(
        {"name": "@langchain/mcp-adapters", "version": "1.1.4"}, LEGACY, {}, None, "text"
    ),
    # Mastra names itself after the server's key in its configuration, and declares the MCP Apps extension.
    "@mastra/mcp": Client(
        {"name": "dshSearch", "version": "1.0.0"},
        MODERN,
        {"extensions": {"io.modelcontextprotocol/ui": {}}},
        "info",
        "structured",
    ),
}
CLIENT_LINE = re.compile(
    r"client (\{.*\}|null), protocol (\S+), capabilities (\{.*\}|null), log level (\S+): tool results (\w+)"
)
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


def shim(scratch: Path, exe: Path, *extra: str) -> Path:
    """A `dsh-search` for the snippet's PATH: records its pid, keeps the daemon's files in `scratch` and
    its stderr, at info, in `scratch/daemon.log`; `extra` arguments follow the snippet's."""
    bin_dir = scratch / "bin"
    bin_dir.mkdir(parents=True)
    for sub in ("tmp", "state", "cache"):
        (scratch / sub).mkdir()
    script = bin_dir / "dsh-search"
    script.write_text(
        "#!/bin/sh\n"
        f'echo $$ >> "{scratch}/spawns"\n'
        f'export TMPDIR="{scratch}/tmp" XDG_STATE_HOME="{scratch}/state" XDG_CACHE_HOME="{scratch}/cache"\n'
        f'exec "{exe}" "$@" {" ".join(extra)} --log-level info 2>>"{scratch}/daemon.log"\n'
    )
    script.chmod(0o755)
    return bin_dir


def clients_seen(scratch: Path) -> list[Client]:
    """The clients the daemons a run started logged (each once), with the shape each was given."""
    log = scratch / "daemon.log"
    found: list[Client] = []
    for line in log.read_text().splitlines() if log.exists() else ():
        match = CLIENT_LINE.search(line)
        if match:
            info, protocol, capabilities, level, shape = match.groups()
            level = None if level == "None" else level
            client = Client(json.loads(info), protocol, json.loads(capabilities), level, shape)
            if client not in found:
                found.append(client)
    return found


class Run(NamedTuple):
    steps: list[dict[str, Any]]  # what the scripted model asked for and saw
    spawned: list[int]  # the daemons started
    clients: list[Client]


def run_snippet(
    name: str, exe: Path, project: Path, scratch: Path, model_url: str, request: pytest.FixtureRequest, *extra: str
) -> Run:
    """Run the framework's docs snippet as written, with the shim's daemon (`extra` arguments added): it
    exits 0 after the scripted model's one run."""
    framework = FRAMEWORKS[name]
    language, code = snippets()[name]
    bin_dir = shim(scratch, exe, *extra)
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
        program = scratch / "snippet.py"
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
    log = (scratch / "daemon.log").read_text()[-4000:] if (scratch / "daemon.log").exists() else ""
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}\ndaemon:\n{log}"
    assert scripted_model.FINAL in done.stdout, done.stdout[-2000:]
    assert len(runs) == 1, [r["steps"][:1] for r in runs]
    spawned = [int(pid) for pid in (scratch / "spawns").read_text().split()]
    return Run(runs[0]["steps"], spawned, clients_seen(scratch))


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


def comparable_size(text: str, seen: str) -> int:
    """The size of our text had it named the saved result the framework's daemon named (its own path)."""
    ours, theirs = LOCATOR.findall(text), LOCATOR.findall(seen)
    return len(text) + sum(map(len, theirs[:1])) - sum(map(len, ours[:1]))


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
    steps, spawned, clients = run_snippet(name, exe, project, tmp_path, model_url, request)
    assert [s["tool"] for s in steps] == ["grep", "grep", "glob", "glob", "read", "read", "read", "grep"], steps
    assert clients == [CLIENTS[name]], clients

    sizes = []
    for step, text in zip(steps[:4], ours["texts"], strict=True):
        seen = step["seen"]
        assert masked(text).strip() in masked(seen), f"{name}: {step['arguments']} reached the model as {seen[:500]!r}"
        size = comparable_size(text, seen)
        assert len(seen) <= 1.1 * size, f"{name}: {step['arguments']}: {len(seen)} characters for our {size}"
        sizes.append(f"{len(seen)}/{size}")
    # The capped glob's footer, followed to the end of the saved result: every line, in three pages.
    numbered = [line for s in steps[4:7] for line in s["seen"].splitlines() if re.match(r"\s*\d+\t", line)]
    assert [line.split("\t", 1)[1] for line in numbered] == ours["artifact"].split("\n")
    assert "Use offset" not in steps[6]["seen"]
    error = steps[7]["seen"]
    assert "Error: grep pattern rejected by ripgrep" in error, error

    assert len(spawned) == framework.daemons, spawned
    deadline = time.monotonic() + 5
    while (in_tree(project) or any(map(alive, spawned))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not in_tree(project), f"{name} left a daemon or ripgrep running"
    assert not any(map(alive, spawned)), f"{name} left a daemon running"
    assert list((tmp_path / "tmp").iterdir()) == [], f"{name} left an extraction directory"
    line = f"{name}: grep uncapped {sizes[0]}, capped {sizes[1]}; glob uncapped {sizes[2]}, capped {sizes[3]}; "
    line += f"{len(spawned)} daemon(s); error as {len(error)} characters: {error[:80]!r}; "
    line += f"client {json.dumps(CLIENTS[name].info)} {CLIENTS[name].protocol}: {CLIENTS[name].shape}\n"
    SIZES.parent.mkdir(exist_ok=True)
    with SIZES.open("a") as f:
        f.write(line)


@pytest.mark.parametrize("name", ["pydantic-ai", "@langchain/mcp-adapters"])
def test_recognised_clients_need_the_text_alone(
    name: str,
    exe: Path,
    project: Path,
    ours: dict[str, Any],
    tmp_path: Path,
    model_url: str,
    request: pytest.FixtureRequest,
) -> None:
    """Why mcpResult auto gives these two the text alone: with the contract's shape (`structured`), what
    each hands its model for a grep or glob is not the text — pydantic-ai hands over the structuredContent
    serialized (JSON with the text escaped in it), LangChain.js JSON of the text block with the
    structuredContent beside it."""
    steps, _spawned, clients = run_snippet(
        name, exe, project, tmp_path, model_url, request, "--mcp-result", "structured"
    )
    assert {c.shape for c in clients} == {"structured"}
    sizes = []
    for step, text in zip(steps[:4], ours["texts"], strict=True):
        seen = step["seen"]
        shown = json.loads(seen)  # not the text: a JSON document that holds it
        if name == "pydantic-ai":
            assert masked(shown["text"]) == masked(text) and "truncated" in shown, shown
        else:
            assert masked(shown["text"]) == masked(text) and "structuredContent" in shown, shown
        sizes.append(f"{len(seen) / comparable_size(text, seen):.3f}")
    SIZES.parent.mkdir(exist_ok=True)
    with SIZES.open("a") as f:
        f.write(
            f"{name} given the structured shape: grep uncapped, capped; glob uncapped, capped: {', '.join(sizes)}\n"
        )


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

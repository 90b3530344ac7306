"""A host on dsh_search_bin.Client that drives a daemon on the far side of a launcher (tests/remote).

    python python_host.py '{"mode": "session"|"hang", "launcher": [...], "workdir": "/tmp/ws", "slow": "/tmp/slow",
                            "install": "/path/to/dist" (optional)}'

It prints one line per step (see tests/remote/test_hosts_e2e.py, which reads the same lines from the Node
and Go hosts); in "hang" mode it starts a grep that outlasts the test and waits for it, to be killed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "clients" / "python"))

from dsh_search_bin import Client, Progress, RequestError, cancel_reply, install_remote

SLOW_PATTERN = r"(?:\w+\W){1,20}?\w{9}\b"


def say(line: str) -> None:
    print(line, flush=True)


async def session(config: dict[str, Any]) -> None:
    launcher = config["launcher"]
    executable = None
    if config.get("install"):
        executable = await install_remote(launcher, config["install"])
        say(f"install: {executable}")
    async with Client(
        executable,
        launcher=launcher,
        sample_over_cap_glob_results=True,
        workdir=config["workdir"],
        args=["--index", "off", "--timeout-ms", "120000"],
        stderr="capture",
    ) as client:
        info = client.initialize_result
        assert info is not None
        say(f"initialize: {info.server_name} remote={json.dumps(info.config['remote'])} ripgrep={info.ripgrep_path}")
        found = await client.grep("TODO")
        say(f"grep: {found.text.splitlines()[0]} in {', '.join(f['path'] for f in found.meta['files'])}")
        listed = await client.glob("**/*.js")
        say(f"glob: {', '.join(listed.meta['paths'])}")
        capped = await client.glob("many/*.txt")
        assert capped.spill is not None
        say(f"capped: {len(capped.meta['paths'])} of {capped.meta['total']}, saved at {capped.spill.locator}")
        say(f"footer: {capped.text.splitlines()[-1]}")
        lines = []
        async for page in client.spill_pages(capped.spill, limit=40):
            lines += page.text.split("\n")
        say(f"spill pages: {len(lines)} lines, {lines[0]} .. {lines[-1]}")
        read = await client.call_tool("read", {"path": capped.spill.locator, "offset": 150, "limit": 1})
        say(f"read: {read['content'][0]['text'].splitlines()[0]}")
        reports: list[Progress] = []
        try:
            async with asyncio.timeout(1.5):
                await client.grep(SLOW_PATTERN, cwd=config["slow"], on_progress=reports.append)
            say("cancel: the slow grep finished")
        except TimeoutError as exc:
            reply = cancel_reply(exc)
            assert reply is not None
            say(f"cancel: {reply.rpc_code} {reply.code} {reply.text}")
        say(f"progress: {len(reports)} reports, {reports[0].message if reports else ''}")
        try:
            await client.grep("(")
        except RequestError as exc:
            say(f"error: {exc.rpc_code} {exc.code} {exc.text.splitlines()[0]}")
        try:
            await client.grep("x", cwd="/nonexistent/on-the-far-side")
        except RequestError as exc:
            say(f"missing cwd: {exc.code} {exc.text}")
    say(f"close: status {client.returncode}")


async def hang(config: dict[str, Any]) -> None:
    async with Client(
        launcher=config["launcher"],
        install=config.get("install"),
        sample_over_cap_glob_results=True,
        workdir=config["workdir"],
        args=["--index", "off", "--timeout-ms", "120000"],
    ) as client:
        say("slow grep: started")
        await client.grep(SLOW_PATTERN, cwd=config["slow"])
        say("slow grep: ended")


if __name__ == "__main__":
    options = json.loads(sys.argv[1])
    asyncio.run(session(options) if options["mode"] == "session" else hang(options))
    say("done")

"""A short, real session with the frozen daemon over NDJSON on its stdin/stdout."""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from typing import Any


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--exe", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    spill = tempfile.mkdtemp(prefix="dsh-demo-spill-")
    cmd = [
        args.exe,
        "--sample-over-cap-glob-results",
        "true",
        "--workdir",
        args.workdir,
        "--spill-dir",
        spill,
        "--glob-max-results",
        "8",
        "--grep-max-matches",
        "6",
    ]
    print("$ " + " ".join(cmd))
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    counter = 0

    def send(method: str, params: Any = None, *, notify: bool = False) -> dict[str, Any] | None:
        nonlocal counter
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            counter += 1
            message["id"] = counter
        line = json.dumps(message, ensure_ascii=False)
        print(f"\n--> {line}")
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line.encode() + b"\n")
        proc.stdin.flush()
        if notify:
            return None
        while True:  # the daemon's own notifications (e.g. tools/list_changed) may come first
            reply = proc.stdout.readline().decode()
            response: dict[str, Any] = json.loads(reply)
            if "id" in response:
                print(f"<-- {reply.rstrip()}")
                return response
            print(f"<-- (notification) {reply.rstrip()}")

    send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "demo"}})
    send("ping")
    send("rpc.discover")
    send("tools/list")
    send("glob", {"pattern": "*.py", "path": "daemon"})
    found = send("grep", {"pattern": "def [a-z_]+\\(", "path": "daemon/dsh_search", "include": "*.py"})
    if found and found.get("result", {}).get("spill"):
        send("spill/read", {"locator": found["result"]["spill"]["locator"], "offset": 1, "limit": 12})
    send("tools/call", {"name": "grep", "arguments": {"pattern": "(unclosed"}})
    send(
        "scrollback/append",
        {
            "sessionId": "term-1",
            "data": "$ make\r\ncc -c main.c\r\n\x1b[31merror: boom\x1b[0m\r\nmake: *** [all] Error 1\r\n",
        },
    )
    send("terminal_search", {"sessionId": "term-1", "pattern": "error"})
    send("shutdown")
    send("exit", notify=True)
    print(f"\n(daemon exited with status {proc.wait(timeout=10)})")


if __name__ == "__main__":
    main()

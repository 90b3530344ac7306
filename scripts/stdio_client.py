"""What the scripts share: a minimal JSON-RPC client (spawn the daemon, one NDJSON request at a time)
and a timer."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from typing import Any


class StdioClient:
    def __init__(self, argv: Sequence[str]) -> None:
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and return the whole response (the daemon answers one at a time here)."""
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next_response()

    def _next_response(self) -> dict[str, Any]:
        """The next message that answers a request: the daemon's own notifications are passed over."""
        assert self.proc.stdout is not None
        while True:
            response: dict[str, Any] = json.loads(self.proc.stdout.readline())
            if "id" in response:
                return response

    def result(self, method: str, params: Any = None) -> Any:
        response = self.request(method, params)
        assert "result" in response, response
        return response["result"]

    def results_concurrently(self, calls: Sequence[tuple[str, Any]]) -> list[Any]:
        """Send every request at once (one write), then read every response; results in call order.
        The daemon runs them concurrently and may answer in any order."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        first = self.next_id + 1
        lines = []
        for method, params in calls:
            self.next_id += 1
            lines.append(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
        self.proc.stdin.write("\n".join(lines).encode() + b"\n")
        self.proc.stdin.flush()
        answers: dict[int, Any] = {}
        while len(answers) < len(calls):
            response = self._next_response()
            assert "result" in response, response
            answers[response["id"]] = response["result"]
        return [answers[first + i] for i in range(len(calls))]

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


def timed(fn: Any) -> float:
    """Seconds one call of fn takes."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started

"""The request table in-process, with a fake dispatcher and a fake sender: dispatch, batches,
cancellation by each reason at every instant (before start, while running, after the end), shutdown."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh_search.transport import jsonrpc
from dsh_search.transport.requests import CancelReason, RequestTable

Response = dict[str, Any]


class Harness:
    """A table whose calls run `work[method]` (a coroutine function) and whose answers are recorded."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.started: list[Any] = []
        self.exits = 0
        self.idles = 0
        self.gates: dict[Any, asyncio.Event] = {}
        self.table = RequestTable(self.dispatch, self.cancelled, self.sent.append)
        self.table.on_exit = self.on_exit
        self.table.on_idle = self.on_idle

    def on_exit(self) -> None:
        self.exits += 1

    def on_idle(self) -> None:
        self.idles += 1

    async def dispatch(self, call: jsonrpc.Call) -> Response | None:
        self.started.append(call.id)
        if call.method == "slow":
            gate = self.gates.setdefault(call.id, asyncio.Event())
            await gate.wait()
        if call.method == "boom":
            raise RuntimeError("a bug")
        if call.is_notification:
            return None
        return jsonrpc.result(call.id, {"method": call.method})

    def cancelled(self, call: jsonrpc.Call, reason: CancelReason) -> Response | None:
        if reason is CancelReason.CLIENT:
            return None
        return jsonrpc.error(call.id, jsonrpc.REQUEST_CANCELLED, reason.value)

    def submit(self, message: Any) -> None:
        parsed = jsonrpc.parse(jsonrpc.dumps(message))
        assert isinstance(parsed, jsonrpc.Incoming)
        self.table.submit(parsed)

    def answers(self) -> dict[Any, Response]:
        out: dict[Any, Response] = {}
        for message in self.sent:
            for response in message if isinstance(message, list) else [message]:
                assert response["id"] not in out, f"answered twice: {response}"
                out[response["id"]] = response
        return out


def request(id_: Any, method: str = "ping") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method}


def cancel(id_: Any, method: str = "$/cancelRequest") -> dict[str, Any]:
    key = "requestId" if method == "notifications/cancelled" else "id"
    return {"jsonrpc": "2.0", "method": method, "params": {key: id_}}


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_requests_are_answered_and_notifications_are_not() -> None:
    async def go() -> Harness:
        h = Harness()
        h.submit(request(1))
        h.submit({"jsonrpc": "2.0", "method": "ping"})
        await h.table.drained()
        return h

    h = run(go())
    assert h.sent == [{"jsonrpc": "2.0", "id": 1, "result": {"method": "ping"}}]
    assert h.idles >= 1


@pytest.mark.parametrize(
    ("method", "expected"),
    [("$/cancelRequest", [{"jsonrpc": "2.0", "id": 1, "error": {"code": -32800, "message": "caller"}}]),
     ("notifications/cancelled", [])],
)  # fmt: skip
def test_cancelled_before_it_ever_ran(method: str, expected: list[Any]) -> None:
    """The cancellation arrives in the same read as the request: the task never starts."""

    async def go() -> Harness:
        h = Harness()
        h.submit(request(1, "slow"))
        h.submit(cancel(1, method))
        await h.table.drained()
        return h

    h = run(go())
    assert h.started == [] and h.sent == expected


def test_lsp_and_mcp_cancellation_of_a_running_call() -> None:
    async def go() -> Harness:
        h = Harness()
        h.submit(request("lsp", "slow"))
        h.submit(request("mcp", "slow"))
        await settle()
        assert h.started == ["lsp", "mcp"]
        h.submit(cancel("lsp"))
        h.submit(cancel("mcp", "notifications/cancelled"))
        await h.table.drained()
        return h

    h = run(go())
    assert h.answers() == {"lsp": {"jsonrpc": "2.0", "id": "lsp", "error": {"code": -32800, "message": "caller"}}}


def test_cancelling_a_finished_or_unknown_id_does_nothing() -> None:
    async def go() -> Harness:
        h = Harness()
        h.submit(request(1))
        await h.table.drained()
        h.submit(cancel(1))
        h.submit(cancel(99))
        h.submit(cancel(None))
        h.submit(cancel([1]))  # not a valid id
        await settle()
        return h

    h = run(go())
    assert h.answers() == {1: {"jsonrpc": "2.0", "id": 1, "result": {"method": "ping"}}}


def test_ids_stay_apart_by_type() -> None:
    async def go() -> Harness:
        h = Harness()
        h.submit(request(1, "slow"))
        h.submit(request("1", "slow"))
        await settle()
        h.submit(cancel("1"))
        await settle()
        h.gates[1].set()
        await h.table.drained()
        return h

    answers = run(go()).answers()
    assert answers[1]["result"] == {"method": "slow"} and answers["1"]["error"]["code"] == -32800


def test_batch_answers_once_with_every_element() -> None:
    async def go() -> Harness:
        h = Harness()
        h.submit(
            [
                request(1),
                request(2, "slow"),
                cancel(2),  # in the same batch: element 2 never runs
                {"jsonrpc": "2.0", "method": "ping"},  # a notification: no element in the answer
                {"jsonrpc": "2.0", "id": 3},  # invalid: answered in the array
                request(4, "boom"),
            ]
        )
        await h.table.drained()
        return h

    h = run(go())
    assert len(h.sent) == 1 and isinstance(h.sent[0], list)
    by_id = {r["id"]: r for r in h.sent[0]}
    assert by_id[1]["result"] == {"method": "ping"}
    assert by_id[2]["error"]["code"] == -32800
    assert by_id[3]["error"]["code"] == jsonrpc.INVALID_REQUEST
    assert by_id[4]["error"] == {"code": jsonrpc.INTERNAL_ERROR, "message": "Internal error"}
    assert len(h.sent[0]) == 4


def test_batch_of_notifications_and_mcp_cancelled_calls_is_not_answered() -> None:
    async def go() -> Harness:
        h = Harness()
        h.submit([{"jsonrpc": "2.0", "method": "ping"}, request(1, "slow"), cancel(1, "notifications/cancelled")])
        await h.table.drained()
        return h

    assert run(go()).sent == []


def test_a_bug_in_a_method_is_an_internal_error_without_details() -> None:
    async def go() -> Harness:
        h = Harness()
        h.submit(request(1, "boom"))
        h.submit({"jsonrpc": "2.0", "method": "boom"})  # a failing notification: logged, not answered
        await h.table.drained()
        return h

    assert run(go()).sent == [{"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal error"}}]


def test_shutdown_aborts_everything_running_once() -> None:
    async def go() -> Harness:
        h = Harness()
        for i in range(5):
            h.submit(request(i, "slow"))
        await settle()
        h.submit(cancel(0))  # already cancelled by its caller: keeps that reason
        h.table.abort_all()
        h.table.abort_all()
        await h.table.drained()
        return h

    answers = run(go()).answers()
    assert answers[0]["error"]["message"] == "caller"
    assert [answers[i]["error"]["message"] for i in range(1, 5)] == ["shutdown"] * 4


def test_running_requests_and_exit() -> None:
    async def go() -> tuple[Harness, int, int]:
        h = Harness()
        h.submit(request(1, "slow"))
        h.submit({"jsonrpc": "2.0", "method": "slow", "params": None})
        await settle()
        running = len(h.table.running_requests())
        h.submit({"jsonrpc": "2.0", "method": "exit"})
        h.submit({"jsonrpc": "2.0", "method": "$/setTrace"})  # other $/ notifications are ignored
        exits = h.exits
        h.table.abort_all()
        await h.table.drained()
        return h, running, exits

    h, running, exits = run(go())
    assert running == 1  # the notification is not a request anyone waits for
    assert exits == 1 and len(h.started) == 2

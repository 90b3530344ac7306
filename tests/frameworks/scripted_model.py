"""A scripted model behind a fake OpenAI endpoint on 127.0.0.1: Chat Completions and Responses.

Every framework under test points its own OpenAI provider at it (`OPENAI_BASE_URL`), so what it records is
exactly what that framework would send a real model: the text of each tool result as the model is handed
it. The script is the same for every framework and follows the conversation, never the prompt:

    grep "rare" (uncapped) → grep "needle" (capped) → glob "*.md" (uncapped) → glob "**/*.txt" (capped)
    → read the capped glob's saved result, page by page, from the path its footer names, to its end
    → grep "(" (an error) → a final answer.

A run starts with a request that holds no tool call yet; each later request is the next step, and its
last item is what the framework handed the model for the step before (the first such, if the framework
asks again). One tool call per answer, named
as the framework declared the tool (Mastra prefixes the server's name); a property the framework
declared required that the step does not use is sent as `null`, as models in strict modes do; the final
answer is a call of `final_answer` where the framework declares one (smolagents). A request
with `stream: true` is answered as server-sent events. `GET /runs` gives the recordings.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

READ_PAGE = 60  # lines per read of a saved result: the capped glob's 150 paths take three pages
STORED_AT = re.compile(r"Full (?:sorted|grep) result stored at: (\S+)\. ")
MORE = re.compile(r"Use offset (\d+) to read more")
FIRST_STEPS: list[tuple[str, dict[str, Any]]] = [
    ("grep", {"pattern": "rare"}),
    ("grep", {"pattern": "needle"}),
    ("glob", {"pattern": "*.md"}),
    ("glob", {"pattern": "**/*.txt"}),
]
FINAL = "The scripted run is over."
_ids = itertools.count(1)


def text_of(content: Any) -> str:
    """What a message or tool output says, whichever shape the framework gave it: a string, or parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                texts.append(json.dumps(part))
        return "".join(texts)
    return "" if content is None else json.dumps(content)


class Turn:
    """A request in the terms the script needs, from either API."""

    def __init__(self, request: dict[str, Any], api: str) -> None:
        self.api = api
        self.model = str(request.get("model", "scripted"))
        self.stream = bool(request.get("stream"))
        self.tools: dict[str, dict[str, Any]] = {}  # declared name → parameters
        for tool in request.get("tools") or []:
            function = tool.get("function", tool) if isinstance(tool, dict) else {}
            if isinstance(function.get("name"), str):
                self.tools[function["name"]] = function.get("parameters") or {}
        if api == "chat":
            items = request.get("messages") or []
            self.started = any(m.get("role") == "assistant" or m.get("tool_calls") for m in items)
            self.last = text_of(items[-1].get("content")) if items else ""
            self.last_kind = str(items[-1].get("role")) if items else ""
        else:
            items = request.get("input") or []
            items = [{"role": "user", "content": items}] if isinstance(items, str) else items
            self.started = any(i.get("type") == "function_call" or i.get("role") == "assistant" for i in items)
            last = items[-1] if items else {}
            self.last = text_of(last.get("output", last.get("content")))
            self.last_kind = str(last.get("type") or last.get("role"))

    def declared(self, name: str) -> str:
        """The name the framework gave our tool `name` (as is, or with a prefix of its own)."""
        if name in self.tools:
            return name
        for declared in self.tools:
            if re.search(rf"(^|[_\-.]){re.escape(name)}$", declared):
                return declared
        return name

    def arguments(self, declared: str, arguments: dict[str, Any]) -> dict[str, Any]:
        required = self.tools.get(declared, {}).get("required") or []
        return {**{key: None for key in required}, **arguments}


class Script:
    """The runs seen so far, and the next step of the current one."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: list[dict[str, Any]] = []

    def next_step(self, turn: Turn) -> tuple[str, dict[str, Any]] | None:
        """The next tool call (declared name, arguments), or None for the final answer."""
        with self.lock:
            if not turn.started or not self.runs:
                self.runs.append({"api": turn.api, "tools": sorted(turn.tools), "steps": []})
            steps: list[dict[str, Any]] = self.runs[-1]["steps"]
            if steps and "seen" not in steps[-1]:
                steps[-1]["seen"] = turn.last
                steps[-1]["as"] = turn.last_kind
            step = FIRST_STEPS[len(steps)] if len(steps) < len(FIRST_STEPS) else self._after(steps)
            if step is None:
                if "final_answer" in turn.tools:  # smolagents: the answer is a tool call
                    return "final_answer", {"answer": FINAL}
                return None
            name, arguments = step
            steps.append({"tool": name, "arguments": arguments})
            declared = turn.declared(name)
            return declared, turn.arguments(declared, arguments)

    @staticmethod
    def _after(steps: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        last = steps[-1]
        if last["tool"] == "glob":  # the capped glob: follow its footer
            found = STORED_AT.search(last.get("seen", ""))
            if found is not None:
                return "read", {"path": found.group(1), "offset": 1, "limit": READ_PAGE}
            return "grep", {"pattern": "("}  # nothing to follow: the test sees it in the recording
        if last["tool"] == "read":
            more = MORE.search(last.get("seen", ""))
            if more:
                return "read", {**last["arguments"], "offset": int(more.group(1))}
            return "grep", {"pattern": "("}
        return None


SCRIPT = Script()


# --- Chat Completions ------------------------------------------------------------------------------------


def chat_answer(turn: Turn, step: tuple[str, dict[str, Any]] | None) -> dict[str, Any]:
    n = next(_ids)
    if step is None:
        message: dict[str, Any] = {"role": "assistant", "content": FINAL}
        finish = "stop"
    else:
        call = {"id": f"call_{n}", "type": "function", "function": {"name": step[0], "arguments": json.dumps(step[1])}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": turn.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def chat_events(answer: dict[str, Any]) -> Iterator[tuple[str | None, dict[str, Any]]]:
    choice = answer["choices"][0]
    message = choice["message"]
    base = {k: answer[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
    else:
        delta["content"] = message["content"]
    yield None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    done = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
    yield None, {**base, "choices": [done], "usage": answer["usage"]}


# --- Responses -------------------------------------------------------------------------------------------


def responses_answer(turn: Turn, step: tuple[str, dict[str, Any]] | None) -> dict[str, Any]:
    n = next(_ids)
    if step is None:
        content = [{"type": "output_text", "text": FINAL, "annotations": []}]
        item: dict[str, Any] = {
            "type": "message",
            "id": f"msg_{n}",
            "role": "assistant",
            "status": "completed",
            "content": content,
        }
    else:
        item = {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": step[0],
            "arguments": json.dumps(step[1]),
            "status": "completed",
        }
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": turn.model,
        "output": [item],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "usage": {
            "input_tokens": 1,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 1,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 2,
        },
    }


def responses_events(answer: dict[str, Any]) -> Iterator[tuple[str | None, dict[str, Any]]]:
    item = answer["output"][0]
    sequence = itertools.count()
    started = {**answer, "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "sequence_number": next(sequence), "response": started}
    opened = {**item, "status": "in_progress"}
    if item["type"] == "message":
        opened["content"] = []
    else:
        opened["arguments"] = ""
    added = {"type": "response.output_item.added", "sequence_number": next(sequence), "output_index": 0}
    yield "response.output_item.added", {**added, "item": opened}
    if item["type"] == "message":
        text = item["content"][0]["text"]
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        part = {"type": "output_text", "text": "", "annotations": []}
        yield (
            "response.content_part.added",
            {
                "type": "response.content_part.added",
                "sequence_number": next(sequence),
                **where,
                "part": part,
            },
        )
        delta = {"type": "response.output_text.delta", "sequence_number": next(sequence), **where, "delta": text}
        yield "response.output_text.delta", {**delta, "logprobs": []}
        done = {"type": "response.output_text.done", "sequence_number": next(sequence), **where, "text": text}
        yield "response.output_text.done", {**done, "logprobs": []}
        yield (
            "response.content_part.done",
            {
                "type": "response.content_part.done",
                "sequence_number": next(sequence),
                **where,
                "part": item["content"][0],
            },
        )
    else:
        yield (
            "response.function_call_arguments.delta",
            {
                "type": "response.function_call_arguments.delta",
                "sequence_number": next(sequence),
                "item_id": item["id"],
                "output_index": 0,
                "delta": item["arguments"],
            },
        )
        yield (
            "response.function_call_arguments.done",
            {
                "type": "response.function_call_arguments.done",
                "sequence_number": next(sequence),
                "item_id": item["id"],
                "output_index": 0,
                "arguments": item["arguments"],
            },
        )
    yield (
        "response.output_item.done",
        {
            "type": "response.output_item.done",
            "sequence_number": next(sequence),
            "output_index": 0,
            "item": item,
        },
    )
    yield "response.completed", {"type": "response.completed", "sequence_number": next(sequence), "response": answer}


# --- the server ------------------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _json(self, value: Any, status: int = 200) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/runs"):
            with SCRIPT.lock:
                self._json(SCRIPT.runs)
        else:
            self._json({"error": {"message": "not found"}}, 404)

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(size) or b"{}")
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/chat/completions"):
            turn = Turn(request, "chat")
            answer = chat_answer(turn, SCRIPT.next_step(turn))
            events = chat_events(answer)
        elif path.endswith("/responses"):
            turn = Turn(request, "responses")
            answer = responses_answer(turn, SCRIPT.next_step(turn))
            events = responses_events(answer)
        else:
            self._json({"error": {"message": f"no such endpoint here: {self.path}"}}, 404)
            return
        if not turn.stream:
            self._json(answer)
            return
        body = b"".join(
            (f"event: {name}\n".encode() if name else b"") + b"data: " + json.dumps(data).encode() + b"\n\n"
            for name, data in events
        )
        body += b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve() -> ThreadingHTTPServer:
    """Start the endpoint on a free port of 127.0.0.1, in a thread of this process."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, name="scripted-model", daemon=True).start()
    return server

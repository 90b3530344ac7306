"""`remote`: a daemon its host reaches through a channel (ssh, docker exec, kubectl exec), in process.

What the key changes, and only when it is set: the footer of a capped search says that the saved result is
on the daemon's machine and how to read it there; `read` is offered as a tool; and at stdin EOF, while
searches still run, the daemon writes `$/dsh-search/draining` once a second, so that a channel whose host
has died (it learns that only when it writes) closes, and the searches stop. Without it, every text and
every byte at EOF stays as it was (upstream's texts, the NDJSON pipe contract). tests/remote drives the
same through a real sshd.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from dsh_search import config as config_mod
from dsh_search import texts
from dsh_search.transport.stdio import DRAINING
from tests.support.inprocess import InProcessDaemon
from tests.support.trees import SLOW_PATTERN, write, write_slow_corpus


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    for i in range(5):
        write(root, f"f{i}.txt", "needle\n", 1000 + i)
    return root


def test_remote_changes_two_defaults_and_nothing_given() -> None:
    local = config_mod.build({"sampleOverCapGlobResults": True})
    assert (local.remote, local.read_tool, local.spill_retrieval_hint) == (False, False, texts.DEFAULT_RETRIEVAL_HINT)
    remote = config_mod.build({"sampleOverCapGlobResults": True, "remote": True})
    assert (remote.read_tool, remote.spill_retrieval_hint) == (True, texts.REMOTE_RETRIEVAL_HINT)
    given = config_mod.build(
        {"sampleOverCapGlobResults": True, "remote": True, "readTool": False, "spillRetrievalHint": "Ask me."}
    )
    assert (given.read_tool, given.spill_retrieval_hint) == (False, "Ask me.")
    with pytest.raises(config_mod.ConfigError, match=r"^dsh-search: remote must be true or false$"):
        config_mod.build({"sampleOverCapGlobResults": True, "remote": "yes"})


def test_a_remote_footer_says_where_the_saved_result_can_be_read(tree: Path) -> None:
    with InProcessDaemon(workdir=tree, grepMaxMatches=2, remote=True) as d:
        found = d.result("grep", {"pattern": "needle"})
        locator = found["spill"]["locator"]
        assert found["text"].endswith(f"(Full grep result stored at: {locator}. {texts.REMOTE_RETRIEVAL_HINT})")
        assert found["spill"]["retrievalHint"] == texts.REMOTE_RETRIEVAL_HINT
        assert [t["name"] for t in d.result("tools/list")["tools"]] == ["glob", "grep", "read"]
        read = d.result("tools/call", {"name": "read", "arguments": {"path": locator}})
        assert read["content"][0]["text"].count("needle") == 5
        assert d.result("initialize")["config"]["remote"] is True
    with InProcessDaemon(workdir=tree, grepMaxMatches=2) as d:  # the local texts are upstream's
        found = d.result("grep", {"pattern": "needle"})
        assert found["text"].endswith(f"{found['spill']['locator']}. {texts.DEFAULT_RETRIEVAL_HINT})")
        assert [t["name"] for t in d.result("tools/list")["tools"]] == ["glob", "grep"]


def test_a_remote_daemon_names_a_cwd_it_does_not_have(tree: Path, tmp_path: Path) -> None:
    missing = tmp_path / "on-the-host-only"
    with InProcessDaemon(workdir=tree, remote=True) as d:
        for tool in ("grep", "glob"):
            failed = d.call(tool, {"pattern": "x", "cwd": str(missing)})
            assert failed["error"]["data"] == {
                "code": "SEARCH_FAILED",
                "text": f"Error: {tool} could not start its search command: the directory {missing} does not "
                "exist where dsh-search runs",
            }
    with InProcessDaemon(workdir=tree) as d:  # locally, upstream's words
        failed = d.call("grep", {"pattern": "x", "cwd": str(missing)})
        assert failed["error"]["data"]["text"] == "Error: " + texts.could_not_start("grep")


def test_a_remote_daemon_names_a_client_root_it_does_not_have(tmp_path: Path) -> None:
    """An MCP client's roots are the host's directories: one the daemon's machine lacks is named."""
    missing = tmp_path / "the-hosts-checkout"
    with InProcessDaemon(workdir=tmp_path, workdir_given=False, remote=True) as d:
        d.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}})
        d.notify("notifications/initialized")
        asked = d.next_response()
        while asked.get("method") != "roots/list":
            asked = d.next_response()
        d.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": missing.as_uri()}]}})
        failed = d.call("tools/call", {"name": "grep", "arguments": {"pattern": "x"}})["result"]
        assert failed["isError"] is True
        assert failed["content"][0]["text"] == (
            f"Error: grep could not start its search command: the directory {missing} does not exist where "
            "dsh-search runs"
        )


@pytest.fixture(scope="module")
def slow_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_slow_corpus(tmp_path_factory.mktemp("slow"), files=2)


def _eof_during_a_search(slow_tree: Path, **config: Any) -> tuple[list[dict[str, Any]], float]:
    """Start a grep that takes longer than its budget, close stdin at once: every message the daemon writes
    up to the grep's answer, and the seconds from EOF to the daemon's exit."""
    with InProcessDaemon(workdir=slow_tree, timeoutMs=1500, **config) as d:
        ident = d.request("grep", {"pattern": SLOW_PATTERN})
        assert d.result("ping") == {}  # the grep has been taken in before the EOF
        d.close_stdin()
        closed = time.monotonic()
        messages = d.drain(ident)
        assert d.wait_exit() == 0
        return messages, time.monotonic() - closed


def test_a_relayed_daemon_writes_while_it_drains(slow_tree: Path) -> None:
    messages, _ = _eof_during_a_search(slow_tree, remote=True)
    *before, answer = messages
    assert answer["error"]["data"]["code"] == "SEARCH_ABORTED"  # its timeout: it was let finish
    assert before and all(m == {"jsonrpc": "2.0", "method": DRAINING, "params": {"running": 1}} for m in before)
    assert len(before) <= 3  # once at EOF, then once a second of its 1.5 s


def test_a_local_daemon_writes_only_answers_at_eof(slow_tree: Path) -> None:
    messages, _ = _eof_during_a_search(slow_tree)
    assert len(messages) == 1 and messages[0]["error"]["data"]["code"] == "SEARCH_ABORTED"

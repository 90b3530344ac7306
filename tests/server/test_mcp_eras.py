"""MCP's two eras on one daemon, in process (tests/support/inprocess.py): the 2026-07-28 envelope and its
errors, server/discover, the modern result shapes, both eras on one connection, roots asked with
input_required, spill artifacts as resources (links, reads, pages, confinement), the opt-in read tool,
subscriptions/listen, and a daemon that is only probed doing nothing. The SDKs drive the same through the
frozen executable in tests/mcp."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dsh_search import texts
from dsh_search.methods import era, mcp
from tests.support.daemon import error_of
from tests.support.inprocess import InProcessDaemon
from tests.support.trees import SLOW_PATTERN, project_copy, write

MODERN = era.MODERN_VERSION


def envelope(**extra: Any) -> dict[str, Any]:
    """The `_meta` of a modern request: the version and the (empty) capabilities, plus `extra`."""
    return {era.PROTOCOL_VERSION: MODERN, era.CLIENT_CAPABILITIES: {}, **extra}


def modern(params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    params = dict(params or {})
    params["_meta"] = {**envelope(), **params.get("_meta", {}), **meta}
    return params


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    write(root, "src/a.py", "needle = 1\n", 1000)
    write(root, "src/b.py", "other = 2\nneedle()\n", 2000)
    write(root, "notes.md", "no match here\n", 3000)
    for i in range(6):
        write(root, f"docs/d{i}.md", f"needle {i}\n", 4000 + i)
    return root


@pytest.fixture
def daemon(tree: Path) -> Iterator[InProcessDaemon]:
    with InProcessDaemon(workdir=tree, globMaxResults=3, grepMaxMatches=2, mcpResult="full") as d:
        yield d


def server_info(d: InProcessDaemon) -> dict[str, Any]:
    return {era.SERVER_INFO: {"name": "dsh-search", "version": d.ctx.version}}


# --- server/discover and the envelope ----------------------------------------------------------------------


def test_discover_first_answers_the_modern_description(daemon: InProcessDaemon) -> None:
    found = daemon.call("server/discover", modern(), timeout=10)
    assert found["result"] == {
        "resultType": "complete",
        "supportedVersions": [MODERN],
        "capabilities": {"tools": {"listChanged": True}, "resources": {}},
        "instructions": texts.glob_guidance(True) + "\n\n" + texts.GREP_GUIDANCE,
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": server_info(daemon),
    }


@pytest.mark.parametrize(
    ("meta", "code", "message"),
    [
        ({era.PROTOCOL_VERSION: MODERN}, -32602, era.missing_envelope([era.CLIENT_CAPABILITIES])),
        ({era.PROTOCOL_VERSION: 20260728, era.CLIENT_CAPABILITIES: {}}, -32602, "must be a string"),
        ({era.PROTOCOL_VERSION: MODERN, era.CLIENT_CAPABILITIES: []}, -32602, "must be an object"),
        ({**envelope(), era.CLIENT_INFO: "me"}, -32602, "must be an object"),
        ({**envelope(), era.LOG_LEVEL: "loud"}, -32602, "must be a log level"),
        ({era.PROTOCOL_VERSION: 7}, -32602, era.missing_envelope([era.CLIENT_CAPABILITIES])),
    ],
    ids=[
        "no-capabilities",
        "version-not-a-string",
        "capabilities-not-an-object",
        "bad-client-info",
        "bad-level",
        "both",
    ],
)
def test_a_malformed_envelope_is_invalid_params_and_the_daemon_goes_on(
    daemon: InProcessDaemon, meta: dict[str, Any], code: int, message: str
) -> None:
    for method in ("server/discover", "tools/list", "tools/call", "resources/read"):
        refused = daemon.call(method, {"_meta": meta, "name": "glob", "uri": "x"})
        assert refused["error"]["code"] == code and message in refused["error"]["message"], refused
        assert "data" not in refused["error"]
    assert daemon.result("ping") == {}
    assert daemon.result("server/discover", modern())["resultType"] == "complete"


def test_an_unsupported_version_is_32022_with_what_is_supported(daemon: InProcessDaemon) -> None:
    for version in ("2027-01-01", "2025-11-25", "1900-01-01"):
        refused = daemon.call("tools/list", {"_meta": envelope(**{era.PROTOCOL_VERSION: version})})
        assert refused["error"] == {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {
                "supported": [MODERN, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
                "requested": version,
            },
        }
    assert daemon.result("tools/list", modern())["resultType"] == "complete"


def test_modern_only_methods_without_the_envelope_miss_a_required_field(daemon: InProcessDaemon) -> None:
    for method, params in (
        ("server/discover", None),
        ("server/discover", {}),
        ("subscriptions/listen", {"notifications": {}}),
    ):
        refused = daemon.call(method, params)
        assert refused["error"] == {"code": -32602, "message": era.missing_envelope()}, refused
    assert daemon.result("ping") == {}


def test_the_modern_era_lacks_what_it_removed_and_keeps_the_daemons_own_methods(daemon: InProcessDaemon) -> None:
    for method in ("ping", "logging/setLevel", "resources/subscribe", "prompts/list", "no/such"):
        refused = daemon.call(method, modern({"level": "info", "uri": "x"}))
        assert refused["error"] == {"code": -32601, "message": "Method not found", "data": method}
    native = daemon.result("grep", modern({"pattern": "needle", "path": "src"}))
    assert native["resultType"] == "complete" and native["_meta"] == server_info(daemon)
    assert native["text"] == daemon.result("grep", {"pattern": "needle", "path": "src"})["text"]
    appended = daemon.result("scrollback/append", modern({"sessionId": "t", "data": "x\n"}))
    assert appended == {"resultType": "complete", "totalLines": 2, "truncated": False, "_meta": server_info(daemon)}
    null_id = {"jsonrpc": "2.0", "id": None, "method": "tools/list", "params": modern()}
    daemon.send(null_id)
    assert daemon.wait_for(None)["error"]["code"] == -32600
    assert daemon.result("tools/list", modern())["tools"]


def test_modern_notifications_are_never_answered(daemon: InProcessDaemon) -> None:
    daemon.notify("notifications/initialized", modern())
    daemon.notify("server/discover", {"_meta": {era.PROTOCOL_VERSION: 1}})
    daemon.notify("no/such", modern())
    assert daemon.no_response(0.3)
    assert daemon.ctx.session.initialized is False  # not the legacy handshake


# --- the modern shapes, and both eras on one connection ----------------------------------------------------------


def test_modern_results_have_their_shape_and_legacy_ones_stay_as_they_were(daemon: InProcessDaemon) -> None:
    discovered = daemon.result("server/discover", modern())
    legacy_init = daemon.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert legacy_init["protocolVersion"] == "2025-11-25"
    assert legacy_init["capabilities"] == {"tools": {"listChanged": True}, "logging": {}, "resources": {}}
    assert legacy_init["instructions"] == discovered["instructions"]
    daemon.notify("notifications/initialized")

    legacy_tools = daemon.result("tools/list")
    assert set(legacy_tools) == {"tools"}  # no resultType, no caching hints: 2025-11-25's shape
    modern_tools = daemon.result("tools/list", modern())
    assert modern_tools == {
        "resultType": "complete",
        "tools": legacy_tools["tools"],
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": server_info(daemon),
    }
    for tool in modern_tools["tools"]:
        assert tool["outputSchema"] == mcp.output_schema(daemon.ctx.methods.get(tool["name"]), mcp.FULL)

    call = {"name": "grep", "arguments": {"pattern": "needle", "path": "src"}}
    legacy_call = daemon.result("tools/call", call)
    modern_call = daemon.result("tools/call", modern(call))
    assert "resultType" not in legacy_call and "_meta" not in legacy_call
    assert modern_call == {
        "resultType": "complete",
        **legacy_call,
        "_meta": server_info(daemon),
    }
    assert modern_call["structuredContent"]["text"] == modern_call["content"][0]["text"]
    # The legacy session is still there: logging/setLevel and ping work in it.
    assert daemon.result("logging/setLevel", {"level": "info"}) == {}
    assert daemon.result("ping") == {}


def test_initialize_after_a_discover_that_was_given_up_on_is_served(daemon: InProcessDaemon) -> None:
    """A probing client whose discover timed out sends initialize on the same pipe: the connection is
    not locked to the era of its first message."""
    discover = daemon.request("server/discover", modern())
    init = daemon.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert daemon.wait_for(discover)["result"]["supportedVersions"] == [MODERN]
    assert daemon.wait_for(init)["result"]["protocolVersion"] == "2025-11-25"
    assert daemon.ctx.session.mcp is True


def test_a_failed_modern_tool_call_is_its_text_only(daemon: InProcessDaemon) -> None:
    failed = daemon.result("tools/call", modern({"name": "grep", "arguments": {"pattern": "("}}))
    assert failed["resultType"] == "complete" and failed["isError"] is True
    assert "structuredContent" not in failed
    assert [block["type"] for block in failed["content"]] == ["text"]
    assert failed["content"][0]["text"].startswith("Error: grep pattern rejected by ripgrep")
    assert failed["_meta"]["dsh-search/error"]["code"] == "SEARCH_INVALID_PATTERN"
    unknown = daemon.call("tools/call", modern({"name": "nope"}))
    assert error_of(unknown) == (-32602, "INVALID_ARGS", "Error: unknown tool: nope")
    assert daemon.call("tools/list", modern({"cursor": "x"}))["error"]["code"] == -32602


def test_progress_and_cancellation_in_the_modern_era(tmp_path: Path) -> None:
    root = tmp_path / "slow"
    block = "".join(f"alpha beta gamma delta {i} épsilon zeta\n" for i in range(20_000)).encode()
    for i in range(4):
        write(root, f"slow-{i}.txt", (block * 24).decode(), 1000 + i)
    with InProcessDaemon(workdir=root) as d:
        call = d.request(
            "tools/call", modern({"name": "grep", "arguments": {"pattern": SLOW_PATTERN}}, progressToken="p1")
        )
        progress = d.next_response(timeout=30)
        assert progress["method"] == "notifications/progress" and progress["params"]["progressToken"] == "p1"
        d.notify("notifications/cancelled", modern({"requestId": call, "reason": "user"}))
        ping = d.request("tools/list", modern())
        answers = [m for m in d.drain(ping) if "id" in m]
        assert [a["id"] for a in answers] == [ping]  # the cancelled call is never answered
        deadline = time.monotonic() + 10
        while len(d.daemon.launcher.groups):
            assert time.monotonic() < deadline, "ripgrep still runs"
            time.sleep(0.01)
        assert d.no_response(0.5)


# --- roots in the modern era: asked with input_required ---------------------------------------------------------


def test_a_modern_client_with_roots_is_asked_for_them_per_call(tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write(other, "x.md", "needle\n", 1000)
    with_roots = {era.CLIENT_CAPABILITIES: {"roots": {}}}
    with InProcessDaemon(workdir=tmp_path, workdir_given=False) as d:
        call = {"name": "glob", "arguments": {"pattern": "*.md"}}
        asked = d.result("tools/call", modern(call, **with_roots))
        assert asked == {
            "resultType": "input_required",
            "inputRequests": {"roots": {"method": "roots/list"}},
            "_meta": server_info(d),
        }
        answer = {"roots": {"roots": [{"uri": tree.as_uri(), "name": "w"}]}}
        found = d.result("tools/call", modern({**call, "inputResponses": answer}, **with_roots))
        assert (
            found["content"][0]["text"]
            == "notes.md\ndocs/d0.md\ndocs/d1.md\ndocs/d2.md\ndocs/d3.md\ndocs/d4.md\ndocs/d5.md"
        )
        outside = d.result(
            "tools/call",
            modern(
                {"name": "grep", "arguments": {"pattern": "needle", "path": str(other)}, "inputResponses": answer},
                **with_roots,
            ),
        )
        assert outside["isError"] and outside["content"][0]["text"] == (
            f"Error: {texts.OUTSIDE_ALLOWED_ROOTS}; this session's roots are {tree}"
        )
        # Nothing outlives the request: the next call is asked again, and the session has no roots.
        assert d.result("tools/call", modern(call, **with_roots))["resultType"] == "input_required"
        assert d.ctx.session.roots is None
        # Answered something else: asked again. Malformed: invalid params.
        again = d.result("tools/call", modern({**call, "inputResponses": {"other": {}}}, **with_roots))
        assert again["resultType"] == "input_required"
        for bad in ([1], {"roots": []}, {"roots": {"roots": "file:///"}}):
            refused = d.call("tools/call", modern({**call, "inputResponses": bad}, **with_roots))
            assert refused["error"]["code"] == -32602, refused
        # terminal_search does not work in the workspace: no roots asked.
        d.result("scrollback/append", {"sessionId": "t", "data": "x\n"})
        term = d.result(
            "tools/call",
            modern({"name": "terminal_search", "arguments": {"sessionId": "t", "pattern": "x"}}, **with_roots),
        )
        assert term["resultType"] == "complete"
        # A native call is never answered input_required (MCP allows it on tools/call only).
        native = d.result("glob", modern({"pattern": "x.md"}, **with_roots))
        assert native["resultType"] == "complete" and native["text"] == "other/x.md"
        # Without the capability, the daemon's own directory: here it was started in tmp_path.
        plain = d.result("tools/call", modern({"name": "glob", "arguments": {"pattern": "x.md"}}))
        assert plain["content"][0]["text"] == "other/x.md"
        assert d.no_response(0.2)  # and the daemon never sent roots/list


def test_host_fields_and_confinement_in_the_modern_era(tree: Path) -> None:
    """The per-call cwd (host-only, in _meta beside the envelope), --workdir and the allowed roots, as in
    the legacy era."""
    with InProcessDaemon(workdir=tree, allowedRoots=[str(tree / "src")]) as d:
        inside = d.result("tools/call", modern({"name": "grep", "arguments": {"pattern": "needle"}}, cwd="src"))
        assert inside["content"][0]["text"] == "Found 2 matches\n\na.py\nLine 1: needle = 1\n\nb.py\nLine 2: needle()"
        smuggled = modern({"name": "glob", "arguments": {"pattern": "*.md", "cwd": "src"}})  # not the model's
        outside = d.result("tools/call", smuggled)
        assert outside["isError"] and outside["content"][0]["text"] == f"Error: {texts.OUTSIDE_ALLOWED_ROOTS}"


def test_with_workdir_a_modern_client_is_not_asked_for_roots(daemon: InProcessDaemon) -> None:
    call = modern({"name": "glob", "arguments": {"pattern": "a.py"}}, **{era.CLIENT_CAPABILITIES: {"roots": {}}})
    assert daemon.result("tools/call", call)["content"][0]["text"] == "src/a.py"


# --- spill artifacts as resources ---------------------------------------------------------------------------------


def _capped(d: InProcessDaemon, *, legacy_version: str | None = None) -> dict[str, Any]:
    params = {"name": "glob", "arguments": {"pattern": "*.md"}}
    return d.result("tools/call", params if legacy_version else modern(params))  # type: ignore[no-any-return]


def test_a_capped_result_links_its_spill_artifact(daemon: InProcessDaemon) -> None:
    capped = _capped(daemon)
    text, link = capped["content"]
    spill = capped["structuredContent"]["spill"]
    assert f"Full sorted result stored at: {spill['locator']}." in text["text"]  # the pointer stays
    session, artifact = spill["locator"].split("/")[-2:]
    assert link == {
        "type": "resource_link",
        "uri": f"dsh-search://spill/{session}/{artifact}",
        "name": artifact,
        "mimeType": "text/plain",
        "size": spill["bytes"],
    }
    whole = daemon.result("resources/read", modern({"uri": link["uri"]}))
    native = daemon.result("spill/read", {"locator": spill["locator"], "limit": 1000})
    assert whole == {
        "resultType": "complete",
        "contents": [
            {
                "uri": link["uri"],
                "mimeType": "text/plain",
                "text": native["text"],
                "_meta": {"dsh-search/lines": {"startLine": 1, "endLine": 7, "totalLines": 7, "nextOffset": None}},
            }
        ],
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": server_info(daemon),
    }
    page = daemon.result("resources/read", modern({"uri": link["uri"] + "?offset=2&limit=3"}))["contents"][0]
    assert page["text"] == "\n".join(native["text"].split("\n")[1:4])
    assert page["_meta"]["dsh-search/lines"] == {
        "startLine": 2,
        "endLine": 4,
        "totalLines": 7,
        "nextOffset": 5,
        "nextUri": link["uri"] + "?offset=5&limit=3",
    }
    legacy = daemon.result("resources/read", {"uri": link["uri"] + "?limit=1"})
    assert set(legacy) == {"contents"} and legacy["contents"][0]["text"] == native["text"].split("\n")[0]


def test_resource_templates_and_the_empty_list(daemon: InProcessDaemon) -> None:
    templates = daemon.result("resources/templates/list", modern())
    assert templates["resourceTemplates"] == [
        {
            "uriTemplate": "dsh-search://spill/{session}/{artifact}{?offset,limit}",
            "name": "spill-artifact",
            "title": texts.SPILL_RESOURCE_TITLE,
            "description": texts.SPILL_RESOURCE_DESCRIPTION,
            "mimeType": "text/plain",
        }
    ]
    assert templates["ttlMs"] == 0 and templates["cacheScope"] == "private"
    assert daemon.result("resources/list", modern())["resources"] == []
    assert daemon.result("resources/list") == {"resources": []}
    for method in ("resources/list", "resources/templates/list"):
        assert daemon.call(method, modern({"cursor": "next"}))["error"]["code"] == -32602


def test_bad_and_out_of_reach_resource_uris_are_refused_in_each_eras_words(
    daemon: InProcessDaemon, tmp_path: Path
) -> None:
    capped = _capped(daemon)
    uri = capped["content"][1]["uri"]
    session = uri.split("/")[-2]
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    spill_root = Path(daemon.ctx.spill.root)
    (spill_root / session / "0123456789ab-link.txt").symlink_to(outside)
    malformed = [
        "file:///etc/passwd",
        "dsh-search://other/x/y",
        f"dsh-search://spill/{session}",
        "dsh-search://spill/../../etc/passwd",
        f"dsh-search://spill/{session}/..%2F..%2Fetc",
        f"{uri}?offset=0",
        f"{uri}?offset=x",
        f"{uri}?page=2",
        f"{uri}?offset=1&offset=2",
        f"{uri}#top",
        "not a uri at all",
    ]
    for bad in malformed:
        for params in (modern({"uri": bad}), {"uri": bad}):
            refused = daemon.call("resources/read", params)["error"]
            assert refused["code"] == -32602 and refused["message"].startswith("Invalid resource URI: "), (bad, refused)
            assert refused["data"] == {"uri": bad}
    missing = [
        f"dsh-search://spill/{session}/0123456789ab-gone.txt",
        f"dsh-search://spill/{session}/0123456789ab-link.txt",
    ]
    for absent in missing:
        assert daemon.call("resources/read", modern({"uri": absent}))["error"] == {
            "code": -32602,
            "message": "Resource not found",
            "data": {"uri": absent},
        }
        assert daemon.call("resources/read", {"uri": absent})["error"] == {
            "code": -32002,
            "message": "Resource not found",
            "data": {"uri": absent},
        }
    assert error_of(daemon.call("resources/read", modern({"uri": 7})))[1] == "INVALID_ARGS"
    assert daemon.result("ping") == {}


@pytest.mark.parametrize(
    ("version", "linked"), [("2025-11-25", True), ("2025-06-18", True), ("2025-03-26", False), ("2024-11-05", False)]
)
def test_legacy_clients_get_a_link_only_where_their_revision_has_one(tree: Path, version: str, linked: bool) -> None:
    with InProcessDaemon(workdir=tree, globMaxResults=3, mcpResult="full") as d:
        d.result("initialize", {"protocolVersion": version, "capabilities": {}})
        capped = _capped(d, legacy_version=version)
        assert [block["type"] for block in capped["content"]] == (["text", "resource_link"] if linked else ["text"])
        assert "resultType" not in capped


# --- what a model is given -------------------------------------------------------------------------------------------


SPEC_TOOL_KEYS = ["name", "description", "inputSchema", "outputSchema", "annotations"]


def test_by_default_every_tool_is_listed_with_the_spec_keys_and_an_output_schema(tree: Path) -> None:
    """SPEC §3: each tool is `{name, description, inputSchema, outputSchema, annotations:{readOnlyHint:true}}`,
    in both eras, whichever tools are listed."""
    with InProcessDaemon(workdir=tree, readTool=True, terminalSearch="always") as d:
        legacy = d.result("tools/list")["tools"]
        d.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}})
        for tools in (legacy, d.result("tools/list")["tools"], d.result("tools/list", modern())["tools"]):
            assert [t["name"] for t in tools] == ["glob", "grep", "terminal_search", "read"]
            for tool in tools:
                assert list(tool) == SPEC_TOOL_KEYS, tool["name"]
                assert tool["annotations"] == {"readOnlyHint": True}
                jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])
                assert tool["outputSchema"]["additionalProperties"] is False


def structured_results(d: InProcessDaemon, session: str, **meta: Any) -> dict[str, list[dict[str, Any]]]:
    """Each tool's results through tools/call (capped and not, for glob and grep), by tool name."""
    calls = {
        "glob": [{"pattern": "**/*.md"}, {"pattern": "**/*"}],
        "grep": [{"pattern": "other"}, {"pattern": "needle"}],
        "terminal_search": [{"sessionId": session, "pattern": "beta"}],
        "read": [{"path": "src/b.py"}],
    }
    found: dict[str, list[dict[str, Any]]] = {}
    for name, each in calls.items():
        for arguments in each:
            params = {"name": name, "arguments": arguments}
            result = d.result("tools/call", modern(params, **meta) if meta else params)
            assert result["isError"] is False, result
            found.setdefault(name, []).append(result)
    return found


def test_by_default_a_result_carries_its_text_and_counts_valid_against_its_tool_schema_only(tree: Path) -> None:
    """SPEC §3: `{content:[{type:"text", text}], structuredContent, isError}`. The structuredContent is the
    same text and a few counts; each tool's outputSchema admits its own results and rejects every other
    tool's (closed, with a required field the others lack)."""
    with InProcessDaemon(workdir=tree, globMaxResults=3, grepMaxMatches=2, readTool=True) as d:
        d.result("scrollback/append", {"sessionId": "t", "data": "alpha\nbeta one\ngamma beta\n"})
        d.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        schemas = {t["name"]: t["outputSchema"] for t in d.result("tools/list")["tools"]}
        results = structured_results(d, "t")
        for name, each in results.items():
            for result in each:
                assert list(result) == ["content", "structuredContent", "isError"], name
                assert [b["type"] for b in result["content"]] == ["text"]
                assert result["structuredContent"]["text"] == result["content"][0]["text"]
        for name, schema in schemas.items():
            validator = jsonschema.Draft202012Validator(schema)
            for other, each in results.items():
                for result in each:
                    assert validator.is_valid(result["structuredContent"]) is (other == name), (name, other, result)
        glob_md, glob_all = (r["structuredContent"] for r in results["glob"])
        assert (glob_md["pathCount"], glob_md["truncated"]) == (7, True)
        assert glob_all["pathCount"] == 9 and "stored at:" in glob_all["text"]
        grep_one, grep_capped = (r["structuredContent"] for r in results["grep"])
        assert {k: grep_one[k] for k in ("matchCount", "fileCount", "truncated")} == {
            "matchCount": 1,
            "fileCount": 1,
            "truncated": False,
        }
        assert {k: grep_capped[k] for k in ("matchCount", "fileCount", "truncated")} == {
            "matchCount": 8,
            "fileCount": 8,
            "truncated": True,
        }
        assert grep_capped["text"].startswith("Found 2 of 8 matches")
        terminal = results["terminal_search"][0]["structuredContent"]
        assert terminal == {
            "text": "[offset 1] gamma beta\n[offset 2] beta one\n[search: 2 of 2 matches, 4 retained lines]",
            "matchCount": 2,
            "totalLines": 4,
            "truncated": False,
        }
        assert results["read"][0]["structuredContent"] == d.result("read", {"path": "src/b.py"})
        # Natively, glob and grep still answer upstream's shape; a failure is its text, as before.
        assert set(d.result("glob", {"pattern": "**/*.md"})) == {"text", "meta", "spill"}
        failed = d.result("tools/call", {"name": "grep", "arguments": {"pattern": "("}})
        assert list(failed) == ["content", "isError", "_meta"] and failed["isError"] is True
        assert failed["content"][0]["text"].startswith("Error: grep pattern rejected by ripgrep")
        assert failed["_meta"][mcp.ERROR_KEY]["code"] == "SEARCH_INVALID_PATTERN"


def test_the_extended_grep_profile_counts_each_output_mode(tree: Path) -> None:
    """outputMode files does not count matches (matchCount null), count and content do; each validates."""
    with InProcessDaemon(workdir=tree, grepProfile="extended") as d:
        schema = {t["name"]: t["outputSchema"] for t in d.result("tools/list")["tools"]}["grep"]
        counts = {}
        for mode in ("content", "files", "count"):
            result = d.result("tools/call", {"name": "grep", "arguments": {"pattern": "needle", "outputMode": mode}})
            jsonschema.validate(result["structuredContent"], schema)
            counts[mode] = (result["structuredContent"]["matchCount"], result["structuredContent"]["fileCount"])
        assert counts == {"content": (8, 8), "files": (None, 8), "count": (8, 8)}


def test_clients_whose_framework_shows_the_model_more_than_the_text_get_the_text_alone(tree: Path) -> None:
    """mcpResult auto: LangChain.js (by its clientInfo) and fastmcp's client (the Python SDK's default
    clientInfo with the debug log level fastmcp asks for, as under pydantic-ai) are listed no
    outputSchema and sent no structuredContent; the Python SDK's own client, or any other, the contract's
    shape. mcpResult structured gives everyone that shape; text gives no one."""
    call = {"name": "glob", "arguments": {"pattern": "**/*.md"}}
    fastmcp = {era.CLIENT_INFO: {"name": "mcp", "version": "0.1.0"}, era.LOG_LEVEL: "debug"}
    python_sdk = {era.CLIENT_INFO: {"name": "mcp", "version": "0.1.0"}}
    langchain_js = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "@langchain/mcp-adapters"},
    }
    for mode, recognised, others in (("auto", False, True), ("structured", True, True), ("text", False, False)):
        with InProcessDaemon(workdir=tree, mcpResult=mode) as d:
            for meta, shaped in ((fastmcp, recognised), (python_sdk, others)):
                tools = d.result("tools/list", modern(**meta))["tools"]
                assert all(("outputSchema" in t) is shaped for t in tools), (mode, meta)
                assert ("structuredContent" in d.result("tools/call", modern(call, **meta))) is shaped, (mode, meta)
            d.result("initialize", langchain_js)
            assert all(("outputSchema" in t) is recognised for t in d.result("tools/list")["tools"]), mode
            plain = d.result("tools/call", call)
            assert ("structuredContent" in plain) is recognised and [b["type"] for b in plain["content"]] == ["text"]


def test_each_client_is_logged_once_with_the_shape_it_was_given(tree: Path, caplog: pytest.LogCaptureFixture) -> None:
    """At info: what a troubleshooter asks first, and what tests/frameworks records; bounded."""
    caplog.set_level(logging.INFO, logger="dsh_search")
    fastmcp = {era.CLIENT_INFO: {"name": "mcp", "version": "0.1.0"}, era.LOG_LEVEL: "debug"}
    with InProcessDaemon(workdir=tree) as d:
        d.result("server/discover", modern(**fastmcp))  # no tool listed or called: not noted
        for _ in range(2):
            d.result("tools/list", modern(**fastmcp))
        d.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x"}})
        for i in range(2 * mcp.CLIENTS_NOTED_MAX):
            d.result("tools/list", modern(**{era.CLIENT_INFO: {"name": f"c{i}"}}))
    lines = [r.getMessage() for r in caplog.records if r.name == "dsh_search.mcp"]
    assert lines[:2] == [
        'client {"name":"mcp","version":"0.1.0"}, protocol 2026-07-28, capabilities {}, log level debug: tool '
        "results text (mcpResult auto: " + str(mcp.text_alone(fastmcp[era.CLIENT_INFO], "debug")) + ")",
        'client {"name":"x"}, protocol 2025-11-25, capabilities {}, log level None: tool results structured '
        "(mcpResult auto)",
    ]
    assert len(lines) == mcp.CLIENTS_NOTED_MAX


def test_full_mode_gives_the_native_result_under_schemas_that_discriminate(tmp_path: Path) -> None:
    """mcpResult full: a capped grep and glob over a copy of this repository's sources carry the native
    result as structuredContent, which each tool's outputSchema admits and the other tool's rejects, and
    the link."""
    project = project_copy(tmp_path / "project")
    calls = (("grep", {"pattern": "def ", "include": "*.py"}), ("glob", {"pattern": "*.py"}))
    with InProcessDaemon(workdir=project, spillDir=str(tmp_path / "spill"), index="off", mcpResult="full") as d:
        schemas = {t["name"]: t["outputSchema"] for t in d.result("tools/list", modern())["tools"]}
        results = {}
        for name, arguments in calls:
            results[name] = d.result("tools/call", modern({"name": name, "arguments": arguments}))
            assert [b["type"] for b in results[name]["content"]] == ["text", "resource_link"]
            assert "stored at:" in results[name]["content"][0]["text"], f"{name} was not capped"
            native = d.result(name, arguments)  # the same search again: only the saved file's name differs
            assert results[name]["structuredContent"]["meta"] == native["meta"]
            assert results[name]["structuredContent"]["text"] == results[name]["content"][0]["text"]
        for name, other in (("grep", "glob"), ("glob", "grep")):
            validator = jsonschema.Draft202012Validator(schemas[name])
            validator.validate(results[name]["structuredContent"])
            assert not validator.is_valid(results[other]["structuredContent"]), (name, other)
        d.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        assert all("outputSchema" in tool for tool in d.result("tools/list")["tools"])
    with InProcessDaemon(workdir=project, spillDir=str(tmp_path / "spill"), index="off", mcpResult="text") as d:
        d.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        assert all("outputSchema" not in tool for tool in d.result("tools/list")["tools"])
        plain = d.result("tools/call", {"name": "glob", "arguments": {"pattern": "*.py"}})
        assert list(plain) == ["content", "isError"] and [b["type"] for b in plain["content"]] == ["text"]


# --- the read tool ---------------------------------------------------------------------------------------------------


def test_read_is_a_tool_only_when_asked_for(tree: Path) -> None:
    with InProcessDaemon(workdir=tree) as d:
        assert [t["name"] for t in d.result("tools/list")["tools"]] == ["glob", "grep"]
        assert error_of(d.call("tools/call", {"name": "read", "arguments": {"path": "notes.md"}}))[2] == (
            "Error: unknown tool: read"
        )
        assert d.result("read", {"path": "notes.md"})["text"] == "     1\tno match here"  # natively, always
    with InProcessDaemon(workdir=tree, readTool=True) as d:
        tools = {t["name"]: t for t in d.result("tools/list", modern())["tools"]}
        assert list(tools) == ["glob", "grep", "read"]
        assert tools["read"]["description"] == texts.READ_DESCRIPTION
        assert tools["read"]["inputSchema"]["required"] == ["path"]
        assert set(tools["read"]["inputSchema"]["properties"]) == {"path", "offset", "limit"}


def test_read_numbers_lines_and_pages(tree: Path) -> None:
    write(tree, "long.txt", "".join(f"line {i}\n" for i in range(1, 11)), 5000)
    write(tree, "crlf.txt", "a\r\nb", 5001)
    write(tree, "empty.txt", "", 5002)
    write(tree, "wide.txt", "é" * 3000 + "\n", 5003)
    with InProcessDaemon(workdir=tree, readTool=True, mcpResult="full") as d:
        first = d.result("tools/call", {"name": "read", "arguments": {"path": "long.txt", "limit": 3}})
        assert first["content"][0]["text"] == (
            "     1\tline 1\n     2\tline 2\n     3\tline 3\n\n(Showing lines 1-3 of 10. Use offset 4 to read more.)"
        )
        assert first["structuredContent"] == {
            "text": first["content"][0]["text"],
            "path": str(tree / "long.txt"),
            "startLine": 1,
            "endLine": 3,
            "totalLines": 10,
            "nextOffset": 4,
        }
        last = d.result("read", {"path": str(tree / "long.txt"), "offset": 9})
        assert last["text"] == "     9\tline 9\n    10\tline 10" and last["nextOffset"] is None
        assert d.result("read", {"path": "crlf.txt"})["text"] == "     1\ta\n     2\tb"
        assert d.result("read", {"path": "empty.txt"}) == {
            "text": "(empty file)",
            "path": str(tree / "empty.txt"),
            "startLine": 1,
            "endLine": 0,
            "totalLines": 0,
            "nextOffset": None,
        }
        assert d.result("read", {"path": "wide.txt"})["text"] == "     1\t" + "é" * 1000 + texts.LINE_TRUNCATED_SUFFIX
        assert d.result("read", {"path": "d2.md", "cwd": "docs"})["text"] == "     1\tneedle 2"


def test_read_refuses_what_it_cannot_show(tree: Path, tmp_path: Path) -> None:
    write(tree, "bin.dat", "a\0b\n", 5000)
    write(tree, ".env", "SECRET=1\n", 5001)
    outside = tmp_path / "outside.txt"
    outside.write_text("out\n")
    (tree / "link.txt").symlink_to(outside)
    os.mkfifo(tree / "fifo")
    with InProcessDaemon(workdir=tree, readTool=True, allowedRoots=[str(tree)], denyGlobs=[".env*"]) as d:
        cases = [
            ({"path": "missing.txt"}, "SEARCH_FAILED", texts.read_not_found("missing.txt")),
            ({"path": "src"}, "INVALID_ARGS", texts.read_is_directory("src")),
            ({"path": "bin.dat"}, "INVALID_ARGS", texts.read_binary("bin.dat")),
            ({"path": "fifo"}, "INVALID_ARGS", texts.read_not_a_file("fifo")),
            ({"path": "notes.md", "offset": 5}, "INVALID_ARGS", texts.read_past_end(5, 1)),
            ({"path": "notes.md", "offset": 0}, "INVALID_ARGS", texts.positive_safe_integer("offset")),
            ({"path": "notes.md", "limit": 0}, "INVALID_ARGS", texts.positive_safe_integer("limit")),
            ({"path": ""}, "INVALID_ARGS", texts.READ_PATH_EMPTY),
            ({"path": ".env"}, "SEARCH_FAILED", texts.read_not_found(".env")),  # denied: absent
            ({"path": str(outside)}, "INVALID_ARGS", texts.OUTSIDE_ALLOWED_ROOTS),
            ({"path": "link.txt"}, "INVALID_ARGS", texts.OUTSIDE_ALLOWED_ROOTS),  # its real path is outside
            ({"path": "dsh-search://spill/x"}, "INVALID_ARGS", None),
        ]
        for arguments, kind, message in cases:
            failed = d.result("tools/call", modern({"name": "read", "arguments": arguments}))
            assert failed["isError"] is True and failed["_meta"]["dsh-search/error"]["code"] == kind, (
                arguments,
                failed,
            )
            if message is not None:
                assert failed["content"][0]["text"] == f"Error: {message}", arguments
        assert error_of(d.call("read", {"path": 3}))[0] == -32602


def test_read_takes_a_spill_artifact_by_path_or_link_under_any_confinement(tree: Path) -> None:
    docs = tree / "docs"
    with InProcessDaemon(
        workdir=docs, readTool=True, allowedRoots=[str(docs)], globMaxResults=2, mcpResult="full"
    ) as d:
        capped = d.result("tools/call", {"name": "glob", "arguments": {"pattern": "*.md"}})
        spill = capped["structuredContent"]["spill"]
        assert spill is not None and not spill["locator"].startswith(str(docs) + "/")
        by_path = d.result("tools/call", {"name": "read", "arguments": {"path": spill["locator"]}})
        assert by_path["isError"] is False
        assert by_path["content"][0]["text"] == "\n".join(f"{n:>6}\td{n - 1}.md" for n in range(1, 7))
        link = capped["content"][1]["uri"]
        by_link = d.result("tools/call", {"name": "read", "arguments": {"path": link + "?offset=2&limit=1"}})
        assert by_link["content"][0]["text"] == (
            "     2\td1.md\n\n(Showing lines 2-2 of 6. Use offset 3 to read more.)"
        )
        outside = d.result("tools/call", {"name": "read", "arguments": {"path": str(tree / "notes.md")}})
        assert outside["content"][0]["text"] == f"Error: {texts.OUTSIDE_ALLOWED_ROOTS}"


# --- subscriptions/listen ---------------------------------------------------------------------------------------------


def test_a_subscription_hears_terminal_search_arrive_and_ends_with_the_input(tree: Path) -> None:
    with InProcessDaemon(workdir=tree) as d:
        listen = d.request(
            "subscriptions/listen", modern({"notifications": {"toolsListChanged": True, "promptsListChanged": True}})
        )
        other = d.request("subscriptions/listen", modern({"notifications": {"resourceSubscriptions": ["x"]}}))
        acks = [d.next_response(), d.next_response()]
        assert sorted((a["params"]["_meta"][era.SUBSCRIPTION_ID], a["params"]["notifications"]) for a in acks) == [
            (listen, {"toolsListChanged": True}),
            (other, {}),
        ]
        assert all(a["method"] == "notifications/subscriptions/acknowledged" for a in acks)
        append = d.request("scrollback/append", {"sessionId": "t", "data": "x\n"})
        messages = d.drain(append)
        assert messages[:-1] == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
                "params": {"_meta": {era.SUBSCRIPTION_ID: listen}},
            }
        ]
        assert [t["name"] for t in d.result("tools/list", modern())["tools"]] == ["glob", "grep", "terminal_search"]
        d.notify("notifications/cancelled", modern({"requestId": other}))
        bad = d.call("subscriptions/listen", modern({"notifications": {"toolsListChanged": "yes"}}))
        assert bad["error"]["code"] == -32602
        d.close_stdin()
        closing = d.wait_for(listen)
        assert closing["result"] == {"resultType": "complete", "_meta": {era.SUBSCRIPTION_ID: listen, **server_info(d)}}
        assert d.wait_exit() == 0
        assert other not in d._pending and d.no_response(0.3), "a cancelled subscription was answered"


# --- a daemon that is only probed -------------------------------------------------------------------------------------


@pytest.mark.parametrize("opening", ["server/discover", "initialize"])
def test_a_daemon_asked_only_to_describe_itself_starts_nothing(tree: Path, tmp_path: Path, opening: str) -> None:
    """No index opened (one is on disk and the mode is on), no roots asked, no walk, no retention scan;
    gone as soon as its input ends."""
    index_dir = tmp_path / "index"
    with InProcessDaemon(workdir=tree, index="on", indexDir=str(index_dir)) as warm:
        assert warm.result("index/status")["root"] == str(tree)  # builds the index, so one is on disk
        while warm.result("index/status")["state"] == "building":
            time.sleep(0.02)
    assert index_dir.is_dir()
    with InProcessDaemon(workdir=tree, workdir_given=False, index="on", indexDir=str(index_dir)) as d:
        params = modern() if opening == "server/discover" else {"protocolVersion": "2025-11-25", "capabilities": {}}
        d.result(opening, params)
        assert d.no_response(0.3)  # no roots/list, nothing
        assert d.ctx.index.root is None  # no workspace opened
        assert d.ctx.first_search is not None  # retention not started
        assert len(d.daemon.launcher.groups) == 0
        d.close_stdin()
        assert d.wait_exit() == 0

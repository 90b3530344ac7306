"""docs/reference.md's examples are real: the whole session, replayed against the frozen executable."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.server.test_reference import reference
from tests.support.daemon import Daemon


def substitute(value: Any, names: dict[str, str]) -> Any:
    """`value` with each `<name>` of `names` replaced in every string it holds."""
    if isinstance(value, str):
        for name, real in names.items():
            value = value.replace(name, real)
        return value
    if isinstance(value, dict):
        return {k: substitute(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, names) for v in value]
    return value


def test_every_documented_exchange_is_what_the_daemon_answers(exe: Path, tmp_path: Path) -> None:
    tree, spill = tmp_path / "tree", tmp_path / "spill"
    for name, (content, mtime) in reference.EXAMPLE_TREE.items():
        path = tree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        os.utime(path, (mtime, mtime))
    names = {"<tree>": str(tree), "<spill-dir>": str(spill)}
    # As documented: the default index mode, whatever mode the suite runs the other daemons in.
    daemon = Daemon(substitute(list(reference.EXAMPLE_ARGS), names), exe=exe, index=False)
    locator = uri = ""  # of the latest spilled result (and its link), for the requests that read it
    listen = None  # the id of the latest subscriptions/listen, for the notification that ends it
    try:
        for example, id_ in zip(reference.EXAMPLES, reference.example_ids(), strict=True):
            if example.raw is not None:
                daemon.send_body(example.raw.encode())
            else:
                request = reference.request_of(example, id_)
                request = substitute(request, {reference.SPILL_LOCATOR: locator, reference.SPILL_URI: uri})
                if example.method == "subscriptions/listen":
                    listen = id_
                if example.method == "notifications/cancelled":
                    request["params"]["requestId"] = listen
                daemon.send(request)
            expected = reference.response_of(example, id_)
            if expected is None:
                continue
            got = daemon.wait_for(expected["id"])
            assert reference.matches(substitute(expected, names), got), f"{example}\nanswered: {got}"
            result = got.get("result")
            saved = re.search(r"result stored at: (\S+)\. ", json.dumps(result))
            if saved is not None:  # the latest saved result, and its resource URI
                locator = saved.group(1)
                uri = "dsh-search://spill/" + os.path.relpath(locator, spill)
        assert daemon.wait_exit() == 0  # the session ends with `exit`
        with pytest.raises(EOFError):  # and nothing was answered that is not documented
            daemon.next_response(timeout=5)
    finally:
        daemon.stop()

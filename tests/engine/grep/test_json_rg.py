"""grep's parser on streams ripgrep itself wrote: generated trees with what makes `--json` interesting —
Unicode and control characters, CRLF and missing final newlines, lines far over the preview cap, file
names and lines that are not UTF-8 (base64 `bytes` fields), many small files and a few with thousands
of matches — cut into batches by grep's own `Batches` at random sizes, so files are split across
batches. Each batch must parse as the strict parser parses it, and as the previous release's parser did
(tests/support/grep_reference.py); the files, pages and spill artifacts must be the same.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from dsh_search import texts
from dsh_search.engine.batches import Batches
from dsh_search.engine.grep import json_parse
from dsh_search.engine.grep import page as grep_page
from dsh_search.engine.spill import SpillRef
from tests.support import grep_reference
from tests.support.fakes import Inline

CAP = 2000


def _tree(root: Path, seed: int) -> None:
    rng = random.Random(seed)
    words = ["static", "int", "é", "\u2028", "\t", "\x1b[0m", '"q"', "\\", "😀", "\ufeff", "Ωmega"]
    for i in range(120):
        lines = []
        for n in range(rng.choice([1, 5, 40, 400 if i % 17 == 0 else 3])):
            line = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
            if n % 7 == 0:
                line = "static " + line
            if n % 97 == 3:
                line = "static " + "x" * rng.randint(1990, 2100)
            lines.append(line + rng.choice(["\n", "\n", "\r\n"]))
        data = "".join(lines).encode()
        if i % 11 == 0:
            data += b"static \xff\xfe not utf-8\n"
        if i % 13 == 0:
            data = data.rstrip(b"\n")  # no final newline
        name = f"d{i % 7}/f{i}.c".encode()
        if i % 19 == 0:
            name = f"d{i % 7}/n\xe9{i}".encode("latin-1")  # not UTF-8
        path = root / os.fsdecode(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@pytest.mark.parametrize("seed", range(2))
def test_ripgreps_own_output_parses_as_before(rg_path: str, tmp_path: Path, seed: int) -> None:
    _tree(tmp_path, seed)
    done = subprocess.run(
        [rg_path, "--no-config", "--json", "--regexp=static", "--", "."],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    stdout = done.stdout
    assert b'"bytes":' in stdout  # the streams hold what they are meant to
    rng = random.Random(seed)
    parsers = {
        "new": json_parse.parse_batch,
        "old": grep_reference.parse_batch,
        "strict": grep_reference.parse_batch_strictly,
    }
    for _ in range(5):
        sizes = {"min_bytes": rng.choice([64, 700, 1 << 12, 1 << 16]), "max_bytes": rng.choice([128, 5000, 1 << 17])}
        reads = [rng.randint(1, 1 << 15) for _ in range(len(stdout))]
        seen = {}
        for name, parser in parsers.items():
            batches = Batches(
                b"\n",
                lambda blob, parser=parser: parser(blob, str(tmp_path), CAP),
                Inline(),
                growth=lambda batch: batch.growth,
                **sizes,
            )
            at = 0
            for step in reads:  # reads of random sizes, as a pipe gives them
                if at >= len(stdout):
                    break
                batches.feed(stdout[at : at + step])
                at += step
            batches.flush()
            seen[name] = [future.result() for future in batches._futures]
        assert seen["new"] == seen["strict"] == seen["old"]
        files = {
            name: grep_page.ordered([json_parse.sections(p.files, CAP) for p in parts]) for name, parts in seen.items()
        }
        total = sum(f.matches for f in files["new"])
        assert total == stdout.count(b'"type":"match"')
        spill = SpillRef("/spill/x", 1, "hint")
        pages = {name: grep_page.render(f, max_matches=250, spill=spill) for name, f in files.items()}
        assert pages["new"] == pages["old"]
        artifacts = {name: "".join(grep_page.spill_pieces(texts.grep_found(total), f)) for name, f in files.items()}
        assert artifacts["new"] == artifacts["old"]

"""Unit-level fakes, handed in through the seams the daemon is built with (never patched in):

- `FakeLaunch` stands in for ripgrep (the engine's `Launch`): each run replays recorded output through
  the same sink, parsing and classification as a real run, and remembers its argv;
- `FakeSpill` stands in for the spill store (the engine's `Spill`): upstream's fake, whose locator is
  `/spill/<name>` and whose hint is `Use the fake retrieval hint.`; it can be told to fail;
- `make_app` assembles a handler context from them, with a real, empty working directory;
- `run_glob` and `run_grep` call a tool's `run` the way the dispatcher does, over recorded ripgrep output
  (glob's paths are created as files, oldest first, because glob stats what ripgrep lists);
- `Inline` is an executor that runs what it is given at once, on the caller's thread (batch parsing
  made deterministic).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from dsh_search import config as config_mod
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.ripgrep import Outcome, StderrTally
from dsh_search.engine.searcher import Searcher, Workers
from dsh_search.engine.sidecar import Ripgrep
from dsh_search.engine.spill import SpillRef
from dsh_search.methods import tools
from dsh_search.methods.context import Context
from dsh_search.methods.registry import MethodTable
from dsh_search.store.scrollback import Terminals
from dsh_search.store.spill import SpillStore
from dsh_search.wiring import METHODS

NO_DENY = DenyGlobs(())
FAKE_HINT = "Use the fake retrieval hint."
_WORKDIRS = tempfile.TemporaryDirectory(prefix="dsh-fake-workdirs-")  # removed when the tests end


class FakeSpill:
    """A spill store whose locator is `/spill/<name>`, as upstream's fake; can be told to fail."""

    root = "/spill"

    def __init__(self, fail: bool = False) -> None:
        self.saves: list[tuple[str, str, str]] = []
        self.fail = fail

    def save_text(self, session_id: str, suggested_name: str, content: str | Iterable[str]) -> SpillRef:
        if self.fail:
            raise OSError("no space left on device")
        content = content if isinstance(content, str) else "".join(content)
        self.saves.append((session_id, suggested_name, content))
        return SpillRef(f"/spill/{suggested_name}", len(content.encode()), FAKE_HINT)


def outcome(code: int | None, stderr: bytes = b"", *, sig: int | None = None, **kw: Any) -> Outcome:
    tally = StderrTally()  # what the runner counts while stderr streams past
    tally.feed(stderr)
    tally.finish()
    stdout = kw.get("stdout", b"")
    return Outcome(
        exit_code=code,
        signal=sig,
        stdout=stdout,
        stdout_overflow=kw.get("overflow", False),
        stderr=stderr,
        stderr_lossy=kw.get("lossy", False),
        stdout_bytes=kw.get("stdout_bytes", len(stdout)),
        reported_paths=tally.paths,
        bad_ignore_files=tally.ignore_files,
        out_of_memory=kw.get("out_of_memory", False),
    )


class FakeLaunch:
    """ripgrep replaced by recorded output: `stdout` goes to the run's sink in chunks (as a real run's
    does) and the run ends as `result` says (default: exit 0, or 1 when there is no output)."""

    def __init__(self, stdout: bytes = b"", result: Outcome | None = None, chunk: int = 1 << 16) -> None:
        self.stdout = stdout
        self.result = result
        self.chunk = chunk
        self.calls: list[tuple[list[str], str]] = []  # (argv, cwd) of each run

    async def __call__(
        self,
        args: Sequence[str | bytes],
        *,
        cwd: str | bytes,
        stdin_data: bytes | None = None,
        sink: Any = None,
        on_overflow: Any = None,
    ) -> Outcome:
        self.calls.append(([os.fsdecode(a) for a in args], os.fsdecode(cwd)))
        result = self.result or outcome(0 if self.stdout else 1)
        stdout = self.stdout
        if sink is not None:
            for start in range(0, len(stdout), self.chunk):
                sink(stdout[start : start + self.chunk])
            stdout = b""
        return result._replace(stdout=stdout, stdout_bytes=result.stdout_bytes or len(self.stdout))


def make_app(spill: Any = None, launch: Any = None, workdir: str | None = None, **overrides: Any) -> Context:
    """A handler context over fakes: config from `overrides` (camelCase keys), a fresh empty workdir."""
    values = {"sampleOverCapGlobResults": True, **overrides}
    cfg = config_mod.build(values, environ={"XDG_STATE_HOME": "/nonexistent-state"})
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fake-worker")
    searcher = Searcher(
        config=cfg,
        launch=launch or FakeLaunch(),
        spill=spill or FakeSpill(),
        deny_globs=DenyGlobs(cfg.deny_globs),
        workers=Workers(pool, pool),
    )
    return Context(
        config=cfg,
        rg=Ripgrep(path="/bin/rg", version="15.2.0", version_text="ripgrep 15.2.0"),
        searcher=searcher,
        spill=SpillStore(cfg.spill_dir, max_bytes=1 << 20, max_age_s=60, hint="h"),
        terminals=Terminals(cfg.scrollback_lines, cfg.scrollback_max_bytes, cfg.scrollback_total_max_bytes),
        methods=MethodTable(METHODS),
        workspace=workdir or tempfile.mkdtemp(dir=_WORKDIRS.name),
        version="0.1.0",
    )


def run_glob(app: Context, paths: list[str], **params: Any) -> dict[str, Any]:
    """glob over a tree holding `paths` (created, oldest first), as ripgrep would list them."""
    base = Path(app.workspace)
    for age, name in enumerate(reversed(paths)):
        file = base / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.touch()
        os.utime(file, ns=(1_600_000_000_000_000_000 - age * 1_000_000_000,) * 2)
    app.searcher.launch = FakeLaunch(b"".join(os.fsencode(p) + b"\0" for p in paths))
    return asyncio.run(tools.run_glob(app, {"pattern": "*", **params}, None)).as_json()


def run_grep(app: Context, matches: list[tuple[str, int, str]], **params: Any) -> dict[str, Any]:
    """grep whose ripgrep reports `matches`, (path, line number, line without its terminator) each."""
    app.searcher.launch = FakeLaunch(b"".join(match_record(p, n, line + "\n") + b"\n" for p, n, line in matches))
    return asyncio.run(tools.run_grep(app, {"pattern": "x", **params}, None)).as_json()


def match_record(path: str, line: int, text: str | None = None, **data: Any) -> bytes:
    record: dict[str, Any] = {
        "type": "match",
        "data": {"path": {"text": path}, "line_number": line, "lines": {"text": text}, **data},
    }
    return orjson.dumps(record)


# --- grep's values, spelled as (path, line number, line) tuples ------------------------------------------


def parsed(stdout: bytes, cwd: str) -> list[tuple[str, int, str]]:
    """ripgrep --json output → its matches, (display path, line number, line without terminator)."""
    from dsh_search.engine.grep.json_parse import parse_batch

    return [
        (f.path, n, line) for f in parse_batch(stdout, cwd).files for n, line in zip(f.numbers, f.lines, strict=True)
    ]


def as_files(matches: list[tuple[str, int, str]]) -> list[Any]:
    """(path, line number, line) tuples → grep's per-file values, consecutive matches of a path together."""
    from dsh_search.engine.grep.json_parse import FileMatches, raw_line

    files: list[FileMatches] = []
    for path, number, line in matches:
        if not files or files[-1].path != path:
            files.append(FileMatches(path, [], []))
        files[-1].numbers.append(number)
        files[-1].raw_lines.append(raw_line(line))
    return files


def render_matches(matches: list[tuple[str, int, str]], max_line_bytes: int = 2000, **kw: Any) -> Any:
    """grep's page for `matches` (keyword arguments as engine.grep.page.render's; no spill unless given), lines
    previewed to `max_line_bytes`."""
    from dsh_search.engine.grep.json_parse import sections
    from dsh_search.engine.grep.page import render

    return render(sections(as_files(matches), max_line_bytes), **{"max_matches": 250, "spill": None, **kw})


class Inline(Executor):
    """Runs each submitted call at once, on the caller's thread."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as exc:
            done.set_exception(exc)
        return done

"""The one place grep's ripgrep flags are spelled: a `GrepQuery` (engine/request.py) and a printer in,
ripgrep's arguments (after `--no-config`) out.

    <printer> <matching flags> --regexp=<pattern> <filters: include, exclude, deny globs> -- <path>

With upstream's parameters and the `--json` printer this is upstream's argv exactly (`--json
--regexp=<p> --glob=<include> -- <path>`, plus the deny globs): no case flag, no `--hidden`, no
`--no-ignore`, ripgrep's own defaults. Each extended parameter adds its flag here and nowhere else.
When the file source (the workspace index) chose the files, they replace the filters and the path
(`files_args`): the index applied the include, exclude and deny globs itself, as ripgrep ignores
`--glob`s for files it is given by name.
"""

from __future__ import annotations

from dsh_search import osdep, texts
from dsh_search.engine.paths import DenyGlobs
from dsh_search.engine.request import GrepQuery, OutputMode
from dsh_search.engine.source import GrepFiles

# The printers grep reads. STANDARD: ripgrep's own printer, read by standard_parse.py: `--with-filename`
# because ripgrep leaves the name out when it searches a single file; the match separator so that
# texts.LINE_HEAD before each line is all a block needs; `--stats` for the submatch count and the byte and
# file counters `--json` would have printed. JSON: upstream's. FILES and COUNT: the extended profile's
# output modes, each path ended by a NUL (a name may hold a newline).
STANDARD = (
    "--heading",
    "--null",
    "--with-filename",
    "--line-number",
    "--no-column",
    "--color=never",
    f"--field-match-separator={texts.MATCH_SEPARATOR}",
    "--stats",
)
JSON = ("--json",)
FILES = ("--files-with-matches", "--null")
COUNT = ("--count", "--null", "--with-filename")
LISTINGS = {OutputMode.FILES: FILES, OutputMode.COUNT: COUNT}


def matching(query: GrepQuery) -> list[str]:
    """The flags that change what matches or which lines are printed around it."""
    out = []
    if query.smart_case:
        out.append("--smart-case")
    if query.ignore_case:  # after --smart-case: the later of the two wins in ripgrep
        out.append("--ignore-case")
    if query.fixed_strings:
        out.append("--fixed-strings")
    if query.multiline:
        out.append("--multiline")
    if query.output_mode == OutputMode.CONTENT:  # ripgrep ignores context when it lists files or counts
        before, after = query.context_lines
        if before:
            out.append(f"--before-context={before}")
        if after:
            out.append(f"--after-context={after}")
    return out


def filters(query: GrepQuery, deny: DenyGlobs) -> list[str]:
    """The globs that choose the files a walk searches: the include, then the exclude (the later glob wins
    for a path both match), then the deny globs."""
    out = []
    if query.include is not None:
        out.append(f"--glob={query.include}")
    if query.exclude is not None:
        out.append(f"--glob=!{query.exclude}")
    return out + deny.rg_args()


def search(
    query: GrepQuery, printer: tuple[str, ...], deny: DenyGlobs, files: GrepFiles | None = None, *, threads: int = 0
) -> list[str | bytes]:
    """The whole argv of a grep with `printer`: ripgrep walks from the query's path, or reads `files` (with
    at most `threads` threads; 0: ripgrep's own choice)."""
    argv: list[str | bytes] = [*printer, *matching(query), f"--regexp={query.pattern}"]
    if files is not None:
        return argv + files_args(files, threads)
    argv += filters(query, deny)
    if query.path is not None:
        argv += ["--", query.path]
    return argv


_GLOB_SPECIAL = frozenset(b"*?[]{}\\!,")


def escape_glob(path: bytes) -> bytes:
    """`path` as a glob that matches exactly it (a backslash before every character globs treat
    specially)."""
    return b"".join(b"\\" + bytes([c]) if c in _GLOB_SPECIAL else bytes([c]) for c in path)


# Files named per ripgrep thread: starting a thread and its buffers costs about what reading ~250 files of
# source does, so a handful of named files is read on one thread (alloc_chrdev_region in the Linux tree,
# 85 files: 4.7 ms against 5.9 ms with two threads, and a fifth less CPU; docs/performance.md).
FILES_PER_THREAD = 256


def files_args(files: GrepFiles, threads: int = 0) -> list[str | bytes]:
    """ripgrep's arguments after the pattern's for the files a source chose: the walked directories
    limited to depth 1 and to their names, then `--` and every root. No file at all is `/dev/null`:
    ripgrep still checks the pattern (an invalid one fails as it would), and finds nothing.

    Files named on the command line are searched whatever the ignore files say, so when nothing is walked
    to, `--no-ignore` spares ripgrep reading git's config and building matchers it would not use; and a
    few files get fewer threads (`FILES_PER_THREAD`, at most `threads`). Neither changes what is found:
    grep orders every result itself."""
    out: list[str | bytes] = []
    if not files.walk_to:
        out.append("--no-ignore")
    if threads > 0:
        out.append(f"--threads={max(1, min(threads, len(files.named) // FILES_PER_THREAD))}")
    roots: list[bytes] = list(files.named)
    if files.walk_to:
        out.append("--max-depth=1")
        for directory, paths in files.walk_to:
            out += [b"--glob=/" + escape_glob(path) for path in paths]
            roots.append(directory)
    return [*out, "--", *(roots or [osdep.NULL_DEVICE])]

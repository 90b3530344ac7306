"""Every model-facing string, in one place.

These texts are a contract: they are word-for-word compatible with the upstream TypeScript tools
(`@deepseek-ai/dsh-tool-fs-search@0.1.0-rc.8`), so prompts and agents built for upstream work unchanged.
docs/behaviour.md says where each one is used. Change one only as a deliberate change of the contract.
"""

from __future__ import annotations

# --- glob -------------------------------------------------------------------------------------------

_GLOB_GUIDANCE_HEAD = (
    'Use the glob tool — not shell find — to discover files by path pattern. A pattern with no "/" '
    'matches basenames at any depth, so "*" matches every file in the tree rather than its top level. '
    "Results are files only, never directories, and include hidden and ignored files: a result that fits "
    "comes back in modification-time order, "
)
_GLOB_GUIDANCE_SAMPLED = (
    "while a larger one is sampled across top-level entries, so it spans the tree instead of one subtree."
)
_GLOB_GUIDANCE_HEAD_ONLY = "while a larger one keeps the modification-time-ordered head."


def glob_guidance(sample_over_cap: bool) -> str:
    return _GLOB_GUIDANCE_HEAD + (_GLOB_GUIDANCE_SAMPLED if sample_over_cap else _GLOB_GUIDANCE_HEAD_ONLY)


def glob_description(sample_over_cap: bool, max_results: int) -> str:
    middle = (
        f"a larger result instead returns {max_results} paths sampled across top-level entries"
        if sample_over_cap
        else f"a larger result returns the first {max_results} paths in modification-time order"
    )
    return (
        "Find files whose paths match a glob pattern. Returns matching file paths — never directories — "
        "including hidden and ignored files (VCS metadata directories are excluded). "
        f"Up to {max_results} paths come back in modification-time order; {middle}, says so, and reports "
        "where the complete sorted list was saved. This tool does not enumerate directory entries."
    )


GLOB_PATTERN_DESCRIPTION = (
    'Glob pattern to match file paths against (e.g. "**/*.ts", "src/**/*.test.js"). A pattern with no "/" '
    'matches the basename at any depth, so "*" and "*.ts" both search the whole tree; include a separator '
    "to anchor the depth."
)
GLOB_PATH_DESCRIPTION = (
    "Directory to search in. Defaults to the session workspace; a relative path resolves against it."
)

GLOB_NO_FILES = "No files found"
GLOB_SPILL_NAME = "glob-results.txt"


def glob_footer_plain(shown: int, total: int, recovery: str) -> str:
    return f"(Showing {shown} of {total} paths. {recovery})"


def glob_footer_sampled(shown: int, total: int, groups_shown: int, groups_total: int, recovery: str) -> str:
    narrow = " Narrow path to inspect a specific subtree." if groups_shown < groups_total else ""
    return (
        f"(Showing {shown} of {total} paths, sampled across {groups_shown} of the {groups_total} top-level "
        "entries this pattern matched instead of taken in modification-time order."
        f"{narrow} {recovery})"
    )


def glob_recovery_saved(locator: str, hint: str) -> str:
    return f"Full sorted result stored at: {locator}. {hint}"


GLOB_RECOVERY_UNSAVED = "The complete result could not be saved; narrow pattern or path to see more."

# --- grep -------------------------------------------------------------------------------------------

GREP_GUIDANCE = (
    "Use the grep tool — not shell grep or rg — to search file contents. Use read on a matched file when "
    "you need surrounding context."
)


def grep_description(max_matches: int) -> str:
    # As in glob's description, upstream's "N" is the configured cap.
    return (
        "Search file contents with a ripgrep regular expression. Returns matching lines with line numbers, "
        f"grouped by file. Returns the first {max_matches} matches inline; a capped result reports where the "
        "complete match list was saved. Use read on a matched file for surrounding context."
    )


GREP_PATTERN_DESCRIPTION = "Regular expression to search for (ripgrep syntax)."
GREP_PATH_DESCRIPTION = (
    "File or directory to search. Defaults to the session workspace; a relative path resolves against it."
)
GREP_INCLUDE_DESCRIPTION = (
    'One glob filter for which files to search (e.g. "*.ts", "*.{js,jsx}"). Not a list; negation is not supported.'
)


# The extended profile (grepProfile: extended): the tool's description and its parameters', in the house
# style. Upstream's three parameters keep upstream's words.
def grep_description_extended(max_matches: int) -> str:
    return (
        "Search file contents with a ripgrep regular expression (or, with fixedStrings, a literal string). "
        "By default returns matching lines with line numbers, grouped by file; outputMode files lists the "
        "matching files only, count gives each matching file with its number of matches. Results are sorted by "
        f"path, then line; the first {max_matches} entries are shown inline, and offset and limit page through "
        "the rest. Add before, after or context for the lines around each match."
    )


GREP_PARAMETERS: dict[str, str] = {
    "pattern": GREP_PATTERN_DESCRIPTION,
    "path": GREP_PATH_DESCRIPTION,
    "include": GREP_INCLUDE_DESCRIPTION,
    "ignore_case": "Match letters of either case (ripgrep --ignore-case). Default false.",
    "smart_case": "Match letters of either case unless the pattern has an upper-case letter (ripgrep "
    "--smart-case). Default false; ignoreCase wins when both are true.",
    "fixed_strings": "Treat pattern as a literal string, not a regular expression (ripgrep --fixed-strings). "
    "Default false.",
    "before": "Lines of context to show before each match (0-10). Context lines read `Line N- text`.",
    "after": "Lines of context to show after each match (0-10). Context lines read `Line N- text`.",
    "context": "Lines of context to show before and after each match (0-10); before and after override it "
    "for their side. Context lines read `Line N- text`, matching lines `Line N: text`.",
    "output_mode": 'What to return: "content" (default) the matching lines; "files" only the paths of the '
    'files that match; "count" each matching file with its number of matches.',
    "multiline": "Let a match span lines: the pattern may match newlines (\\n) (ripgrep --multiline). Default false.",
    "exclude": 'One glob of files not to search (e.g. "*_test.go", "vendor/**"). Not a list; no "!" needed.',
    "offset": "Skip this many entries (matches, or files for files and count) of the sorted result: for the "
    "next page, pass the offset the previous page names. Default 0.",
    "limit": "Entries (matches, or files for files and count) to show, at most the inline cap. Default: the cap.",
}

GREP_NO_MATCHES = "No matches found"
GREP_SPILL_NAME = "grep-results.txt"
LINE_TRUNCATED_SUFFIX = " (line truncated)"
LINE_NOT_UTF8 = "(line is not valid UTF-8)"

# A grep's lines as the model reads them: `Line <N>: <text>` for a match, `Line <N>- <text>` for a line of
# context (extended profile). Every spelling of them in the engine is built from these pieces.
LINE_HEAD = "Line "
MATCH_SEPARATOR = ": "
CONTEXT_SEPARATOR = "- "


def match_line(number: int, text: str) -> str:
    return f"{LINE_HEAD}{number}{MATCH_SEPARATOR}{text}"


def context_line(number: int, text: str) -> str:
    return f"{LINE_HEAD}{number}{CONTEXT_SEPARATOR}{text}"


def grep_found(total: int) -> str:
    return f"Found {total} match" if total == 1 else f"Found {total} matches"


def grep_found_capped(shown: int, total: int) -> str:
    return f"Found {shown} of {total} matches"


def grep_recovery_saved(locator: str, hint: str) -> str:
    return f"Full grep result stored at: {locator}. {hint}"


GREP_RECOVERY_UNSAVED = "The complete result could not be saved; narrow pattern, path, or include to see more."


# The extended profile's pages: `unit` is "match" for content, "file" for files and count.
def _plural(count: int, unit: str) -> str:
    if unit == "match":
        return f"{count} match" if count == 1 else f"{count} matches"
    return f"{count} {unit}" if count == 1 else f"{count} {unit}s"


def grep_found_files(total: int) -> str:
    return f"Found {_plural(total, 'file')}"


def grep_found_counts(matches: int, files: int) -> str:
    return f"Found {_plural(matches, 'match')} in {_plural(files, 'file')}"


def grep_showing(header: str, first: int, last: int, what: str = "") -> str:
    """The header of an extended page that holds part of the result: which entries (1-based) it shows."""
    return f"{header}; showing {what}{first}-{last}"


def grep_past_the_end(total: int, offset: int, unit: str) -> str:
    return f"Found {_plural(total, unit)}; offset {offset} is past the last one"


def grep_next_page(offset: int) -> str:
    return f"Next page: offset {offset}."


GREP_RECOVERY_UNSAVED_EXTENDED = "The complete result could not be saved; page with offset, or narrow the search."


def malformed_listing(tool: str) -> str:
    """ripgrep's list of files (outputMode files or count) was not as ripgrep writes it."""
    return f"{tool} received a malformed ripgrep file listing"


def count_line(path: str, count: int) -> str:
    """A file and ripgrep's count of its matches (outputMode count)."""
    return f"{path}: {count}"


def unreadable_paths_note(count: int) -> str:
    """The paragraph added (a fix) when ripgrep reported errors for some paths but still found results."""
    return "(1 path could not be read)" if count == 1 else f"({count} paths could not be read)"


def bad_ignore_files_note(count: int) -> str:
    """The paragraph added when ripgrep found results but could not parse rules of some ignore files
    (.gitignore, .ignore, .rgignore): those files were read, and their other rules were applied."""
    if count == 1:
        return "(1 ignore file has rules ripgrep could not parse; those rules were not applied)"
    return f"({count} ignore files have rules ripgrep could not parse; those rules were not applied)"


# --- argument errors ----------------------------------------------------------------------------------

PATTERN_EMPTY = "pattern must be a non-empty string"
PATH_EMPTY = "path must be a non-empty string when given"


def glob_filter_empty(name: str) -> str:
    return f"{name} must be a non-empty glob when given"


def glob_filter_negated(name: str) -> str:
    if name == "exclude":
        return 'exclude must be a plain glob: it already leaves out what it matches ("!…" is not supported)'
    return f'{name} must be a positive glob filter; negated patterns ("!…") are not supported'


def glob_filter_list(name: str) -> str:
    return f"{name} must be one glob, not a comma-separated list (use {{a,b}} alternation instead)"


INCLUDE_EMPTY = glob_filter_empty("include")
INCLUDE_NEGATED = glob_filter_negated("include")
INCLUDE_LIST = glob_filter_list("include")


def out_of_range(name: str, low: int, high: int) -> str:
    return f"{name} must be an integer from {low} to {high}"


def at_least(name: str, low: int) -> str:
    return f"{name} must be an integer of at least {low}"


def one_of(name: str, values: list[str]) -> str:
    return f"{name} must be one of " + ", ".join(f'"{v}"' for v in values)


OUTSIDE_ALLOWED_ROOTS = "path is outside the allowed roots"


def outside_shared_roots(roots: tuple[str, ...]) -> str:
    """A model's call through MCP named a place outside what its session shares (docs/mcp.md, "Roots and
    workspace"): the refusal of a place outside allowedRoots, then where the model may look."""
    return f"{OUTSIDE_ALLOWED_ROOTS}; this session's roots are {', '.join(roots)}"


def cannot_enter(tool: str, directory: str, reason: str) -> str:
    """Not upstream's words (theirs: could_not_start) but its start: a model's call through MCP whose
    working directory (the client's root, the host's cwd) cannot be entered where the daemon runs."""
    return f"{tool} could not start its search command: the directory {directory} {reason}"


# Not upstream's: the daemon was started in / with no --workdir, and no MCP client roots are known, so a
# search without an absolute cwd or path would walk the whole disk (docs/mcp.md, "Roots and workspace").
NO_WORKSPACE = (
    "no workspace is set, and searching the whole disk (/) by default is refused; pass an absolute path, "
    "or have the user start dsh-search with --workdir <project directory> or use a client that shares its "
    "workspace roots"
)


def invalid_arguments(violations: list[str]) -> str:
    return "invalid arguments: " + "; ".join(violations)


def missing_property(name: str) -> str:
    return f'missing required property "{name}"'


def must_be_type(name: str, type_name: str) -> str:
    return f'"{name}" must be {type_name}'


# --- search failures ------------------------------------------------------------------------------------


def aborted(tool: str) -> str:
    return f"{tool} was aborted before completion (tool timeout or caller cancellation)"


def timed_out(tool: str, timeout_ms: int) -> str:
    return f"{tool} timed out after {timeout_ms}ms"


def could_not_start(tool: str) -> str:
    return f"{tool} could not start its search command (ripgrep launch failed)"


def killed_by_signal(tool: str, signal_name: str) -> str:
    return f"{tool} search command was killed by signal {signal_name}"


def pattern_rejected(tool: str, excerpt: str) -> str:
    return f"{tool} pattern rejected by ripgrep: {excerpt}"


def search_failed(tool: str, exit_code: int, excerpt: str) -> str:
    return f"{tool} search failed (exit {exit_code})" + (f": {excerpt}" if excerpt else "")


def raw_output_overflow(tool: str, cap: int) -> str:
    return (
        f"{tool} produced more raw output than the subprocess seam retained within the {cap}-byte cap; "
        "narrow pattern, path, or include and retry"
    )


def raw_output_over_cap(tool: str, size: int, cap: int) -> str:
    """The raw output fit the cap but its decoded text does not (invalid UTF-8 replaced by U+FFFD)."""
    return (
        f"{tool} produced {size} bytes of raw output, over the {cap}-byte cap; "
        "narrow pattern, path, or include and retry"
    )


def malformed_json(tool: str, detail: str) -> str:
    return f"{tool} received malformed ripgrep --json output ({detail})"


STDERR_TRUNCATED = " [stderr truncated]"

# --- spill ----------------------------------------------------------------------------------------------

DEFAULT_RETRIEVAL_HINT = "Use read with offset/limit, or grep this path to search within it."
# Not upstream's: the hint of a daemon started through a channel (`remote`), whose paths the host's own file
# tools cannot open.
REMOTE_RETRIEVAL_HINT = (
    "The path is on the machine where dsh-search runs, which the host's own file tools cannot open: read it "
    "with dsh-search's read tool (offset/limit), or grep this path to search within it."
)

# Not upstream's (upstream has no MCP resources): the spill artifacts' resource template
# (methods/resources.py), which a host may show its model.
SPILL_RESOURCE_TITLE = "Saved search result"
SPILL_RESOURCE_DESCRIPTION = (
    "The complete result of a capped glob or grep, as its footer names it. offset (the first line, 1-based) "
    "and limit (the number of lines) read a part of it."
)

# --- read ---------------------------------------------------------------------------------------------------
# Not upstream's: upstream has no read tool (its texts say "use read", meaning the host's). The daemon's
# opt-in one (`readTool`, engine/read.py) makes them true for hosts that have no file reader.

READ_DESCRIPTION = (
    "Read a text file. Returns its lines numbered from 1 (cat -n style), limit lines starting at offset, "
    "each cut to a preview length if very long. The path is absolute or relative to the session workspace; "
    "the complete result a capped glob or grep saved is read the same way, by the path or dsh-search:// "
    "link it reports. Use offset/limit to page through large files."
)
READ_PATH_DESCRIPTION = (
    "File to read: an absolute path, a path relative to the session workspace, or the dsh-search:// link "
    "of a saved search result."
)
READ_OFFSET_DESCRIPTION = "Line to start at, 1-based (default 1)."
READ_LIMIT_DESCRIPTION = "Maximum number of lines to return (default 2000)."
READ_PATH_EMPTY = "path must be a non-empty string"
READ_EMPTY = "(empty file)"


def read_footer(start: int, end: int, total: int) -> str:
    return f"(Showing lines {start}-{end} of {total}. Use offset {end + 1} to read more.)"


def read_past_end(offset: int, total: int) -> str:
    return f"offset {offset} is past the end of the file ({total} lines)"


def read_not_found(path: str) -> str:
    return f"file not found: {path}"


def read_unreadable(path: str, reason: str) -> str:
    return f"cannot read {path}: {reason}"


def read_is_directory(path: str) -> str:
    return f"{path} is a directory; use glob to list its files"


def read_not_a_file(path: str) -> str:
    return f"{path} is not a regular file"


def read_binary(path: str) -> str:
    return f"{path} is a binary file"


# --- terminal_search --------------------------------------------------------------------------------------

TERMINAL_SEARCH_GUIDANCE = (
    "Use the terminal_search tool to find lines in a terminal's retained output by content instead of "
    "paging backward with terminal_read. Each match carries a newest-relative offset: call terminal_read "
    "with that offset to read the output that ends at the matched line."
)

TERMINAL_SEARCH_DESCRIPTION = (
    "Search the retained scrollback of a persistent terminal for lines containing a literal, case-sensitive "
    "substring (or, with regex: true, matching a ripgrep regular expression). Returns matching lines newest "
    "first as [offset N] <line>, where N is the line's newest-relative offset: terminal_read with offset N "
    "returns a page that ends at that line, so one follow-up call shows the output leading up to a match "
    "(use a smaller offset to include the lines after it). Reports the exact match count and the retained "
    "line count; offset and limit page over matches."
)
TERMINAL_SESSION_DESCRIPTION = "Terminal session id (as returned by terminal_open)."
TERMINAL_PATTERN_DESCRIPTION = (
    "Text to find in a single line. A literal, case-sensitive substring unless regex is true (no "
    "metacharacters to escape)."
)
TERMINAL_REGEX_DESCRIPTION = "Treat pattern as a ripgrep regular expression (default false)."
TERMINAL_OFFSET_DESCRIPTION = (
    "Number of newest matches to skip, for paging (default 0). A count of matches, not a line offset: "
    "for the next page, add the number of matches shown."
)
TERMINAL_LIMIT_DESCRIPTION = "Maximum matches to return (default 100)."
TERMINAL_NO_MATCHES = "No matches found"


def terminal_match_line(offset: int, line: str) -> str:
    return f"[offset {offset}] {line}"


def terminal_summary(shown: int, match_count: int, total_lines: int) -> str:
    return f"[search: {shown} of {match_count} matches, {total_lines} retained lines]"


def unknown_terminal_session(session_id: str) -> str:
    return f"unknown terminal session: {session_id}"


def evicted_terminal_session(session_id: str, budget: int) -> str:
    return (
        f"terminal session {session_id} is no longer retained: its scrollback was evicted, least recently "
        f"used first, to keep all retained scrollback within {budget} bytes"
    )


# --- scrollback argument errors (terminal_search shows them to the model) ----------------------------------

SESSION_ID_EMPTY = "sessionId must be a non-empty string"
PATTERN_MULTILINE = "pattern must be a single line (terminal_search matches one line at a time)"
PATTERN_NOT_UNICODE = "pattern must be valid Unicode (it contains a lone surrogate)"
PATTERN_NUL = "pattern must not contain a NUL character (write \\x00 in a regex)"
CHUNK_EXACTLY_ONE = "exactly one of data and dataBase64 is required"
CHUNK_BAD_BASE64 = "dataBase64 must be valid base64"


def non_negative_safe_integer(name: str) -> str:
    return f"{name} must be a non-negative safe integer"


def positive_safe_integer(name: str) -> str:
    return f"{name} must be a positive safe integer"

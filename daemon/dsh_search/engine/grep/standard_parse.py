"""ripgrep's own printer, read by grep instead of `--json` (sans IO; docs/decisions.md, "grep reads
ripgrep's standard output").

With argv.STANDARD, ripgrep prints one block per file with matches, blocks separated by a blank line, and its
`--stats` summary last:

    <path>\\0<N>: <line>\\n<N>: <line>\\n
    \\n
    <path>\\0<N>: <line>\\n
    \\n
    \\n<K> matches\\n<lines> matched lines\\n… seconds total\\n

That is a quarter of `--json`'s bytes (grep `static` in the kernel's drivers/net/ethernet: 3.3 MB against
14.9), ripgrep spends about a quarter less time printing it, and it is already most of what the model
reads: a block becomes its section, `<path>\\nLine <N>: <line>…`, with one replace, and a batch of blocks
costs a few C-level passes over its bytes and a few steps per file — none per line.

What `--json` says that this output does not is its own size, and upstream judges `rawOutputMaxBytes`
on that size. `JsonSize` computes it: most of it exactly (each record's keys, each path and line as
`--json` escapes them, each line number, the file and line counts, the number of submatches from the
statistics), the rest — digits of offsets, submatch positions, byte counters and timings, the text of
submatches — between bounds. A search decides on the bounds (`JsonSize.lower`, `JsonSize.upper`), and
runs again with `--json` in the narrow band where the cap lies between them.

Anything that is not this grammar exactly makes a batch `unsure` (and the search runs again with
`--json`, as before): a "binary file matches" message (a file named as the search's path that holds a
NUL: `--json` prints its lines, this printer does not), a file name holding a newline, a statistics
block that is missing or disagrees with the blocks. A binary file abandoned at a NUL after some matches
ends its block with ripgrep's warning, which is recognised and removed (`--json` puts the offset in its
`end` record). A line that is not UTF-8 is replaced as `--json`'s `bytes` field makes upstream replace
it. A file's last line printed with `\\r\\n` may be a last line ending in a lone `\\r` that the printer
terminated (upstream keeps that `\\r`): the piece says so (`Piece.ends_in_cr`) and grep looks at the
file.

Batches are cut at block boundaries where possible (`cut`); a block too long for one batch is cut at a
line and its next part is prefixed with `\\0` and the block's header (`<path>\\0`), so every batch
parses on its own.
"""

from __future__ import annotations

import re
from itertools import repeat
from operator import add, mul, sub
from typing import NamedTuple

from dsh_search import texts
from dsh_search.engine.grep.page import preview_line

# Every line of a section starts with texts.LINE_HEAD; this is how one follows the line before.
NL_HEAD = "\n" + texts.LINE_HEAD
NL_HEAD_BYTES = NL_HEAD.encode()

CONTINUED = b"\0"  # a batch that starts with this continues the previous batch's last block

# --- the --json records whose size JsonSize computes (rg 13-15; tests/engine/grep/test_standard_rg.py checks it) ---
# Each `{}` is a value: a path or line object, a number, a string's content.
_MATCH = '{{"type":"match","data":{{"path":{},"lines":{},"line_number":{},"absolute_offset":{},"submatches":[{}]}}}}\n'
_SUBMATCH = '{{"match":{},"start":{},"end":{}}}'
_BEGIN = '{{"type":"begin","data":{{"path":{}}}}}\n'
_END = (
    '{{"type":"end","data":{{"path":{},"binary_offset":{},"stats":{{"elapsed":{{"secs":{},"nanos":{},'
    '"human":"{}"}},"searches":1,"searches_with_match":1,"bytes_searched":{},"bytes_printed":{},'
    '"matched_lines":{},"matches":{}}}}}}}\n'
)
_SUMMARY = (
    '{{"data":{{"elapsed_total":{{"human":"{}","nanos":{},"secs":{}}},"stats":{{"bytes_printed":{},'
    '"bytes_searched":{},"elapsed":{{"human":"{}","nanos":{},"secs":{}}},"matched_lines":{},"matches":{},'
    '"searches":{},"searches_with_match":{}}}}},"type":"summary"}}\n'
)


def _fixed(template: str) -> int:
    """The bytes of a record besides its values."""
    return len(template.format(*[""] * template.count("{}")))


MATCH_FIXED = _fixed(_MATCH)
SUBMATCH_FIXED = _fixed(_SUBMATCH)
BEGIN_FIXED = _fixed(_BEGIN)
END_FIXED = _fixed(_END)
SUMMARY_FIXED = _fixed(_SUMMARY)
TEXT_FIXED = len('{"text":""}')  # a path, line or submatch given as text
BYTES_FIXED = len('{"bytes":""}')  # …or, not UTF-8, as base64
NULL = len("null")  # a binary_offset when no NUL stopped the search
U64_DIGITS = 20  # the widest counter --json writes
NANOS_DIGITS = 9
HUMAN_FIXED = len(".000000s")  # `human` is the seconds with six decimals and an `s`

# The bytes --json escapes: `"`, `\\` and the controls. Of the controls, \\b \\t \\n \\f \\r take two bytes
# (`\\n`), the others six (`\\u001b`).
_ESCAPED = bytes(range(0x20)) + b'"\\'
_LONG_ESCAPE = bytes(c for c in range(0x20) if c not in b"\b\t\n\f\r")

# ripgrep's warning when a NUL stops the search of a file it walked to, after matches were printed.
_BINARY_WARNING = re.compile(
    rb': WARNING: stopped searching binary file after match \(found "\\0" byte around offset ([0-9]+)\)\Z'
)
# ripgrep's message for a file named as the search's path that holds a NUL (`--json` prints its lines).
_NAMED_BINARY = re.compile(rb': binary file matches \(found "\\0" byte around offset [0-9]+\)\Z')
# A line as the printer writes it starts so. A warning that does too — its file's name is digits, or digits
# and `: ` then more — could be a line of that file: the reading is unsure of it.
_LINE_START = re.compile("[0-9]+: ")
_LINE_START_BYTES = re.compile(b"[0-9]+: ")
_STATS_MAX = 1024
_STATS = re.compile(
    rb"([0-9]+) matches\n([0-9]+) matched lines\n([0-9]+) files contained matches\n([0-9]+) files searched\n"
    rb"[0-9]+ bytes printed\n([0-9]+) bytes searched\n[0-9.]+ seconds spent searching\n[0-9.]+ seconds total\n\Z"
)


def digits(n: int) -> int:
    return len(str(n)) if n >= 0 else 1


def b64_size(n: int) -> int:
    return 4 * ((n + 2) // 3)


def escaped_size(data: bytes) -> int:
    """`data` (valid UTF-8) as the content of a --json string."""
    special = len(data) - len(data.translate(None, _ESCAPED))
    if not special:
        return len(data)
    return len(data) + special + 4 * (len(data) - len(data.translate(None, _LONG_ESCAPE)))


def value_size(data: bytes) -> int:
    """`{"text":…}` for UTF-8, else `{"bytes":<base64>}`, as --json writes a path or a line."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return BYTES_FIXED + b64_size(len(data))
    return TEXT_FIXED + escaped_size(data)


class Unsure(Exception):
    """Output this reader does not read exactly as --json would have been read: the search runs again
    with --json."""


class Sizes(NamedTuple):
    """A batch's part of what --json would have printed (see JsonSize)."""

    exact: int = 0  # bytes known exactly: records' fixed parts, paths, lines, line numbers
    lines: int = 0
    files: int = 0  # blocks that start in this batch: a begin and an end record each
    text_upper: int = 0  # at most this much of submatches' text (the lines' text, escaped)
    widest: int = 0  # the longest piece: no submatch offset has more digits than it
    not_utf8: bool = False  # a line or a name was not UTF-8: submatches may be base64 too
    submatches: int = 0  # when the pattern is a literal (`literal`): its occurrences, one submatch each
    binary: int = 0  # files whose search a NUL stopped after matches (ripgrep's warning ended their block)

    def plus(self, other: Sizes) -> Sizes:
        return Sizes(
            self.exact + other.exact,
            self.lines + other.lines,
            self.files + other.files,
            self.text_upper + other.text_upper,
            max(self.widest, other.widest),
            self.not_utf8 or other.not_utf8,
            self.submatches + other.submatches,
            self.binary + other.binary,
        )


class Batch(NamedTuple):
    """A batch's blocks (each a file's, or the part of one this batch holds), as three parallel lists, and
    the batch's part of the --json size."""

    paths: list[str]  # decoded for display (U+FFFD for what is not UTF-8), not yet made workdir-relative
    lines: list[int]  # each block's lines: one per match
    texts: list[str]  # each block's section, `<path>\nLine <N>: <line>…`, lines previewed
    sizes: Sizes
    # The blocks whose last line was printed with `\r\n`, which may be a file's last line ending in a lone
    # `\r` that the printer terminated (upstream keeps that `\r`): (block, its name as ripgrep printed it).
    ends_in_cr: list[tuple[int, bytes]]


def last_line(path: str, text: str) -> int:
    """The line number of a section's last line."""
    start = max(text.rfind(NL_HEAD, len(path)), len(path)) + len(NL_HEAD)
    return int(text[start : text.index(":", start)])


class Stats(NamedTuple):
    """ripgrep's `--stats`: the numbers --json's summary record repeats."""

    matches: int  # submatches
    matched_lines: int
    files_with_matches: int
    searches: int
    bytes_searched: int


def split_stats(tail: bytes) -> tuple[bytes, Stats | None]:
    """The end of the stream → (the blocks before the statistics, the statistics), or (tail, None) when it
    does not end with them (ripgrep stopped, failed before searching, or this is not its output).

    Blank lines come before the statistics — two after blocks of a walk, one after the block of a single
    file or when nothing matched — unless the batches before took them as a block's end."""
    window = max(0, len(tail) - _STATS_MAX)  # the statistics are a few hundred bytes at the very end
    found = _STATS.search(tail, window)
    while found is not None and found.start() and tail[found.start() - 1] != 10:
        found = _STATS.search(tail, found.start() + 1)  # a number that began inside the one before
    if found is None:
        return tail, None
    blocks = tail[: found.start()].rstrip(b"\n")
    counts = [int(found.group(i)) for i in range(1, 6)]
    return blocks + b"\n" if blocks else b"", Stats(*counts)


def cut(buf: bytes | bytearray, start: int, end: int, *, inside: bool) -> tuple[int, int, bool] | None:
    """Where a batch of `buf[start:]` should end, looking no further than `end`: (its end, where the next
    one starts, whether the next one continues the last block), or None when there is no place yet.
    `inside`: `buf[start:]` continues a block.

    A blank line ends a block; in a run of three newlines (the last block's, then the blank lines before
    the statistics) the batch ends at the first. Without one in reach, a long block is
    cut after a line: a newline followed by a line number (a newline in a record can only end it).
    """
    at = buf.rfind(b"\n\n", start, end)
    if at >= 0:
        while at > start and buf[at - 1] == 10:
            at -= 1
        return at + 1, at + 2, False
    # No block ends in reach: the window is one block's lines (and, when a block starts at `start`, its
    # header: never cut inside that).
    nul = buf.find(b"\0", start, end)
    if nul < 0 and not inside:  # not in a block: the statistics, or not ripgrep's blocks at all
        return None
    low = start if nul < 0 else nul + 1
    at = min(end, len(buf) - 1)
    while True:
        at = buf.rfind(b"\n", low, at)
        if at < 0:
            return None
        if 48 <= buf[at + 1] <= 57:
            return at + 1, at + 1, True


def header_before(buf: bytes | bytearray, start: int, at: int, previous: bytes | None) -> bytes | None:
    """The header (`<path>\\0`) of the block that the batch `buf[start:at]` ends inside: the last block
    starting in it, else the block it continued (`previous`)."""
    begin = buf.rfind(b"\n\n", start, at)
    if begin < 0 and previous is not None:
        return previous
    begin = start if begin < 0 else begin + 2
    nul = buf.find(b"\0", begin, at)
    return None if nul < 0 else bytes(buf[begin : nul + 1])


def parse(blob: bytes, max_line_bytes: int | None, literal: bytes | None = None) -> Batch:
    """A batch of whole blocks (the first one perhaps continued, `CONTINUED`) → its pieces and its part
    of the --json size; raises Unsure for anything that is not ripgrep's grammar. With the pattern's
    `literal` (see `literal_of`), the batch's submatches are counted too."""
    continued = blob.startswith(CONTINUED)
    if continued:
        blob = blob[1:]
    if not blob:
        return Batch([], [], [], Sizes(), [])
    if not blob.endswith(b"\n"):
        raise Unsure("a block does not end with a line")
    if b"\r" in blob or not (blob.isascii() or _is_utf8(blob)):
        return _block_by_block(blob, continued, max_line_bytes, literal)
    return _whole(blob, continued, max_line_bytes, literal)


def _whole(blob: bytes, continued: bool, cap: int | None, literal: bytes | None) -> Batch:
    """The common batch, UTF-8 without a CR, in a few passes over all of it and a few C-level steps per
    block: `Line ` goes before every line at once, the blocks are split apart, a block's NUL becomes its
    section's first `\nLine `. Its --json size comes from the batch's length and escape counts, less
    those of the paths between the lines."""
    whole = blob[:-1].replace(b"\n", NL_HEAD_BYTES).decode("utf-8")
    parts = whole.split(NL_HEAD + NL_HEAD)
    nuls = list(map(str.find, parts, repeat("\0")))
    if min(nuls) <= 0 or max(map(str.find, parts, repeat("\n"), repeat(0), nuls)) >= 0:
        raise Unsure("a block is not a path and lines")  # a name holding a newline: blocks cannot be told apart
    paths = list(map(str.__getitem__, parts, map(slice, nuls)))
    lasts = list(map(str.rfind, parts, repeat(NL_HEAD), nuls))  # before each block's last line
    lines = list(map(add, map(str.count, parts, repeat("\n"), nuls), repeat(1)))
    texts = list(map(str.replace, parts, repeat("\0"), repeat(NL_HEAD), repeat(1)))
    between = "\0".join(paths) + "\0"  # what is not lines: paths, NULs, and warnings (below)
    offsets: list[int] = []  # of ripgrep's warnings that a NUL stopped a file's search
    # A warning ends its block with a line that starts with the file's name, not a digit, unless the name
    # starts with one.
    warnings = any("0" <= path[0] <= "9" for path in paths) and (
        max(map(str.find, parts, repeat(": WARNING: "), map(max, lasts, nuls))) >= 0
    )
    if ": binary file matches (" in whole:  # a named binary file's message, which may read as a line
        for i, part in enumerate(parts):
            start = nuls[i] + 1 if lasts[i] < 0 else lasts[i] + len(NL_HEAD)
            if part.startswith(paths[i], start) and _NAMED_BINARY.match(part[start + len(paths[i]) :].encode()):
                raise Unsure("a binary file's message")
    if warnings or not _all_digits(parts, lasts, nuls):
        for i, part in enumerate(parts):
            offset = _warning(part, paths[i], lasts[i], nuls[i], continued and i == 0)
            if offset is not None:
                offsets.append(offset)
                between += part[nuls[i] + 1 if lasts[i] < 0 else lasts[i] + len(NL_HEAD) :] + "\n"
                lines[i] -= 1
                texts[i] = texts[i][: lasts[i] + len(NL_HEAD) - 1]  # the NUL became NL_HEAD (none left: dropped below)
    if cap is not None and _may_exceed(blob, 0, cap):  # a line may be over the cap: look block by block
        for i, text in enumerate(texts):
            block = text.encode("utf-8")  # bytes, not characters (`Line ` prefixes too: a bound)
            if lines[i] and len(block) > cap and _may_exceed(block, 0, cap):
                body = text[nuls[i] + len(NL_HEAD) :].replace(NL_HEAD, "\n").encode("utf-8") + b"\n"
                texts[i] = paths[i] + "\n" + _lines_one_by_one(body, cap)[0]
    blocks = len(parts)
    total = sum(lines)
    raw_between = between.encode("utf-8")
    if blob.isascii() and _count(raw_between, _ESCAPED) == blocks:  # names without anything to escape
        path_sizes = sum(map(mul, lines, map(add, nuls, repeat(MATCH_FIXED + TEXT_FIXED))))
        starting = sum(nuls) - (nuls[0] if continued else 0)
        opened = blocks - (1 if continued else 0)
        exact = path_sizes + opened * (BEGIN_FIXED + END_FIXED + 2 * TEXT_FIXED + NULL) + 2 * starting
    else:
        path_sizes = [TEXT_FIXED + escaped_size(path.encode("utf-8")) for path in paths]
        exact = sum(map(mul, lines, map(add, path_sizes, repeat(MATCH_FIXED))))
        exact += sum(BEGIN_FIXED + END_FIXED + 2 * size + NULL for size in path_sizes[1 if continued else 0 :])
    exact += sum(digits(offset) - NULL for offset in offsets)
    # The lines in --json, from the whole: `<N>: <text>\n` is digits, 3 bytes and the text; --json writes
    # the digits, and the text and its newline escaped (the newline takes 2 bytes, a control other than
    # \b \t \f \r 6: `\u001b`) in a value object. The blank lines between blocks are not lines.
    size = len(blob) - len(raw_between) - (blocks - 1)
    special = _count(blob, _ESCAPED) - _count(raw_between, _ESCAPED) - (blocks - 1)
    long_escapes = _count(blob, _LONG_ESCAPE) - _count(raw_between, _LONG_ESCAPE) if special > total else 0
    exact += total * TEXT_FIXED + size - 2 * total + special + 4 * long_escapes
    text_upper = size - 5 * total + special + 4 * long_escapes
    widest = max(map(sub, map(len, parts), nuls))
    files = blocks - (1 if continued else 0)
    found = 0 if literal is None else blob.count(literal) - raw_between.count(literal)
    if not lines[0]:  # a continued piece that held only the warning ending its block
        paths, lines, texts = paths[1:], lines[1:], texts[1:]
    sizes = Sizes(exact, total, files, text_upper, widest, False, found, len(offsets))
    return Batch(paths, lines, texts, sizes, [])


def _all_digits(parts: list[str], lasts: list[int], nuls: list[int]) -> bool:
    """Whether every block's last line starts with a digit (its line number)."""
    starts = [last + len(NL_HEAD) if last >= 0 else nul + 1 for last, nul in zip(lasts, nuls, strict=True)]
    firsts = "".join(map(str.__getitem__, parts, starts))
    return firsts.isascii() and firsts.isdigit()  # ASCII: `²`, `٣` are digits to str.isdigit


def _warning(part: str, path: str, last: int, nul: int, continued: bool) -> int | None:
    """The offset in ripgrep's warning that a NUL stopped the search of the file, when the block ends
    with it (its lines end at `last`, or it is all a continued piece holds), else None."""
    start = nul + 1 if last < 0 else last + len(NL_HEAD)
    if "0" <= part[start] <= "9" and not part.startswith(path + ": WARNING: ", start):
        return None
    warning = _BINARY_WARNING.match(part[start + len(path) :].encode("utf-8"))
    if warning is None or not part.startswith(path, start) or (last < 0 and not continued):
        raise Unsure("a block ends with a line that is not a match")
    if _LINE_START.match(path + ": "):  # `<N>: WARNING…` could then be a line of the file as well
        raise Unsure("a warning that could be a line")
    return int(warning.group(1))


def _count(data: bytes, these: bytes) -> int:
    return len(data) - len(data.translate(None, these))


def _block_by_block(blob: bytes, continued: bool, cap: int | None, literal: bytes | None) -> Batch:
    """A batch holding a CR or bytes that are not UTF-8, one block at a time."""
    parts = blob[:-1].split(b"\n\n")
    if len(parts) != blob.count(b"\0"):  # one NUL per block: the end of its path
        raise Unsure("blocks are not separated as ripgrep separates them")
    has_cr = b"\r" in blob
    out = Batch([], [], [], Sizes(), [])
    sizes = Sizes()
    for i, part in enumerate(parts):
        nul = part.find(b"\0")
        raw_path = part[:nul]
        if nul <= 0 or b"\n" in raw_path:  # a name holding a newline cannot be told from the blocks around it
            raise Unsure("a block is not a path and lines")
        path, count, text, ends_in_cr, piece_sizes = _piece(
            raw_path, part[nul + 1 :] + b"\n", has_cr, cap, literal, new=not (continued and i == 0)
        )
        sizes = sizes.plus(piece_sizes)
        if not count:
            continue
        out.paths.append(path)
        out.lines.append(count)
        out.texts.append(text)
        if ends_in_cr:
            out.ends_in_cr.append((len(out.paths) - 1, raw_path))
    return out._replace(sizes=sizes)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _number(record: str | bytes, start: int = 0) -> int:
    """The line number a record starts with (`<N>: …`)."""
    colon = record.find(": " if isinstance(record, str) else b": ", start)  # type: ignore[arg-type]
    number = record[start:colon]
    if colon < 0 or not number.isdigit() or not number.isascii():
        raise Unsure("a line does not start with its number")
    return int(number)


def _piece(
    raw_path: bytes, body: bytes, has_cr: bool, cap: int | None, literal: bytes | None, *, new: bool
) -> tuple[str, int, str, bool, Sizes]:
    """One block: (its path decoded, its lines, its section, whether its last line was printed with
    `\r\n`, its part of the --json size)."""
    binary_offset = None
    last_start = body.rfind(b"\n", 0, len(body) - 1) + 1
    if body.startswith(raw_path, last_start) and _NAMED_BINARY.match(body, last_start + len(raw_path), len(body) - 1):
        # A named binary file's message; when the file's name is digits it reads as a line as well.
        raise Unsure("a binary file's message")
    if not 48 <= body[last_start] <= 57 or body.startswith(raw_path + b": WARNING: ", last_start):
        # The last line may be ripgrep's warning that a NUL stopped the search of this file.
        warning = _BINARY_WARNING.match(body, last_start + len(raw_path), len(body) - 1)
        if warning is None or not body.startswith(raw_path, last_start):
            raise Unsure("a block ends with a line that is not a match")
        if _LINE_START_BYTES.match(raw_path + b": "):  # `<N>: WARNING…` could then be a line of the file as well
            raise Unsure("a warning that could be a line")
        binary_offset = int(warning.group(1))
        body = body[:last_start]
        if not body:  # the warning was all a continued piece held: its lines came in the batch before
            if new:
                raise Unsure("a warning without lines")
            return raw_path.decode("utf-8", "replace"), 0, "", False, Sizes(digits(binary_offset) - NULL, binary=1)
        last_start = body.rfind(b"\n", 0, len(body) - 1) + 1
    count = body.count(b"\n")
    _number(body)
    _number(body, last_start)
    path_utf8 = _is_utf8(raw_path)
    path_size = value_size(raw_path)
    ends_in_cr = has_cr and body.endswith(b"\r\n")
    if _is_utf8(body) and not (cap is not None and _may_exceed(body, 0, cap)):
        text = body[:-2] if ends_in_cr else body[:-1]
        if has_cr:
            text = text.replace(b"\r\n", b"\n")
        shown = texts.LINE_HEAD + text.replace(b"\n", NL_HEAD_BYTES).decode("utf-8")
        # Each line as --json writes it, from the block's length and escape counts alone: a printed line is
        # `<N>: <text>\n` (digits, 3 bytes, the text); --json writes the digits, and the text and its
        # newline escaped (the newline takes 2 bytes) in a value object.
        special = len(body) - len(body.translate(None, _ESCAPED))
        long_escapes = len(body) - len(body.translate(None, _LONG_ESCAPE)) if special > count else 0
        lines_exact = count * TEXT_FIXED + len(body) - 2 * count + special + 4 * long_escapes
        text_upper = len(body) - 5 * count + special + 4 * long_escapes  # each line's text, escaped, at most
        not_utf8 = False
    else:
        shown, lines_exact, text_upper, not_utf8 = _lines_one_by_one(body, cap)
    exact = lines_exact + count * (MATCH_FIXED + path_size)
    files = 0
    if new:
        files = 1
        exact += BEGIN_FIXED + END_FIXED + 2 * path_size + NULL
    if binary_offset is not None:  # the file's end record has the offset where `null` was counted
        exact += digits(binary_offset) - NULL
    path = raw_path.decode("utf-8", "replace")
    found = 0 if literal is None else body.count(literal)
    binary = 0 if binary_offset is None else 1
    sizes = Sizes(exact, count, files, text_upper, len(body), not_utf8 or not path_utf8, found, binary)
    return path, count, path + "\n" + shown, ends_in_cr, sizes


def _may_exceed(body: bytes, start: int, cap: int) -> bool:
    """Whether a line of `body[start:]` may be longer than `cap` bytes. A line of `2 * (cap // 2)` bytes
    or more covers one of the stretches of `cap // 2` laid end to end from `start`, so when every such
    stretch holds a newline no line is longer than the cap."""
    if len(body) - start <= cap:
        return False
    step = max(1, cap // 2)
    return any(body.find(b"\n", at, at + step) < 0 for at in range(start, len(body) - step + 1, step))


def _lines_one_by_one(body: bytes, cap: int | None) -> tuple[str, int, int, bool]:
    """A block line by line (a line may be over the cap, or is not UTF-8): (its lines as shown, the lines'
    exact --json size with their line numbers' digits, at most their text escaped, whether a line was
    not UTF-8)."""
    out = []
    exact = 0
    upper = 0
    not_utf8 = False
    for record in body[:-1].split(b"\n"):
        number = _number(record)
        raw = record[record.index(b": ") + 2 :]
        exact += digits(number)
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            not_utf8 = True
            exact += BYTES_FIXED + b64_size(len(raw) + 1)
            upper += 6 * len(raw)
            out.append(
                texts.match_line(number, preview_line(texts.LINE_NOT_UTF8, cap))
            )  # previewed too, as upstream does
            continue
        exact += TEXT_FIXED + escaped_size(raw + b"\n")
        upper += escaped_size(raw)
        if line.endswith("\r"):  # printed `\r\n`: upstream removes the whole terminator
            line = line[:-1]
        out.append(texts.match_line(number, preview_line(line, cap)))
    return "\n".join(out), exact, upper, not_utf8


class JsonSize(NamedTuple):
    """What `--json` would have printed for the same search, between two bounds."""

    lower: int
    upper: int


def json_size(
    sizes: Sizes, stats: Stats | None, *, seconds: float, submatch_bytes: bool, literal: bytes | None = None
) -> JsonSize:
    """Bounds of --json's output from the batches' `sizes` and ripgrep's statistics (None while it is
    still searching: then only the lower bound means anything). `seconds` bounds every timing --json
    writes; `submatch_bytes`: a submatch may be base64 (the pattern may match part of a character).
    With the pattern's `literal`, each submatch is an occurrence of it, counted by the batches."""
    t = digits(int(seconds) + 1)
    human_lo, human_hi = 1 + HUMAN_FIXED, t + HUMAN_FIXED
    timing_lo, timing_hi = 1 + 1 + human_lo, t + NANOS_DIGITS + human_hi
    lower = sizes.exact + sizes.lines + sizes.files * (timing_lo + 4 - 2)  # 4 counters; 2: a last line may lack its \n
    lower += SUMMARY_FIXED + 6 + 2 * timing_lo  # its 6 counters, its 2 timings
    if literal is not None:  # each occurrence a submatch: `{"match":{"text":"<literal>"},"start":S,"end":E}`
        k = sizes.submatches
        each = SUBMATCH_FIXED + TEXT_FIXED + len(literal)
        lower += k * (each + 2) + max(0, k - sizes.lines)
    if stats is None:
        return JsonSize(lower, 1 << 62)
    if literal is None:
        k = stats.matches
        lower += k * (SUBMATCH_FIXED + TEXT_FIXED + 2) + max(0, k - sizes.lines)
    lower += sum(map(digits, (stats.matched_lines, k, stats.searches, stats.files_with_matches, stats.bytes_searched)))
    lower -= 5
    searched = digits(stats.bytes_searched)
    upper = sizes.exact + sizes.lines * searched
    upper += sizes.files * (timing_hi + searched + U64_DIGITS + digits(stats.matched_lines) + digits(k))
    if literal is not None:
        upper += k * (each + 2 * digits(sizes.widest) + 1)
    else:
        upper += k * (SUBMATCH_FIXED + TEXT_FIXED + 2 * digits(sizes.widest) + 1) + sizes.text_upper
        if submatch_bytes or sizes.not_utf8:
            upper += 5 * k + sizes.text_upper  # base64 is at most a third longer than its bytes, plus padding
    upper += SUMMARY_FIXED + U64_DIGITS + 2 * timing_hi
    upper += sum(map(digits, (stats.matched_lines, k, stats.searches, stats.files_with_matches, stats.bytes_searched)))
    return JsonSize(lower, upper)


def summary_size(stats: Stats, bytes_printed: int, *, seconds: float, walked: bool) -> JsonSize:
    """Bounds of --json's summary record, the stream's last line, for a search with these statistics
    whose records before it took `bytes_printed` bytes. `walked`: the statistics are the walk's own;
    else they are of a search of files named by the index, and the walk's file and byte counters (more
    files searched) may have more digits, up to the widest."""
    t = digits(int(seconds) + 1)
    timing_lo, timing_hi = 1 + 1 + 1 + HUMAN_FIXED, t + NANOS_DIGITS + t + HUMAN_FIXED
    known = sum(map(digits, (bytes_printed, stats.matched_lines, stats.matches, stats.files_with_matches)))
    counted = digits(stats.searches) + digits(stats.bytes_searched)
    lower = SUMMARY_FIXED + known + counted + 2 * timing_lo
    upper = SUMMARY_FIXED + known + (counted if walked else 2 * U64_DIGITS) + 2 * timing_hi
    return JsonSize(lower, upper)


_LITERAL = re.compile(r"[A-Za-z0-9_]*[A-Za-z_][A-Za-z0-9_]*")


def literal_of(regex: str) -> bytes | None:
    """`regex` when it is an identifier — letters, digits and `_`, not only digits — whose matches are
    exactly its occurrences (no regex syntax, no case folding, not empty); else None. Only digits could
    be counted in the line numbers, which are not text."""
    return regex.encode() if _LITERAL.fullmatch(regex) else None


_NO_UNICODE = re.compile(r"\(\?[a-zA-Z]*-[a-zA-Z]*u")


def may_match_bytes(regex: str) -> bool:
    """Whether a match of `regex` may split a character (Unicode mode turned off, `(?-u…)`): --json
    then gives that submatch as base64."""
    return _NO_UNICODE.search(regex) is not None

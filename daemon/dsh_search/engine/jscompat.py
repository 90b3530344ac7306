"""JavaScript's string semantics, where the upstream tools' model-facing behaviour depends on them.

The texts we must reproduce word for word were computed by JavaScript: `String.prototype.trim()` decides
whether an argument is blank and what an error excerpt looks like, and Node's `Buffer` decides how many
bytes a decoded output has. Python's nearest equivalents differ at the edges (`str.strip()` removes
U+001C–U+001F and U+0085, which JavaScript keeps, and keeps U+FEFF, which JavaScript removes), so every
such use goes through this module instead.
"""

from __future__ import annotations

# ECMAScript's WhiteSpace and LineTerminator code points: what `trim()` removes from both ends.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    """`text.trim()` as JavaScript computes it."""
    return text.strip(JS_WHITESPACE)


def utf8_growth(data: bytes) -> int:
    """How many more bytes data has once decoded as UTF-8 with U+FFFD replacements and encoded again.

    This is `Buffer.byteLength(buffer.toString('utf8')) - buffer.length` in Node: 0 for valid UTF-8, and
    each replaced sequence (Python and Node both replace each maximal invalid subpart with one U+FFFD)
    counts 3 bytes instead of its own length. Splitting data at an ASCII byte does not change the total,
    so the growth of a stream is the sum of the growth of its pieces cut at a separator.
    """
    if data.isascii():
        return 0
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return len(data.decode("utf-8", "replace").encode("utf-8")) - len(data)
    return 0

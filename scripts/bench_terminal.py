"""terminal_search over a full scrollback buffer, next to bare ripgrep over the same text in a file.

One frozen daemon gets more colourised log output than it retains (12,000 lines of ~420 bytes, in
64 KiB `scrollback/append` chunks), so both retention limits apply: the buffer ends at its defaults,
10,000 lines / 4 MiB. The retained text is read back with `scrollback/read` and written to a file.
Each case then alternates a `terminal_search` request with a bare `rg -n` over that file (output
captured through a pipe, as the daemon captures its own rg), so both see the same machine state;
the ratio is median/median. Literal searches run inside the daemon; regex searches run the sidecar
over the buffer on stdin.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from stdio_client import StdioClient, timed  # scripts/, beside this script

LINE_BYTES = 420
FED_LINES = 12_000
CHUNK = 64 * 1024


def log_output(lines: int) -> str:
    """Colourised server log lines, CRLF-terminated as a PTY writes them; a few are rare errors."""
    rnd = random.Random(7)  # noqa: S311 - test data, not cryptography
    out = []
    for i in range(lines):
        if i % 1000 == 500:
            level, colour, body = "ERROR", 31, f"code=4711 upstream timeout after {rnd.randint(1, 99)}s"
        else:
            level, colour, body = "INFO", 32, f"GET /api/v1/items/{rnd.randint(1, 10**6)} 200"
        plain = f"2025-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z {level} worker-{i % 16} {body} "
        plain += "x" * max(0, LINE_BYTES - len(plain))
        out.append(plain.replace(level, f"\x1b[{colour}m{level}\x1b[0m", 1) + "\r\n")
    return "".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--exe", required=True)
    p.add_argument("--runs", type=int, default=21)
    args = p.parse_args()
    rg = args.exe + "-rg"

    daemon = StdioClient([args.exe, "--sample-over-cap-glob-results", "true"])
    try:
        raw = log_output(FED_LINES)
        started = time.perf_counter()
        for at in range(0, len(raw), CHUNK):
            state = daemon.result("scrollback/append", {"sessionId": "bench", "data": raw[at : at + CHUNK]})
        fill = time.perf_counter() - started
        page = daemon.result("scrollback/read", {"sessionId": "bench", "count": 1_000_000})
        text = page["text"]
        size = len(text.encode())
        print(
            f"buffer: {state['totalLines']} lines, {size} bytes, truncated={state['truncated']}; "
            f"filled from {len(raw.encode())} raw bytes in {fill * 1000:.0f} ms "
            f"({len(raw.encode()) / fill / 1e6:.0f} MB/s through scrollback/append)"
        )
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "scrollback.txt"
            path.write_text(text + "\n")
            cases = [
                ("literal, rare", "code=4711", False),
                ("literal, every line", "GET /api", False),
                ("regex, rare", r"ERROR worker-\d+ code=\d+ \w+ timeout", True),
                ("regex, every line", r"worker-\d+ (GET|ERROR)", True),
            ]
            print(f"{'case':22} {'matches':>8} {'daemon ms':>10} {'rg ms':>8} {'ratio':>6}")
            for name, pattern, regex in cases:
                params = {"sessionId": "bench", "pattern": pattern, "regex": regex}
                rg_argv = [rg, "--no-config", "-n", *([] if regex else ["-F"]), "--regexp", pattern, str(path)]
                found = daemon.result("terminal_search", params)
                expected = subprocess.run(rg_argv, capture_output=True, check=False).stdout.count(b"\n")
                assert found["matchCount"] == expected, (name, found["matchCount"], expected)
                ours, theirs = [], []
                for _ in range(args.runs):
                    ours.append(timed(lambda params=params: daemon.result("terminal_search", params)))
                    theirs.append(timed(lambda argv=rg_argv: subprocess.run(argv, capture_output=True, check=False)))
                mine, base = statistics.median(ours), statistics.median(theirs)
                count = found["matchCount"]
                print(f"{name:22} {count:>8} {mine * 1000:>10.2f} {base * 1000:>8.2f} {mine / base:>6.2f}")
    finally:
        daemon.close()


if __name__ == "__main__":
    main()

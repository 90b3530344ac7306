"""A Windows host on the installed wheel's client (run by the Windows Python under wine):

    python client_host.py CORPUS SLOW_CORPUS SLOW_PATTERN

It spawns the bundled daemon through `dsh_search_bin.Client` (the wheel's own executable), greps, cancels a
slow grep by cancelling its task, gets an error, and closes; it prints one JSON object saying what it saw.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time


async def main(corpus: str, slow: str, pattern: str) -> dict[str, object]:
    from dsh_search_bin import Client, RequestError, executable_path

    seen: dict[str, object] = {"executable": str(executable_path())}
    client = Client(sample_over_cap_glob_results=True, workdir=corpus, args=["--grace-ms", "1000", "--index", "off"])
    async with client:
        seen["pid"] = client.pid
        grep = await client.grep("needle")
        seen["grep"] = grep.text
        seen["grep_files"] = [f["path"] for f in grep.meta["files"]]
        glob = await client.glob("*.txt")
        seen["glob"] = glob.text
        task = asyncio.create_task(client.grep(pattern, cwd=slow))
        await asyncio.sleep(1.5)  # the search is running (ripgrep needs seconds for the slow corpus)
        started = time.monotonic()
        task.cancel()
        try:
            await task
            seen["cancel"] = "finished"
        except asyncio.CancelledError:
            seen["cancel"] = "cancelled"
        seen["cancel_s"] = round(time.monotonic() - started, 2)
        try:
            await client.grep("(")
            seen["error"] = None
        except RequestError as exc:
            seen["error"] = {"kind": exc.code, "text": exc.text}
        seen["ping_after"] = await client.ping()
    seen["returncode"] = client.returncode
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:4]))))

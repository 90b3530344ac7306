"""A host written from clients/python/README.md alone, run by tests/hosts/test_readme_hosts.py from a copy
outside the repository, with the SDK wheel installed in a fresh venv:

    python host.py TREE CORPUS SLOW_PATTERN

It greps TREE (capped, so it pages through the spill), then runs a slow grep in CORPUS under
asyncio.timeout and makes that deadline expire at the first progress report; it prints the daemon's answer
to the cancellation, stops the daemon and exits.
"""

from __future__ import annotations

import asyncio
import sys

from dsh_search_bin import Client, Progress, cancel_reply


async def main(tree: str, corpus: str, slow_pattern: str) -> None:
    loop = asyncio.get_running_loop()
    async with Client(sample_over_cap_glob_results=True, workdir=tree) as client:
        found = await client.grep("^hit", include="*.txt")
        print(f"grep: {found.text.splitlines()[0]}")
        if found.spill is None:
            raise SystemExit("FAILED: the grep was not capped")
        pages = [page async for page in client.spill_pages(found.spill, limit=100)]
        lines = sum(len(page.text.splitlines()) for page in pages)
        print(f"spill: {len(pages)} pages, {lines} of {pages[-1].total_lines} lines")

        try:
            async with asyncio.timeout(60) as deadline:

                def progressed(report: Progress) -> None:
                    print(f"progress: {report.message}")
                    deadline.reschedule(loop.time())  # enough: the deadline is now

                await client.grep(slow_pattern, cwd=corpus, on_progress=progressed)
            print("FAILED: the slow grep was not cancelled")
        except TimeoutError as exc:
            reply = cancel_reply(exc)
            if reply is None:
                raise
            print(f"cancelled: {reply.rpc_code} {reply.code} {reply.text}")
    print(f"closed: {client.returncode}")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
    print("done", flush=True)

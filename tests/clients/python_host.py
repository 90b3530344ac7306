"""A minimal host on dsh_search_bin.Client for the host-death test: starts a slow grep and waits for it.

python python_host.py SDK_DIR EXE CORPUS PATTERN
"""

from __future__ import annotations

import asyncio
import sys


async def main(exe: str, corpus: str, pattern: str) -> None:
    from dsh_search_bin import Client

    async with Client(exe, sample_over_cap_glob_results=True, workdir=corpus) as client:
        print(f"spawned {exe} pid={client.pid} framing=ndjson", flush=True)
        print(f"slow grep: started in {corpus}, waiting", flush=True)
        await client.grep(pattern, cwd=corpus)
        print("slow grep: ended", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    asyncio.run(main(*sys.argv[2:5]))

"""The workspace index: glob and grep answered from a warm index of the workspace, byte for byte as a walk.

**The promise.** Every answer — text, meta, spill artifact, errors, footers, orders — is what the same
search gives with no index. The index only ever chooses which files ripgrep reads (engine/source.py):
for glob the listing itself, for grep a superset of the files that can match; ripgrep decides every
match. Where the index cannot promise the walk's answer, it says None and the search walks. A wrong
answer is the one failure it may not have; a slow one is only a cost.

**The modules**, from the bottom: each may import only the modules listed before it (import-linter's
contracts in pyproject.toml check it):

| module | its job | what must not live there |
|---|---|---|
| `query/` | what a pattern requires of a file's text, as trigrams to look up (pure) | any IO, any index |
| `files.py` | a file's version (`Signature`), its kind, its text as ripgrep reads it (pure) | opening files |
| `status.py` | the states table and `Status` (pure) | the wire's key names |
| `view.py` | a daemon's view of the files: what decides which files its ripgrep reads | comparing answers |
| `grams.py` | byte-trigram postings built, decoded, merged: `grams.c` through ctypes (pure) | files, IO |
| `globlist.py` | glob's list in memory and globs as regexes over it (pure) | the disk, events |
| `shards.py` | the content index on disk: SQLite and segments — **the only user of SQLite** | workspace logic |
| `watch.py` | inotify — **the only user of inotify** | what an event means |
| `mounts.py` | the mount table, its changes, which filesystems hide changes | what a change means |
| `rules.py` | every rule file of grep's walk, checked by stat (racily clean ones by content) | what grep reads |
| `peers.py` | one index per workspace: the owner's lock, its socket, the protocol | what an answer is |
| `reading.py` | reading one version of a workspace file | writing the index |
| `lister.py` | grep's list: ripgrep's own `--files` — the one place the index starts ripgrep | deciding answers |
| `walk.py` | glob's walk of the tree, watching each directory before listing it | state changes |
| `sets.py` | the workspace's directory, shard sets, their locks, trust and the cache's bound | shard contents |
| `builder.py` | the content index merged from grep's list, on threads | workspace state |
| `freshness.py` | what changed since indexed, what is in doubt and why (events, checks) | SQLite, ripgrep runs |
| `answers.py` | answers spelled as ripgrep prints them | choosing candidates |
| `planner.py` | every gate of the answer-or-walk decision, each "no" a reason (status.Walk) | storage, spelling |
| `glance.py` | a small tree's glob listed in process when no index answers (a `FileSource`) | index state |
| `workspace.py` | one workspace's life: build, drain, catch up, answer | thresholds, formats |
| `manager.py` | which workspace, when to build, retries, status (the engine's `FileSource`) | index internals |

**Threads and state.** Every state change happens on the event loop. Threads (the builder's, one per
shard, and `asyncio.to_thread`) do pure work on what they are given — walks, file reads, SQLite and
segment writes (grams.py's native calls release the GIL, so the shards' threads extract trigrams in
parallel) — and hand results back to be applied.

This package imports nothing at start: the manager imports the workspace (and so SQLite and inotify)
only when a workspace is indexed.
"""

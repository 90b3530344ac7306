"""What the tests share, by what it holds.

- `locations`: the repository, the built executable and the shared vectors.
- `daemon`: a client that runs the daemon over real pipes, and readers of its answers.
- `processes`: the process table, for checks that nothing outlives a test.
- `trees`: generated file trees, and corpora that keep ripgrep busy.
- `unprivileged`: running the daemon as an unprivileged user, in a tree it can reach.
- `reliability_report`: figures the reliability tests record for docs/reliability.md.
- `hosts`: the Node and Go toolchains, and running an example host.
- `packaging`: venvs with the SDK wheel installed, and the code inside a onefile.
- `fakes`: a handler context with a fake spill store, and glob and grep over faked ripgrep output.
- `upstream`: upstream's case numbers as pytest ids.

Fixtures stay in the conftest.py files, where pytest finds them.
"""

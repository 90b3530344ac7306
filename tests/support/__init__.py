"""What the tests share, by what it holds.

- `daemon`: a client that runs the daemon over real pipes.
- `trees`: generated file trees.
- `unprivileged`: reading answers, and running the daemon as an unprivileged user in a tree it can reach.
- `reliability_report`: figures the reliability tests record for docs/reliability.md.
- `hosts`: the Node and Go toolchains, and running an example host.
- `packaging`: venvs with the SDK wheel installed, and the code inside a onefile.
"""

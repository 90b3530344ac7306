"""dsh-search: a JSON-RPC search daemon (glob, grep, terminal scrollback) backed by a ripgrep sidecar."""

__version__ = "0.1.0"

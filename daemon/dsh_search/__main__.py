"""Command line: `dsh-search [options]` — verify the sidecar, load the config, serve stdin/stdout.

Exit statuses: 0 normal end, 2 invalid configuration or usage, 3 unusable ripgrep sidecar. Each
failure writes exactly one line to stderr and nothing to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from typing import Any, NoReturn

from dsh_search import __version__
from dsh_search.config import KEYS, ConfigError, Key, build, load_file, parse_flag_value
from dsh_search.engine.paths import directory_name, same_directory
from dsh_search.engine.sidecar import Check, Ripgrep, SidecarError, is_frozen, locate

EXIT_USAGE = 2
EXIT_SIDECAR = 3
NOTICE = 25  # a log level between info and warning (MCP's "notice"): the default, see --log-level


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One stderr line, as for every other configuration problem.
        self.exit(EXIT_USAGE, f"dsh-search: {message} (see --help)\n")


USAGE = "dsh-search --sample-over-cap-glob-results true|false [options]"
EXIT_STATUS_HELP = (
    "Exit status: 0 normal end (exit, a signal, stdin closed), 2 invalid configuration or usage, 3 unusable "
    "ripgrep sidecar; each failure writes one line to stderr. 127 before any output usually means the "
    "launcher could not run what it unpacked into $TMPDIR (a noexec mount)."
)
_METAVARS = {
    "bool": "true|false",
    "posint": "N",
    "str": "TEXT",
    "list": "VALUE",
    "spillDir": "DIR",
    "indexDir": "DIR",
    "index": "auto|on|off",
    "terminalSearch": "auto|always|never",
    "allowedRoots": "DIR",
    "denyGlobs": "GLOB",
}


def key_help(key: Key) -> str:
    """A configuration flag's --help text: meaning, key name, accepted values and default."""
    default = "required, no default" if key.required else f"default: {key.default_description}"
    text = f"{key.help} [{key.name}: {key.values}; {default}]"
    return ("REQUIRED. " if key.required else "") + text.replace("%", "%%")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="dsh-search",
        usage=USAGE,
        description="JSON-RPC 2.0 search daemon (glob, grep, terminal scrollback) on stdin/stdout.",
        epilog=EXIT_STATUS_HELP,
    )
    p.add_argument("--version", action="store_true", help="print the daemon and ripgrep versions and exit")
    p.add_argument("--check", action="store_true", help="verify sidecar and config, print them as JSON, exit")
    p.add_argument(
        "--config",
        metavar="FILE",
        help="JSON object of configuration keys (camelCase names, e.g. globMaxResults); flags override it",
    )
    p.add_argument(
        "--workdir",
        metavar="DIR",
        help="default cwd of searches (default: the MCP client's first root when it shares roots, else the "
        "current directory, refused when that is /)",
    )
    p.add_argument(
        "--framing",
        choices=("auto", "ndjson", "lsp"),
        default="auto",
        help="message framing; auto detects it from the first byte of input (default: auto)",
    )
    p.add_argument(
        "--log-level",
        choices=("debug", "info", "notice", "warning", "error"),
        default="notice",
        help="stderr logging; notice shows the workspace index starting, ready, failed or paused (default: notice)",
    )
    if not is_frozen():
        p.add_argument("--rg", metavar="PATH", help="ripgrep binary (unfrozen daemon only)")
    keys = p.add_argument_group(
        "configuration keys",
        "Each flag sets the key named in brackets; a flag overrides the same key in --config FILE. "
        "--allowed-root and --deny-glob add one list entry each time they are given.",
    )
    for key in KEYS:
        metavar = _METAVARS.get(key.name) or _METAVARS[key.kind]
        action = "append" if key.kind == "list" else "store"
        keys.add_argument(key.flag, dest=key.name, action=action, metavar=metavar, help=key_help(key))
    return p


def _fail(status: int, message: str) -> NoReturn:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    raise SystemExit(status)


def _config_values(args: argparse.Namespace) -> dict[str, Any]:
    values: dict[str, Any] = load_file(args.config) if args.config else {}
    for key in KEYS:
        raw = getattr(args, key.name)
        if raw is None:
            continue
        values[key.name] = list(raw) if key.kind == "list" else parse_flag_value(key, raw)
    return values


def _workspace(workdir: str, *, given: bool, refused: bool) -> str:
    """`--check`'s account of the workspace a session will have."""
    if given:
        return workdir
    if refused:
        return (
            "none: started in / without --workdir, a search needs an absolute path or cwd unless an MCP "
            "client shares its roots (then its first root)"
        )
    return f"{workdir}, or an MCP client's first root when it shares its roots"


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # `\n` ends a line on every platform (Windows: not `\r\n`)
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(newline="\n")  # type: ignore[union-attr]
    args = _parser().parse_args(argv)
    logging.addLevelName(NOTICE, "NOTICE")
    logging.basicConfig(
        level=NOTICE if args.log_level == "notice" else getattr(logging, args.log_level.upper()),
        stream=sys.stderr,
        format="dsh-search %(levelname)s %(name)s: %(message)s",
    )
    for handler in logging.getLogger().handlers:  # stderr keeps --log-level when an MCP client asks for more
        handler.setLevel(logging.getLogger().level)
    # The sidecar's `--version` runs while the daemon reads its configuration and imports the server; its
    # verdict is awaited before any other (a broken sidecar is exit status 3 whatever else is wrong) and
    # before stdin is read (~2 ms of every start saved: the two overlap).
    check = Check(locate(getattr(args, "rg", None), os.environ), os.environ)

    def sidecar() -> Ripgrep:
        try:
            return check.result()
        except SidecarError as err:
            _fail(EXIT_SIDECAR, str(err))

    if args.version:
        rg = sidecar()
        print(f"dsh-search {__version__}\n{rg.version_text} ({rg.path})")
        return 0
    try:
        config = build(_config_values(args))
    except ConfigError as err:
        sidecar()
        _fail(EXIT_USAGE, str(err))
    # As a search's cwd: the directory the kernel finds under this name (a `..` after a symlink included).
    named = os.path.join(os.getcwd(), args.workdir) if args.workdir else os.getcwd()
    workdir = directory_name(named)
    if not same_directory(named, workdir):
        sidecar()
        _fail(EXIT_USAGE, f"dsh-search: workdir {named} is not a directory")
    if args.check:
        rg = sidecar()
        import orjson

        # As a session sees it: started in / without --workdir, a search with no absolute path is refused
        # (unless an MCP client shares roots), so / is no default directory at all.
        refused = args.workdir is None and workdir == "/"

        report = {
            "version": __version__,
            "executable": os.path.realpath(sys.executable) if is_frozen() else None,
            "frozen": is_frozen(),
            "ripgrep": {"path": rg.path, "version": rg.version},
            "workdir": None if refused else workdir,
            "workspace": _workspace(workdir, given=args.workdir is not None, refused=refused),
            "config": config.as_json(),
        }
        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
        return 0

    from dsh_search.wiring import serve

    rg = sidecar()
    framing = None if args.framing == "auto" else args.framing
    return serve(config=config, rg=rg, workdir=workdir, framing=framing, workdir_given=args.workdir is not None)


if __name__ == "__main__":
    sys.exit(main())

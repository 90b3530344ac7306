"""The benchmark's inputs: the Linux 6.1 source tree, generated scale trees, a tiny kernel-shaped tree
for the test suite, the terminal log text, and upstream's Node tool for the cold-start comparison.

Every corpus is made once and reused: a directory is built under a temporary name and renamed into
place when complete, so an interrupted run never leaves a half tree that a later run would trust.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL_PACKAGE = "linux-source-6.1"


def default_cache() -> Path:
    """Where corpora live: BENCH_CACHE, else $XDG_CACHE_HOME/dsh-search-bench (~/.cache/...).

    Not inside the checkout: ripgrep applies .gitignore files only inside a git work tree, and
    Debian's kernel tree carries a .gitignore that ends in `/*` (ignore everything but debian/), so
    inside any repository a path-less grep of the kernel tree would search nothing at all.
    """
    if os.environ.get("BENCH_CACHE"):
        return Path(os.environ["BENCH_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "dsh-search-bench"


def inside_git_work_tree(path: Path) -> bool:
    """True when path or an ancestor has a `.git` (then ripgrep honours .gitignore files in it)."""
    return any((parent / ".git").exists() for parent in [path.resolve(), *path.resolve().parents])


def _publish(tmp: Path, final: Path) -> Path:
    """Move a completed build into place (another run may have won the race: keep theirs)."""
    try:
        tmp.rename(final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def kernel_tree(cache: Path) -> Path:
    """Debian's linux-source-6.1, unpacked into cache on first use (`apt-get download`, no root needed
    for the download itself, though `apt-get update` may have to have run once)."""
    tree = cache / KERNEL_PACKAGE
    if tree.is_dir():
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    debs = sorted(cache.glob(f"{KERNEL_PACKAGE}_*.deb"))
    if not debs:
        print(f"bench: downloading {KERNEL_PACKAGE} into {cache}", flush=True)
        subprocess.run(["apt-get", "download", KERNEL_PACKAGE], cwd=cache, check=True)
        debs = sorted(cache.glob(f"{KERNEL_PACKAGE}_*.deb"))
    work = Path(tempfile.mkdtemp(prefix="kernel.", dir=cache))
    print(f"bench: unpacking {debs[-1].name}", flush=True)
    subprocess.run(["dpkg", "-x", str(debs[-1]), str(work / "pkg")], check=True)
    tarball = work / "pkg" / "usr" / "src" / f"{KERNEL_PACKAGE}.tar.xz"
    subprocess.run(["tar", "xf", str(tarball), "-C", str(work)], check=True)
    return _publish(work / KERNEL_PACKAGE, tree)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def mini_kernel_tree(root: Path) -> Path:
    """A few hundred files laid out like the kernel paths the workloads name (drivers/net/ethernet,
    fs, init, kernel, include/linux, Makefiles), so every workload runs, in seconds, on a tree that
    needs no download. Used by the test suite; its counts mean nothing."""
    rnd = random.Random(11)  # noqa: S311 - test data, not cryptography
    words = ["static", "int", "return", "struct", "mutex_lock", "EXPORT_SYMBOL", "TODO", "PM_SUSPEND", "void"]

    def source(n: int) -> str:
        return "".join(f"{' '.join(rnd.choice(words) for _ in range(6))};\n" for _ in range(n))

    for vendor in ("intel", "realtek", "broadcom"):
        for i in range(8):
            _write(root / "drivers" / "net" / "ethernet" / vendor / f"drv{i}.c", source(40))
        _write(root / "drivers" / "net" / "ethernet" / vendor / "Makefile", "obj-y += drv0.o\n")
    for sub in ("ext4", "btrfs", "proc"):
        for i in range(10):
            _write(root / "fs" / sub / f"f{i}.c", source(20))
        _write(root / "fs" / sub / "Makefile", "obj-y += f0.o\n")
    for i in range(14):
        _write(root / "init" / f"init{i}.c", source(10))
    _write(root / "init" / "Makefile", "obj-y += init0.o\n")
    for i in range(10):
        _write(root / "kernel" / "power" / f"p{i}.c", source(20))
        _write(root / "include" / "linux" / f"h{i}.h", source(10))
    _write(root / "Makefile", "all:\n")
    return root


SCALE_FILES_PER_DIR = 50
SCALE_LITERAL = "scale_needle_literal"


def scale_tree(cache: Path, files: int) -> Path:
    """`files` small files in 4 levels (3 levels of directories, files in the last), made once.

    Every 5th file is `*.x`; every 100th holds SCALE_LITERAL (so grep finds files/100 matches, capped
    and spilled from a few thousand up). Files are ~100 bytes; each leaf directory holds 50.
    """
    final = cache / f"scale-{files}"
    if final.is_dir():
        return final
    cache.mkdir(parents=True, exist_ok=True)
    print(f"bench: generating {final} ({files:,} files, once)", flush=True)
    work = Path(tempfile.mkdtemp(prefix=f"scale-{files}.", dir=cache))
    leaves = -(-files // SCALE_FILES_PER_DIR)
    side = max(1, round(leaves ** (1 / 3)))
    written = 0
    for leaf in range(leaves):
        a, rest = divmod(leaf, side * side)
        b, c = divmod(rest, side)
        directory = work / f"d{a:03d}" / f"e{b:03d}" / f"f{c:03d}"
        directory.mkdir(parents=True)
        for k in range(min(SCALE_FILES_PER_DIR, files - written)):
            ext = "x" if written % 5 == 0 else "txt"
            body = f"file {written} of the scale tree\nsome ordinary words on a second line\n"
            if written % 100 == 7:
                body += f"here is the {SCALE_LITERAL} once\n"
            fd = os.open(directory / f"g{k:03d}.{ext}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, body.encode())
            os.close(fd)
            written += 1
    return _publish(work, final)


TERMINAL_LINE_BYTES = 420
TERMINAL_FED_LINES = 12_000


def terminal_log(lines: int = TERMINAL_FED_LINES) -> str:
    """Colourised server log lines, CRLF-terminated as a PTY writes them; a few are rare errors.
    12,000 lines of ~420 bytes is more than the default retention (10,000 lines / 4 MiB) keeps."""
    rnd = random.Random(7)  # noqa: S311 - test data, not cryptography
    out = []
    for i in range(lines):
        if i % 1000 == 500:
            level, colour, body = "ERROR", 31, f"code=4711 upstream timeout after {rnd.randint(1, 99)}s"
        else:
            level, colour, body = "INFO", 32, f"GET /api/v1/items/{rnd.randint(1, 10**6)} 200"
        plain = f"2025-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z {level} worker-{i % 16} {body} "
        plain += "x" * max(0, TERMINAL_LINE_BYTES - len(plain))
        out.append(plain.replace(level, f"\x1b[{colour}m{level}\x1b[0m", 1) + "\r\n")
    return "".join(out)


UPSTREAM_NODE_SPEC = ROOT / "scripts" / "upstream-node"


def upstream_node_tool(cache: Path) -> Path | None:
    """Upstream's Node tool (@deepseek-ai/dsh-tool-fs-search, exact version and integrity hashes in
    scripts/upstream-node/package-lock.json), installed with `npm ci --ignore-scripts` into cache:
    the cold start needs only its module graph, not @vscode/ripgrep's downloaded binary (whose install
    script fetches it from outside the package registry). None when node or npm is missing or the
    install fails; the caller then falls back to the documented figure."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    where = cache / "upstream-node"
    lock = UPSTREAM_NODE_SPEC / "package-lock.json"
    stamp = where / ".installed-lock"
    if stamp.is_file() and stamp.read_bytes() == lock.read_bytes():
        return where
    where.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(UPSTREAM_NODE_SPEC / name, where / name)
    print("bench: installing upstream's Node tool for the cold-start comparison (npm ci)", flush=True)
    done = subprocess.run(
        ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if done.returncode != 0:
        print(f"bench: npm ci failed ({done.stderr.strip()[:200]}); using the documented figure", flush=True)
        return None
    shutil.copyfile(lock, stamp)
    return where

"""A second machine for the remote tests and the remote benchmark: a real sshd, its sessions and everything
they start, in namespaces of their own.

    with Machine(tmp / "m", dist=DIST, netns=True) as m:
        launcher = m.launcher()            # ["ssh", "-F", <its config>, "-T", "machine"]
        (m.tmp / "ws").mkdir()             # the far side's /tmp/ws
        m.processes()                      # what runs there (besides sshd itself)

- **sshd** is Debian's openssh-server: /usr/sbin/sshd when the machine has it, else the package (and the
  libraries it needs that are missing) downloaded with `apt-get download` and unpacked under
  `.cache/openssh-server` of the checkout — nothing is installed, no service started, no system file
  written. It runs as root with a temporary host key, a temporary user key and a configuration of its own
  (`-f`); the client uses `ssh -F` with a configuration of its own (no ~/.ssh, no /etc/ssh read).
- **The namespaces.** sshd starts in a mount namespace of its own (`unshare --mount`, propagation slave:
  nothing mounted there reaches this one), and with `netns` also in a network namespace (`ip netns add`)
  joined to this one by a veth pair with a /30 of 169.254.0.0/16 that nothing here uses; without it, it
  listens on 127.0.0.1. In its mount namespace the far side gets its own `/root` (its home, `home` here),
  `/tmp` (`tmp` here), `/run` (a tmpfs, with sshd's privilege-separation directory), an `/etc/passwd` that
  names sshd's unprivileged user, and, with `dist`, the build at /run/dsh-dist with `dsh-search` on the
  PATH of its sessions (a tmpfs over /usr/local/bin holding a link). So what the far side writes to its home
  or /tmp is seen here under other paths, and what is here (the host's /tmp) is not there.
- **What runs there**: every process in sshd's mount namespace. `stop()` kills them all (a test asserts
  there are none left first) and removes the veth pair and the network namespace.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "openssh-server"

# In the far side's mount namespace, before sshd starts: $1 the machine's directory, $2 the build's (or "").
SETUP = r"""
set -eu
m=$1 dist=$2 sshd=$3 libs=$4
mount -t tmpfs -o mode=755 dsh-machine /run
mkdir -m 755 /run/sshd /run/machine
mount --bind "$m/etc" /run/machine
mount --bind /run/machine/passwd /etc/passwd
if [ -n "$dist" ]; then
  mkdir /run/dsh-dist
  mount --bind -o ro "$dist" /run/dsh-dist
  mount -t tmpfs -o mode=755 dsh-machine-bin /usr/local/bin
  ln -s /run/dsh-dist/dsh-search /usr/local/bin/dsh-search
fi
mount --bind "$m/home" /root
mount --bind "$m/tmp" /tmp
exec env ${libs:+LD_LIBRARY_PATH="$libs"} "$sshd" -D -e -f /run/machine/sshd_config
"""

SSHD_CONFIG = """\
ListenAddress {address}
Port {port}
HostKey /run/machine/host_key
AuthorizedKeysFile /run/machine/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding no
MaxStartups 64
LogLevel INFO
"""

SSH_CONFIG = """\
Host machine
  HostName {address}
  Port {port}
  User root
  IdentityFile {key}
  IdentitiesOnly yes
  UserKnownHostsFile {known_hosts}
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
  ControlMaster no
  ConnectTimeout 20
"""


class Unavailable(Exception):
    """This machine cannot host a second one (not root, no namespaces, no sshd to be had)."""


# -- sshd ----------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    with open(Path(tempfile.gettempdir()) / name, "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        yield


def _run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600, **kw)  # type: ignore[call-overload, no-any-return]


def _missing_libraries(sshd: Path, libs: list[Path]) -> list[str]:
    env = {**os.environ, "LD_LIBRARY_PATH": ":".join(map(str, libs))}
    found = _run(["ldd", str(sshd)], env=env)
    return re.findall(r"^\s*(\S+) => not found", found.stdout, re.MULTILINE)


def _library_dirs(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.rglob("*.so*")})


def _download(packages: list[str], into: Path) -> None:
    """`apt-get download` the packages and unpack them under `into` (apt's lists refreshed once if needed)."""
    with tempfile.TemporaryDirectory(prefix="dsh-openssh-") as scratch:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        got = _run(["apt-get", "download", *packages], cwd=scratch, env=env)
        if got.returncode != 0:
            updated = _run(["apt-get", "update"], env=env)
            got = _run(["apt-get", "download", *packages], cwd=scratch, env=env)
            if got.returncode != 0:
                raise Unavailable(
                    f"apt-get download {' '.join(packages)} failed:\n{updated.stderr[-1000:]}\n{got.stderr[-2000:]}"
                )
        for deb in Path(scratch).glob("*.deb"):
            unpacked = _run(["dpkg-deb", "-x", str(deb), str(into)])
            if unpacked.returncode != 0:
                raise Unavailable(f"dpkg-deb -x {deb.name} failed: {unpacked.stderr}")


def sshd_binary() -> tuple[Path, list[Path]]:
    """Debian's sshd and the directories of the libraries it needs that this machine lacks."""
    system = Path("/usr/sbin/sshd")
    if system.is_file() and not _missing_libraries(system, []):
        return system, []
    sshd = CACHE / "usr" / "sbin" / "sshd"
    with _locked("dsh-search-openssh.lock"):
        if not sshd.is_file():
            if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
                raise Unavailable("there is no sshd here and no apt-get to fetch Debian's openssh-server with")
            staging = CACHE.with_name("openssh-server.partial")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            _download(["openssh-server"], staging)
            depends = _run(["apt-cache", "depends", "--no-pre-depends", "openssh-server"]).stdout
            libraries = sorted(set(re.findall(r"^\s*Depends: (lib\S+)$", depends, re.MULTILINE)))
            installed = _run(["dpkg-query", "-W", "-f", "${Package} ${Status}\\n", *libraries]).stdout
            wanted = [
                lib
                for lib in libraries
                if not re.search(rf"^{re.escape(lib)}(:\S+)? install ok installed$", installed, re.MULTILINE)
            ]
            if wanted:
                _download(wanted, staging)
            shutil.rmtree(CACHE, ignore_errors=True)
            staging.rename(CACHE)
    libs = _library_dirs(CACHE)
    if missing := _missing_libraries(sshd, libs):
        raise Unavailable(f"{sshd} needs libraries this machine does not have: {', '.join(missing)}")
    return sshd, libs


def _keygen(path: Path) -> str:
    done = _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dsh-search-tests", "-f", str(path)])
    if done.returncode != 0:
        raise Unavailable(f"ssh-keygen failed: {done.stderr}")
    return path.with_suffix(".pub").read_text().strip()


# -- the network ---------------------------------------------------------------------------------------------


def _free_slash30() -> tuple[str, str]:
    """A /30 of 169.254.0.0/16 that no address or route here uses: (host's address, far side's)."""
    used = _run(["ip", "-4", "-o", "addr"]).stdout + _run(["ip", "-4", "route"]).stdout
    taken = {int(a) for a in re.findall(r"169\.254\.(\d+)\.", used)}
    for third in random.sample(range(64, 192), 128):
        if third not in taken and third != 169:  # 169.254.169.254: clouds' metadata service
            base = 4 * random.randrange(1, 63)
            return f"169.254.{third}.{base + 1}", f"169.254.{third}.{base + 2}"
    raise Unavailable("no free /30 in 169.254.0.0/16")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _ip(*args: str) -> None:
    done = _run(["ip", *args])
    if done.returncode != 0:
        raise Unavailable(f"ip {' '.join(args)} failed: {done.stderr.strip()}")


# -- the machine ---------------------------------------------------------------------------------------------


class Machine:
    """sshd (and all it starts) on a machine of its own; see the module docstring."""

    def __init__(self, directory: Path, *, dist: Path | None = None, netns: bool = True) -> None:
        if os.geteuid() != 0:
            raise Unavailable("a second machine needs root (namespaces, mounts)")
        for tool in ("ip", "unshare", "ssh", "ssh-keygen", "mount"):
            if shutil.which(tool) is None:
                raise Unavailable(f"a second machine needs {tool}")
        self.dir = directory
        self.netns = f"dsh-m{os.getpid()}-{random.randrange(1 << 20):05x}" if netns else None
        self._veth = f"dsh{random.randrange(1 << 24):06x}" if netns else None
        self.dist = dist
        self.sshd: subprocess.Popen[bytes] | None = None
        self.log = directory / "sshd.log"
        for sub in ("etc", "client", "home", "tmp"):
            (directory / sub).mkdir(parents=True, exist_ok=True)
        (directory / "home").chmod(0o700)
        (directory / "tmp").chmod(0o1777)

    # Paths: the far side's /root is `home` here, its /tmp is `tmp`.
    @property
    def home(self) -> Path:
        return self.dir / "home"

    @property
    def tmp(self) -> Path:
        return self.dir / "tmp"

    def far(self, here: Path) -> str:
        """The far side's name for a path under `home` or `tmp`."""
        for local, remote in ((self.home, "/root"), (self.tmp, "/tmp")):
            if here == local or local in here.parents:
                return remote + "/" + str(here.relative_to(local)) if here != local else remote
        raise ValueError(f"{here} is not visible on the far side")

    def here(self, far: str) -> Path:
        """This side's path of a far side's path under /root or /tmp."""
        for local, remote in ((self.home, "/root"), (self.tmp, "/tmp")):
            if far == remote or far.startswith(remote + "/"):
                return local / far[len(remote) :].lstrip("/")
        raise ValueError(f"{far} is not under /root or /tmp")

    def start(self) -> Machine:
        sshd, libs = sshd_binary()
        etc, client = self.dir / "etc", self.dir / "client"
        host_key = _keygen(etc / "host_key")
        (etc / "authorized_keys").write_text(_keygen(client / "user_key") + "\n")
        passwd = Path("/etc/passwd").read_text()
        if not re.search(r"^sshd:", passwd, re.MULTILINE):
            passwd += "sshd:x:65530:65534:sshd privilege separation:/run/sshd:/usr/sbin/nologin\n"
        (etc / "passwd").write_text(passwd)
        if sshd != Path("/usr/sbin/sshd"):  # the unpacked one: copied where the far side can see it
            shutil.copy2(sshd, etc / "sshd")
            lib_dir = etc / "lib"
            lib_dir.mkdir(exist_ok=True)
            for directory in libs:
                for lib in directory.glob("*.so*"):
                    shutil.copy2(lib, lib_dir / lib.name, follow_symlinks=True)
            sshd_path, lib_path = "/run/machine/sshd", "/run/machine/lib"
        else:
            sshd_path, lib_path = str(sshd), ""
        if self.netns is not None:
            assert self._veth is not None
            host_address, address = _free_slash30()
            port = 22
            _ip("netns", "add", self.netns)
            peer = self._veth + "r"
            _ip("link", "add", self._veth, "type", "veth", "peer", "name", peer, "netns", self.netns)
            _ip("addr", "add", f"{host_address}/30", "dev", self._veth)
            _ip("link", "set", self._veth, "up")
            _ip("-n", self.netns, "addr", "add", f"{address}/30", "dev", peer)
            _ip("-n", self.netns, "link", "set", peer, "up")
            _ip("-n", self.netns, "link", "set", "lo", "up")
            prefix = ["ip", "netns", "exec", self.netns]
        else:
            address, port, prefix = "127.0.0.1", _free_port(), []
        self.address, self.port = address, port
        (etc / "sshd_config").write_text(SSHD_CONFIG.format(address=address, port=port))
        known = f"[{address}]:{port}" if port != 22 else address
        (client / "known_hosts").write_text(f"{known} {host_key}\n")
        (client / "ssh_config").write_text(
            SSH_CONFIG.format(address=address, port=port, key=client / "user_key", known_hosts=client / "known_hosts")
        )
        argv = [*prefix, "unshare", "--mount", "--propagation", "slave", "sh", "-c", SETUP, "setup"]
        argv += [str(self.dir), str(self.dist or ""), sshd_path, lib_path]
        with self.log.open("ab") as log:
            self.sshd = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while "Server listening" not in self.log.read_text(errors="replace"):
            if self.sshd.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise Unavailable(f"sshd did not start:\n{self.log.read_text(errors='replace')}")
            time.sleep(0.02)
        return self

    def launcher(self, *options: str) -> list[str]:
        """The ssh argv prefix that starts a command on the far side (no tty, no prompt)."""
        return ["ssh", "-F", str(self.dir / "client" / "ssh_config"), *options, "-T", "machine"]

    def run(self, command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A shell command on the far side."""
        return subprocess.run([*self.launcher(), command], capture_output=True, text=True, timeout=timeout, check=False)

    def _namespace(self) -> str | None:
        if self.sshd is None:
            return None
        pids = [self.sshd.pid, *_children(self.sshd.pid)]
        for pid in reversed(pids):  # sshd itself: the last of the chain setup → (ip →) unshare → sh → sshd
            with contextlib.suppress(OSError):
                if "sshd" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                    return os.readlink(f"/proc/{pid}/ns/mnt")
        return None

    def processes(self) -> dict[int, str]:
        """Every live process on the far side but sshd's listener: pid → command line."""
        namespace = self._namespace()
        found: dict[int, str] = {}
        if namespace is None:
            return found
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{entry}/ns/mnt") != namespace:
                    continue
                with open(f"/proc/{entry}/stat", "rb") as f:
                    if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        continue
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (OSError, IndexError):
                continue
            if "[listener]" in cmdline or " -f /run/machine/sshd_config" in cmdline:
                continue
            found[int(entry)] = cmdline.strip()
        return found

    def stop(self) -> None:
        namespace = self._namespace()
        if self.sshd is not None and self.sshd.poll() is None:
            self.sshd.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.sshd.wait(timeout=5)
        if namespace is not None:  # whatever is left over there (a failed test's)
            for entry in os.listdir("/proc"):
                with contextlib.suppress(OSError):
                    if entry.isdigit() and os.readlink(f"/proc/{entry}/ns/mnt") == namespace:
                        os.kill(int(entry), signal.SIGKILL)
        if self.sshd is not None and self.sshd.poll() is None:
            self.sshd.kill()
            self.sshd.wait()
        if self._veth is not None:
            _run(["ip", "link", "del", self._veth])
        if self.netns is not None:
            _run(["ip", "netns", "del", self.netns])

    def __enter__(self) -> Machine:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


def _children(pid: int) -> list[int]:
    """pid's descendants, oldest first."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop(0)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{parent}/task"):
                kids = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
                found.extend(map(int, kids))
                todo.extend(map(int, kids))
    return found

"""Starting and stopping the sandbox's daemons, each in its own process group.

Every start writes a pid file (pid plus the binary's path) so that `down`, possibly in another
process long after `up` exited, stops exactly what `up` started: it signals only a recorded
process group whose leader still runs the recorded binary, never a recycled pid.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sandbox.cluster.errors import PortInUseError

PR_SET_PDEATHSIG = 1
EXEC_TIMEOUT = 5.0


@dataclass(frozen=True)
class Recorded:
    name: str
    pid: int
    exe: str
    pid_file: Path


# Loaded once in the parent: between fork and exec the child may only call into C, not load
# libraries (another thread could hold the loader's lock at fork time).
_LIBC = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    # Runs in the child before exec: the kernel kills it when the parent dies, so a test run
    # that is killed outright leaves no control plane behind.
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(
    name: str,
    argv: list[str],
    log_dir: Path,
    pid_dir: Path,
    env: dict[str, str] | None = None,
    die_with_parent: bool = False,
) -> subprocess.Popen:
    log_dir.mkdir(parents=True, exist_ok=True)
    pid_dir.mkdir(parents=True, exist_ok=True)
    # Truncated: every start is a fresh cluster, and a failure shows this run's log tail.
    with (log_dir / f"{name}.log").open("wb") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            # Its own session: Ctrl-C in the terminal that ran `up` does not reach it, and
            # `down` can signal the whole group.
            start_new_session=True,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )
    # Popen returns once the exec has begun, before the kernel has laid out a large binary's
    # arguments: /proc/PID/cmdline reads empty for a moment (measured: 199 of 300 starts of
    # the 54 MB CoreDNS), and `alive` would call the process gone.
    deadline = time.monotonic() + EXEC_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if Path(f"/proc/{proc.pid}/cmdline").read_bytes():
                break
        except OSError:
            break
        time.sleep(0.005)
    record = {"pid": proc.pid, "exe": argv[0], "started": time.time()}
    (pid_dir / f"{name}.pid").write_text(json.dumps(record))
    return proc


def recorded(pid_dir: Path) -> list[Recorded]:
    found = []
    for pid_file in sorted(pid_dir.glob("*.pid")):
        try:
            data = json.loads(pid_file.read_text())
            found.append(Recorded(pid_file.stem, int(data["pid"]), str(data["exe"]), pid_file))
        except (OSError, ValueError, KeyError, TypeError):
            pid_file.unlink(missing_ok=True)  # unreadable: nothing we can safely signal
    return found


def alive(rec: Recorded) -> bool:
    """True while the recorded pid runs the recorded binary (zombies count as gone)."""
    try:
        stat = Path(f"/proc/{rec.pid}/stat").read_text()
        cmdline = Path(f"/proc/{rec.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    # A script (such as the `ballast` console script) runs as its interpreter, the script's
    # path second: either place identifies the recorded program.
    args = [a.decode(errors="replace") for a in cmdline[:2]]
    return state not in ("Z", "X") and rec.exe in args


def stop(rec: Recorded, timeout: float) -> bool:
    """SIGTERM the group, SIGKILL it after `timeout`; returns whether anything was running."""
    if not alive(rec):
        rec.pid_file.unlink(missing_ok=True)
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(rec.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and alive(rec):
            _reap(rec.pid)
            time.sleep(0.05)
        if not alive(rec):
            break
    _reap(rec.pid)
    rec.pid_file.unlink(missing_ok=True)
    return True


def _reap(pid: int) -> None:
    # Only our own children can be reaped; for others init does it.
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports: all sockets stay open until all ports are picked."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port() -> int:
    return free_ports(1)[0]


def port_free(port: int) -> bool:
    """Whether a listener could bind `port` on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def check_port_free(port: int, what: str, option: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise PortInUseError(
                f"port {port} on 127.0.0.1 ({what}) is in use: stop what listens there "
                f"(`ss -ltnp 'sport = :{port}'`), run `ballast sandbox down` if it is an old "
                f"sandbox, or pick another port with {option} (0 = any free port)"
            ) from exc


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"

"""Per-process temp folders that a later process of the same kind cleans up if their owner died.

A process killed with SIGKILL runs no cleanup, so its folder outlives it. The folder's name
carries the owner's pid (`ballast-KIND-PID-random`); the next start of the same kind removes
folders whose pid is not running. A folder whose pid is alive is never touched, whoever owns it.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


def owner(path: Path, kind: str) -> int | None:
    """The pid in a folder name made by `create(kind)`, or None for any other name."""
    match = re.fullmatch(rf"ballast-{re.escape(kind)}-(\d+)-[^-]+", path.name)
    return int(match.group(1)) if match else None


def sweep(kind: str, parent: str | None = None) -> list[Path]:
    """Remove folders of `kind` whose owning process is gone; returns what was removed."""
    removed = []
    for path in Path(parent or tempfile.gettempdir()).glob(f"ballast-{kind}-*"):
        pid = owner(path, kind)
        if pid is None or pid == os.getpid() or _pid_alive(pid) or not path.is_dir():
            continue
        try:
            if path.stat().st_uid != os.getuid():
                continue
            shutil.rmtree(path)
        except OSError as exc:
            log.debug("cannot remove %s: %s", path, exc)
            continue
        removed.append(path)
    if removed:
        log.info("removed %d folder(s) left by dead %s processes", len(removed), kind)
    return removed


def create(kind: str, parent: str | None = None) -> str:
    """A new folder for this process, after sweeping what dead processes of `kind` left."""
    sweep(kind, parent)
    return tempfile.mkdtemp(prefix=f"ballast-{kind}-{os.getpid()}-", dir=parent)

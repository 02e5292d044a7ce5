"""One process of a metrics store the tests start (VictoriaMetrics, Thanos's components): its
command, its log file, and a stop that waits for it."""

from __future__ import annotations

import subprocess
from pathlib import Path


class StoreProcess:
    def __init__(self, workdir: Path, name: str) -> None:
        self.workdir = workdir
        self.name = name
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> StoreProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = self.command()
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        return self

    def exited(self) -> str | None:
        """The log's tail when the process has exited, else None."""
        if self.proc is not None and self.proc.poll() is not None:
            return self.log_path.read_text(errors="replace")[-2000:]
        return None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

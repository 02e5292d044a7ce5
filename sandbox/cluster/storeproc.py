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

    # Seconds between SIGTERM and SIGKILL; 0 kills at once, for a process that never exits on
    # SIGTERM (waiting for it would only add the grace to every stop).
    term_grace = 15.0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            if self.term_grace > 0:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=self.term_grace)
                except subprocess.TimeoutExpired:
                    pass
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

"""A watcher killed with SIGKILL leaves its run folder; the next watcher to start removes it,
and never the folder of a watcher still running."""

from __future__ import annotations

from tests.fixtures.ports import wait_for
from tests.fixtures.watcher import WatcherProcess


def test_next_start_sweeps_the_folder_of_a_killed_watcher(tmp_path, redis_server, prometheus):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}

    started: list[WatcherProcess] = []

    def watcher(name: str) -> WatcherProcess:
        # Two workers: the run folder then also holds the workers' metrics files.
        proc = WatcherProcess(tmp_path / name, prometheus.url, redis_server.url, env=env,
                              workers=2)  # fmt: skip
        started.append(proc)
        return proc.start()

    def folders() -> set[str]:
        return {p.name for p in tmp.glob("ballast-watcher-*")}

    alive, doomed = watcher("alive"), watcher("doomed")
    try:
        both = wait_for(lambda: len(folders()) == 2 and folders(), timeout=10, what="two folders")
        assert alive.proc is not None and doomed.proc is not None
        doomed.kill()
        assert folders() == both  # SIGKILL: no clean-up ran
        alive_folder = next(n for n in both if f"-{alive.proc.pid}-" in n)

        third = watcher("third")
        assert third.proc is not None
        left = folders()
        assert alive_folder in left  # running: never touched
        assert not any(f"-{doomed.proc.pid}-" in n for n in left)
        assert any(f"-{third.proc.pid}-" in n for n in left)
        third.stop()
        alive.stop()
        assert folders() == set()  # a clean stop removes its own
    finally:
        for proc in started:
            proc.kill()

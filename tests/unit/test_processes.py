"""Sandbox process records: a script started through its shebang is recognised and stopped, and
a large binary counts as alive from the moment `spawn` returns."""

from __future__ import annotations

import sys

from sandbox.cluster import build, processes


def test_a_script_run_by_its_interpreter_is_alive_and_stopped(tmp_path):
    script = tmp_path / "sleeper"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    script.chmod(0o755)
    proc = processes.spawn("sleeper", [str(script)], tmp_path / "logs", tmp_path / "pids")
    try:
        (rec,) = processes.recorded(tmp_path / "pids")
        assert rec.exe == str(script)
        assert processes.alive(rec)  # /proc cmdline: [python, script]
        assert processes.stop(rec, timeout=5)
        proc.wait(5)
        assert not processes.alive(rec)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def test_a_large_binary_is_alive_as_soon_as_spawned(tmp_path):
    # The kernel lays a fresh program's arguments out after Popen has returned; on a loaded
    # machine `alive` read an empty /proc/PID/cmdline right after a start of the kubelet or
    # kube-proxy (the real node's first `up` failed so). kube-apiserver is the largest binary
    # the sandbox builds; `--help` keeps it running long enough to be looked at.
    apiserver = str(build.binary("kube-apiserver"))
    pid_file = tmp_path / "pids" / "kube-apiserver.pid"
    for attempt in range(30):
        proc = processes.spawn(
            "kube-apiserver", [apiserver, "--help"], tmp_path / "logs", tmp_path / "pids"
        )
        # At once, as a caller holding the record would check it.
        rec = processes.Recorded("kube-apiserver", proc.pid, apiserver, pid_file)
        try:
            assert processes.alive(rec) or proc.poll() is not None, f"start {attempt}"
        finally:
            proc.kill()
            proc.wait(5)

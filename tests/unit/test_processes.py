"""Sandbox process records: a script started through its shebang is recognised and stopped."""

from __future__ import annotations

import sys

from sandbox.cluster import processes


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

"""Fixtures for the tests that run Ballast's images for real (`make test-containers`).

The images come from `make image` (hack/image.sh); a missing one fails the test naming that
command. Podman runs them as root, with the containers.conf hack/containers-conf.sh writes
(runc, the shell's own limits).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_VERSION = re.search(
    r'^appVersion: *"?([^"\n]+)"?$', (ROOT / "charts/ballast/Chart.yaml").read_text(), re.M
)
assert _VERSION is not None
BALLAST = f"localhost/ballast:{_VERSION.group(1)}"
REDIS = "localhost/ballast-redis:bookworm"
PROMETHEUS = "localhost/ballast-prometheus:bookworm"
NODE_EXPORTER = "localhost/ballast-node-exporter:bookworm"
IMAGES = (BALLAST, REDIS, PROMETHEUS, NODE_EXPORTER)
# Pulling, building and starting are local; anything slower than this is stuck.
COMMAND_TIMEOUT = 120.0


class Podman:
    """Runs podman with the project's containers.conf; `run` fails the test on a non-zero exit."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def __call__(
        self, *args: str, check: bool = True, timeout: float = COMMAND_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["podman", *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"podman {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
            )
        return done


@pytest.fixture(scope="session")
def podman_env() -> dict[str, str]:
    env = dict(os.environ)
    if "CONTAINERS_CONF" not in env:
        conf = subprocess.run(
            [str(ROOT / "hack/containers-conf.sh")], capture_output=True, text=True, check=True
        )
        env["CONTAINERS_CONF"] = conf.stdout.strip()
    return env


@pytest.fixture(scope="session")
def podman(podman_env: dict[str, str]) -> Iterator[Podman]:
    engine = Podman(podman_env)
    missing = [i for i in IMAGES if engine("image", "exists", i, check=False).returncode != 0]
    assert not missing, f"images missing: {', '.join(missing)}; build them with `make image`"
    yield engine

"""The images `make image` builds, run as a cluster runs them: read-only, non-root."""

from __future__ import annotations

import json
import secrets

from tests.containers.conftest import BALLAST, REDIS, Podman
from tests.fixtures.ports import wait_for


def test_ballast_help_runs_read_only_as_10001(podman: Podman):
    out = podman("run", "--rm", "--read-only", "--user", "10001", BALLAST, "--help").stdout
    assert out.startswith("usage: ballast")
    for command in ("watcher", "scheduler", "rebalancer", "top", "explain"):
        assert f"    {command}" in out, out
    # The sandbox and the demo are not in the image, so the CLI does not offer them.
    assert "    sandbox" not in out and "    demo" not in out, out


def test_ballast_runs_as_10001_by_default_without_sandbox_or_tests(podman: Podman):
    config = json.loads(podman("image", "inspect", BALLAST).stdout)[0]["Config"]
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["ballast"] and config["Cmd"] == ["watcher"]
    probe = (
        "import importlib.util as u, os; "
        "print(os.getuid(), os.getgid(), [m for m in ('sandbox', 'tests', 'bench', 'watcher',"
        " 'scheduler', 'shared', 'ballast') if u.find_spec(m)])"
    )
    out = podman("run", "--rm", "--read-only", "--entrypoint", "python", BALLAST, "-c", probe)
    assert out.stdout.split(None, 2) == [
        "10001",
        "10001",
        "['watcher', 'scheduler', 'shared', 'ballast']\n",
    ]


def test_ballast_subcommands_load_in_the_image(podman: Podman):
    # Each component's module imports all it needs (numpy, scipy, the kubernetes client, flask):
    # a dependency missing from the image fails here, not in a cluster.
    for command in ("watcher", "scheduler", "rebalancer"):
        out = podman("run", "--rm", "--read-only", BALLAST, command, "--help").stdout
        assert out.startswith(f"usage: ballast {command}"), out


def test_redis_image_requires_its_password_read_only_as_999(podman: Podman):
    name = f"ballast-test-redis-{secrets.token_hex(4)}"
    password = secrets.token_hex(16)
    # The chart's arguments (templates/redis.yaml): no redis-server in front, as with redis:7.4.
    podman(
        "run", "-d", "--rm", "--name", name, "--read-only", "--tmpfs", "/data",
        "--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        REDIS, "--save", "", "--appendonly", "no", "--requirepass", password,
    )  # fmt: skip
    try:
        auth = ("exec", "-e", f"REDISCLI_AUTH={password}", name)
        wait_for(
            lambda: podman(*auth, "redis-cli", "ping", check=False).stdout.strip() == "PONG",
            timeout=30,
            what="redis to answer PONG with the password",
        )
        anonymous = podman("exec", name, "redis-cli", "get", "x", check=False)
        assert "NOAUTH" in anonymous.stdout + anonymous.stderr
        assert podman("exec", name, "id", "-u").stdout.strip() == "999"
    finally:
        podman("rm", "-f", "-t", "0", name, check=False)

"""Fixtures live in tests/fixtures/, one module per real part (redis, prometheus, kube)."""

pytest_plugins = [
    "tests.fixtures.ports",
    "tests.fixtures.redis",
    "tests.fixtures.prometheus",
    "tests.fixtures.kube",
    "tests.fixtures.watcher",
]

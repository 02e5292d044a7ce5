"""Fuzz the watcher's HTTP API from its own /openapi.json with schemathesis (issue 12).

A real watcher (gunicorn, two workers) over real Redis and Prometheus, with a bearer token and
/watcher left open, as the k8s base deploys it. Every operation, every check: no 5xx, every
answer as the schema says, 405 with Allow for undeclared methods, 401 without the token.

Bounded for `make test` (about a minute); `make fuzz` sets BALLAST_FUZZ_EXAMPLES and
BALLAST_FUZZ_SECONDS for a longer run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures.ports import wait_for
from tests.fixtures.watcher import WatcherProcess

TOKEN = "fuzz-7c0ffee-token"
NODES = {f"fuzz-{i}": (15.0 + 10 * i, 30.0 + 5 * i) for i in range(4)}
EXAMPLES = int(os.environ.get("BALLAST_FUZZ_EXAMPLES", "25"))
SECONDS = int(os.environ.get("BALLAST_FUZZ_SECONDS", "20"))
GUARDED = [
    "/api/v1/nodes",
    "/api/v1/nodes/fuzz-0",
    "/api/v1/nodes/fuzz-0/samples",
    "/api/v1/status",
]  # fmt: skip; /watcher and below stay open
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


@pytest.fixture(scope="module")
def watcher(exporter, prometheus, redis_server, tmp_path_factory):
    for node, (cpu, memory) in NODES.items():
        exporter.set(node, cpu=cpu, memory=memory)
    redis_server.client().flushall()
    proc = WatcherProcess(
        tmp_path_factory.mktemp("watcher-fuzz"),
        prometheus.url,
        redis_server.url,
        api_token=TOKEN,
        api_open_paths=["/watcher"],
        workers=2,
        key_prefix="fuzz",
    ).start()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        wait_for(
            lambda: set(NODES) <= set(proc.get("/api/v1/nodes", headers=auth).json()["nodes"]),
            timeout=30,
            what="fuzz nodes in the watcher",
        )
        yield proc
    finally:
        proc.stop()


def run_schemathesis(url: str, workdir: Path, *headers: str) -> tuple[int, dict, str]:
    # Half the node names are real ones, so the node paths get past their 404 to the handlers.
    config = workdir / "schemathesis.toml"
    config.write_text(
        f"[dictionaries.nodes]\nvalues = {json.dumps(list(NODES))}\n"
        '[parameters]\n"path.node" = {dictionary = "nodes", probability = 0.5}\n'
    )
    report = workdir / "events.ndjson"
    cmd = [str(SCHEMATHESIS), "--config-file", str(config), "run", f"{url}/openapi.json",
           "--checks", "all", "--max-examples", str(EXAMPLES), "--max-time", str(SECONDS),
           "--workers", "1",
           "--request-timeout", "10", "--seed", "12", "--report", "ndjson",
           "--report-ndjson-path", str(report), "--no-color"]  # fmt: skip
    for header in headers:
        cmd += ["-H", header]
    done = subprocess.run(  # in workdir: schemathesis keeps a .schemathesis/ cache there
        cmd, capture_output=True, text=True, timeout=SECONDS * 4 + 120, cwd=workdir
    )
    return done.returncode, summarise(report), done.stdout[-6000:] + done.stderr[-2000:]


def summarise(report: Path) -> dict:
    """Counts of answers by status class over the whole run, from the ndjson event stream."""
    statuses: dict[str, int] = {}
    for line in report.read_text().splitlines():
        for code in _status_codes(json.loads(line)):
            key = f"{code // 100}xx"
            statuses[key] = statuses.get(key, 0) + 1
    return statuses


def _status_codes(node: object):  # noqa: ANN202 - a generator over nested JSON
    if isinstance(node, dict):
        if isinstance(node.get("status_code"), int) and "elapsed" in node:
            yield node["status_code"]
        for value in node.values():
            yield from _status_codes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _status_codes(value)


# The suite's 300 s timeout would cut `make fuzz`'s 300 s schemathesis run short; this one is
# the subprocess's own bound plus the watcher fixture's start.
@pytest.mark.timeout(SECONDS * 4 + 180)
@pytest.mark.parametrize("with_token", [True, False], ids=["token", "no-token"])
def test_schemathesis_finds_nothing(watcher, tmp_path, with_token):
    headers = [f"Authorization: Bearer {TOKEN}"] if with_token else []
    code, statuses, output = run_schemathesis(watcher.url, tmp_path, *headers)
    print(f"answers by status class: {statuses}")  # `pytest -rP` shows it: docs/chaos.md's figures
    assert code == 0, output
    assert statuses.get("5xx", 0) == 0, statuses
    assert sum(statuses.values()) >= 100, (statuses, output)  # it did run cases
    if not with_token:
        assert statuses.get("4xx", 0) > 0, statuses  # guarded paths answered 401


TOKEN_ALPHABET = st.characters(min_codepoint=0x21, max_codepoint=0x7E)  # no spaces: HTTP
# strips them around a header value, and requests refuses a leading one


@st.composite
def bad_authorization(draw: st.DrawFn) -> str:
    """Authorization headers that must not pass: near misses of the token and junk."""
    kind = draw(st.sampled_from(["junk", "bearer", "prefix", "suffix", "case", "scheme"]))
    if kind == "junk":
        return draw(st.text(TOKEN_ALPHABET, max_size=200))
    if kind == "bearer":
        value = draw(st.text(TOKEN_ALPHABET, max_size=200).filter(lambda t: t != TOKEN))
        return f"Bearer {value}"
    if kind == "prefix":
        return f"Bearer {TOKEN[: draw(st.integers(0, len(TOKEN) - 1))]}"
    if kind == "suffix":
        return f"Bearer {TOKEN}{draw(st.text(TOKEN_ALPHABET, min_size=1, max_size=5))}"
    if kind == "case":
        return f"Bearer {TOKEN.upper()}"
    scheme = draw(st.sampled_from(["Basic", "Token", "Bearer:", "Bearer ", "Bearertoken"]))
    return f"{scheme} {TOKEN}"


@settings(max_examples=EXAMPLES * 4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(header=bad_authorization(), path=st.sampled_from(GUARDED))
def test_bad_tokens_always_401(watcher, header, path):
    resp = requests.get(watcher.url + path, headers={"Authorization": header}, timeout=5)
    assert resp.status_code == 401, (header, resp.status_code, resp.text)
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")


def test_good_token_passes_and_watcher_stays_open(watcher):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert all(watcher.get(p, headers=auth).status_code == 200 for p in GUARDED)
    # The scheme is case-insensitive (RFC 9110 section 11.1); the token is not.
    assert watcher.get(GUARDED[0], headers={"Authorization": f"bearer {TOKEN}"}).ok
    assert watcher.get("/watcher").status_code == 200  # Trimaran's path needs no token


def test_request_bodies_are_refused(watcher):
    """The API reads no body: past MAX_BODY bytes the answer is 413, before the token check."""
    resp = requests.get(watcher.url + "/healthz", data=b"x" * 2048, timeout=5)
    assert resp.status_code == 413 and "body" in resp.json()["error"]
    chunks = (b"x" * 100 for _ in range(3))  # no length: chunked transfer
    assert requests.post(watcher.url + "/api/v1/nodes", data=chunks, timeout=5).status_code == 413
    assert watcher.get("/healthz", data=b"x" * 100).status_code == 200  # small ones are ignored

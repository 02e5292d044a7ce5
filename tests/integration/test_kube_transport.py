"""scheduler/kube/transport.py against the sandbox's kube-apiserver: keep-alive, threads,
chunked lists, error answers, connections the server closed, timeouts."""

from __future__ import annotations

import json
import select
import socket
import threading
from collections.abc import Iterator

import pytest
from kubernetes import client

from scheduler.kube import kubeapi, transport
from tests.integration.scheduler_support import create_pods, pod_body


@pytest.fixture
def api(sandbox) -> Iterator[client.ApiClient]:
    """A client of its own, so the connection counts are this test's alone."""
    with sandbox.api_client() as api:
        yield api


def test_calls_share_one_kept_alive_connection_and_errors_come_back_as_answers(api, namespace):
    lean = transport.for_client(api)
    assert lean is not None
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(20):
        body = {"metadata": {"name": f"c{i}"}, "data": {"k": str(i)}}
        assert kubeapi.request(api, "POST", path, body).status == 201
        assert json.loads(kubeapi.request(api, "GET", f"{path}/c{i}").body)["data"] == {"k": str(i)}
    assert lean.connections == 1
    missing = kubeapi.request(api, "GET", f"{path}/nope")
    assert missing.status == 404 and missing.message() == 'configmaps "nope" not found'
    clash = kubeapi.request(api, "POST", path, {"metadata": {"name": "c0"}})
    assert clash.status == 409 and "already exists" in clash.message()
    merge = "application/merge-patch+json"
    patched = kubeapi.request(api, "PATCH", f"{path}/c1", {"data": {"k": "x"}}, content_type=merge)
    assert patched.ok and json.loads(patched.body)["data"] == {"k": "x"}
    assert kubeapi.request(api, "DELETE", f"{path}/c2", {"kind": "DeleteOptions"}).ok
    assert kubeapi.request(api, "GET", f"{path}/c2").status == 404
    assert lean.connections == 1


def test_a_large_chunked_list_reads_as_the_client_pool_reads_it(api, namespace):
    create_pods(api, namespace, [pod_body(f"p{i}", scheduler="nobody") for i in range(150)])
    path = f"/api/v1/namespaces/{namespace}/pods"
    answer = kubeapi.request(api, "GET", path)
    pooled = api.rest_client.pool_manager.request(
        "GET", api.configuration.host + path, headers={"Accept": "application/json"}
    )
    assert len(answer.body) > 100_000  # large enough for the server to send it chunked
    ours, theirs = json.loads(answer.body), json.loads(pooled.data)
    assert [p["metadata"]["name"] for p in ours["items"]] == [
        p["metadata"]["name"] for p in theirs["items"]
    ]
    assert len(ours["items"]) == 150


def test_threads_get_connections_of_their_own(api, namespace):
    lean = transport.for_client(api)
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    failures: list[str] = []

    def work(t: int) -> None:
        for i in range(15):
            answer = kubeapi.request(api, "POST", path, {"metadata": {"name": f"t{t}-{i}"}})
            if answer.status != 201:
                failures.append(f"t{t}-{i}: {answer.status} {answer.message()}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []
    items = json.loads(kubeapi.request(api, "GET", path).body)["items"]
    assert len([i for i in items if i["metadata"]["name"][:1] == "t"]) == 8 * 15
    assert 1 <= lean.connections <= 8


def test_a_connection_the_server_closed_while_idle_is_replaced(api, namespace):
    lean = transport.for_client(api)
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert kubeapi.request(api, "GET", path).ok
    (idle,) = lean._idle
    # Our half-close makes the server end the connection, as its idle timeout would.
    idle.sock.shutdown(socket.SHUT_WR)
    select.select([idle.sock], [], [], 10)
    assert idle.dropped()
    assert kubeapi.request(api, "POST", path, {"metadata": {"name": "after"}}).status == 201
    assert lean.connections == 2


def test_an_answer_slower_than_the_read_timeout_raises(api, namespace):
    # A watch with nothing to report sends its headers and then nothing for 30 s.
    path = f"/api/v1/namespaces/{namespace}/configmaps?watch=1&timeoutSeconds=30"
    with pytest.raises(TimeoutError):
        kubeapi.request(api, "GET", path, timeout=(5.0, 0.5))
    assert kubeapi.request(api, "GET", f"/api/v1/namespaces/{namespace}").ok

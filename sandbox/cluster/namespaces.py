"""Namespaces that work with or without kube-controller-manager in the sandbox.

Without it nobody creates the `default` ServiceAccount, and the ServiceAccount admission plugin
rejects pods without it, so `ensure_namespace` creates both (with it, whoever is first wins).
Without it nobody finalizes a deleted namespace either, so `delete_namespace` removes its pods
and then finalizes it itself; with it, `finalize=False` leaves that to the namespace controller,
which also deletes the Deployments, Jobs and the rest that a forced finalize would orphan.
"""

from __future__ import annotations

from kubernetes import client
from kubernetes.client.rest import ApiException

from sandbox.cluster import defaults

T = defaults.REQUEST_TIMEOUT


def ensure_namespace(
    api: client.ApiClient, name: str, labels: dict[str, str] | None = None
) -> None:
    """Creates the namespace and its `default` ServiceAccount; existing ones are kept."""
    core = client.CoreV1Api(api)
    body = client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels))
    _create_ok_if_exists(lambda: core.create_namespace(body, _request_timeout=T))
    sa = client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="default"))
    _create_ok_if_exists(
        lambda: core.create_namespaced_service_account(name, sa, _request_timeout=T)
    )


def delete_namespace(api: client.ApiClient, name: str, finalize: bool = True) -> None:
    """Deletes the namespace and, at once, its pods (kwok completes their deletion);
    `finalize` (no namespace controller runs) removes it without waiting for its contents."""
    core = client.CoreV1Api(api)
    try:
        # Terminating first: from then on no controller can create a pod in it. Pods first,
        # and a ReplicaSet replaced them before the namespace went, leaving pending pods that
        # the next test's scheduler tried to place (seen in the pod-condition test's counts).
        core.delete_namespace(name, grace_period_seconds=0, _request_timeout=T)
        core.delete_collection_namespaced_pod(name, grace_period_seconds=0, _request_timeout=T)
        if not finalize:
            return
        ns = core.read_namespace(name, _request_timeout=T)
        ns.spec.finalizers = []
        core.replace_namespace_finalize(name, ns, _request_timeout=T)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _create_ok_if_exists(create) -> None:
    try:
        create()
    except ApiException as exc:
        if exc.status != 409:
            raise

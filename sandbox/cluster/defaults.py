"""Defaults for the sandbox control plane, in one place."""

from __future__ import annotations

import os
from pathlib import Path

SANDBOX_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = SANDBOX_DIR.parent
COMPONENTS_DIR = SANDBOX_DIR / "cluster" / "components"
# Each peer's Go main and go.mod; the cluster builds them but never imports the peers.
PEERS_DIR = SANDBOX_DIR / "peers"

# Overridable so CI or a second checkout can share one binary cache.
CACHE_DIR_ENV = "BALLAST_CACHE_DIR"
STATE_DIR = Path(".state/sandbox")

# Fixed ports for the CLI so the kubeconfig stays the same between runs; below the ephemeral
# range, where the tests' free ports come from. Fixtures pick free ports instead.
APISERVER_PORT = 16443
ETCD_CLIENT_PORT = 12379
ETCD_PEER_PORT = 12380

NODE_COUNT = 3
NODE_CPU = "4"
NODE_MEMORY = "16Gi"
NODE_PODS = 110
NODE_NAME_PREFIX = "kwok-node-"

SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
POD_CIDR = "10.244.0.1/16"

STARTUP_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
NODES_READY_TIMEOUT = 60.0
# Per request to the apiserver from the sandbox's own helpers.
REQUEST_TIMEOUT = 10.0

ADMIN_USER = "ballast-admin"
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl", "kwok")
OPTIONAL_COMPONENTS = ("kube-scheduler",)


def cache_dir() -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env) if env else REPO_ROOT / ".cache"

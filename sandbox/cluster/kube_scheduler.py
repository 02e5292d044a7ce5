"""Upstream kube-scheduler against the sandbox: the benchmarks' reference point.

Built only by `ballast sandbox build --with-kube-scheduler`. It runs beside the control plane
(same state folder, logs and pid files), so `stop()` / `ballast sandbox down` stop it too.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import requests
import urllib3
import yaml

from sandbox.cluster import build, processes
from sandbox.cluster.controlplane import ControlPlane


def scheduler_config(plane: ControlPlane, overrides: dict[str, Any] | None = None) -> dict:
    """A KubeSchedulerConfiguration for the sandbox; `overrides` replaces top-level keys
    (e.g. `profiles`, `extenders`, `percentageOfNodesToScore`)."""
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(plane.kubeconfig), "qps": 5000, "burst": 5000},
        # One instance per sandbox: electing a leader would only delay the first binding.
        "leaderElection": {"leaderElect": False},
    }
    config.update(copy.deepcopy(overrides or {}))
    return config


def start_kube_scheduler(
    plane: ControlPlane,
    overrides: dict[str, Any] | None = None,
    timeout: float = 60.0,
    name: str = "kube-scheduler",
    binary_name: str = "kube-scheduler",
    extra_args: list[str] | None = None,
) -> int:
    """Starts kube-scheduler, waits for its /healthz, returns its (loopback) secure port.
    `name` tells several apart (process, log, config file); `binary_name` picks a build from
    the cache with more plugins registered, such as the Trimaran scheduler; `extra_args` are
    added to its command line."""
    binary = build.binary(binary_name)
    port = processes.free_port()
    config_file = plane.state_dir / f"{name}.yaml"
    config_file.write_text(yaml.safe_dump(scheduler_config(plane, overrides), sort_keys=False))
    argv = [
        str(binary),
        f"--config={config_file}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--authentication-kubeconfig={plane.kubeconfig}",
        f"--authorization-kubeconfig={plane.kubeconfig}",
        *(extra_args or []),
    ]
    plane.spawn(name, argv)
    url = f"https://127.0.0.1:{port}/healthz"
    with requests.Session() as s, warnings.catch_warnings():
        # Its serving certificate is self-signed, made at start; /healthz needs no identity.
        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        s.trust_env = False
        s.verify = False
        plane.wait_until(name, lambda: s.get(url, timeout=2).ok, timeout)
    return port

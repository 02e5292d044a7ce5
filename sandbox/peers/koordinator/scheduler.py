"""koord-scheduler against the sandbox: LoadAwareScheduling on the NodeMetric objects.

The profile is the one Koordinator ships (config/manager/scheduler-config.yaml of the release)
cut down to LoadAwareScheduling and what the framework extension needs: Reservation at every
point it takes part in (without it koord-scheduler fails on the first pod), DefaultPreBind
(appended to every profile by koord-scheduler anyway) and SchedulingHint. The rest of the
profile is kube-scheduler's defaults. LoadAwareScheduling's args default to the plugin's own
(`usageThresholds` cpu 65 / memory 95 %, `estimatedScalingFactors` 85 / 70 %, NodeMetrics older
than 180 s filter the node out); `args` overrides them.
"""

from __future__ import annotations

from typing import Any

from sandbox.cluster import versions
from sandbox.cluster.controlplane import ControlPlane
from sandbox.cluster.kube_scheduler import start_kube_scheduler

LOAD_AWARE = "LoadAwareScheduling"
RESERVATION = "Reservation"
# LoadAwareScheduling's reasons (pkg/scheduler/plugins/loadaware/load_aware.go).
CPU_EXCEEDED = "node(s) cpu usage exceed threshold"
METRIC_EXPIRED = "node(s) nodeMetric expired"
ARGS_KIND = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "LoadAwareSchedulingArgs"}


def profile(scheduler_name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """One KubeSchedulerConfiguration profile running LoadAwareScheduling."""

    def named(*names: str) -> list[dict[str, str]]:
        return [{"name": n} for n in names]

    plugins = {
        "preFilter": {"enabled": named("SchedulingHint", RESERVATION)},
        "filter": {"enabled": named(LOAD_AWARE, RESERVATION)},
        "postFilter": {"disabled": named("*"), "enabled": named(RESERVATION, "DefaultPreemption")},
        "preScore": {"enabled": named(RESERVATION)},
        "score": {
            "enabled": [
                {"name": LOAD_AWARE, "weight": 1},
                {"name": RESERVATION, "weight": 5000},
            ]
        },
        "reserve": {"enabled": named(LOAD_AWARE)},
        "preBind": {"enabled": named(RESERVATION, "DefaultPreBind")},
        "bind": {"disabled": named("*"), "enabled": named(RESERVATION, "DefaultBinder")},
    }
    return {
        "schedulerName": scheduler_name,
        "plugins": plugins,
        "pluginConfig": [{"name": LOAD_AWARE, "args": {**ARGS_KIND, **(args or {})}}],
    }


def start_koord_scheduler(
    plane: ControlPlane,
    scheduler_name: str = "koord-scheduler",
    args: dict[str, Any] | None = None,
    name: str = "koord-scheduler",
) -> int:
    """Starts koord-scheduler beside the sandbox (log `<name>.log`); returns its secure port
    once /healthz answers. `--port=0`: otherwise it also serves plain HTTP on 0.0.0.0:10251,
    the port koord-descheduler's health checks default to."""
    overrides = {"profiles": [profile(scheduler_name, args)]}
    return start_kube_scheduler(
        plane,
        overrides,
        name=name,
        binary_name=versions.koord_scheduler_binary(),
        extra_args=["--port=0"],
    )

"""Plugin names (upstream's spelling) to the modules that implement them.

A plugin module defines NAME, a `Plugin` class taking its typed args, and, when it has args,
`Args` and `parse_args(fields) -> Args`. Adding a plugin is one file plus one line below.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from scheduler.framework import Plugin
from scheduler.framework.errors import ConfigError
from scheduler.plugins import (
    default_preemption,
    gpu_load,
    inter_pod_affinity,
    load_threshold,
    load_variation_risk_balancing,
    low_risk_over_commitment,
    metric_score,
    node_affinity,
    node_name,
    node_ports,
    node_ready,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_resources_least_allocated,
    node_unschedulable,
    node_volume_limits,
    peak_fit,
    pod_topology_spread,
    taint_toleration,
    target_load_packing,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

_MODULES: tuple[ModuleType, ...] = (
    default_preemption,
    node_unschedulable,
    node_ready,
    node_name,
    taint_toleration,
    node_affinity,
    node_ports,
    node_resources_fit,
    volume_restrictions,
    node_volume_limits,
    volume_binding,
    volume_zone,
    load_threshold,
    target_load_packing,
    load_variation_risk_balancing,
    low_risk_over_commitment,
    peak_fit,
    metric_score,
    inter_pod_affinity,
    node_resources_least_allocated,
    node_resources_balanced_allocation,
    pod_topology_spread,
    gpu_load,
)

REGISTRY: dict[str, ModuleType] = {m.NAME: m for m in _MODULES}


def names() -> list[str]:
    return sorted(REGISTRY)


def check_name(name: str, where: str) -> None:
    if name not in REGISTRY:
        raise ConfigError(f"{where}: unknown plugin {name!r} (known: {', '.join(names())})")


def points(name: str) -> set[str]:
    """The extension points ("filter", "score", "postFilter") the plugin implements."""
    cls = REGISTRY[name].Plugin
    found = {p for p in ("filter", "score") if callable(getattr(cls, p, None))}
    if callable(getattr(cls, "post_filter", None)):
        found.add("postFilter")
    return found


def parse_args(name: str, fields: Fields) -> Any:
    """The plugin's typed args from its pluginConfig entry (defaults for an empty one)."""
    module = REGISTRY[name]
    parser = getattr(module, "parse_args", None)
    if parser is None:
        fields.finish()  # a plugin without args refuses any
        return None
    return parser(fields)


def new_plugin(name: str, args: Any = None) -> Plugin:
    module = REGISTRY[name]
    return module.Plugin(args) if args is not None else module.Plugin()

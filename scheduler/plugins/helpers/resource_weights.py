"""The `resources: [{name, weight}]` argument of the allocation-based scores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.framework import CPU, MEMORY

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

DEFAULT_RESOURCES = ((CPU, 1), (MEMORY, 1))


def parse_resources(f: Fields) -> tuple[tuple[str, int], ...]:
    """`resources: [{name: cpu, weight: 1}, ...]` as kube-scheduler's scoringStrategy spells it."""
    entries = f.items("resources")
    if not entries:
        return DEFAULT_RESOURCES
    out = []
    for entry in entries:
        name = entry.string("name")
        if not name:
            raise entry.error("name", "must name a resource")
        out.append((name, entry.integer("weight", 1, 1, 100)))
        entry.finish()
    return tuple(out)


@dataclass(frozen=True)
class Args:
    """Args of NodeResourcesLeastAllocated and NodeResourcesBalancedAllocation."""

    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES


def parse_args(f: Fields) -> Args:
    args = Args(parse_resources(f))
    f.finish()
    return args

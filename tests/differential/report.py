"""Mismatches between the judge and Ballast, and how they are compared and printed."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

_COUNTED = re.compile(r"(\d+) (.+)")
_PARTS = re.compile(r", (?=\d+ )")
_BLAMED = re.compile(r"(?<=: |; )([A-Z][A-Za-z]+):(?= )")  # "...: NodePorts: host port ..."


def reason_histogram(message: str) -> dict[str, int]:
    """`0/N nodes are available: 3 A, 2 B.` -> {"A": 3, "B": 2, "nodes": N}. A reason told
    without a count (a PreFilter rejection of the whole pod) counts 0."""
    head, sep, tail = message.partition(" nodes are available")
    if not sep:
        return {message: 0}
    hist: dict[str, int] = {"nodes": int(head.rpartition("/")[2] or 0)}
    tail = tail.removeprefix(":").strip().removesuffix(".")
    if not tail:
        return hist
    for part in _PARTS.split(tail):
        counted = _COUNTED.fullmatch(part)
        if counted:
            hist[counted.group(2)] = hist.get(counted.group(2), 0) + int(counted.group(1))
        else:
            hist[part] = 0
    return hist


@dataclass
class Mismatch:
    seed: int
    index: int
    # "feasible", "reasons" (Ballast vs upstream), "invalid" (a Ballast placement the checker
    # refuses), "checker" (the checker vs upstream: a harness bug), "no-verdict"
    kind: str
    namespace: str
    pod: dict[str, Any]  # the scenario's pod, before the run's renaming
    features: list[str]
    upstream_feasible: list[str] = field(default_factory=list)
    ballast_feasible: list[str] = field(default_factory=list)
    upstream_message: str = ""
    ballast_message: str = ""
    detail: list[str] = field(default_factory=list)
    # (pod index, node) of every pod placed before this one: the state it was judged on
    placed_before: list[tuple[int, str]] = field(default_factory=list)

    def render(self) -> str:
        up, ours = set(self.upstream_feasible), set(self.ballast_feasible)
        other = "checker" if self.kind == "checker" else "ballast"
        lines = [
            f"seed {self.seed} pod {self.index} (namespace {self.namespace}, "
            f"{'+'.join(self.features)}): {self.kind}"
        ]
        if self.kind in ("feasible", "checker"):
            lines.append(f"  feasible upstream {len(up)}, {other} {len(ours)}")
            lines.append(f"  only upstream: {', '.join(sorted(up - ours)) or '-'}")
            lines.append(f"  only {other}: {', '.join(sorted(ours - up)) or '-'}")
        if self.upstream_message or self.ballast_message:
            lines.append(f"  upstream: {self.upstream_message or '(schedulable)'}")
            lines.append(f"  ballast:  {self.ballast_message or '(schedulable)'}")
        lines += [f"  {d}" for d in self.detail]
        lines.append(f"  pod: {json.dumps(self.pod, separators=(',', ':'), sort_keys=True)}")
        lines.append(
            f"  reproduce: python -m tests.differential --seed {self.seed} --pods {self.index + 1}"
        )
        return "\n".join(lines)

    def plugins(self) -> set[str]:
        """The plugins named in the checker's reasons, or the reason texts that differ."""
        found = set(_BLAMED.findall("\n".join(self.detail)))
        if self.kind == "reasons":
            up = reason_histogram(self.upstream_message)
            ours = reason_histogram(self.ballast_message)
            found |= {f"'{r}'" for r in set(up) | set(ours) if up.get(r) != ours.get(r)}
        return found or {"?"}

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def compare(
    seed: int,
    index: int,
    namespace: str,
    pod: dict[str, Any],
    features: list[str],
    upstream: tuple[list[str], str],
    ballast: tuple[list[str], str],
) -> Mismatch | None:
    """Feasible sets must be equal; for a pod nobody can place, so must the reason counts."""
    (up_nodes, up_msg), (our_nodes, our_msg) = upstream, ballast
    kind = ""
    if sorted(up_nodes) != sorted(our_nodes):
        kind = "feasible"
    elif not up_nodes and reason_histogram(up_msg) != reason_histogram(our_msg):
        kind = "reasons"
    if not kind:
        return None
    return Mismatch(
        seed,
        index,
        kind,
        namespace,
        pod,
        features,
        sorted(up_nodes),
        sorted(our_nodes),
        up_msg,
        our_msg,
    )


def summary(mismatches: list[Mismatch]) -> str:
    """Counts per kind, and per plugin the checker blames for the differing nodes, to see at a
    glance which plugin is off."""
    if not mismatches:
        return "0 mismatches"
    by_kind: dict[str, int] = {}
    by_plugin: dict[str, int] = {}
    for m in mismatches:
        by_kind[m.kind] = by_kind.get(m.kind, 0) + 1
        for plugin in m.plugins():
            by_plugin[plugin] = by_plugin.get(plugin, 0) + 1
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(by_kind.items()))
    plugins = ", ".join(f"{p} {n}" for p, n in sorted(by_plugin.items(), key=lambda x: -x[1]))
    return f"{len(mismatches)} mismatches ({kinds}); pods per plugin: {plugins or '-'}"

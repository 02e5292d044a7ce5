"""Mismatches between the judge and Ballast, and how they are compared and printed."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

_COUNTED = re.compile(r"(\d+) (.+)")
_PARTS = re.compile(r", (?=\d+ )")


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
    """Counts per kind and per feature, to see at a glance which plugin is off."""
    if not mismatches:
        return "0 mismatches"
    by_kind: dict[str, int] = {}
    by_feature: dict[str, int] = {}
    for m in mismatches:
        by_kind[m.kind] = by_kind.get(m.kind, 0) + 1
        for f in m.features:
            by_feature[f] = by_feature.get(f, 0) + 1
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(by_kind.items()))
    feats = ", ".join(f"{f} {n}" for f, n in sorted(by_feature.items(), key=lambda x: -x[1]))
    return f"{len(mismatches)} mismatches ({kinds}); pods with: {feats}"

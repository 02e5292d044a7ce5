"""A filter's verdict (Status) and kube-scheduler's FailedScheduling text built from the
verdicts of every node."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from scheduler.framework.types import CycleState

# CycleState key: a PreFilter's rejection of the whole pod (a Status), for the FailedScheduling
# text.
PRE_FILTER_REJECTION = "profile.pre_filter_rejection"


@dataclass(frozen=True)
class Status:
    """A filter's verdict: `reason` is the short kube-scheduler style text of a rejection.

    A node can fail for several reasons at once ("Insufficient cpu" and "Insufficient memory");
    `reasons` holds them all, `reason` the first.
    """

    ok: bool
    reason: str = ""
    unresolvable: bool = False  # no preemption or retry on node change would help
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.reasons and self.reason:
            object.__setattr__(self, "reasons", (self.reason,))

    @classmethod
    def success(cls) -> Status:
        return _SUCCESS

    @classmethod
    def reject(cls, *reasons: str, unresolvable: bool = False) -> Status:
        return cls(False, reasons[0], unresolvable, tuple(reasons))


_SUCCESS = Status(True)


def failure_message(
    total_nodes: int,
    reasons: dict[str, list[str]] | dict[str, str],
    state: CycleState | None = None,
) -> str:
    """kube-scheduler's FailedScheduling text, e.g.
    "0/10 nodes are available: 3 Insufficient cpu, 7 node(s) had untolerated taint(s)."
    Counts per reason (a node can give several), sorted as strings like kube-scheduler does.
    A PreFilter rejection in `state` is told once, without counts, as upstream does."""
    if total_nodes == 0:
        return "no nodes available to schedule pods"
    rejection = state.get(PRE_FILTER_REJECTION) if state is not None else None
    if rejection is not None:
        return f"0/{total_nodes} nodes are available: {rejection.reason}."
    # Nodes turned away for the same reasons share them: counted per combination first (a
    # preemptor's message counts every node, hundreds of the same combination).
    combos = Counter(v if isinstance(v, str) else tuple(v) for v in reasons.values())
    counts: Counter[str] = Counter()
    for combo, n in combos.items():
        for reason in (combo,) if isinstance(combo, str) else combo:
            counts[reason] += n
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    text = f"0/{total_nodes} nodes are available"
    return f"{text}: {', '.join(parts)}." if parts else f"{text}."

"""The scheduling framework: the extension points (interface.py), the data plugins see
(types.py, snapshot.py, clusterindex.py), the profile that runs a schedulerName's plugins
(profile.py), and the helpers every layer above shares (fields.py for typed args, resources.py
for reading API objects, labels.py, errors.py). Nothing here imports a plugin, the cache or the
API side; everything above imports from here.

The names plugins use most are re-exported, so `from scheduler.framework import PodInfo` works.
"""

from scheduler.framework.interface import (
    UNRESOLVABLE_NODES,
    BatchFilterPlugin,
    BatchScorePlugin,
    FilterPlugin,
    Handle,
    NormalizeScorePlugin,
    Plugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from scheduler.framework.snapshot import Snapshot, TrialEdit, snapshot_of
from scheduler.framework.status import Status
from scheduler.framework.types import (
    CPU,
    DISRUPTION_TARGET,
    EPHEMERAL_STORAGE,
    MAX_NODE_SCORE,
    MEMORY,
    MIN_NODE_SCORE,
    PODS,
    PREEMPTION_BY_SCHEDULER,
    CycleState,
    HostPort,
    MetricStats,
    NodeInfo,
    NodeLoad,
    PodInfo,
    Resources,
)

__all__ = [
    "CPU",
    "DISRUPTION_TARGET",
    "EPHEMERAL_STORAGE",
    "MAX_NODE_SCORE",
    "MEMORY",
    "MIN_NODE_SCORE",
    "NormalizeScorePlugin",
    "PODS",
    "PREEMPTION_BY_SCHEDULER",
    "UNRESOLVABLE_NODES",
    "BatchFilterPlugin",
    "BatchScorePlugin",
    "CycleState",
    "FilterPlugin",
    "Handle",
    "HostPort",
    "MetricStats",
    "NodeInfo",
    "NodeLoad",
    "Plugin",
    "PodInfo",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreFilterPlugin",
    "PreScorePlugin",
    "Resources",
    "ScorePlugin",
    "Snapshot",
    "Status",
    "TrialEdit",
    "snapshot_of",
]

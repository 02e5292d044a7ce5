"""The OpenAPI description served at /openapi.json (kept in step with docs/api.md).

It says exactly what the server accepts and answers, down to the metric keys of this watcher's
configuration, so a client generator or a fuzzer (tests/integration/test_watcher_fuzz.py) can
hold the server to it.
"""

from __future__ import annotations

import itertools
from typing import Any

JSON, TEXT = "application/json", "text/plain"

ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string"}},
}
NUMBER = {"type": "number"}
NULLABLE_STRING = {"type": "string", "nullable": True}
LAST_POLL = {
    "type": "object",
    "required": ["time", "ok", "error"],
    "properties": {
        "time": {"type": "number", "nullable": True},
        "ok": {"type": "boolean"},
        "error": NULLABLE_STRING,
        "duration": NUMBER,
        "partial": {
            "type": "object",
            "nullable": True,
            "description": "metric key -> the store's note, for answers it said were partial",
            "additionalProperties": {"type": "string"},
        },
        "lacking": {
            "type": "object",
            "nullable": True,
            "description": "metric key -> nodes (GPUs, in /api/v1/gpus) left out of partial "
            "answers (kept, aging)",
            "additionalProperties": {"type": "integer"},
        },
    },
}
STATE = {"type": "string", "enum": ["fresh", "stale", "expired"]}
METRIC_STATS = {
    "type": "object",
    "required": ["type", "unit", "avg", "std", "latest", "count", "last", "state", "age"],
    "properties": {
        "type": {"type": "string"},
        "unit": {"type": "string"},
        **{k: NUMBER for k in ("avg", "std", "min", "max", "p95", "latest", "first", "last")},
        "peak": {
            **NUMBER,
            "description": "the most used over the last 72 peak buckets (hours by default; "
            "peak model)",
        },
        **{k: NUMBER for k in ("horizon", "expiry", "age")},
        "count": {"type": "integer", "minimum": 0},
        "state": STATE,
    },
}
NODE_DOC = {
    "type": "object",
    "required": ["state", "age", "metrics"],
    "properties": {
        "state": STATE,
        "age": NUMBER,
        "metrics": {"type": "object", "additionalProperties": METRIC_STATS},
    },
}
NODES_DOC = {
    "type": "object",
    "required": ["timestamp", "window", "source", "lastPoll", "nodes"],
    "properties": {
        "timestamp": NUMBER,
        "window": {
            "type": "object",
            "required": ["duration", "seconds"],
            "properties": {"duration": {"type": "string"}, "seconds": NUMBER},
        },
        "source": {"type": "string"},
        "lastPoll": LAST_POLL,
        "nodes": {"type": "object", "additionalProperties": NODE_DOC},
    },
}
# /watcher?operators=: each of AVG, STD and Latest at most once, in any order (15 values).
OPERATOR_LISTS = [
    ",".join(p) for n in (1, 2, 3) for p in itertools.permutations(("AVG", "STD", "Latest"), n)
]
# load-watcher's envelope (shared/wire.py), field by field.
ENVELOPE = {
    "type": "object",
    "required": ["timestamp", "window", "source", "data"],
    "properties": {
        "timestamp": {"type": "integer"},
        "window": {
            "type": "object",
            "required": ["duration", "start", "end"],
            "properties": {
                "duration": {"type": "string"},
                "start": {"type": "integer"},
                "end": {"type": "integer"},
            },
        },
        "source": {"type": "string"},
        "data": {
            "type": "object",
            "required": ["NodeMetricsMap"],
            "properties": {
                "NodeMetricsMap": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "required": ["metrics", "tags", "metadata"],
                        "properties": {
                            "metrics": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "required": ["name", "type", "operator", "rollup", "value"],
                                    "properties": {
                                        "name": {"type": "string"},
                                        "type": {"type": "string"},
                                        "operator": {"type": "string"},
                                        "rollup": {"type": "string"},
                                        "value": NUMBER,
                                    },
                                },
                            },
                            "tags": {"type": "object"},
                            "metadata": {"type": "object"},
                        },
                    },
                }
            },
        },
    },
}
SAMPLES_DOC = {
    "type": "object",
    "required": ["node", "metric", "samples"],
    "properties": {
        "node": {"type": "string"},
        "metric": {"type": "string"},
        "samples": {
            "type": "array",
            "items": {"type": "array", "items": NUMBER, "minItems": 2, "maxItems": 2},
        },
    },
}
PERCENTILES = {
    "type": "object",
    "nullable": True,
    "required": ["p50", "p95", "max"],
    "properties": {k: NUMBER for k in ("p50", "p95", "max")},
}
REVISION_DOC = {
    "type": "object",
    "required": ["samples", "replicas", "distinctPods", "first", "last", "cpu", "memory"],
    "properties": {
        "samples": {"type": "integer", "minimum": 0},
        "samplesTotal": {"type": "integer", "minimum": 0},
        "replicas": {"type": "integer", "minimum": 0},
        "distinctPods": {"type": "integer", "minimum": 0},
        "first": {"type": "number", "nullable": True},
        "last": {"type": "number", "nullable": True},
        "cpu": {**PERCENTILES, "description": "millicores per replica"},
        "memory": {**PERCENTILES, "description": "bytes per replica"},
    },
}
WORKLOAD_DOC = {
    "type": "object",
    "required": ["namespace", "kind", "name", "current", "revisions"],
    "properties": {
        "namespace": {"type": "string"},
        "kind": {
            "type": "string",
            "enum": ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"],
        },
        "name": {"type": "string"},
        "current": {"type": "string", "description": "the newest revision's template hash"},
        "revisions": {"type": "object", "additionalProperties": REVISION_DOC},
    },
}
WORKLOADS_DOC = {
    "type": "object",
    "required": ["built", "window", "workloads", "lastPoll", "pods"],
    "properties": {
        "built": NUMBER,
        "window": NUMBER,
        "perPoll": {"type": "integer"},
        "capacity": {"type": "integer"},
        "lastPoll": LAST_POLL,
        "pods": {"type": "integer", "minimum": 0},
        "rejected": {"type": "object", "additionalProperties": {"type": "integer"}},
        "workloads": {"type": "object", "additionalProperties": WORKLOAD_DOC},
    },
}
_COLUMN = {"type": "array", "items": NUMBER}
POD_FIGURES = {
    "type": "object",
    "required": ["window", "history"],
    "properties": {
        "window": {
            "type": "object",
            "description": "over the node window's last samples: one list per figure, "
            "aligned with `pods`",
            "properties": {f: _COLUMN for f in ("mean", "std", "p90", "p95", "p99", "max")},
        },
        "history": {
            "type": "object",
            "description": "over a history whose samples' weight halves every `halfLife` "
            "seconds; `weight` is the samples' total weight now, `max` the most the pod used "
            "in the last 24 buckets of `peakBucket` seconds (24 hours by default)",
            "properties": {
                f: _COLUMN for f in ("weight", "mean", "std", "p90", "p95", "p99", "max")
            },
        },
    },
}
_HISTORY_FIGURES = {
    "type": "object",
    "properties": {
        "max": {**_COLUMN, "description": "the most one replica used over the held buckets"},
        "bucketMean": {**_COLUMN, "description": "the mean of the held buckets' maxima"},
    },
}
WORKLOAD_HISTORY = {
    "type": "object",
    "description": "per workload, the most one replica used in each of the last `buckets` "
    "buckets of `peakBucket` seconds (a day by default), kept when its pods are gone: column "
    "by column, the i-th entry of every list is the i-th workload's (docs/peak-model.md)",
    "required": ["peakBucket", "buckets", "workloads", "held", "cpu", "memory"],
    "properties": {
        "peakBucket": NUMBER,
        "buckets": {"type": "integer", "description": "the buckets a workload's history spans"},
        "workloads": {
            "type": "array",
            "items": {"type": "string"},
            "description": "namespace/Kind/name",
        },
        "held": {**_COLUMN, "description": "buckets holding data, 0 to `buckets`"},
        "last": {**_COLUMN, "description": "each workload's newest sample (Unix seconds)"},
        "cpu": {**_HISTORY_FIGURES, "description": "millicores"},
        "memory": {**_HISTORY_FIGURES, "description": "bytes"},
    },
}
POD_STATS_DOC = {
    "type": "object",
    "description": "column by column: the i-th entry of every list is the i-th pod's",
    "required": ["built", "window", "windowSamples", "halfLife", "pods", "cpu", "memory"],
    "properties": {
        "built": NUMBER,
        "window": NUMBER,
        "windowSamples": {"type": "integer"},
        "halfLife": NUMBER,
        "peakBucket": {**NUMBER, "description": "seconds per bucket of the history's maxima"},
        "lastPoll": LAST_POLL,
        "pods": {"type": "array", "items": {"type": "string"}, "description": "namespace/pod"},
        "workloads": {
            "type": "array",
            "items": {"type": "string", "nullable": True},
            "description": "namespace/Kind/name, null for a pod no known controller owns",
        },
        "last": {**_COLUMN, "description": "each pod's newest sample (Unix seconds)"},
        "samples": {**_COLUMN, "description": "samples in the window"},
        "held": {
            **_COLUMN,
            "description": "buckets of the last 24 holding the pod's maxima: how much of the "
            "day its history `max` covers (fewer for a pod younger than the look-back)",
        },
        "cpu": {**POD_FIGURES, "description": "millicores"},
        "memory": {**POD_FIGURES, "description": "bytes"},
        "workloadHistory": WORKLOAD_HISTORY,
    },
}
GPU_STATS = {
    "type": "object",
    "properties": {f: NUMBER for f in ("avg", "std", "min", "max", "p95", "latest")},
}
GPU_DOC = {
    "type": "object",
    "description": "one GPU's window (watcher/gpus.py): utilisation and memory in percent, "
    "framebuffer used, free and total in MiB as dcgm-exporter reports them",
    "required": ["uuid", "model", "count", "last", "horizon", "state", "age"],
    "properties": {
        "uuid": {"type": "string"},
        "model": {"type": "string"},
        "util": GPU_STATS,
        "memory": GPU_STATS,
        "fbUsed": GPU_STATS,
        "fbFree": GPU_STATS,
        "fbTotal": NUMBER,
        "pods": {
            "type": "array",
            "items": {"type": "string"},
            "description": "namespace/name of the pods using it (dcgm-exporter's pod mapping; "
            "absent when gpu_pod_query is off)",
        },
        "mig": {
            "type": "object",
            "description": "a MIG instance (indexed `<gpu>-mig<GPU_I_ID>`): its GPU's index, "
            "the instance (GPU_I_ID) and its profile (GPU_I_PROFILE); absent for a whole GPU",
            "properties": {k: {"type": "string"} for k in ("gpu", "instance", "profile")},
        },
        "count": {"type": "integer"},
        "last": NUMBER,
        "horizon": NUMBER,
        "state": STATE,
        "age": NUMBER,
        "expiry": NUMBER,
    },
}
GPU_NODE_DOC = {
    "type": "object",
    "required": ["state", "age", "gpus"],
    "properties": {
        "state": STATE,
        "age": NUMBER,
        "gpus": {"type": "object", "description": "by GPU index", "additionalProperties": GPU_DOC},
    },
}
GPUS_DOC = {
    "type": "object",
    "required": ["built", "window", "expiry", "lastPoll", "timestamp", "nodes"],
    "properties": {
        "built": NUMBER,
        "window": NUMBER,
        "expiry": NUMBER,
        "timestamp": NUMBER,
        "lastPoll": LAST_POLL,
        "counters": {"type": "object"},
        "nodes": {
            "type": "object",
            "description": "GPU nodes only: a node without GPUs has no entry",
            "additionalProperties": GPU_NODE_DOC,
        },
        "workloads": {
            "type": "object",
            "description": "per workload (namespace/Kind/name), what one replica used of GPUs "
            "over the window: memory (MiB) and util (percent of one GPU), each p50, p95, max",
            "additionalProperties": {"type": "object"},
        },
    },
}
STATUS_DOC = {
    "type": "object",
    "required": ["source", "store", "poller", "provider", "snapshot"],
    "properties": {
        "source": {"type": "string"},
        "store": {
            "type": "object",
            "required": ["kind", "ok", "error"],
            "properties": {
                "kind": {"type": "string", "enum": ["memory", "redis"]},
                "ok": {"type": "boolean"},
                "error": NULLABLE_STRING,
            },
        },
        "poller": {
            "type": "object",
            "required": ["self", "leader", "leading"],
            "properties": {
                "self": {"type": "string"},
                "leader": NULLABLE_STRING,
                "leading": {"type": "boolean"},
            },
        },
        "provider": {"type": "object", "nullable": True},
        "snapshot": {"type": "object", "nullable": True},
        "lastPoll": LAST_POLL,
        "lastSuccess": {"type": "number", "nullable": True},
        "counters": {"type": "object"},
        "nodes": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
}
# The scheduler's answers passed on as they are (its own /openapi.json describes them), and
# the watcher's own: 404 without scheduler_url, 502 when the scheduler cannot be read.
SCHEDULER_ANSWERS = {
    "200": {
        "description": "the scheduler's answer",
        "content": {JSON: {"schema": {"type": "object"}}},
    },
    **{
        code: {"description": text, "content": {JSON: {"schema": ERROR}}}
        for code, text in (
            ("400", "a bad filter"),
            ("401", "the scheduler wants another token"),
            ("404", "no scheduler_url, or no record of that pod"),
            ("502", "the scheduler could not be reached, or answered without JSON"),
            ("503", "the scheduler is a standby or records nothing"),
            ("504", "the scheduler did not answer in time"),
        )
    },
}
# The rebalancer's /status and /decisions (scheduler/rebalancer/status.py), passed on as they
# are; 404 without rebalancer_url (with "configured": false), 502 and 504 as above.
REBALANCER_STATUS = {
    "type": "object",
    "properties": {
        "time": NUMBER,
        "identity": {"type": "string"},
        "leading": {"type": "boolean"},
        "dryRun": {"type": "boolean"},
        "enabled": {"type": "boolean", "description": "false: turned off or the kill switch"},
        "profile": {"type": "string"},
        "consecutive": {"type": "integer"},
        "lastRound": {
            "type": "object",
            "description": "empty before the first round",
            "properties": {
                "time": NUMBER,
                "leading": {"type": "boolean"},
                "hot": {
                    "type": "object",
                    "description": "hot node -> consecutive hot observations",
                    "additionalProperties": {"type": "integer"},
                },
                "saturated": {
                    "type": "object",
                    "description": "node -> the least of the CPU samples that make it "
                    "saturated (hot at once: `saturated` set)",
                    "additionalProperties": NUMBER,
                },
                "confirmed": {"type": "array", "items": {"type": "string"}},
                "unknown": {"type": "object", "additionalProperties": {"type": "string"}},
                "resting": {"type": "object", "additionalProperties": NUMBER},
                "restEnded": {
                    "type": "object",
                    "description": "node -> why its rest ended on samples taken after the move",
                    "additionalProperties": {"type": "string"},
                },
                "high": {"type": "object"},
                "low": {"type": "object"},
                "evicted": {"type": "array", "items": {"type": "string"}},
                "wouldEvict": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}
REBALANCER_DECISIONS = {
    "type": "object",
    "properties": {
        "leading": {"type": "boolean", "description": "false: a standby's (empty) log"},
        "decisions": {
            "type": "array",
            "description": "newest last",
            "items": {
                "type": "object",
                "properties": {
                    "time": NUMBER,
                    "action": {
                        "type": "string",
                        "enum": ["evict", "would-evict", "skip", "rest-ended"],
                    },
                    "node": {"type": "string"},
                    "pod": {"type": "string"},
                    "reason": {"type": "string"},
                    "detail": {"type": "string"},
                    "target": {"type": "string"},
                },
            },
        },
    },
}


def _rebalancer_answers(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "200": _json(text, schema),
        "400": _error("a bad query (limit not an integer)"),
        "404": _error("no rebalancer_url on this watcher"),
        "502": _error("the rebalancer could not be reached, or answered without JSON"),
        "504": _error("the rebalancer did not answer in time"),
    }


READY_DOC = {
    "type": "object",
    "required": ["ready", "reasons"],
    "properties": {
        "ready": {"type": "boolean"},
        "reasons": {"type": "array", "items": {"type": "string"}},
    },
}


def _json(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": text, "content": {JSON: {"schema": schema}}}


def _text(text: str) -> dict[str, Any]:
    return {"description": text, "content": {TEXT: {"schema": {"type": "string"}}}}


def _error(text: str) -> dict[str, Any]:
    return _json(text, ERROR)


NOT_MODIFIED = {"description": "not modified (If-None-Match matched the ETag)"}
# Before the first successful poll, or with the store down and no snapshot yet.
NO_DATA = {"500": _error("no data yet"), "503": _error("store unavailable, no snapshot yet")}


def _param(
    name: str, where: str, text: str, schema: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "required": where == "path",
        "description": text,
        "schema": schema or {"type": "string"},
    }


def _get(
    summary: str,
    responses: dict[str, Any],
    params: list[dict[str, Any]] | None = None,
    guarded: bool = False,
) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": dict(responses)}
    if params:
        op["parameters"] = params
    if guarded:
        op["responses"]["401"] = _error("missing or wrong bearer token")
    else:
        op["security"] = []  # open even when the API wants a token
    return {"get": op}


def document(
    metrics: list[str], guarded: bool = False, open_paths: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The description of this watcher: `metrics` are the metric keys it knows, `guarded` says
    whether the API wants a bearer token and `open_paths` which paths stay open all the same."""
    node = _param("node", "path", "Kubernetes node name")

    def guard(path: str) -> bool:
        return guarded and not any(
            path == p or path.startswith(p.rstrip("/") + "/") for p in open_paths
        )

    doc: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": "Ballast load-watcher",
            "version": "1",
            "description": "Node load windows with adaptive staleness; load-watcher compatible.",
        },
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/watcher": _get(
                "All nodes (or one with ?host=) in load-watcher's envelope",
                {
                    "200": _json("envelope", ENVELOPE),
                    "304": NOT_MODIFIED,
                    "400": _error("an unknown or repeated operator"),
                    "404": _text("no live data for that host"),
                    **NO_DATA,
                },
                [
                    _param("host", "query", "only this node"),
                    _param(
                        "operators",
                        "query",
                        "these operators, in this order, instead of load-watcher's for the "
                        "source (Prometheus: AVG,STD; metrics-server: Latest)",
                        {"type": "string", "enum": OPERATOR_LISTS},
                    ),
                ],
                guard("/watcher"),
            ),
            "/watcher/health": _get(
                "Provider health (empty body)",
                {"200": {"description": "healthy"}, "503": {"description": "unhealthy"}},
                guarded=guard("/watcher/health"),
            ),
            "/api/v1/nodes": _get(
                "Every node with window statistics, staleness state, age and horizon",
                {"200": _json("nodes", NODES_DOC), "304": NOT_MODIFIED, **NO_DATA},
                guarded=guard("/api/v1/nodes"),
            ),
            "/api/v1/nodes/{node}": _get(
                "One node",
                {
                    "200": _json("node", NODE_DOC),
                    "304": NOT_MODIFIED,
                    "404": _error("no data for that node"),
                    **NO_DATA,
                },
                [node],
                guard("/api/v1/nodes/x"),
            ),
            "/api/v1/nodes/{node}/samples": _get(
                "Raw samples of one metric in the window, [[time, value], ...]",
                {
                    "200": _json("samples", SAMPLES_DOC),
                    "304": NOT_MODIFIED,
                    "400": _error("unknown metric"),
                    "404": _error("no data for that node"),
                    **NO_DATA,
                },
                [
                    node,
                    _param(
                        "metric",
                        "query",
                        "metric key",
                        {"type": "string", "enum": list(metrics), "default": "cpu"},
                    ),
                ],  # fmt: skip
                guard("/api/v1/nodes/x/samples"),
            ),
            "/api/v1/gpus": _get(
                "Every GPU node's GPUs (dcgm-exporter's series): window statistics and staleness",
                {
                    "200": _json("GPUs", GPUS_DOC),
                    "304": NOT_MODIFIED,
                    "404": _error("GPU metrics off or not polled yet"),
                    "503": _error("store unavailable"),
                },
                guarded=guard("/api/v1/gpus"),
            ),
            "/api/v1/nodes/{node}/gpus": _get(
                "One node's GPUs",
                {
                    "200": _json("GPUs", GPUS_DOC),
                    "304": NOT_MODIFIED,
                    "404": _error("no GPU data for that node"),
                    "503": _error("store unavailable"),
                },
                [node],
                guard("/api/v1/nodes/x/gpus"),
            ),
            "/api/v1/workloads": _get(
                "Workload profiles: per-replica CPU and memory by workload revision",
                {
                    "200": _json("profiles", WORKLOADS_DOC),
                    "304": NOT_MODIFIED,
                    "404": _error("pod usage off or not polled yet"),
                    "503": _error("store unavailable"),
                },
                [
                    _param(
                        "namespace", "query", "only this namespace's workloads", {"type": "string"}
                    )
                ],
                guard("/api/v1/workloads"),
            ),
            "/api/v1/pods": _get(
                "Per-pod CPU and memory statistics (window and decaying history) and each "
                "workload's day of per-replica maxima, for the scheduler's peak model "
                "(docs/peak-model.md)",
                {
                    "200": _json("pod statistics", POD_STATS_DOC),
                    "304": NOT_MODIFIED,
                    "404": _error("pod usage off or not polled yet"),
                    "503": _error("store unavailable"),
                },
                [_param("namespace", "query", "only this namespace's pods", {"type": "string"})],
                guard("/api/v1/pods"),
            ),
            "/api/v1/workloads/{namespace}/{kind}/{name}": _get(
                "One workload's profile, all kept revisions",
                {
                    "200": _json("profile", WORKLOAD_DOC),
                    "304": NOT_MODIFIED,
                    "404": _error("no profile for that workload"),
                    "503": _error("store unavailable"),
                },
                [
                    _param("namespace", "path", "namespace", {"type": "string"}),
                    _param("kind", "path", "controller kind", WORKLOAD_DOC["properties"]["kind"]),
                    _param("name", "path", "workload name", {"type": "string"}),
                ],
                guard("/api/v1/workloads/x/Deployment/y"),
            ),
            "/api/v1/scheduler/decisions": _get(
                "The scheduler's latest decisions, asked at scheduler_url (docs/explain.md)",
                SCHEDULER_ANSWERS,
                [
                    *(
                        _param(name, "query", f"only this {name}", {"type": "string"})
                        for name in ("profile", "node", "namespace", "outcome")
                    ),
                    _param("limit", "query", "at most", {"type": "integer", "minimum": 1}),
                ],
                guard("/api/v1/scheduler/decisions"),
            ),
            "/api/v1/scheduler/decisions/{namespace}/{pod}": _get(
                "The scheduler's record of one pod's attempts, asked at scheduler_url",
                SCHEDULER_ANSWERS,
                [
                    _param("namespace", "path", "namespace", {"type": "string"}),
                    _param("pod", "path", "pod name", {"type": "string"}),
                ],
                guard("/api/v1/scheduler/decisions/x/y"),
            ),
            "/api/v1/rebalancer/status": _get(
                "The rebalancer's last round, asked at rebalancer_url (docs/rebalancer.md)",
                _rebalancer_answers("the rebalancer's status", REBALANCER_STATUS),
                guarded=guard("/api/v1/rebalancer/status"),
            ),
            "/api/v1/rebalancer/decisions": _get(
                "The rebalancer's latest decisions, asked at rebalancer_url",
                _rebalancer_answers("the rebalancer's decisions", REBALANCER_DECISIONS),
                [_param("limit", "query", "at most", {"type": "integer", "minimum": 0})],
                guard("/api/v1/rebalancer/decisions"),
            ),
            "/api/v1/status": _get(
                "Provider, store and poller leadership status",
                {"200": _json("status", STATUS_DOC)},
                guarded=guard("/api/v1/status"),
            ),
            "/healthz": _get(
                "Liveness: 503 only for a wedged poller",
                {
                    "200": _json("alive", {"type": "object"}),
                    "503": _json("wedged", {"type": "object"}),
                },
            ),
            "/readyz": _get(
                "Readiness with reasons",
                {"200": _json("ready", READY_DOC), "503": _json("not ready", READY_DOC)},
            ),
            "/metrics": _get("This process's own Prometheus metrics", {"200": _text("metrics")}),
            "/openapi.json": _get("This document", {"200": _json("OpenAPI", {"type": "object"})}),
        },
    }
    if guarded:
        doc["security"] = [{"bearer": []}]
    return doc

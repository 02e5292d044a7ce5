"""Scheduler input fuzz (issue 12): malformed Pod and Node JSON through resources.pod_info and
resources.node_info. A bad object must parse or be refused with a ValueError (QuantityError is
one), which the cache turns into a logged, skipped object; anything else escapes the cache's
handlers. Bounded for `make test`; `make fuzz` sets BALLAST_FUZZ_EXAMPLES higher.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.framework import resources

EXAMPLES = int(os.environ.get("BALLAST_FUZZ_EXAMPLES", "25")) * 8
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

POD = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "a"},
             "creationTimestamp": "2024-05-01T10:00:00Z"},
    "spec": {"schedulerName": "ballast", "priority": 0, "containers": [
        {"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}},
         "ports": [{"hostPort": 80}]}], "tolerations": [], "affinity": {}},
    "status": {"phase": "Pending"},
}  # fmt: skip
NODE = {
    "metadata": {"name": "n", "labels": {"zone": "a"}},
    "spec": {"taints": []},
    "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
               "conditions": [{"type": "Ready", "status": "True"}]},
}  # fmt: skip

QUANTITIES = st.one_of(
    st.from_regex(
        r"\A-?[0-9]{1,400}(\.[0-9]{0,20})?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei|e[0-9]{1,3})?\Z"
    ),
    st.text(max_size=12),  # unknown units, junk
)
JUNK: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | QUANTITIES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in `doc` a value can be swapped for junk."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += paths(value, (*prefix, i))
    return out


def replaced(doc: dict, path: tuple, value: Any) -> dict:
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def refused_or_parsed(parse, obj: dict) -> None:  # noqa: ANN001
    try:
        parse(obj)
    except ValueError:
        pass  # refused: the cache logs and skips it (cache._parse)


@FUZZ
@given(data=st.data())
def test_malformed_pods_are_parsed_or_refused(data):
    path = data.draw(st.sampled_from(paths(POD)))
    refused_or_parsed(resources.pod_info, replaced(POD, path, data.draw(JUNK)))


@FUZZ
@given(data=st.data())
def test_malformed_nodes_are_parsed_or_refused(data):
    path = data.draw(st.sampled_from(paths(NODE)))
    refused_or_parsed(resources.node_info, replaced(NODE, path, data.draw(JUNK)))


@FUZZ
@given(cpu=QUANTITIES, memory=QUANTITIES)
def test_any_quantity_string_is_parsed_or_refused(cpu, memory):
    pod = replaced(POD, ("spec", "containers", 0, "resources", "requests"),
                   {"cpu": cpu, "memory": memory})  # fmt: skip
    refused_or_parsed(resources.pod_info, pod)
    node = replaced(NODE, ("status", "allocatable"), {"cpu": cpu, "memory": memory})
    refused_or_parsed(resources.node_info, node)


def test_ten_thousand_tolerations_and_deep_affinity_parse():
    term = {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"] * 100}]}
    deep: dict = {"x": {}}
    cursor = deep
    for _ in range(500):
        cursor["x"] = {"x": {}}
        cursor = cursor["x"]
    pod = replaced(POD, ("spec", "tolerations"),
                   [{"key": f"k{i}", "operator": "Exists"} for i in range(10_000)])  # fmt: skip
    pod = replaced(pod, ("spec", "affinity"), {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                         {"nodeSelectorTerms": [term] * 100}},
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [deep]},
    })  # fmt: skip
    info = resources.pod_info(pod)
    assert info.has_pod_affinity and len(info.raw["spec"]["tolerations"]) == 10_000

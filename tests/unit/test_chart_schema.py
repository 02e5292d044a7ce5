"""values.schema.json's `rebalancer.config` is the rebalancer's own settings: the keys it accepts
are the keys scheduler/rebalancer/settings.py reads, so a setting added there and not here (or
a typo here) fails this test instead of `helm install` refusing a valid value; and the round
interval the schema takes is the one the settings take."""

from __future__ import annotations

import json
import re

import pytest

from sandbox.peers.helm import chart
from scheduler.framework import fields
from scheduler.framework.errors import ConfigError
from scheduler.rebalancer import settings

# Set by the chart itself: dryRun from rebalancer.dryRun, the Lease's name from the release.
CHART_SET = {"dryRun", "leaseName"}


def schema() -> dict:
    return json.loads((chart.CHART / "values.schema.json").read_text())


def read_keys(monkeypatch, section: str) -> set[str]:
    """The keys parse_section reads at `section` (every key is read, with its default)."""
    seen: set[str] = set()
    real = fields.Fields.raw

    def raw(self, key, default=None):
        if self.where == section:
            seen.add(key)
        return real(self, key, default)

    monkeypatch.setattr(fields.Fields, "raw", raw)
    settings.parse_section({})
    return seen


def test_rebalancer_config_schema_has_the_settings_keys(monkeypatch):
    config = schema()["properties"]["rebalancer"]["properties"]["config"]
    assert config["additionalProperties"] is False
    assert set(config["properties"]) == read_keys(monkeypatch, "rebalancer") - CHART_SET


@pytest.mark.parametrize("section,path", [("rebalancer.gpu", ["gpu"])])
def test_nested_sections_too(monkeypatch, section, path):
    node = schema()["properties"]["rebalancer"]["properties"]["config"]
    for part in path:
        node = node["properties"][part]
    assert node["additionalProperties"] is False
    assert set(node["properties"]) == read_keys(monkeypatch, section)


def test_every_part_takes_the_placement_knobs():
    knobs = {"nodeSelector", "tolerations", "affinity", "topologySpreadConstraints",
             "podAnnotations", "extraArgs", "extraVolumes", "extraVolumeMounts",
             "imagePullSecrets"}  # fmt: skip
    props = schema()["properties"]
    for part in ("watcher", "redis", "scheduler", "rebalancer"):
        assert knobs <= set(props[part]["properties"]), part


def schema_accepts(prop: dict, value: object) -> bool:
    """The keywords `rebalancer.config.interval` uses (type, exclusiveMinimum for numbers,
    pattern for strings), as JSON Schema applies each to its own type."""
    if isinstance(value, str):
        return "string" in prop["type"] and re.search(prop["pattern"], value) is not None
    return "number" in prop["type"] and value > prop["exclusiveMinimum"]


@pytest.mark.parametrize(
    "value", [10, 0.5, 0, -1, "10s", "1m30s", "500ms", "0.5s", "1m0s", "0s", "0m0s", "0.0s", "-1s",
              "10", ""],
)  # fmt: skip
def test_the_round_interval_the_schema_takes_is_the_one_the_settings_take(value):
    prop = schema()["properties"]["rebalancer"]["properties"]["config"]["properties"]["interval"]
    try:
        settings.parse_section({"interval": value})
        taken = True
    except ConfigError:
        taken = False
    assert schema_accepts(prop, value) == taken

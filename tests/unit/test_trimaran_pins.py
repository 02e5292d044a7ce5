"""The Trimaran pin in sandbox/cluster/versions.py and sandbox/peers/trimaran/go.mod must agree."""

from __future__ import annotations

import pytest

from sandbox.cluster import build, versions
from sandbox.peers import trimaran


def _go_mod() -> str:
    return (build.TRIMARAN_DIR / "go.mod").read_text()


def test_trimaran_go_mod_matches_the_pins():
    assert versions.trimaran_go_mod_mismatches(_go_mod()) == []


def test_a_drifted_trimaran_go_mod_is_reported():
    plugins = f"v{versions.SCHEDULER_PLUGINS_VERSION}"
    kubernetes = f"v{versions.KUBERNETES_VERSION}"
    drifted = _go_mod().replace(f"scheduler-plugins {plugins}", "scheduler-plugins v0.1.0")
    drifted = drifted.replace(f"k8s.io/kubernetes {kubernetes}", "k8s.io/kubernetes v1.1.0")
    assert versions.trimaran_go_mod_mismatches(drifted) == [
        f"k8s.io/kubernetes is replaced with v1.1.0, pinned {kubernetes}",
        f"sigs.k8s.io/scheduler-plugins is v0.1.0, pinned {plugins}",
    ]
    lines = _go_mod().splitlines()
    unreplaced = "\n".join(x for x in lines if not x.strip().startswith("k8s.io/kubernetes =>"))
    problems = versions.trimaran_go_mod_mismatches(unreplaced)
    assert "k8s.io/kubernetes is not replaced with the pinned release" in problems


def test_the_binary_name_carries_the_plugins_pin():
    assert versions.SCHEDULER_PLUGINS_VERSION in versions.trimaran_binary()
    assert versions.trimaran_binary() in build.wanted(with_trimaran=True)
    assert versions.trimaran_binary() not in build.wanted(with_kube_scheduler=True)


def test_profiles_follow_the_plugins_readmes():
    tlp = trimaran.profile("TargetLoadPacking", "http://w:2020", "t", {"targetUtilization": 50})
    assert tlp["plugins"]["score"] == {
        "enabled": [{"name": "TargetLoadPacking"}],
        "disabled": [{"name": "NodeResourcesBalancedAllocation"}, {"name": "NodeResourcesFit"}],
    }
    assert tlp["pluginConfig"] == [
        {
            "name": "TargetLoadPacking",
            "args": {"targetUtilization": 50, "watcherAddress": "http://w:2020"},
        }
    ]
    lvrb = trimaran.profile("LoadVariationRiskBalancing", "http://w:2020", "t")
    assert lvrb["plugins"]["score"] == {"enabled": [{"name": "LoadVariationRiskBalancing"}]}
    with pytest.raises(ValueError, match="unknown Trimaran plugin"):
        trimaran.profile("Peaks", "http://w:2020", "t")

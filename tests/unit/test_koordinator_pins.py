"""The Koordinator pin and its go.mod agree; its configurations hold what it needs."""

from __future__ import annotations

from sandbox.cluster import versions
from sandbox.peers import koordinator
from sandbox.peers.koordinator import descheduler, scheduler


def _go_mod() -> str:
    return (koordinator.MODULE_DIR / "go.mod").read_text()


def test_koordinator_go_mod_matches_the_pin():
    assert versions.koordinator_go_mod_mismatches(_go_mod()) == []


def test_a_drifted_koordinator_go_mod_is_reported():
    pinned = f"v{versions.KOORDINATOR_VERSION}"
    drifted = _go_mod().replace(
        f"koordinator-sh/koordinator {pinned}", "koordinator-sh/koordinator v1.6.0"
    )
    assert versions.koordinator_go_mod_mismatches(drifted) == [
        f"github.com/koordinator-sh/koordinator is v1.6.0, pinned {pinned}"
    ]
    lines = _go_mod().splitlines()
    stripped = "\n".join(
        x for x in lines if "k8s.io/client-go =>" not in x and "cmd/koord-descheduler" not in x
    )
    assert versions.koordinator_go_mod_mismatches(stripped) == [
        "no `tool github.com/koordinator-sh/koordinator/cmd/koord-descheduler` line",
        "k8s.io/client-go is not replaced (copy koordinator's replace block)",
    ]


def test_the_binaries_carry_the_pin():
    for name in (versions.koord_scheduler_binary(), versions.koord_descheduler_binary()):
        assert name.endswith(f"-{versions.KOORDINATOR_VERSION}")
    assert koordinator.crd_dir().name == f"koordinator-crds-{versions.KOORDINATOR_VERSION}"


def test_the_scheduler_profile_enables_reservation_wherever_it_takes_part():
    plugins = scheduler.profile("koord", {"usageThresholds": {"cpu": 70}})["plugins"]
    for point in ("preFilter", "filter", "postFilter", "preScore", "score", "preBind", "bind"):
        assert {"name": "Reservation"} in [
            {"name": p["name"]} for p in plugins[point]["enabled"]
        ], point
    assert plugins["bind"]["enabled"][-1] == {"name": "DefaultBinder"}
    assert {"name": "LoadAwareScheduling", "weight": 1} in plugins["score"]["enabled"]
    args = scheduler.profile("koord")["pluginConfig"][0]
    assert args["args"]["kind"] == "LoadAwareSchedulingArgs"
    assert "usageThresholds" not in args["args"]  # the plugin's own defaults


def test_the_descheduler_config_evicts_through_the_eviction_api_only():
    doc = descheduler.config("/k", {"cpu": 45}, {"cpu": 75}, abnormalities=2, namespaces=["t"])
    (profile,) = doc["profiles"]
    assert profile["plugins"]["evict"]["enabled"] == [{"name": "DefaultEvictor"}]
    assert profile["plugins"]["balance"]["enabled"] == [{"name": "LowNodeLoad"}]
    args = profile["pluginConfig"][1]["args"]
    # all three, or the ones left out are zero
    assert args["anomalyCondition"] == {
        "timeout": "60s",
        "consecutiveAbnormalities": 2,
        "consecutiveNormalities": 3,
    }
    assert args["evictableNamespaces"] == {"include": ["t"]}
    assert doc["clientConnection"]["kubeconfig"] == "/k"


def test_the_migration_config_evicts_and_filters_through_the_migration_controller():
    migration = descheduler.migration_args(descheduler.EVICT_DIRECTLY, ["t"], 6, 5)
    doc = descheduler.config("/k", {"cpu": 45}, {"cpu": 75}, migration=migration)
    (profile,) = doc["profiles"]
    for point in ("evict", "filter"):
        assert profile["plugins"][point] == {
            "disabled": [{"name": "*"}],
            "enabled": [{"name": "MigrationController"}],
        }
    args = profile["pluginConfig"][0]
    assert args["name"] == "MigrationController"
    assert args["args"]["kind"] == "MigrationControllerArgs"
    assert args["args"]["defaultJobMode"] == "EvictDirectly"
    assert args["args"]["namespaces"] == {"include": ["t"]}
    assert args["args"]["defaultJobTTL"] == "6s"
    assert args["args"]["objectLimiters"] == {"workload": {"duration": "5s"}}
    # Left out: the controller's own defaults (5 minutes each)
    plain = descheduler.migration_args()
    assert "defaultJobTTL" not in plain and "objectLimiters" not in plain


def test_jobs_are_counted_by_phase_and_reason():
    jobs = [
        {"status": {"phase": "Succeeded"}},
        {"status": {"phase": "Failed", "reason": "Timeout"}},
        {"status": {"phase": "Succeeded", "reason": ""}},
        {"spec": {}},  # not yet looked at
    ]
    assert descheduler.job_phases(jobs) == {"Failed Timeout": 1, "Pending": 1, "Succeeded": 2}

import pytest
import yaml

from scheduler.config import registry
from scheduler.config.loader import DEFAULT_FILTERS, load_config, parse_config
from scheduler.framework.errors import ConfigError
from scheduler.framework.fields import parse_duration


def refused(doc, message):
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    assert str(err.value) == message


def test_empty_config_gives_one_ballast_profile():
    cfg = parse_config(None)
    assert [p.scheduler_name for p in cfg.profiles] == ["ballast"]
    profile = cfg.profiles[0]
    assert profile.filters == [
        "NodeUnschedulable",
        "NodeReady",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ]
    assert [(r.name, r.weight) for r in profile.scores] == [
        ("TargetLoadPacking", 1),
        ("NodeAffinity", 2),
        ("TaintToleration", 3),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
    ]
    assert profile.args["TargetLoadPacking"].target_utilization == 40
    assert cfg.parallelism == 16 and cfg.percentage_of_nodes_to_score == 0
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        True,
        15.0,
        10.0,
        2.0,
    )


FULL = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
watcherAddress: http://watcher:2020/
percentageOfNodesToScore: 50
parallelism: 4
leaderElection:
  leaderElect: false
  leaseDuration: 1m
  renewDeadline: 30s
  retryPeriod: 500ms
  resourceName: sched
  resourceNamespace: ballast
profiles:
- schedulerName: packer
  plugins:
    filter:
      enabled: [{name: LoadThreshold}]
      disabled: [{name: NodeReady}]
    score:
      enabled: [{name: TargetLoadPacking, weight: 5}, {name: MetricScore, weight: 2}]
      disabled: [{name: TaintToleration}]
  pluginConfig:
  - name: TargetLoadPacking
    args: {targetUtilization: 70, defaultRequests: {cpu: 500m}, defaultRequestsMultiplier: "2"}
  - name: MetricScore
    args: {metric: net_rx, statistic: p95}
- schedulerName: risk
  plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: LoadVariationRiskBalancing}]
"""


def test_full_config(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(FULL)
    cfg = load_config(path)
    assert cfg.watcher_address == "http://watcher:2020"
    assert (cfg.percentage_of_nodes_to_score, cfg.parallelism) == (50, 4)
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        False,
        60.0,
        30.0,
        0.5,
    )
    assert (le.resource_name, le.resource_namespace) == ("sched", "ballast")
    packer, risk = cfg.profiles
    assert "NodeReady" not in packer.filters and packer.filters[-1] == "LoadThreshold"
    assert [(r.name, r.weight) for r in packer.scores] == [
        ("TargetLoadPacking", 5),
        ("NodeAffinity", 2),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("MetricScore", 2),
    ]
    tlp = packer.args["TargetLoadPacking"]
    assert (tlp.target_utilization, tlp.default_requests_cpu_m) == (70, 500)
    assert tlp.default_requests_multiplier == 2.0
    assert packer.args["MetricScore"].metric == "net_rx"
    assert [(r.name, r.weight) for r in risk.scores] == [("LoadVariationRiskBalancing", 1)]
    assert risk.filters == list(DEFAULT_FILTERS)


def test_watcher_address_from_trimaran_args():
    doc = {
        "profiles": [
            {
                "pluginConfig": [
                    {"name": "TargetLoadPacking", "args": {"watcherAddress": "http://lw:2020"}}
                ]
            }
        ]
    }
    assert parse_config(doc).watcher_address == "http://lw:2020"


@pytest.mark.parametrize(
    "doc,message",
    [
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {"name": "NodeAffinity"},
                            {"name": "TargetLoadPacking", "args": {"targetUtilization": 140}},
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[1].args.targetUtilization: must be 1..100, got 140",
        ),
        ({"watcherAdress": "http://x"}, "watcherAdress: unknown field"),
        (
            {"watcherAddress": "watcher:2020"},
            "watcherAddress: expected an http(s) URL, got 'watcher:2020'",
        ),
        ({"parallelism": 0}, "parallelism: must be 1..1024, got 0"),
        (
            {"percentageOfNodesToScore": "half"},
            "percentageOfNodesToScore: expected an integer, got 'half'",
        ),
        ({"profiles": {"schedulerName": "x"}}, "profiles: expected a list, got dict"),
        (
            {"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]},
            "profiles[1].schedulerName: duplicate profile 'a'",
        ),
        (
            {"profiles": [{"plugins": {"score": {"enabled": [{"name": "Nope"}]}}}]},
            "profiles[0].plugins.score.enabled[0].name: unknown plugin 'Nope' (known: "
            + ", ".join(registry.names())
            + ")",
        ),
        (
            {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "TargetLoadPacking"}]}}}]},
            "profiles[0].plugins.filter.enabled[0].name: TargetLoadPacking is not a filter plugin",
        ),
        (
            {
                "profiles": [
                    {"plugins": {"score": {"enabled": [{"name": "MetricScore", "weight": 101}]}}}
                ]
            },
            "profiles[0].plugins.score.enabled[0].weight: must be 0..100, got 101",
        ),
        (
            {"profiles": [{"plugins": {"preBind": {}}}]},
            "profiles[0].plugins.preBind: unknown field",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "NodeReady", "args": {"x": 1}}]}]},
            "profiles[0].pluginConfig[0].args.x: unknown field",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "LoadVariationRiskBalancing",
                                "args": {"metricProvider": {"type": "Prometheus"}},
                            }
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.metricProvider: not supported: point "
            "watcherAddress at a watcher",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "TargetLoadPacking",
                                "args": {"defaultRequests": {"cpu": "lots"}},
                            }
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.defaultRequests.cpu: not a quantity: 'lots'",
        ),
        (
            {
                "profiles": [
                    {"pluginConfig": [{"name": "MetricScore", "args": {"statistic": "max"}}]}
                ]
            },
            "profiles[0].pluginConfig[0].args.statistic: must be one of avg, latest, p95, "
            "got 'max'",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "LowRiskOverCommitment",
                                "args": {"riskLimitWeights": {"cpu": 2}},
                            }
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.riskLimitWeights.cpu: must be 0..1, got 2",
        ),
        (
            {"leaderElection": {"leaseDuration": "10s", "renewDeadline": "15s"}},
            "leaderElection.renewDeadline: must be less than leaseDuration",
        ),
        (
            {"leaderElection": {"retryPeriod": "soon"}},
            "leaderElection.retryPeriod: expected a duration like 15s, got 'soon'",
        ),
        (
            {"kind": "Deployment"},
            "kind: must be one of KubeSchedulerConfiguration, got 'Deployment'",
        ),
        ([1, 2], "config: expected a mapping, got list"),
        (
            {"profiles": [{}], "watcherAddress": "", "extra": {}, "parallelism": 2},
            "extra: unknown field",
        ),
        (
            {
                "profiles": [
                    {
                        "schedulerName": "a",
                        "pluginConfig": [
                            {"name": "TargetLoadPacking", "args": {"watcherAddress": "http://one"}}
                        ],
                    },
                    {
                        "schedulerName": "b",
                        "pluginConfig": [
                            {"name": "TargetLoadPacking", "args": {"watcherAddress": "http://two"}}
                        ],
                    },
                ]
            },
            "watcherAddress: plugin args name different watchers (http://one, http://two); "
            "set one top-level watcherAddress",
        ),
    ],
)
def test_wrong_config_names_the_field(doc, message):
    refused(doc, message)


def test_unreadable_and_invalid_yaml_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_durations():
    assert parse_duration("1m30s", "x") == 90.0
    assert parse_duration("250ms", "x") == 0.25
    assert parse_duration(3, "x") == 3.0
    with pytest.raises(ConfigError):
        parse_duration("5 minutes", "x")


def test_multipoint_enables_every_point_and_star_disables_defaults():
    doc = yaml.safe_load(
        """
profiles:
- plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: TaintToleration, weight: 4}]
"""
    )
    profile = parse_config(doc).profiles[0]
    assert profile.filters == ["TaintToleration"]
    assert [(r.name, r.weight) for r in profile.scores] == [("TaintToleration", 4)]

"""DefaultPreemption's pure parts: victims per node, PDB accounting, node order, the trial."""

from __future__ import annotations

import pytest

from scheduler.config.loader import parse_config
from scheduler.framework import CPU, UNRESOLVABLE_NODES, CycleState, PodInfo, TrialEdit, snapshot_of
from scheduler.framework.errors import ConfigError
from scheduler.framework.fields import Fields
from scheduler.framework.profile import Profile
from scheduler.plugins import default_preemption as dp
from scheduler.plugins import inter_pod_affinity, node_resources_fit, node_unschedulable
from tests.unit.plugin_helpers import container, make_node, make_pod


def pod(
    name: str, cpu: str, priority: int = 0, start: str | None = None, labels=None, **kw
) -> PodInfo:
    p = make_pod(name, [container(cpu=cpu)], priority=priority, **kw)
    p.labels = dict(labels or {})
    if start:
        p.raw["status"] = {"startTime": start}
    return p


class Handle:
    def __init__(self, profile: Profile, nominated: dict[str, list[PodInfo]] | None = None):
        self.profile = profile
        self.nominated = nominated or {}
        self.nominations: dict[str, str] = {}

    def fits(self, pod, node, snap):
        return self.profile.fits(pod, node, snap, self._others(pod, node))

    def passes(self, pod, node, snap):
        return self.profile.passes(pod, node, snap, self._others(pod, node))

    def rules_out(self, pod, node, snap, added=(), taken=()):
        return self.profile.rules_out(pod, node, snap, added, taken)

    def _others(self, pod, node):
        return [p for p in self.nominated.get(node.name, []) if p.priority >= pod.priority]

    def by_requests(self, pod, node, snap):
        return not self._others(pod, node) and self.profile.by_requests(pod, node, snap)

    def reprieve(self, pod, node, snap, order):
        return self.profile.reprieve(pod, node, snap, order)

    def nominated_node(self, pod):
        return self.nominations.get(pod.uid, "")


class NeverSure(Handle):
    """Never judges from the sums: every trial edits the node (the way before the shortcuts)."""

    def rules_out(self, pod, node, snap, added=(), taken=()):
        return False

    def by_requests(self, pod, node, snap):
        return False


def profile() -> Profile:
    return Profile("ballast", [node_unschedulable.Plugin(), node_resources_fit.Plugin()], [])


def run(preemptor, nodes, placed, handle=None, plugin=None):
    snap = snapshot_of(nodes, placed, now=1_000_000.0)
    prof = profile()
    state = CycleState()
    feasible, reasons = prof.filter(preemptor, list(snap.nodes.values()), snap, state)
    assert not feasible
    plugin = plugin or dp.Plugin(dp.Args(load_aware_tie_break=False))
    return plugin.post_filter(state, preemptor, snap, reasons, handle or Handle(prof)), snap


def test_minimal_victims_reprieve_the_most_important_first():
    node = make_node("n1", cpu="4")
    low = [pod("a", "1", 1), pod("b", "1", 2), pod("c", "2", 3)]
    result, snap = run(pod("hi", "2", 10), [node], [(p, "n1") for p in low])
    # c (priority 3, 2 cpu) is reprieved first and then nothing else fits beside it.
    assert result.nominated_node == "n1"
    assert [v.name for v in result.victims] == ["b", "a"]
    # the trial left the cache's node and index as they were
    assert snap.nodes["n1"].requested[CPU] == 4000
    assert set(snap.cluster.placed) == {"uid-a", "uid-b", "uid-c"}


def test_equal_or_higher_priority_is_never_a_victim():
    node = make_node("n1", cpu="2")
    result, _ = run(pod("p", "2", 5), [node], [(pod("same", "2", 5), "n1")])
    assert not result.nominated_node
    assert result.clear
    assert "1 No preemption victims found for incoming pod" in result.message
    assert result.message.startswith("preemption: 0/1 nodes are available")


def test_system_critical_pods_of_kube_system_are_protected():
    critical = pod("dns", "2", dp.SYSTEM_CRITICAL_PRIORITY)
    critical.namespace = "kube-system"
    assert not dp.may_preempt(critical, pod("p", "1", dp.SYSTEM_CRITICAL_PRIORITY + 1000))
    elsewhere = pod("x", "2", dp.SYSTEM_CRITICAL_PRIORITY)
    assert dp.may_preempt(elsewhere, pod("p", "1", dp.SYSTEM_CRITICAL_PRIORITY + 1000))


def test_preemption_policy_never_waits():
    node = make_node("n1", cpu="1")
    result, _ = run(pod("p", "1", 10, preemptionPolicy="Never"), [node], [(pod("v", "1"), "n1")])
    assert not result.nominated_node and not result.clear
    assert result.message == "preemption: not eligible due to preemptionPolicy=Never."


def test_unresolvable_nodes_are_not_candidates():
    cordoned = make_node("n1", cpu="1", unschedulable=True)
    result, _ = run(pod("p", "1", 10), [cordoned], [(pod("v", "1"), "n1")])
    assert not result.nominated_node
    assert "1 Preemption is not helpful for scheduling" in result.message


def test_terminating_victims_on_the_nominated_node_stop_a_second_preemption():
    node = make_node("n1", cpu="1")
    victim = pod("v", "1")
    victim.raw["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    victim.raw["status"] = {
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ]
    }
    preemptor = pod("p", "1", 10)
    handle = Handle(profile())
    handle.nominations[preemptor.uid] = "n1"
    result, _ = run(preemptor, [node], [(victim, "n1")], handle)
    assert result.message == "preemption: " + dp.TERMINATING


def test_nominated_pod_of_higher_priority_keeps_its_room():
    node = make_node("n1", cpu="2")
    nominated = pod("nom", "1", 20)
    handle = Handle(profile(), {"n1": [nominated]})
    # 2 cpu node, 1 cpu victim, 1 cpu nominated: a 2 cpu preemptor cannot fit even alone.
    result, _ = run(pod("p", "2", 10), [node], [(pod("v", "1"), "n1")], handle)
    assert not result.nominated_node


def _pdb(allowed: int, labels: dict[str, str], disrupted: dict | None = None) -> dict:
    return {
        "metadata": {"name": "pdb", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted or {}},
    }


def test_pdb_budget_is_spent_in_order():
    a, b, c = (pod(n, "1", labels={"app": "x"}) for n in "abc")
    violating, fine = dp.split_by_pdb([a, b, c], [_pdb(1, {"app": "x"}, {"c": "t"})])
    assert [p.name for p in fine] == ["a", "c"]  # c is already disrupted: spends nothing
    assert [p.name for p in violating] == ["b"]
    empty = {"metadata": {"namespace": "ns"}, "spec": {"selector": {}}, "status": {}}
    assert dp.split_by_pdb([a], [empty]) == ([], [a])  # an empty selector matches nothing


def test_pdb_steers_the_node():
    n1, n2 = make_node("n1", cpu="1"), make_node("n2", cpu="1")
    guarded = pod("g", "1", 1, labels={"app": "db"})
    free = pod("f", "1", 5)  # higher priority, but no budget stands in its way
    snap_pdbs = [_pdb(0, {"app": "db"})]
    plugin = dp.Plugin(dp.Args(load_aware_tie_break=False))
    snap = snapshot_of([n1, n2], [(guarded, "n1"), (free, "n2")], now=1.0)
    snap.cluster.objects["poddisruptionbudgets"] = {"ns/pdb": snap_pdbs[0]}
    prof = profile()
    state = CycleState()
    preemptor = pod("p", "1", 10)
    _, reasons = prof.filter(preemptor, list(snap.nodes.values()), snap, state)
    result = plugin.post_filter(state, preemptor, snap, reasons, Handle(prof))
    assert result.nominated_node == "n2"


def _cand(node, prios, starts=None, pdb=0, load=0.0):
    victims = tuple(pod(f"{node}-{i}", "1", p) for i, p in enumerate(prios))
    starts = tuple(starts or [100.0] * len(prios))
    return dp.Candidate(node, victims, pdb, starts, load)


@pytest.mark.parametrize(
    ("a", "b", "winner"),
    [
        (_cand("a", [1], pdb=1), _cand("b", [9]), "b"),  # fewest PDB violations
        (_cand("a", [5, 1]), _cand("b", [3, 3]), "b"),  # lowest highest priority
        (_cand("a", [3, 2]), _cand("b", [3, 1]), "b"),  # smallest priority sum
        (_cand("a", [3, 0, 0]), _cand("b", [3, 0]), "b"),  # sum counts MaxInt32+1 per pod
        (_cand("a", [3], [100.0]), _cand("b", [3], [200.0]), "b"),  # latest start
        (_cand("a", [3], load=70.0), _cand("b", [3], load=20.0), "b"),  # load tie-break
    ],
)
def test_node_order(a, b, winner):
    assert dp.pick([a, b]).node == winner
    assert dp.pick([b, a]).node == winner


def test_load_is_asked_only_of_candidates_tied_on_upstreams_criteria():
    loads = {"a": 70.0, "b": 20.0, "c": 5.0, "d": 1.0}
    asked = []

    def load_of(c):
        asked.append(c.node)
        return loads[c.node]

    a, b = _cand("a", [3], [100.0]), _cand("b", [3], [100.0])
    c, d = _cand("c", [3, 1], [100.0, 1.0]), _cand("d", [3], [50.0])  # lose before the load
    assert dp.pick([c, a, d, b], True, load_of).node == "b"
    assert sorted(asked) == ["a", "b"]
    eager = [dp.Candidate(x.node, x.victims, 0, x.start_times, loads[x.node]) for x in (a, b, c, d)]
    assert dp.pick(eager).node == "b"  # what weighing every candidate picks
    asked.clear()
    assert dp.pick([c, _cand("e", [3], [300.0]), a], True, load_of).node == "e"
    assert asked == []  # a single best: no load asked at all


def test_tied_candidates_go_to_the_node_coolest_after_eviction():
    # One priority-1 victim of 3 CPU on each node, started alike; n1 also keeps a 1-CPU pod of
    # higher priority, so with its victim gone it is still a quarter used, n2 is empty.
    def placed():
        keeper = pod("keeper", "1", 20, start="2024-01-01T00:00:00Z")
        low = [pod(f"low{i}", "3", 1, start="2024-01-01T00:00:00Z") for i in (1, 2)]
        return [(keeper, "n1"), (low[0], "n1"), (low[1], "n2")]

    nodes = [make_node("n1", cpu="4"), make_node("n2", cpu="4")]
    aware, snap = run(pod("hi", "3", 10), nodes, placed(), plugin=dp.Plugin(dp.Args()))
    assert aware.nominated_node == "n2" and [v.name for v in aware.victims] == ["low2"]
    assert snap.nodes["n1"].requested[CPU] == 4000  # the weighing put n1's victim back
    nodes = [make_node("n1", cpu="4"), make_node("n2", cpu="4")]
    by_name, _ = run(pod("hi", "3", 10), nodes, placed())
    assert by_name.nominated_node == "n1"


def test_load_tie_break_off_falls_back_to_the_name():
    a, b = _cand("a", [3], load=70.0), _cand("b", [3], load=20.0)
    assert dp.pick([b, a], load_aware=False).node == "a"


def test_latest_start_uses_the_highest_priority_victims_only():
    # a: its priority-3 victim started at 300, b: at 200; the priority-1 victims do not count.
    a = _cand("a", [3, 1], [300.0, 10.0])
    b = _cand("b", [3, 1], [200.0, 900.0])
    assert dp.pick([a, b]).node == "a"


def test_num_candidates():
    args = dp.Args()
    assert dp.num_candidates(50, args) == 50
    assert dp.num_candidates(5000, args) == 500
    assert dp.num_candidates(5000, dp.Args(10, 0)) == 500
    assert dp.num_candidates(5000, dp.Args(1, 10)) == 50


def test_trial_edit_restores_on_error():
    node = make_node("n1", cpu="4")
    a, b = pod("a", "1"), pod("b", "2")
    snap = snapshot_of([node], [(a, "n1")])
    with pytest.raises(RuntimeError), TrialEdit(snap, node) as trial:
        trial.remove(a)
        trial.add(b)
        trial.add(a)
        trial.remove(a)
        raise RuntimeError("boom")
    assert set(node.pods) == {"uid-a"} and node.requested[CPU] == 1000
    assert snap.cluster.placed == {"uid-a": "n1"}


def test_unresolvable_rejections_are_recorded():
    cordoned = make_node("n1", unschedulable=True)
    state = CycleState()
    profile().filter(pod("p", "1"), [cordoned], snapshot_of([cordoned]), state)
    assert state[UNRESOLVABLE_NODES] == {"n1"}


def test_config_post_filter_and_args():
    cfg = parse_config({})
    assert cfg.profiles[0].post_filters == ["DefaultPreemption"]
    off = {"plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}}
    assert parse_config({"profiles": [off]}).profiles[0].post_filters == []
    args = dp.parse_args(Fields({"minCandidateNodesAbsolute": 5, "loadAwareTieBreak": False}, ""))
    assert args == dp.Args(10, 5, False)
    with pytest.raises(ConfigError, match="must not both be 0"):
        dp.parse_args(
            Fields({"minCandidateNodesAbsolute": 0, "minCandidateNodesPercentage": 0}, "")
        )
    with pytest.raises(ConfigError, match="not a filter plugin"):
        parse_config(
            {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "DefaultPreemption"}]}}}]}
        )


class _Counting:
    """A PreFilter that counts its runs; `reads_pods` False declares it reads the pod only."""

    def __init__(self, name: str, reads_pods: bool, verdict=True) -> None:
        self.name = name
        self.runs = 0
        self.verdict = verdict
        if not reads_pods:
            self.pre_filter_reads_pods = False

    def pre_filter(self, state, pod, snap):
        self.runs += 1
        state[self.name] = self.runs
        return self.verdict

    def filter(self, state, pod, node, snap):
        assert self.name in state
        return dp.Status.success()


def test_trials_reuse_pod_only_prefilters_and_rerun_the_others():
    """Upstream runs PreFilter once and updates the pod-dependent state per moved pod; a trial
    here reuses the PreFilters that read the pod only and runs the others again."""
    only_pod, reads = _Counting("only-pod", False), _Counting("reads", True)
    prof = Profile("ballast", [only_pod, reads, node_resources_fit.Plugin()], [])
    node = make_node("n1", cpu="2")
    low = pod("low", "2")
    snap = snapshot_of([node], [(low, "n1")])
    high = pod("high", "2", priority=10)
    assert not prof.fits(high, node, snap).ok
    with TrialEdit(snap, node) as trial:
        trial.remove(low)
        assert prof.fits(high, node, snap).ok
    assert not prof.fits(high, node, snap).ok
    assert (only_pod.runs, reads.runs) == (1, 3)
    prof.fits(high, node, snapshot_of([node]))  # another cycle's snapshot: prepared again
    prof.fits(pod("other", "1"), node, snap)  # another pod: prepared again
    assert (only_pod.runs, reads.runs) == (3, 5)


def test_a_pod_only_prefilter_rejection_is_kept_on_every_trial():
    refusing = _Counting("refusing", False, dp.Status.reject("no", unresolvable=True))
    reads = _Counting("reads", True)
    prof = Profile("ballast", [refusing, reads], [])
    node = make_node("n1")
    snap, p = snapshot_of([node]), pod("p", "1")
    for _ in range(2):
        status = prof.fits(p, node, snap)
        assert not status.ok and status.reasons == ("no",) and status.unresolvable
    assert (refusing.runs, reads.runs) == (1, 0)


def test_trials_see_the_anti_affinity_of_the_pods_they_take_off():
    """InterPodAffinity reads placed pods: the victim whose anti-affinity keeps the preemptor
    out is found by the trial that takes it off."""
    term = {
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    nodes = [make_node(n, cpu="4", labels={"kubernetes.io/hostname": n}) for n in ("n1", "n2")]
    guard = pod("guard", "1", priority=1, affinity=anti, start="2026-01-01T00:00:00Z")
    busy = pod("busy", "4", priority=1)
    snap = snapshot_of(nodes, [(guard, "n1"), (busy, "n2")], now=1_000_000.0)
    prof = Profile(
        "ballast",
        [node_resources_fit.Plugin(), inter_pod_affinity.Plugin()],
        [],
    )
    web = pod("web", "1", priority=10, labels={"app": "web"})
    state = CycleState()
    feasible, reasons = prof.filter(web, list(snap.nodes.values()), snap, state)
    assert not feasible and reasons["n1"] == [inter_pod_affinity.REASON_EXISTING_ANTI_AFFINITY]
    plugin = dp.Plugin(dp.Args(load_aware_tie_break=False))
    result = plugin.post_filter(state, web, snap, reasons, Handle(prof))
    assert result.nominated_node == "n1" and [v.name for v in result.victims] == ["guard"]
    assert snap.cluster.anti_affinity_pods.keys() == {guard.uid}  # restored


def test_a_pod_larger_than_any_node_does_not_try_preemption():
    """Its NodeResourcesFit rejections are unresolvable (v1.34): no dry run, and the message
    says preemption is not helpful, as kube-scheduler's."""
    nodes = [make_node(f"n{i}", cpu="4") for i in range(3)]
    placed = [(pod(f"low{i}", "1"), f"n{i}") for i in range(3)]
    tries: list[str] = []

    class Counting(Handle):
        def fits(self, p, node, snap):
            tries.append(node.name)
            return super().fits(p, node, snap)

    result, _ = run(pod("huge", "9", priority=10), nodes, placed, Counting(profile()))
    assert not result.nominated_node and result.clear and tries == []
    assert result.message == "preemption: 0/3 nodes are available: 3 " + dp.NOT_HELPFUL + "."


def _random_node_with_pods(rng, i):
    node = make_node(
        f"n{i}", cpu=str(rng.randint(2, 4)), memory=f"{rng.randint(2, 8)}Gi", pods=rng.randint(2, 6)
    )
    placed = []
    for j in range(rng.randint(2, 5)):
        cpu, mem = f"{rng.choice([100, 500, 900, 1500])}m", f"{rng.choice([1, 2])}Gi"
        placed.append((pod_mem(f"p{i}-{j}", cpu, rng.randint(0, 5), mem), node.name))
    return node, placed


def pod_mem(name, cpu, priority, memory):
    return make_pod(name, [container(cpu=cpu, memory=memory)], priority=priority)


def test_rules_out_is_what_moving_the_pods_would_say():
    """NodeResourcesFit's `rejects_with` gives `filter`'s verdict on the node with pods put on
    and taken off, and the profile's `rules_out` is never True where `passes` would say yes;
    moves that are not what they say (a pod added twice, one taken that is not there) leave
    it unsure."""
    import random

    rng = random.Random(7)
    prof = Profile("ballast", [node_unschedulable.Plugin(), node_resources_fit.Plugin()], [])
    fit = prof.filters[1]
    said_no = 0
    for i in range(400):
        node = make_node(
            "n", cpu=str(rng.randint(1, 6)), memory=f"{rng.randint(1, 8)}Gi", pods=rng.randint(1, 5)
        )
        on = [pod_mem(f"on{j}", f"{rng.choice([100, 900, 1500])}m", 0, "1Gi") for j in range(3)]
        on = on[: rng.randint(0, 3)]
        snap = snapshot_of([node], [(p, "n") for p in on])
        added = [
            pod_mem(f"back{i}-{j}", f"{rng.choice([0, 300, 900, 2000])}m", 0, "1Gi")
            for j in range(rng.randint(0, 2))
        ]
        taken = rng.sample(on, rng.randint(0, len(on)))
        me = pod_mem(f"me{i}", f"{rng.choice([100, 1000, 2500])}m", 9, rng.choice(["1Gi", "3Gi"]))
        ruled = prof.rules_out(me, node, snap, added, taken)
        with TrialEdit(snap, node) as trial:
            for other in added:
                trial.add(other)
            for other in taken:
                trial.remove(other)
            passes = prof.passes(me, node, snap)
            rejected = not fit.filter(CycleState(), me, node, snap).ok
        assert fit.rejects_with(CycleState(), me, node, added, taken) == rejected
        assert not (ruled and passes)
        assert ruled == rejected  # the other filter never rejects here
        said_no += ruled
        if on:
            assert not prof.rules_out(me, node, snap, added=on[:1])  # already there
            gone = pod_mem("elsewhere", "9", 0, "1Gi")
            assert not prof.rules_out(me, node, snap, taken=[gone])  # not there
    assert 40 < said_no < 360  # both answers were exercised


@pytest.mark.parametrize("gpus", [False, True])
def test_reprieve_from_the_sums_is_the_trial_by_trial_reprieve(gpus):
    """NodeResourcesFit's one-pass `reprieve` (cpu and memory alone, or with an extended
    resource) keeps exactly the pods a trial keeps putting them back one by one, filter run
    after each; None where the pod fails with all of them gone. Pod slots count too."""
    import random

    rng = random.Random(11 + gpus)
    fit = node_resources_fit.Plugin()
    # two judges of the sums: the profile asks rules_out pod by pod instead
    twice = Profile("ballast", [fit, node_resources_fit.Plugin()], [])
    extra = {"example.com/gpu": str(rng.randint(0, 4))} if gpus else {}
    counted = {"none": 0, "all": 0, "some": 0}
    for i in range(500):
        gpu = {"example.com/gpu": str(rng.randint(0, 4))} if gpus else {}
        node = make_node(
            "n",
            cpu=str(rng.randint(1, 6)),
            memory=f"{rng.randint(1, 8)}Gi",
            pods=rng.randint(1, 6),
            **gpu,
        )
        on = []
        for j in range(rng.randint(0, 5)):
            asks = {"example.com/gpu": str(rng.randint(0, 2))} if gpus else {}
            cpu, mem = f"{rng.choice([0, 100, 900, 1500])}m", rng.choice(["0", "1Gi", "2Gi"])
            on.append(make_pod(f"on{j}", [container(cpu=cpu, memory=mem, requests=asks)]))
        snap = snapshot_of([node], [(p, "n") for p in on])
        order = rng.sample(on, len(on))
        wants = extra if rng.random() < 0.7 else {}
        cpu, mem = f"{rng.choice([100, 1000, 2500])}m", rng.choice(["1Gi", "3Gi"])
        me = make_pod(f"me{i}", [container(cpu=cpu, memory=mem, requests=wants)], priority=9)
        state = CycleState()
        fit.pre_filter(state, me, snap)
        got = fit.reprieve(state, me, node, order)
        with TrialEdit(snap, node) as trial:
            for other in order:
                trial.remove(other)
            if not fit.filter(state, me, node, snap).ok:
                expected = None
            else:
                expected = []
                for other in order:
                    trial.add(other)
                    if not fit.filter(state, me, node, snap).ok:
                        trial.remove(other)
                        expected.append(other)
        assert got == expected, (i, [p.requests for p in order], me.requests)
        assert twice.reprieve(me, node, snap, order) == expected
        counted["none" if got is None else "all" if got == order else "some"] += 1
    assert all(n > 20 for n in counted.values()), counted  # every kind of answer was exercised


def test_nodes_ruled_out_still_give_their_reasons():
    """A node the pod fails even with every lower-priority pod gone skips the trial; when no
    node is a candidate, the message still counts its reasons, as the trial gives them."""

    messages = []
    for handle_class in (Handle, NeverSure):
        nodes = [make_node(f"n{i}", cpu="4") for i in range(4)]
        placed = [(pod(f"keep{i}", "2", 20), f"n{i}") for i in range(4)]
        placed += [(pod(f"low{i}", "1", 1), f"n{i}") for i in range(4)]
        result, _ = run(pod("hi", "3", 10), nodes, placed, handle_class(profile()))
        assert not result.nominated_node and result.clear
        messages.append(result.message)
    assert messages[0] == messages[1]
    assert "4 Insufficient cpu" in messages[0]


def _rich_pod(rng, name, cpu, priority):
    """A pod that may carry what makes a trial's verdict depend on more than requests: a label
    others' anti-affinity names, a required anti-affinity of its own, a host port."""
    from scheduler.framework.resources import pod_info

    port = [{"containerPort": 80, "hostPort": 8080}] if rng.random() < 0.15 else []
    spec = {
        "priority": priority,
        "containers": [
            {"name": "c", "ports": port, "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
        ],
    }
    if rng.random() < 0.15:
        term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": HOSTNAME}
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    labels = {"app": "a"} if rng.random() < 0.3 else {}
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels}
    return pod_info({"metadata": meta, "spec": spec})


HOSTNAME = "kubernetes.io/hostname"


@pytest.mark.parametrize("kind", ["two filters", "default profile", "default, constrained pods"])
def test_shortcuts_pick_the_same_victims(kind):
    """The shortcuts (rules_out, by_requests) change no decision: the same nominated node and
    victims as a handle that is never sure (every victim taken off and put back on the node
    and judged by `passes`), on the default profile too, where pods with host ports and
    anti-affinity turn by_requests off."""
    import random

    from scheduler.config.profiles import build_profiles

    tried = fast = 0
    for round_ in range(60):
        answers = []
        for handle_class in (Handle, NeverSure):
            rng = random.Random(round_)  # the same cluster, built afresh for each handle
            nodes, placed = [], []
            for i in range(6):
                cpu = str(rng.randint(2, 4))
                node = make_node(f"n{i}", cpu=cpu, memory="16Gi", pods=rng.randint(2, 6))
                node.labels[HOSTNAME] = node.name
                nodes.append(node)
                for j in range(rng.randint(2, 5)):
                    cpu, prio = f"{rng.choice([100, 500, 900, 1500])}m", rng.randint(0, 5)
                    if kind == "default, constrained pods":
                        placed.append((_rich_pod(rng, f"p{i}-{j}", cpu, prio), node.name))
                    else:
                        placed.append((pod_mem(f"p{i}-{j}", cpu, prio, "1Gi"), node.name))
            cpu = f"{rng.choice([1500, 2000, 3000])}m"
            if kind == "default, constrained pods":
                me = _rich_pod(rng, f"me{round_}", cpu, 9)
            else:
                me = pod_mem(f"me{round_}", cpu, 9, "1Gi")
            snap = snapshot_of(nodes, placed, now=1_000_000.0)
            prof = (
                profile() if kind == "two filters" else build_profiles(parse_config({}))["ballast"]
            )
            state = CycleState()
            feasible, reasons = prof.filter(me, list(snap.nodes.values()), snap, state)
            if feasible:
                break
            handle = handle_class(prof)
            if handle_class is Handle:
                fast += any(handle.by_requests(me, n, snap) for n in nodes)
            plugin = dp.Plugin(dp.Args(), rng=random.Random(round_))
            got = plugin.post_filter(state, me, snap, reasons, handle)
            answers.append((got.nominated_node, [v.uid for v in got.victims or ()], got.message))
        if answers:
            tried += bool(answers[0][1])
            assert answers[0] == answers[1]
    assert tried > 25  # most rounds preempted
    if kind == "default, constrained pods":
        assert 0 < fast < tried  # by_requests both on and off
    else:
        assert fast > 25


def test_load_after_eviction_is_the_load_with_the_victims_taken_off():
    """Weighed without editing the node, the same number as with the victims off it, on
    stale data (blended with the allocation share) as on none."""
    from scheduler.plugins.helpers import loadview
    from tests.unit.plugin_helpers import snapshot, stats

    node = make_node("n1", cpu="4")
    victims = [pod("v1", "900m", 0), pod("v2", "1500m", 0)]
    keeper = pod("keeper", "500m", 5)
    for loads in (None, {"n1": {"cpu": stats(avg=60.0, state="stale", age=200, horizon=60)}}):
        snap = snapshot([node], loads)
        for p in (*victims, keeper):
            node.add_pod(p)
            snap.cluster.add_pod(p, "n1")
        cand = dp.Candidate("n1", tuple(victims), 0, (0.0, 0.0))
        weighed = dp.Plugin(dp.Args())._load_after(cand, snap)
        with TrialEdit(snap, node) as trial:
            for v in victims:
                trial.remove(v)
            off = loadview.usage(CycleState(), node, snap, CPU)
        assert node.requested[CPU] == 2900  # untouched
        assert off.avg > 0 and (off.weight == 0) == (loads is None)
        gone_m = sum(
            dp.estimate(v, snap.workloads, fallback=(dp._predicted_cpu_m(v), 0)).cpu_m
            for v in victims
        )
        assert weighed == max(0.0, off.avg - 100.0 * off.weight * gone_m / 4000)
        for p in (*victims, keeper):
            node.remove_pod(p)
            snap.cluster.remove_pod(p.uid)


def test_no_victims_are_chosen_before_the_budgets_are_listed():
    """The scheduler starts once nodes and pods are listed; PodDisruptionBudgets may come
    later. Preemption waits for them (retryably) instead of choosing as if there were none."""
    from scheduler.framework.clusterindex import PDBS

    nodes = [make_node("n1", cpu="1")]
    placed = [(pod("low", "1", 1), "n1")]
    snap = snapshot_of(nodes, placed, now=1_000_000.0)
    snap.cluster.synced.discard(PDBS)
    prof = profile()
    state = CycleState()
    hi = pod("hi", "1", 10)
    _, reasons = prof.filter(hi, list(snap.nodes.values()), snap, state)
    plugin = dp.Plugin(dp.Args(load_aware_tie_break=False))
    waiting = plugin.post_filter(state, hi, snap, reasons, Handle(prof))
    assert not waiting.nominated_node and not waiting.clear
    assert waiting.message == dp.MESSAGE_PREFIX + dp.PDBS_UNSYNCED
    snap.cluster.replace(PDBS, [])  # listed: none
    listed = plugin.post_filter(state, hi, snap, reasons, Handle(prof))
    assert listed.nominated_node == "n1" and [v.name for v in listed.victims] == ["low"]

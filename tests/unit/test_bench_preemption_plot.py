"""bench.scheduler.preemption_plot's reading of result files: rounds with both contenders'
preemption figures, Ballast's CPU split by thread adding up to its total."""

from bench.scheduler import preemption_plot


def _doc() -> dict:
    ballast = {
        "preemption": {
            "cpu_ms_per_preemptor": 15.0,
            "cpu_ms_per_preemptor_by_thread": {"scheduling-loop": 8.0, "reflector-pods": 3.0},
        }
    }
    kube = {"preemption": {"cpu_ms_per_preemptor": 20.0}}
    return {
        "workloads": [
            {
                "case": "SchedulingBasic",
                "per_round": [{"ballast": ballast, "kube-scheduler": kube}],
            },
            {
                "case": "PreemptionAsync",
                "per_round": [
                    {"ballast": ballast, "kube-scheduler": kube, "raw-bind": {"x": 1}},
                    {"ballast": {"preemption": None}, "kube-scheduler": kube},  # no figures
                ],
            },
        ]
    }


def test_rounds_of_the_preemption_workload_with_both_contenders() -> None:
    rounds = preemption_plot.rounds_of(_doc())
    assert len(rounds) == 1
    assert set(rounds[0]) == {"ballast", "kube-scheduler"}


def test_split_adds_up_to_the_total() -> None:
    figures = preemption_plot.rounds_of(_doc())[0]["ballast"]
    parts = preemption_plot.split(figures)
    assert parts["scheduling-loop"] == 8.0 and parts["other"] == 4.0
    assert sum(parts.values()) == 15.0
    unsplit = preemption_plot.split({"cpu_ms_per_preemptor": 12.5})
    assert unsplit["other"] == 12.5 and sum(unsplit.values()) == 12.5

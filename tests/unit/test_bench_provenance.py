"""bench.provenance: a result document says its commit, tree state, date, machine, command
and peers, and is written before anything is drawn from it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from bench import provenance
from sandbox.cluster import versions


def test_stamp_carries_every_field() -> None:
    block = provenance.stamp(["python", "-m", "bench.x", "--quick"])
    assert provenance.missing_fields({"provenance": block}) == []
    assert len(block["commit"]) == 40
    assert isinstance(block["dirty"], bool)
    assert block["command"] == "python -m bench.x --quick"
    assert block["machine"]["cores"] >= 1 and block["machine"]["memory_bytes"] > 0
    assert block["peers"]["kubernetes"] == versions.KUBERNETES_VERSION


def test_missing_fields_names_what_is_absent() -> None:
    assert provenance.missing_fields({}) == list(provenance.FIELDS)
    partial = {"provenance": {**provenance.stamp(["x"]), "commit": None, "peers": {}}}
    assert provenance.missing_fields(partial) == ["commit", "peers"]
    clean = {"provenance": {**provenance.stamp(["x"]), "dirty": False}}
    assert provenance.missing_fields(clean) == []


def test_write_result_stamps_and_keeps_the_numbers(tmp_path: Path) -> None:
    out = provenance.write_result(tmp_path / "r" / "x.json", {"median": 1.5}, ["cmd"])
    doc = json.loads(out.read_text())
    assert doc["median"] == 1.5
    assert doc["provenance"]["command"] == "cmd"
    assert list(doc)[0] == "provenance"


# -- the result files themselves ------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
# A citation is a path: bench/results/NAME, where NAME may hold {a,b} choices or a * pattern
# (one file at least must match), and "bench/results/NAME.json and .png" cites the picture too.
CITATION = re.compile(r"bench/results/((?:[\w.*-]|\{[\w.,-]+\})+)(\s+and\s+\.png)?")

# Results recorded before bench.provenance existed (2026-11-27): they say their date and often
# their commit in their own fields or in the doc that cites them, not in a stamp. The list may
# only shrink: a new or re-run result carries its stamp (bench.provenance.write_result), and a
# file removed leaves the list. docs/benchmarks.md says so.
UNSTAMPED = frozenset(
    {
        "chaos.json",
        "explain-cost.json",
        "placement-learnable-decay.json",
        "placement-learnable.json",
        "placement-learned-learnable.json",
        "placement-learned-misleading.json",
        "placement-misleading-35.json",
        "placement-order-saturated.json",
        "placement-saturated.json",
        "placement-source-metrics-server.json",
        "placement-source-prometheus.json",
        "placement-steady-decay.json",
        "placement-trace-quick.json",
        "placement.json",
        "profiles.json",
        "rebalance-trace.json",
        "rebalance.json",
        "scheduler-5000-profile-after.json",
        "scheduler-5000-profile-before.json",
        "scheduler-backlog-budget.json",
        "scheduler-backlog-byrequests.json",
        "scheduler-backlog-transport.json",
        "scheduler-cache-5000-50000-before.json",
        "scheduler-cache-5000-50000.json",
        "scheduler-perf-quick-after-fit-unresolvable.json",
        "scheduler-perf-quick-byrequests-all.json",
        "scheduler-perf-quick-cuts.json",
        "scheduler-perf-quick-idlegc.json",
        "scheduler-perf-quick-lookups.json",
        "scheduler-perf-quick-misses.json",
        "scheduler-perf-quick-preemption-100.json",
        "scheduler-perf-quick-preemption-byrequests-profiled.json",
        "scheduler-perf-quick-preemption-byrequests.json",
        "scheduler-perf-quick-preemption-cuts-40.json",
        "scheduler-perf-quick-preemption-cuts-all.json",
        "scheduler-perf-quick-preemption-cuts.json",
        "scheduler-perf-quick-preemption-dryrun-before-preemptors.json",
        "scheduler-perf-quick-preemption-dryrun-before.json",
        "scheduler-perf-quick-preemption-dryrun-preemptors.json",
        "scheduler-perf-quick-preemption-dryrun.json",
        "scheduler-perf-quick-preemption-idlegc.json",
        "scheduler-perf-quick-preemption-merged-40.json",
        "scheduler-perf-quick-preemption-rulesout.json",
        "scheduler-perf-quick-preemption-settled.json",
        "scheduler-perf-quick-startup-cuts.json",
        "scheduler-perf-quick-transport.json",
        "scheduler-perf-quick.json",
        "scheduler-plain-5000.json",
        "scheduler-recording-1000.json",
        "scheduler-spread-1000.json",
        "scheduler-spread-5000.json",
        "scheduler-startup.json",
        "scheduler.json",
        "watcher-10000.json",
        "watcher-500.json",
        "watcher.json",
    }
)
UNSTAMPED_AT_MOST = 56


def expand(name: str) -> list[str]:
    """`a-{x,y}.{json,png}` -> a-x.json, a-x.png, a-y.json, a-y.png."""
    match = re.search(r"\{([^}]*)\}", name)
    if match is None:
        return [name]
    head, tail = name[: match.start()], name[match.end() :]
    return [out for choice in match.group(1).split(",") for out in expand(head + choice + tail)]


def cited(text: str) -> set[str]:
    """The result files a Markdown text cites by path."""
    names: set[str] = set()
    for match in CITATION.finditer(text):
        found = expand(match.group(1).rstrip("."))
        if match.group(2):
            found += [n.removesuffix(".json") + ".png" for n in found if n.endswith(".json")]
        names.update(found)
    return names


def tracked_results() -> list[Path]:
    """The result files in the repository (one a run just wrote is checked once committed)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "bench/results"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout.decode()
    return sorted(ROOT / name for name in listed.split("\0") if name and (ROOT / name).is_file())


def test_cited_reads_paths_choices_and_pictures() -> None:
    text = (
        "(bench/results/a.json and .png), bench/results/b-{x,y}.{txt.gz,json}.\n"
        "![p](../bench/results/c.png) and `d.json` alone is a name, not a citation; "
        "bench/results/e-*.json"
    )
    assert cited(text) == {
        "a.json", "a.png", "b-x.txt.gz", "b-x.json", "b-y.txt.gz", "b-y.json", "c.png", "e-*.json"
    }  # fmt: skip


def test_every_result_file_the_docs_cite_exists() -> None:
    missing = {
        f"{doc.relative_to(ROOT)}: {name}"
        for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for name in cited(doc.read_text())
        if not (RESULTS / name).is_file() and not any(RESULTS.glob(name) if "*" in name else ())
    }
    assert not missing, f"cited but not in bench/results: {sorted(missing)}"


def test_every_result_says_where_it_came_from() -> None:
    lacking = {}
    for path in tracked_results():
        if path.suffix != ".json" or path.name in UNSTAMPED:
            continue
        doc = json.loads(path.read_text())
        gaps = provenance.missing_fields(doc) if isinstance(doc, dict) else list(provenance.FIELDS)
        if gaps:
            lacking[path.name] = gaps
    assert not lacking, (
        f"result files without provenance (write them with bench.provenance.write_result): "
        f"{lacking}"
    )


def test_the_unstamped_list_only_shrinks() -> None:
    assert len(UNSTAMPED) <= UNSTAMPED_AT_MOST, "new results carry a stamp; do not add here"
    gone = sorted(n for n in UNSTAMPED if not (RESULTS / n).is_file())
    assert not gone, f"removed from bench/results, so remove from UNSTAMPED too: {gone}"


def test_command_keeps_the_module_form(monkeypatch) -> None:
    monkeypatch.setattr(
        provenance.sys, "orig_argv", ["/usr/bin/python3", "-m", "bench.x", "--quick"]
    )
    assert provenance.stamp()["command"].endswith("-m bench.x --quick")


def test_a_rewritten_result_does_not_make_the_tree_dirty(tmp_path: Path, monkeypatch) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, timeout=30)

    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "x.json").write_text("{}\n")
    (tmp_path / "code.py").write_text("A = 1\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "x")
    monkeypatch.setattr(provenance, "REPO", tmp_path)
    assert provenance.stamp(["x"])["dirty"] is False
    (tmp_path / "bench" / "results" / "x.json").write_text('{"run": 2}\n')
    assert provenance.stamp(["x"])["dirty"] is False
    (tmp_path / "code.py").write_text("A = 2\n")
    assert provenance.stamp(["x"])["dirty"] is True

"""bench.harness.provenance: a result document says its commit, tree state, date, machine, command
and peers, and is written before anything is drawn from it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from bench.harness import provenance, runguard
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
CITATION = re.compile(r"(?<![\w:])bench/results/((?:[\w.*-]|\{[\w.,-]+\})+)(\s+and\s+\.png)?")
HISTORY = re.compile(r"\b([0-9a-f]{7,40}):bench/results/((?:[\w.-]|\{[\w.,-]+\})+)")

# The folder holds only what README.md and docs/ cite; a result kept only in git history is
# cited as COMMIT:bench/results/NAME (what `git show` takes), which this pattern leaves out.
AT_MOST = 40


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
        if path.suffix != ".json":
            continue
        doc = json.loads(path.read_text())
        gaps = provenance.missing_fields(doc) if isinstance(doc, dict) else list(provenance.FIELDS)
        if gaps:
            lacking[path.name] = gaps
    assert not lacking, (
        f"result files without provenance (write them with provenance.write_result): {lacking}"
    )


def test_a_recovered_stamp_needs_its_commit_and_its_note() -> None:
    recovered = {"recovered_from_git": True, "commit": "a" * 40, "note": "added by this commit"}
    assert provenance.missing_fields({"provenance": recovered}) == []
    assert provenance.missing_fields({"provenance": {**recovered, "note": ""}}) == ["note"]


def _docs_text() -> str:
    return "\n".join(d.read_text() for d in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")])


def test_the_results_folder_holds_only_what_the_docs_cite() -> None:
    names = cited(_docs_text())
    tracked = tracked_results()
    uncited = [
        p.name for p in tracked if not any(p.match(n) for n in names) and p.name not in names
    ]
    assert not uncited, f"in bench/results but cited by no doc: {uncited}"
    assert len(tracked) <= AT_MOST, f"{len(tracked)} result files, at most {AT_MOST}"


def test_results_cited_from_history_are_in_that_commit() -> None:
    wanted = sorted(
        {f"{sha}:bench/results/{name}" for sha, raw in HISTORY.findall(_docs_text())
         for name in expand(raw.rstrip("."))}
    )  # fmt: skip
    assert len(wanted) > 10
    found = subprocess.run(
        ["git", "cat-file", "--batch-check"],
        cwd=ROOT, input="\n".join(wanted) + "\n", capture_output=True, text=True, timeout=30,
    ).stdout.splitlines()  # fmt: skip
    missing = [w for w, line in zip(wanted, found, strict=True) if line.endswith("missing")]
    assert not missing, f"cited from history but not in that commit: {missing}"


def test_command_keeps_the_module_form(monkeypatch) -> None:
    monkeypatch.setattr(sys, "orig_argv", ["/usr/bin/python3", "-m", "bench.x", "--quick"])
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


def test_a_run_stamps_the_commit_it_started_from(tmp_path: Path) -> None:
    run = runguard.begin(allow_dirty=True, argv=["python", "-m", "bench.x"],
                         lock_path=tmp_path / "bench.lock")  # fmt: skip
    try:
        block = provenance.stamp()
    finally:
        runguard.finish()
    assert block["commit"] == run.commit and block["dirty"] == run.dirty
    assert block["run"]["allow_dirty"] is True and block["run"]["started"] == run.started
    assert block["run"]["load_average"]["samples"] >= 1
    assert "run" not in provenance.stamp(["x"])  # no run begun: the stamp of the moment

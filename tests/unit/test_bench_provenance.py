"""bench.provenance: a result document says its commit, tree state, date, machine, command
and peers, and is written before anything is drawn from it."""

from __future__ import annotations

import json
from pathlib import Path

from bench import provenance
from sandbox import versions


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

"""The nominator's in-memory half: pods by uid and by node kept in step."""

from __future__ import annotations

from scheduler.backend.nominations import Nominations
from tests.unit.plugin_helpers import make_pod


def _names(pods):
    return sorted(p.name for p in pods)


def test_pods_by_node_follow_nominations_moves_and_clears():
    noms = Nominations()
    assert not noms and noms.on_node("n1") == [] and noms.by_node() == {}
    a, b, c = make_pod("a"), make_pod("b"), make_pod("c")
    noms.set(a, "n1")
    noms.set(b, "n1")
    noms.set(c, "n2")
    assert _names(noms.on_node("n1")) == ["a", "b"] and _names(noms.on_node("n2")) == ["c"]
    noms.set(a, "n2")  # re-nominated elsewhere: gone from its old node
    assert _names(noms.on_node("n1")) == ["b"] and _names(noms.on_node("n2")) == ["a", "c"]
    newer = make_pod("b")  # the same uid, a newer copy: replaces, never doubles
    noms.set(newer, "n1")
    assert noms.on_node("n1") == [newer] and noms.node_of(newer.uid) == "n1"
    noms.clear(b.uid)
    noms.clear(b.uid)  # twice: nothing to do
    assert noms.on_node("n1") == [] and "n1" not in noms.by_node()
    assert {n: _names(p) for n, p in noms.by_node().items()} == {"n2": ["a", "c"]}
    noms.clear(a.uid)
    noms.clear(c.uid)
    assert not noms and noms.by_node() == {} and noms.node_of(a.uid) == ""

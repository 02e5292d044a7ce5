"""scheduler.framework.labels: LabelSelector parsing and matching as apimachinery does it."""

from __future__ import annotations

import pytest

from scheduler.framework.labels import EVERYTHING, NOTHING, LabelSelector


def sel(**raw):
    return LabelSelector.parse(raw)


def test_null_selector_matches_nothing_and_empty_matches_everything():
    assert LabelSelector.parse(None) is NOTHING
    assert not NOTHING.matches({})
    assert not NOTHING.matches({"a": "b"})
    assert LabelSelector.parse({}) is EVERYTHING
    assert LabelSelector.parse({"matchLabels": {}, "matchExpressions": []}).everything
    assert EVERYTHING.matches({}) and EVERYTHING.matches({"x": "y"})


def test_match_labels_all_must_hold():
    s = sel(matchLabels={"app": "web", "tier": "fe"})
    assert s.matches({"app": "web", "tier": "fe", "extra": "1"})
    assert not s.matches({"app": "web"})
    assert not s.matches({"app": "db", "tier": "fe"})


def test_in_and_not_in():
    s = sel(matchExpressions=[{"key": "app", "operator": "In", "values": ["a", "b"]}])
    assert s.matches({"app": "a"}) and s.matches({"app": "b"})
    assert not s.matches({"app": "c"}) and not s.matches({})
    s = sel(matchExpressions=[{"key": "app", "operator": "NotIn", "values": ["a"]}])
    assert s.matches({}) and s.matches({"app": "b"})
    assert not s.matches({"app": "a"})


def test_exists_and_does_not_exist():
    s = sel(matchExpressions=[{"key": "app", "operator": "Exists"}])
    assert s.matches({"app": ""}) and not s.matches({"other": "x"})
    s = sel(matchExpressions=[{"key": "app", "operator": "DoesNotExist"}])
    assert s.matches({"other": "x"}) and not s.matches({"app": "x"})


def test_labels_and_expressions_are_anded():
    s = sel(
        matchLabels={"app": "web"},
        matchExpressions=[{"key": "canary", "operator": "DoesNotExist"}],
    )
    assert s.matches({"app": "web"})
    assert not s.matches({"app": "web", "canary": "1"})


@pytest.mark.parametrize(
    "expr",
    [
        {"key": "a", "operator": "Gt", "values": ["1"]},
        {"key": "a", "operator": "In", "values": []},
        {"key": "a", "operator": "NotIn"},
        {"key": "a", "operator": "Exists", "values": ["x"]},
    ],
)
def test_invalid_selectors_raise(expr):
    with pytest.raises(ValueError):
        sel(matchExpressions=[expr])


def test_with_requirement_adds_and_keeps_null():
    s = EVERYTHING.with_requirement("pod-template-hash", "In", ("abc",))
    assert s.matches({"pod-template-hash": "abc"}) and not s.matches({})
    assert NOTHING.with_requirement("a", "In", ("b",)) is NOTHING


def test_candidates_pick_smallest_positive_set():
    index = {("app", "web"): {"1", "2", "3"}, ("tier", "fe"): {"2"}, ("app", "db"): {"4"}}
    keys = {"app": {"1", "2", "3", "4"}, "tier": {"2"}}

    def by_value(k, v):
        return index.get((k, v), set())

    def by_key(k):
        return keys.get(k, set())

    assert sel(matchLabels={"app": "web", "tier": "fe"}).candidates(by_value, by_key) == {"2"}
    multi = sel(matchExpressions=[{"key": "app", "operator": "In", "values": ["web", "db"]}])
    assert multi.candidates(by_value, by_key) == {"1", "2", "3", "4"}
    exists = sel(matchExpressions=[{"key": "tier", "operator": "Exists"}])
    assert exists.candidates(by_value, by_key) == {"2"}
    only_negative = sel(matchExpressions=[{"key": "app", "operator": "NotIn", "values": ["x"]}])
    assert only_negative.candidates(by_value, by_key) is None
    assert EVERYTHING.candidates(by_value, by_key) is None
    assert NOTHING.candidates(by_value, by_key) == set()

"""Sample validation and node-name mapping: pure functions."""

from __future__ import annotations

import pytest

from watcher.nodenames import Directory, NodeNamer, strip_port
from watcher.validate import check_value, validate


@pytest.mark.parametrize(
    "raw,percent,expected",
    [
        ("42.5", True, (42.5, None)),
        ("0", True, (0.0, None)),
        ("100", True, (100.0, None)),
        ("100.01", True, (None, "over_100")),
        ("1e9", False, (1e9, None)),
        ("NaN", True, (None, "nan")),
        ("+Inf", False, (None, "inf")),
        ("-Inf", True, (None, "inf")),
        ("-0.5", True, (None, "negative")),
        ("abc", True, (None, "not_a_number")),
        (None, True, (None, "not_a_number")),
        (True, True, (None, "not_a_number")),
    ],
)
def test_check_value(raw, percent, expected):
    assert check_value(raw, percent) == expected


def test_validate_rejects_per_sample_and_counts_reasons():
    series = [
        ("a:9100", "10"),
        ("b", "NaN"),
        ("c", "20"),
        ("c:9100", "21"),
        ("c", "22"),
        (None, "5"),
        ("", "5"),
        ("d", "-1"),
    ]
    accepted, rejected = validate(series, True, NodeNamer())
    assert accepted == {"a": 10.0}
    assert rejected == {"nan": 1, "duplicate": 3, "no_node_label": 2, "negative": 1}


@pytest.mark.parametrize(
    "raw,host",
    [
        ("node-1:9100", "node-1"),
        ("node-1", "node-1"),
        ("10.0.0.5:9100", "10.0.0.5"),
        ("[fd00::1]:9100", "fd00::1"),
        ("fd00::1", "fd00::1"),
        (" node-2 ", "node-2"),
    ],
)
def test_strip_port(raw, host):
    assert strip_port(raw) == host


def test_names_map_through_the_node_directory():
    directory = Directory(
        names=frozenset({"node-1", "node-2"}),
        addresses={"10.0.0.5": "node-1", "fd00::2": "node-2", "node-1.example": "node-1"},
    )
    namer = NodeNamer(directory=directory)
    assert namer.name("node-1:9100") == "node-1"
    assert namer.name("10.0.0.5:9100") == "node-1"
    assert namer.name("[fd00::2]:9100") == "node-2"
    assert namer.name("node-1.example") == "node-1"
    assert namer.name("ghost:9100") is None
    accepted, rejected = validate([("ghost", "1"), ("10.0.0.5:9100", "3")], True, namer)
    assert accepted == {"node-1": 3.0} and rejected == {"unknown_node": 1}


def test_without_a_directory_names_pass_unchecked():
    assert NodeNamer().name("anything:9100") == "anything"

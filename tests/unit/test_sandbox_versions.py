"""The pins in sandbox/cluster/versions.py and sandbox/cluster/components/go.mod must agree."""

from __future__ import annotations

from sandbox.cluster import defaults, versions


def test_go_mod_matches_the_pins():
    go_mod = (defaults.COMPONENTS_DIR / "go.mod").read_text()
    assert versions.go_mod_mismatches(go_mod) == []


def test_a_drifted_go_mod_is_reported():
    go_mod = (defaults.COMPONENTS_DIR / "go.mod").read_text()
    staging = f"v{versions.staging_version()}"
    kubernetes = f"v{versions.KUBERNETES_VERSION}"
    drifted = go_mod.replace(f"k8s.io/client-go {staging}", "k8s.io/client-go v0.1.0")
    drifted = drifted.replace(f"k8s.io/kubernetes {kubernetes}", "k8s.io/kubernetes v1.1.0")
    problems = versions.go_mod_mismatches(drifted)
    assert problems == [
        f"k8s.io/kubernetes is v1.1.0, pinned {kubernetes}",
        f"k8s.io/client-go is replaced with v0.1.0, pinned {staging}",
    ]


def test_cache_folder_names_every_pin():
    tag = versions.cache_tag()
    for pin in (versions.KUBERNETES_VERSION, versions.ETCD_VERSION, versions.KWOK_VERSION):
        assert pin in tag

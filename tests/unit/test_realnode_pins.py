"""The real node's kubelet module follows sandbox/versions.py like the other components."""

from __future__ import annotations

from sandbox.cluster import realnode, versions


def test_kubelet_go_mod_follows_the_pins():
    assert realnode.kubelet_go_mod_mismatches() == []


def test_a_drifted_kubelet_go_mod_is_named():
    go_mod = (realnode.KUBELET_DIR / "go.mod").read_text()
    old = f"k8s.io/kubernetes v{versions.KUBERNETES_VERSION}"
    drifted = go_mod.replace(old, "k8s.io/kubernetes v1.0.0")
    problems = versions.go_mod_mismatches(
        drifted, {"k8s.io/kubernetes": f"v{versions.KUBERNETES_VERSION}"}
    )
    assert problems == [f"k8s.io/kubernetes is v1.0.0, pinned v{versions.KUBERNETES_VERSION}"]

"""The real node's kubelet (and kube-proxy) module and its CoreDNS module follow
sandbox/cluster/versions.py like the other components."""

from __future__ import annotations

from sandbox.cluster import realnode, servicenet, versions


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


def test_the_kube_proxy_main_is_in_the_kubelet_module():
    # One go.mod builds both (realnode.ensure_kubelet), so one set of pins covers kube-proxy.
    main = realnode.KUBELET_DIR / servicenet.KUBE_PROXY_PACKAGE / "main.go"
    assert "k8s.io/kubernetes/cmd/kube-proxy/app" in main.read_text()


def test_coredns_go_mod_follows_the_pins():
    assert servicenet.coredns_go_mod_mismatches() == []


def test_a_drifted_coredns_go_mod_is_named():
    go_mod = (servicenet.COREDNS_DIR / "go.mod").read_text()
    staging = versions.staging_version()
    drifted = go_mod.replace(f"github.com/coredns/coredns v{versions.COREDNS_VERSION}",
                             "github.com/coredns/coredns v1.12.0")  # fmt: skip
    drifted = drifted.replace(f"k8s.io/client-go v{staging}", "k8s.io/client-go v0.33.0")
    assert versions.coredns_go_mod_mismatches(drifted) == [
        f"github.com/coredns/coredns is v1.12.0, pinned v{versions.COREDNS_VERSION}",
        f"k8s.io/client-go is v0.33.0, pinned v{staging}",
    ]

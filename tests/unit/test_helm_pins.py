"""sandbox/peers/helm/go.mod builds helm at the release pinned in sandbox/cluster/versions.py."""

from __future__ import annotations

from sandbox.cluster import build, versions


def _go_mod() -> str:
    return (build.HELM_DIR / "go.mod").read_text()


def test_helm_go_mod_matches_the_pin():
    assert versions.helm_go_mod_mismatches(_go_mod()) == []
    assert versions.HELM_VERSION in versions.helm_binary()


def test_a_drifted_or_toolless_helm_go_mod_is_reported():
    pinned = f"v{versions.HELM_VERSION}"
    drifted = _go_mod().replace(f"helm.sh/helm/v3 {pinned}", "helm.sh/helm/v3 v3.0.0")
    assert versions.helm_go_mod_mismatches(drifted) == [
        f"helm.sh/helm/v3 is v3.0.0, pinned {pinned}"
    ]
    toolless = _go_mod().replace("tool helm.sh/helm/v3/cmd/helm\n", "")
    assert versions.helm_go_mod_mismatches(toolless) == ["no `tool helm.sh/helm/v3/cmd/helm` line"]

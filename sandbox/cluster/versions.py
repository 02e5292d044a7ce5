"""The one place the sandbox's upstream versions are pinned.

`components/go.mod` builds etcd, kube-apiserver, kubectl and kube-scheduler from these pins;
`go_mod_mismatches` keeps the two in step (the build refuses a go.mod that disagrees, and a unit
test checks it), because Go's own tooling must own go.mod's other ~200 lines.
"""

from __future__ import annotations

import re

KUBERNETES_VERSION = "1.34.4"
# The etcd the pinned apiserver's client library is built against (go.etcd.io/etcd/client/v3);
# Debian's etcd-server 3.4 lacks the watch-progress requests 1.34 relies on.
ETCD_VERSION = "3.6.4"
# The newest kwok whose client-go (0.33) is within one minor of the apiserver.
KWOK_VERSION = "0.7.0"
# sigs.k8s.io/scheduler-plugins, whose Trimaran plugins the placement benchmark runs against
# Ballast's watcher: the release line of the pinned Kubernetes minor (v0.<minor>.x).
SCHEDULER_PLUGINS_VERSION = "0.34.7"
# helm.sh/helm/v3, for the chart's lint/template/install tests and `make manifests`: the v3
# release whose client-go is the pinned Kubernetes minor (0.34), built from helm/go.mod.
HELM_VERSION = "3.19.5"
# sigs.k8s.io/metrics-server for the watcher's metrics-server source: the release built with
# k8s.io 0.33 (one minor below the apiserver, as kwok); 0.7.x uses 0.29, 0.9.0 uses 0.36.
METRICS_SERVER_VERSION = "0.8.0"
# sigs.k8s.io/descheduler, the rebalancing benchmark's upstream contender (LowNodeUtilization on
# Prometheus). Its release line follows Kubernetes' minor (v0.34.x for 1.34), but the module
# proxy this project builds from serves v0.36.0 only (v0.34.0 and v0.35.x answer 403), so that
# is the pin: k8s.io 0.36 clients against the 1.34 apiserver, two minors apart (docs/rebalancer.md).
DESCHEDULER_VERSION = "0.36.0"
# github.com/VictoriaMetrics/VictoriaMetrics, single node, for the watcher's store tests: the
# newest release whose go.mod this Go accepts. The cluster's `-cluster` tags are not served by
# the module proxy (sandbox/peers/victoriametrics/).
VICTORIAMETRICS_VERSION = "1.151.0"
# github.com/thanos-io/thanos: a querier over sidecars, the watcher's distributed store with
# partial answers in the tests (sandbox/peers/thanos/go.mod carries Thanos's replace block). Not the
# newest: from v0.36 Thanos needs zenhack.net/go/util (through capnproto), which the module proxy
# does not serve.
THANOS_VERSION = "0.35.1"
# github.com/koordinator-sh/koordinator: koord-scheduler (LoadAwareScheduling) and koord-descheduler
# (LowNodeLoad), the load-aware peer built from koordinator/go.mod. v1.8.0 is built on Kubernetes
# 1.35.2 (its replace block, copied into that go.mod), one minor above the sandbox's apiserver.
KOORDINATOR_VERSION = "1.8.0"
# github.com/paypal/load-watcher, the Go service Ballast's watcher replaces, measured against it
# on the same Prometheus (bench/watcher/run.py --vs-load-watcher). The release Trimaran 0.34.7
# depends on (its go.mod), so the module cache already holds it.
LOAD_WATCHER_VERSION = "0.2.4"
# github.com/coredns/coredns, the real node's cluster DNS (sandbox/cluster/coredns): the newest
# release built on the pinned Kubernetes minor's client-go (0.34; 1.14.2 moved to 0.35).
COREDNS_VERSION = "1.14.1"


def staging_version() -> str:
    """The k8s.io/* staging modules are released as v0.<minor>.<patch> alongside v1.<minor>."""
    _, minor, patch = KUBERNETES_VERSION.split(".")
    return f"0.{minor}.{patch}"


def cache_tag() -> str:
    """Names the binary cache folder, so a new pin never reuses an old binary."""
    return f"k8s-{KUBERNETES_VERSION}_etcd-{ETCD_VERSION}_kwok-{KWOK_VERSION}"


def trimaran_binary() -> str:
    """The Trimaran scheduler's name in the binary cache: a new plugins pin builds a new one."""
    return f"kube-scheduler-trimaran-{SCHEDULER_PLUGINS_VERSION}"


def descheduler_binary() -> str:
    """The descheduler's name in the binary cache: a new pin builds a new one."""
    return f"descheduler-{DESCHEDULER_VERSION}"


def koord_scheduler_binary() -> str:
    """koord-scheduler's name in the binary cache: a new Koordinator pin builds a new one."""
    return f"koord-scheduler-{KOORDINATOR_VERSION}"


def koord_descheduler_binary() -> str:
    return f"koord-descheduler-{KOORDINATOR_VERSION}"


def koordinator_crds() -> str:
    """The folder in the binary cache holding the pinned release's CRDs (config/crd/bases)."""
    return f"koordinator-crds-{KOORDINATOR_VERSION}"


def koordinator_go_mod_mismatches(go_mod: str) -> list[str]:
    """koordinator/go.mod must require the pinned release, build its koord-descheduler as a
    tool, and carry its replace block (without it k8s.io/client-go resolves to v11)."""
    problems = []
    wanted = f"v{KOORDINATOR_VERSION}"
    found = re.search(
        r"^\s*(?:require )?github\.com/koordinator-sh/koordinator (v\S+)", go_mod, re.M
    )
    if not found:
        problems.append("github.com/koordinator-sh/koordinator is not required")
    elif found.group(1) != wanted:
        problems.append(
            f"github.com/koordinator-sh/koordinator is {found.group(1)}, pinned {wanted}"
        )
    tool = r"^\s*(?:tool )?github\.com/koordinator-sh/koordinator/cmd/koord-descheduler$"
    if not re.search(tool, go_mod, re.M):
        problems.append(
            "no `tool github.com/koordinator-sh/koordinator/cmd/koord-descheduler` line"
        )
    if not re.search(r"^\s*k8s\.io/client-go => k8s\.io/client-go v\S+", go_mod, re.M):
        problems.append("k8s.io/client-go is not replaced (copy koordinator's replace block)")
    return problems


def victoriametrics_binary() -> str:
    """VictoriaMetrics' name in the binary cache: a new pin builds a new one."""
    return f"victoria-metrics-{VICTORIAMETRICS_VERSION}"


def thanos_binary() -> str:
    """Thanos's name in the binary cache: a new pin builds a new one."""
    return f"thanos-{THANOS_VERSION}"


def load_watcher_binary() -> str:
    """load-watcher's name in the binary cache: a new pin builds a new one."""
    return f"load-watcher-{LOAD_WATCHER_VERSION}"


def load_watcher_go_mod_mismatches(go_mod: str) -> list[str]:
    """loadwatcher/go.mod must build load-watcher's main package (a `tool` line) at the pin."""
    problems = []
    if not re.search(r"^tool github\.com/paypal/load-watcher$", go_mod, re.MULTILINE):
        problems.append("no `tool github.com/paypal/load-watcher` line")
    found = re.search(r"^\s*github\.com/paypal/load-watcher (v\S+)", go_mod, re.MULTILINE)
    wanted = f"v{LOAD_WATCHER_VERSION}"
    if not found:
        problems.append("github.com/paypal/load-watcher is not required")
    elif found.group(1) != wanted:
        problems.append(f"github.com/paypal/load-watcher is {found.group(1)}, pinned {wanted}")
    return problems


def coredns_binary() -> str:
    """CoreDNS's name in the binary cache: a new pin builds a new one."""
    return f"coredns-{COREDNS_VERSION}"


def coredns_go_mod_mismatches(go_mod: str) -> list[str]:
    """coredns/go.mod must require the pinned release and the Kubernetes clients at the
    sandbox's staging version."""
    staging = f"v{staging_version()}"
    wanted = {"github.com/coredns/coredns": f"v{COREDNS_VERSION}", "k8s.io/client-go": staging}
    problems = go_mod_mismatches(go_mod, wanted)
    return [p for p in problems if p != "no k8s.io staging replace directives"]


def helm_binary() -> str:
    """helm's name in the binary cache: a new helm pin builds a new one."""
    return f"helm-{HELM_VERSION}"


def helm_go_mod_mismatches(go_mod: str) -> list[str]:
    """helm/go.mod must build helm (a `tool` line) at the pinned release."""
    problems = []
    if not re.search(r"^tool helm\.sh/helm/v3/cmd/helm$", go_mod, re.MULTILINE):
        problems.append("no `tool helm.sh/helm/v3/cmd/helm` line")
    found = re.search(r"^\s*helm\.sh/helm/v3 (v\S+)", go_mod, re.MULTILINE)
    wanted = f"v{HELM_VERSION}"
    if not found:
        problems.append("helm.sh/helm/v3 is not required")
    elif found.group(1) != wanted:
        problems.append(f"helm.sh/helm/v3 is {found.group(1)}, pinned {wanted}")
    return problems


def trimaran_go_mod_mismatches(go_mod: str) -> list[str]:
    """Lines of trimaran/go.mod that disagree with the pins: the plugins' release, and the
    sandbox's Kubernetes for k8s.io/kubernetes and every staging module (replace directives)."""
    # Its require lines say what scheduler-plugins asks for; the replaces decide what is built.
    problems = go_mod_mismatches(go_mod, wanted={})
    if not re.search(r"^\s*k8s\.io/kubernetes => ", go_mod, re.MULTILINE):
        problems.append("k8s.io/kubernetes is not replaced with the pinned release")
    wanted = f"v{SCHEDULER_PLUGINS_VERSION}"
    found = re.search(r"^\s*sigs\.k8s\.io/scheduler-plugins (v\S+)", go_mod, re.MULTILINE)
    if not found:
        problems.append("sigs.k8s.io/scheduler-plugins is not required")
    elif found.group(1) != wanted:
        problems.append(f"sigs.k8s.io/scheduler-plugins is {found.group(1)}, pinned {wanted}")
    return problems


def go_mod_mismatches(go_mod: str, wanted: dict[str, str] | None = None) -> list[str]:
    """Lines of go.mod that disagree with the pins above, as readable complaints."""
    problems = []
    if wanted is None:
        wanted = {
            "k8s.io/kubernetes": f"v{KUBERNETES_VERSION}",
            "go.etcd.io/etcd/server/v3": f"v{ETCD_VERSION}",
        }
    for module, version in wanted.items():
        found = re.search(rf"^\s*{re.escape(module)} (v\S+)", go_mod, re.MULTILINE)
        if not found:
            problems.append(f"{module} is not required")
        elif found.group(1) != version:
            problems.append(f"{module} is {found.group(1)}, pinned {version}")
    staging = f"v{staging_version()}"
    replaces = re.findall(r"^\s*(k8s\.io/\S+) => k8s\.io/\S+ (v\S+)", go_mod, re.MULTILINE)
    if not replaces:
        problems.append("no k8s.io staging replace directives")
    for module, version in replaces:
        # Only a module that imports scheduler-plugins replaces k8s.io/kubernetes itself.
        expected = f"v{KUBERNETES_VERSION}" if module == "k8s.io/kubernetes" else staging
        if version != expected:
            problems.append(f"{module} is replaced with {version}, pinned {expected}")
    return problems


def metrics_server_binary() -> str:
    """metrics-server's name in the binary cache: a new pin builds a new one."""
    return f"metrics-server-{METRICS_SERVER_VERSION}"


def metrics_server_go_mod_mismatches(go_mod: str) -> list[str]:
    """metrics_server/go.mod must require the pinned release (its own k8s.io modules as
    released: no replaces, so the binary is upstream's)."""
    problems = go_mod_mismatches(
        go_mod, wanted={"sigs.k8s.io/metrics-server": f"v{METRICS_SERVER_VERSION}"}
    )
    return [p for p in problems if p != "no k8s.io staging replace directives"]

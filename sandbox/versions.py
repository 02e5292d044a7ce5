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


def staging_version() -> str:
    """The k8s.io/* staging modules are released as v0.<minor>.<patch> alongside v1.<minor>."""
    _, minor, patch = KUBERNETES_VERSION.split(".")
    return f"0.{minor}.{patch}"


def cache_tag() -> str:
    """Names the binary cache folder, so a new pin never reuses an old binary."""
    return f"k8s-{KUBERNETES_VERSION}_etcd-{ETCD_VERSION}_kwok-{KWOK_VERSION}"


def go_mod_mismatches(go_mod: str) -> list[str]:
    """Lines of go.mod that disagree with the pins above, as readable complaints."""
    problems = []
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
        if version != staging:
            problems.append(f"{module} is replaced with {version}, pinned {staging}")
    return problems

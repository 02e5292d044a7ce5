#!/usr/bin/env bash
# Installs the Debian packages `make image`, `make compose-test` and `make test-containers`
# need: podman (the engine: daemonless, so nothing to start as root), runc (crun refuses this
# machine's cgroup v1 beside the v2 hierarchy), the CNI plugins podman's networks use,
# mmdebstrap (the local base images, hack/base-image.sh) and podman-compose (compose.yaml).
# Only what is missing is installed, so a second run costs nothing.
set -euo pipefail
need=()
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
[[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
# Service names on compose's network (podman 4.3's CNI backend resolves them through dnsname).
[[ -x /usr/lib/cni/dnsname ]] || need+=(golang-github-containernetworking-plugin-dnsname)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v podman-compose >/dev/null || need+=(podman-compose)
# The real node (sandbox/cluster/realnode.py): containerd, and a C compiler for its pause image.
command -v containerd >/dev/null || need+=(containerd)
# Its kube-proxy programs iptables (the nf_tables backend here) and reads it back with *-save.
command -v iptables-save >/dev/null || need+=(iptables)
command -v cc >/dev/null || need+=(gcc)
[[ -e /usr/lib/x86_64-linux-gnu/libc.a || -e /usr/lib/aarch64-linux-gnu/libc.a ]] || need+=(libc6-dev)
"$(dirname "$0")/apt-install.sh" ${need[@]+"${need[@]}"}

#!/usr/bin/env bash
# Prints the path of a containers.conf for podman (and podman-compose) on machines like this
# project's, written into $BALLAST_CACHE_DIR/images/: callers export CONTAINERS_CONF with it.
# - runtime runc: crun refuses cgroup v1 with the v2 hierarchy mounted beside it ("cgroups in
#   hybrid mode not supported");
# - ulimits the shell already holds: podman otherwise asks for an open-files and a process limit
#   above them, which root without CAP_SYS_RESOURCE (a container's root, as here) cannot raise
#   ("error setting rlimit type 7: operation not permitted"). Processes stop at 32768, the limit
#   podman gives its conmon monitor, which the container's process inherits.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BALLAST_CACHE_DIR:-.cache}/images
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
[ "$nofile" = unlimited ] && nofile=1048576
if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
conf=$dir/containers.conf
cat >"$conf.tmp" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
CONF
mv "$conf.tmp" "$conf"
echo "$conf"

#!/bin/sh
# `make image`: builds the Dockerfile into ballast:<chart appVersion> (IMAGE=name:tag to change
# it), and the images the stack runs beside it from images/*/Containerfile: ballast-redis,
# ballast-prometheus and ballast-node-exporter, tagged :bookworm.
#
# BASE=local (the default): every image starts from a base made here from Debian's bookworm
# packages (hack/base-image.sh, cached in $BALLAST_CACHE_DIR/images/), since this project's
# machines reach Debian's archive but no public image registry. BASE=public: the files' own
# public bases (python:3.11-slim-bookworm, debian:bookworm-slim), pulled by the engine.
#
# The engine is the first that works of podman (daemonless: nothing to start as root), docker
# or nerdctl (their daemon answering); none: says so and fails, since a `make image` that builds
# nothing must not look like success.
set -eu
cd "$(dirname "$0")/.."
version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/ballast/Chart.yaml)
image=${IMAGE:-ballast:$version}
base=${BASE:-local}
engine="" tried=""
for candidate in podman docker nerdctl; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" info >/dev/null 2>&1; then
        engine=$candidate
        break
    fi
    tried="$tried $candidate (found, but \`$candidate info\` fails: no daemon or no rights?)"
done
if [ -z "$engine" ]; then
    echo "make image: no working OCI engine (podman, docker or nerdctl).${tried:+ Tried:$tried}" >&2
    echo "hack/install-container-deps.sh installs podman and mmdebstrap from Debian's packages;" >&2
    echo "or build the Dockerfile on another machine and push the image (docs/deploy.md, Images)." >&2
    exit 1
fi

# The build stage's pip reaches PyPI through the host's network and trusts what the host's pip
# trusts (a proxy's CA included): its configuration and CA bundle are mounted for the build
# only (podman; docker's build has no mounts), never copied into a layer.
set --
if [ "$engine" = podman ]; then
    # runc and the shell's own limits (hack/containers-conf.sh says why), unless the caller has
    # a containers.conf of its own.
    CONTAINERS_CONF=${CONTAINERS_CONF:-$(hack/containers-conf.sh)}
    export CONTAINERS_CONF
    set -- --network=host
    for file in /etc/pip.conf /etc/ssl/certs; do
        [ -e "$file" ] && set -- "$@" --volume "$file:$file:ro"
    done
fi

build() {  # build TAG CONTEXT FILE BASE-NAME BASE-PACKAGE...
    tag=$1 context=$2 file=$3 name=$4
    shift 4
    if [ "$base" = local ]; then
        from=$(hack/base-image.sh "$engine" "$name" "$@")
        echo "building $tag with $engine on $from"
        "$engine" build --file "$file" --build-arg BASE_IMAGE="$from" --tag "$tag" $flags "$context"
    else
        echo "building $tag with $engine on the file's public base"
        "$engine" build --file "$file" --tag "$tag" $flags "$context"
    fi
    size=$("$engine" image inspect --format '{{.Size}}' "$tag")
    echo "$tag: $((size / 1000000)) MB"
}
flags="$*"
build "$image" . Dockerfile python python3 python3-venv
build ballast-redis:bookworm images/redis images/redis/Containerfile redis redis-server
build ballast-prometheus:bookworm images/prometheus images/prometheus/Containerfile prometheus \
    prometheus wget
build ballast-node-exporter:bookworm images/node-exporter images/node-exporter/Containerfile \
    node-exporter prometheus-node-exporter
# The pod sandbox image of `ballast sandbox up --real-node` (sandbox/cluster/realnode.py): one static
# binary on an empty image, so no base. gcc and libc6-dev: hack/install-container-deps.sh.
cc -static -Os -s -o images/pause/pause images/pause/pause.c
echo "building ballast-pause:1 with $engine"
"$engine" build --file images/pause/Containerfile --tag ballast-pause:1 $flags images/pause

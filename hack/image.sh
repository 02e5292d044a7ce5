#!/bin/sh
# `make image`: builds the Dockerfile into ballast:<chart appVersion> (IMAGE=name:tag to change
# it) with the first OCI builder found that works: docker or nerdctl (their daemon answering),
# podman, buildah. None: says so and fails, since a `make image` that builds nothing must not
# look like success.
set -eu
cd "$(dirname "$0")/.."
version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/ballast/Chart.yaml)
image=${IMAGE:-ballast:$version}
tried=""
for builder in docker podman buildah nerdctl; do
    command -v "$builder" >/dev/null 2>&1 || continue
    case $builder in
        buildah) check="buildah version" ;;
        *) check="$builder info" ;;
    esac
    if ! $check >/dev/null 2>&1; then
        tried="$tried $builder (found, but \`$check\` fails: no daemon or no rights?)"
        continue
    fi
    echo "building $image with $builder"
    case $builder in
        buildah) exec buildah bud --tag "$image" . ;;
        *) exec "$builder" build --tag "$image" . ;;
    esac
done
echo "make image: no working OCI image builder (docker, podman, buildah or nerdctl).${tried:+ Tried:$tried}" >&2
echo "Install one, or build the Dockerfile on another machine and push the image (docs/deploy.md, Images)." >&2
exit 1

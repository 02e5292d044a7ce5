#!/bin/sh
# hack/base-image.sh ENGINE NAME PACKAGE...: a local base image made from Debian's packages,
# for machines that reach Debian's archive but no public image registry. mmdebstrap builds a
# minimal bookworm root filesystem holding PACKAGE...; ENGINE (podman or docker) imports it as
# localhost/ballast-base-NAME:bookworm-HASH and the script prints that name.
#
# HASH covers everything that shapes the tarball (suite, variant, packages, options), so a
# changed list makes a new image and an unchanged one costs nothing: the tarball is kept in
# $BALLAST_CACHE_DIR/images/ (default .cache/images/) and the import is skipped when the image
# is already there. Recommends, documentation, manual pages and translations are left out.
set -eu
engine=$1 name=$2
shift 2
cd "$(dirname "$0")/.."
suite=bookworm
mirror=${BALLAST_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${BALLAST_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
packages=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
set -- --variant=minbase --include="$packages" \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    "$suite"
hash=$(printf '%s\n' "$mirror" "$security" "$@" | sha256sum | cut -c1-12)
image=localhost/ballast-base-$name:$suite-$hash
cache=${BALLAST_CACHE_DIR:-.cache}/images
tarball=$cache/base-$name-$suite-$hash.tar
if ! "$engine" image inspect "$image" >/dev/null 2>&1; then
    if [ ! -s "$tarball" ]; then
        command -v mmdebstrap >/dev/null || {
            echo "base-image: mmdebstrap is missing (hack/install-container-deps.sh installs it)" >&2
            exit 1
        }
        mkdir -p "$cache"
        echo "base-image: mmdebstrap $suite with $packages -> $tarball" >&2
        mmdebstrap --quiet --format=tar "$@" "$tarball.tmp" \
            "deb $mirror $suite main" \
            "deb $mirror $suite-updates main" \
            "deb $security $suite-security main" >&2
        mv "$tarball.tmp" "$tarball"
    fi
    echo "base-image: importing $tarball as $image" >&2
    "$engine" import "$tarball" "$image" >/dev/null
fi
echo "$image"

#!/usr/bin/env bash
# hack/apt-install.sh PACKAGE...: installs Debian packages (the install-*deps.sh scripts pass
# only the missing ones); nothing to do without arguments.
set -euo pipefail
(($#)) || exit 0
if [[ $(id -u) != 0 ]]; then
    echo "missing packages: $*; run as root or: sudo apt-get install $*" >&2
    exit 1
fi
echo "installing Debian packages: $*"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null

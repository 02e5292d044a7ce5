#!/usr/bin/env bash
# Installs the Debian packages Ballast's tests and demo run for real: redis-server,
# redis-sentinel and prometheus (the real parts behind the tests) and chromium for the
# dashboard's browser test.
# Only what is missing is installed, so a second run costs nothing.
set -euo pipefail
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-sentinel >/dev/null || need+=(redis-sentinel)  # the Sentinel failover tests
command -v prometheus >/dev/null || need+=(prometheus)
command -v chromium >/dev/null || need+=(chromium)
command -v curl >/dev/null || need+=(curl)
"$(dirname "$0")/apt-install.sh" ${need[@]+"${need[@]}"}
# Go is checked by `ballast sandbox build`, and only when a binary is missing from the cache:
# a machine that shares a built cache (BALLAST_CACHE_DIR) needs no Go toolchain.

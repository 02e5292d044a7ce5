# syntax=docker/dockerfile:1.7
# One image for both components: `ballast watcher ...` (the default) or `ballast scheduler ...`.

FROM python:3.11-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/ballast
WORKDIR /src
COPY pyproject.toml README.md ./
COPY ballast ballast
COPY shared shared
COPY watcher watcher
COPY scheduler scheduler
COPY sandbox sandbox
# Bytecode compiled once here, not at every start: with no .pyc (and PYTHONDONTWRITEBYTECODE
# below) each start compiles every module it imports, 1.0-1.4 s of the scheduler's start-up
# CPU (docs/scheduler.md, issue 19). unchecked-hash: the image never changes under it. The
# kubernetes client's generated API classes and models (about 50 MB of bytecode) are left out:
# a start imports none of them, or a few (the Lease's, with leader election).
RUN /opt/ballast/bin/pip install --no-compile . \
 && find /opt/ballast -name __pycache__ -prune -exec rm -rf {} + \
 && rm -rf /opt/ballast/lib/python3.11/site-packages/sandbox/cluster/components \
 && /opt/ballast/bin/python -m compileall -q --invalidation-mode unchecked-hash \
        -x '/kubernetes/client/(api|models)/' /opt/ballast/lib/python3.11/site-packages

FROM python:3.11-slim-bookworm
ENV PATH=/opt/ballast/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# The base image ships its standard library without bytecode: compiled here for the same reason.
RUN python -m compileall -q --invalidation-mode unchecked-hash \
        -x '/(test|idlelib|tkinter|turtledemo|ensurepip|lib2to3)/' /usr/local/lib/python3.11
RUN groupadd --gid 10001 ballast \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin ballast
COPY --from=build /opt/ballast /opt/ballast
# OpenShift's Secondary Scheduler Operator starts `/bin/kube-scheduler` with kube-scheduler's
# flags; Ballast's scheduler understands --config and --kubeconfig and ignores the others.
COPY --chmod=0755 <<'SHIM' /bin/kube-scheduler
#!/bin/sh
set -eu
config=""; kubeconfig=""
while [ $# -gt 0 ]; do
    case "$1" in
        --config=*) config="${1#--config=}" ;;
        --config) shift; config="$1" ;;
        --kubeconfig=*) kubeconfig="${1#--kubeconfig=}" ;;
        --kubeconfig) shift; kubeconfig="$1" ;;
    esac
    shift
done
set -- scheduler
[ -n "$config" ] && set -- "$@" --config "$config"
[ -n "$kubeconfig" ] && set -- "$@" --kubeconfig "$kubeconfig"
exec ballast "$@"
SHIM
USER 10001:10001
EXPOSE 2020
ENTRYPOINT ["ballast"]
CMD ["watcher"]

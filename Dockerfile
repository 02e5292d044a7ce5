# One image for what runs in a cluster: `ballast watcher ...` (the default), `ballast scheduler
# ...`, `ballast rebalancer ...`; the sandbox, tests and benchmarks stay out.
#
# BASE_IMAGE: any Debian bookworm image with Python 3.11 and its venv module. Both stages use it,
# so the venv's interpreter is the one the runtime stage runs. `make image` passes a base made
# from Debian's packages (hack/base-image.sh), for machines that reach Debian's archive but no
# image registry; the default is the public one, pinned by digest (of the multi-architecture
# index: the release workflow checks that it covers amd64 and arm64). Refresh: `docker buildx
# imagetools inspect python:3.11-slim-bookworm` and paste its Digest.
ARG BASE_IMAGE=python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91
FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python3 -m venv /opt/ballast
WORKDIR /src
COPY pyproject.toml README.md requirements.lock ./
COPY ballast ballast
COPY shared shared
COPY watcher watcher
COPY scheduler scheduler
# Bytecode compiled once here, not at every start: with no .pyc (and PYTHONDONTWRITEBYTECODE
# below) each start compiles every module it imports, 1.0-1.4 s of the scheduler's start-up
# CPU (docs/scheduler.md, issue 19). unchecked-hash: the image never changes under it. The
# kubernetes client's generated API classes and models (about 50 MB of bytecode) are left out:
# a start imports none of them, or a few (the Lease's, with leader election).
# Dependencies from the lock (`make lock`), every file checked against its sha256; then the
# project itself without resolving anything again.
RUN /opt/ballast/bin/pip install --no-compile --require-hashes -r requirements.lock \
 && /opt/ballast/bin/pip install --no-compile --no-deps . \
 && find /opt/ballast -name __pycache__ -prune -exec rm -rf {} + \
 && /opt/ballast/bin/python -m compileall -q --invalidation-mode unchecked-hash \
        -x '/kubernetes/client/(api|models)/' /opt/ballast/lib/python3.11/site-packages

FROM ${BASE_IMAGE}
ENV PATH=/opt/ballast/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# The public base ships its standard library without bytecode: compiled here for the same
# reason (wherever the base keeps it: /usr/local/lib there, /usr/lib in Debian's python3).
RUN python3 -m compileall -q --invalidation-mode unchecked-hash \
        -x '/(test|idlelib|tkinter|turtledemo|ensurepip|lib2to3)/' \
        "$(python3 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')"
RUN groupadd --gid 10001 ballast \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin ballast
COPY --from=build /opt/ballast /opt/ballast
# OpenShift's Secondary Scheduler Operator starts `/bin/kube-scheduler` with kube-scheduler's
# flags; Ballast's scheduler understands --config and --kubeconfig and ignores the others. A file,
# not a heredoc: buildah before 1.33 (Debian's podman 4.3) reads no heredocs.
COPY --chmod=0755 images/ballast/kube-scheduler /bin/kube-scheduler
USER 10001:10001
EXPOSE 2020
ENTRYPOINT ["ballast"]
CMD ["watcher"]

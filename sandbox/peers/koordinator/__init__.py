"""Koordinator on the sandbox: koord-scheduler (LoadAwareScheduling) and koord-descheduler
(LowNodeLoad) of the pinned release, reading the NodeMetric objects `sandbox.load.nodemetric` writes
in place of its node agent.

The Go wrapper module beside this file builds both (main.go is koord-scheduler with the plugins
its profile needs; koord-descheduler is Koordinator's own command, a `tool` of go.mod) into the
sandbox's binary cache, and the release's CRDs (config/crd/bases of the module) are copied
beside them, so running the peer needs no Go. `ensure_built` builds lazily (minutes: run it
under the heavy-job lock); `ballast sandbox build --with-koordinator` calls it.
`sandbox.peers.koordinator.scheduler` and `sandbox.peers.koordinator.descheduler` start the two.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from sandbox.cluster import build, versions
from sandbox.cluster.controlplane import ControlPlane
from sandbox.cluster.errors import BuildError, SandboxError

MODULE_DIR = Path(__file__).resolve().parent
MODULE = "github.com/koordinator-sh/koordinator"
DESCHEDULER_PACKAGE = f"{MODULE}/cmd/koord-descheduler"
REQUEST_TIMEOUT = 10.0


def scheduler_binary() -> Path:
    return build.bin_dir() / versions.koord_scheduler_binary()


def descheduler_binary() -> Path:
    return build.bin_dir() / versions.koord_descheduler_binary()


def crd_dir() -> Path:
    return build.bin_dir() / versions.koordinator_crds()


def built() -> bool:
    return scheduler_binary().is_file() and descheduler_binary().is_file() and crd_dir().is_dir()


def check_go_mod() -> None:
    problems = versions.koordinator_go_mod_mismatches((MODULE_DIR / "go.mod").read_text())
    fix = (
        f"In sandbox/peers/koordinator require {MODULE}@vX.Y.Z, copy that release's replace block "
        "from its go.mod, and run `go mod tidy`; or change the pin."
    )
    build._refuse_drift(MODULE_DIR, problems, fix)


def ensure_built(say: build.Printer = print) -> Path:
    """koord-scheduler, koord-descheduler and the CRDs, built first when missing; returns the
    binary cache folder holding them."""
    target = build.bin_dir()
    if built():
        return target
    go = build.find_go()
    check_go_mod()
    target.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    say(
        f"building koord-scheduler and koord-descheduler (Koordinator "
        f"v{versions.KOORDINATOR_VERSION}); the first build downloads and compiles its whole "
        "dependency graph"
    )
    started = time.monotonic()
    outputs = (
        (scheduler_binary(), ".", "koord-scheduler"),
        (descheduler_binary(), DESCHEDULER_PACKAGE, "koord-descheduler"),
    )
    for output, package, what in outputs:
        if output.is_file():
            continue
        staging = output.with_name(output.name + ".tmp")
        cmd = [go, "build", "-buildvcs=false", "-ldflags", "-s -w", "-o", str(staging), package]
        build._run(cmd, MODULE_DIR, env, target / f"build-{what}.log", what, say)
        staging.chmod(0o755)
        staging.replace(output)
    if not crd_dir().is_dir():
        _copy_crds(go, env)
    say(f"Koordinator ready in {target} ({time.monotonic() - started:.0f} s)")
    return target


def _copy_crds(go: str, env: dict[str, str]) -> None:
    """The release's CRDs from the module cache (where the build fetched the module) into the
    binary cache, through a temporary folder so a half copy is never trusted."""
    found = subprocess.run(
        [go, "list", "-m", "-json", MODULE],
        cwd=MODULE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if found.returncode != 0:
        raise BuildError(f"`go list -m {MODULE}` failed: {found.stderr.strip()}")
    source = Path(json.loads(found.stdout)["Dir"]) / "config" / "crd" / "bases"
    files = sorted(source.glob("*.yaml"))
    if not files:
        raise BuildError(f"no CRDs in {source}")
    staging = crd_dir().with_name(crd_dir().name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for path in files:
        shutil.copyfile(path, staging / path.name)
    staging.replace(crd_dir())


def crds() -> list[dict]:
    """The pinned release's CustomResourceDefinitions, as the build copied them."""
    folder = crd_dir()
    if not folder.is_dir():
        raise SandboxError(
            f"Koordinator's CRDs are not in {folder}: "
            "run `ballast sandbox build --with-koordinator`"
        )
    docs = []
    for path in sorted(folder.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def apply_crds(api: client.ApiClient, timeout: float = 60.0) -> list[str]:
    """Creates every CRD of the release (the ones already there are kept) and waits until the
    apiserver serves them all; returns their names. Both binaries need some of them: koord-
    scheduler waits forever for its Reservation and Device informers, koord-descheduler exits
    without PodMigrationJob, and both read NodeMetric."""
    ext = client.ApiextensionsV1Api(api)
    names = []
    for body in crds():
        names.append(body["metadata"]["name"])
        try:
            ext.create_custom_resource_definition(body, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status != 409:
                raise SandboxError(
                    f"could not create CRD {names[-1]}: {exc.status} {exc.reason}"
                ) from exc
    deadline = time.monotonic() + timeout
    waiting = list(names)
    while waiting:
        crd = ext.read_custom_resource_definition(waiting[0], _request_timeout=REQUEST_TIMEOUT)
        conditions = (crd.status and crd.status.conditions) or []
        if any(c.type == "Established" and c.status == "True" for c in conditions):
            waiting.pop(0)
        elif time.monotonic() > deadline:
            raise SandboxError(f"CRDs not established after {timeout:.0f} s: {waiting}")
        else:
            time.sleep(0.1)
    return names


def start_node_agent(plane: ControlPlane, name: str = "simulator") -> None:
    """Runs `ballast simulator --node-metrics` beside the sandbox (log `<name>.log`, stopped by
    `ballast sandbox down`): the seeded load for every node, written as NodeMetric objects with
    koordlet's defaults (a report every 60 s of 300-second averages)."""
    argv = [sys.executable, "-m", "ballast.cli", "simulator", "--node-metrics"]
    argv += ["--kubeconfig", str(plane.kubeconfig)]
    plane.spawn(name, argv)

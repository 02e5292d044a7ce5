"""Builds the pinned upstream components the sandbox runs into a versioned binary cache.

etcd, kube-apiserver, kubectl and kube-scheduler come from the wrapper module in components/
(one `go build` for all of them, so Go schedules the shared packages once); kwok is installed
from its own module. The Trimaran scheduler (kube-scheduler with sigs.k8s.io/scheduler-plugins'
load-aware plugins) comes from its own wrapper module in trimaran/, whose go.mod carries
scheduler-plugins' dependencies and so stays apart from components/go.mod. Binaries are written
to a temporary folder and renamed into place, so an interrupted build never leaves a
half-written binary that a later run would trust.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from sandbox.cluster import defaults, versions
from sandbox.cluster.errors import BinaryMissingError, BuildError, GoMissingError

Printer = Callable[[str], None]
HEARTBEAT_SECONDS = 30.0
# A cold build of kube-apiserver on 2 cores takes tens of minutes; a hung build still ends.
BUILD_TIMEOUT = 3 * 3600.0
TRIMARAN_DIR = defaults.PEERS_DIR / "trimaran"
# helm's own wrapper module: helm.sh/helm/v3 pulls in containerd, oras and friends, which have no
# place in components/go.mod.
HELM_DIR = defaults.PEERS_DIR / "helm"
# metrics-server's wrapper module: its own go.mod with the k8s.io 0.33 modules it is released with.
METRICS_SERVER_DIR = defaults.PEERS_DIR / "metrics_server"


def bin_dir() -> Path:
    return defaults.cache_dir() / "bin" / versions.cache_tag()


def binary(name: str, how: str = "") -> Path:
    """Path of a built component; raises with the command to run when it is not built yet
    (`how`, or the one this module knows for its own components)."""
    path = bin_dir() / name
    if not path.is_file():
        how = how or _how_to_build(name)
        raise BinaryMissingError(f"{name} is not built ({path} missing): run `{how}`")
    return path


def _how_to_build(name: str) -> str:
    """The command that builds one of the sandbox's own components."""
    if name == versions.trimaran_binary():
        return "ballast sandbox build --with-trimaran"
    if name == versions.helm_binary():
        return "make helm-build"
    if name == versions.metrics_server_binary():
        return "ballast sandbox build --with-metrics-server"
    if name in (versions.koord_scheduler_binary(), versions.koord_descheduler_binary()):
        return "ballast sandbox build --with-koordinator"
    if name != "kube-scheduler":
        return "make sandbox-build"
    return "ballast sandbox build --with-kube-scheduler"


def wanted(
    with_kube_scheduler: bool = False,
    with_trimaran: bool = False,
    with_helm: bool = False,
    with_metrics_server: bool = False,
) -> list[str]:
    names = list(defaults.COMPONENTS)
    if with_kube_scheduler:
        names += defaults.OPTIONAL_COMPONENTS
    if with_trimaran:
        names.append(versions.trimaran_binary())
    if with_helm:
        names.append(versions.helm_binary())
    if with_metrics_server:
        names.append(versions.metrics_server_binary())
    return names


def missing(
    with_kube_scheduler: bool = False,
    with_trimaran: bool = False,
    with_helm: bool = False,
    with_metrics_server: bool = False,
) -> list[str]:
    names = wanted(with_kube_scheduler, with_trimaran, with_helm, with_metrics_server)
    return [n for n in names if not (bin_dir() / n).is_file()]


def find_go() -> str:
    go = shutil.which("go")
    if go is None:
        raise GoMissingError(
            "Go toolchain not found on PATH: install Go >= 1.24 (https://go.dev/doc/install); "
            "it is used only to build etcd, kube-apiserver, kubectl and kwok for the sandbox"
        )
    return go


def _refuse_drift(module_dir: Path, problems: list[str], fix: str) -> None:
    if problems:
        raise BuildError(
            f"sandbox/{module_dir.name}/go.mod disagrees with sandbox/cluster/versions.py: "
            + "; ".join(problems)
            + f". {fix}"
        )


def check_go_mod() -> None:
    go_mod = (defaults.COMPONENTS_DIR / "go.mod").read_text()
    fix = "Update go.mod (go get k8s.io/kubernetes@vX.Y.Z, staging replaces v0.Y.Z, go mod tidy)"
    _refuse_drift(
        defaults.COMPONENTS_DIR, versions.go_mod_mismatches(go_mod), fix + " or the pins."
    )


def check_trimaran_go_mod() -> None:
    go_mod = (TRIMARAN_DIR / "go.mod").read_text()
    fix = (
        "Update go.mod (go get sigs.k8s.io/scheduler-plugins@vX, replaces of k8s.io/kubernetes "
        "and the staging modules, go mod tidy) or the pins."
    )
    _refuse_drift(TRIMARAN_DIR, versions.trimaran_go_mod_mismatches(go_mod), fix)


def check_helm_go_mod() -> None:
    go_mod = (HELM_DIR / "go.mod").read_text()
    fix = "In sandbox/peers/helm run `go get -tool helm.sh/helm/v3/cmd/helm@vX.Y.Z`"
    fix += ", or change the pin."
    _refuse_drift(HELM_DIR, versions.helm_go_mod_mismatches(go_mod), fix)


def check_metrics_server_go_mod() -> None:
    go_mod = (METRICS_SERVER_DIR / "go.mod").read_text()
    fix = "In sandbox/peers/metrics_server run "
    fix += "`go get sigs.k8s.io/metrics-server@vX.Y.Z && go mod tidy`."
    _refuse_drift(METRICS_SERVER_DIR, versions.metrics_server_go_mod_mismatches(go_mod), fix)


def _version_ldflags() -> str:
    major, minor, _ = versions.KUBERNETES_VERSION.split(".")
    version = f"v{versions.KUBERNETES_VERSION}"
    # Without these the binaries report v0.0.0-master and kubectl warns about version skew.
    stamps = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        stamps += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={major}"]
        stamps += [f"-X {pkg}.gitMinor={minor}", f"-X {pkg}.gitTreeState=clean"]
    return "-s -w " + " ".join(stamps)


def _metrics_server_ldflags() -> str:
    # As metrics-server's Makefile stamps it, so `--version` and its /version say the release.
    version = f"v{versions.METRICS_SERVER_VERSION}"
    return f"-s -w -X k8s.io/client-go/pkg/version.gitVersion={version}"


def _helm_command(go: str, output: Path) -> list[str]:
    version = f"v{versions.HELM_VERSION}"
    major, minor, _ = versions.KUBERNETES_VERSION.split(".")
    # As helm's Makefile stamps them: its version, and the Kubernetes version `helm template`
    # and `helm lint` assume (.Capabilities.KubeVersion) when no cluster is asked.
    stamps = [f"-X helm.sh/helm/v3/internal/version.version={version}"]
    stamps += ["-X helm.sh/helm/v3/internal/version.gitTreeState=clean"]
    for pkg in ("helm.sh/helm/v3/pkg/lint/rules", "helm.sh/helm/v3/pkg/chartutil"):
        stamps += [f"-X {pkg}.k8sVersionMajor={major}", f"-X {pkg}.k8sVersionMinor={minor}"]
    ldflags = "-s -w " + " ".join(stamps)
    # The `tool` line of helm/go.mod builds helm's own main package with this module's go.sum.
    cmd = [go, "build", "-buildvcs=false", "-ldflags", ldflags]
    return cmd + ["-o", str(output), "helm.sh/helm/v3/cmd/helm"]


def cached(target: Path, say: Printer) -> bool:
    """True, said, when `target` is already built."""
    if target.is_file():
        say(f"{target.name} up to date in {target.parent}")
        return True
    return False


def build_command(
    target: Path, module_dir: Path, command: str, name: str, what: str, say: Printer
) -> Path:
    """`go build` of `command` in the wrapper module `module_dir` into `target`, staged beside
    it so a half-built binary never lands in the cache; the log is build-<name>.log."""
    go = find_go()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".build-{name}-") as tmp:
        staging = Path(tmp) / name
        cmd = [go, "build", "-buildvcs=false", "-ldflags", "-s -w", "-o", str(staging), command]
        log = target.parent / f"build-{name}.log"
        _run(cmd, module_dir, dict(os.environ), log, what, say)
        staging.replace(target)
    return target


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], log: Path, what: str, say: Printer
) -> None:
    """Runs a build step, printing a line every HEARTBEAT_SECONDS so a long build looks alive."""
    started = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        while True:
            try:
                code = proc.wait(timeout=HEARTBEAT_SECONDS)
                break
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - started
                if elapsed > BUILD_TIMEOUT:
                    proc.kill()
                    proc.wait()
                    code = -1
                    break
                say(f"  ... still building {what} ({elapsed:.0f} s)")
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise BuildError(
            f"building {what} failed (exit {code}); full log: {log}\n{tail}\n"
            "Check network access to the Go module proxy and free disk space, then rerun "
            "`make sandbox-build` (finished binaries are kept)."
        )
    say(f"  built {what} in {time.monotonic() - started:.0f} s")


def build(
    with_kube_scheduler: bool = False,
    say: Printer = print,
    with_trimaran: bool = False,
    with_helm: bool = False,
    with_metrics_server: bool = False,
) -> Path:
    """Builds whatever is missing; returns the folder holding the binaries."""
    todo = missing(with_kube_scheduler, with_trimaran, with_helm, with_metrics_server)
    target = bin_dir()
    if not todo:
        say(f"sandbox binaries up to date in {target}")
        return target
    go = find_go()
    check_go_mod()
    trimaran = versions.trimaran_binary()
    if trimaran in todo:
        check_trimaran_go_mod()
    helm = versions.helm_binary()
    if helm in todo:
        check_helm_go_mod()
    metrics_server = versions.metrics_server_binary()
    if metrics_server in todo:
        check_metrics_server_go_mod()
    target.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=target, prefix=".build-") as tmp:
        staging = Path(tmp)
        from_module = [n for n in todo if n not in ("kwok", trimaran, helm, metrics_server)]
        if from_module:
            say(
                f"building {', '.join(from_module)} (Kubernetes {versions.KUBERNETES_VERSION}, "
                f"etcd {versions.ETCD_VERSION}); a first build from an empty Go cache takes a "
                "long while, later ones reuse it"
            )
            cmd = [go, "build", "-buildvcs=false", "-ldflags", _version_ldflags(), "-o"]
            cmd += [str(staging) + "/"] + [f"./{n}" for n in from_module]
            what = ", ".join(from_module)
            _run(cmd, defaults.COMPONENTS_DIR, env, target / "build.log", what, say)
        if "kwok" in todo:
            say(f"building kwok {versions.KWOK_VERSION}")
            cmd = [go, "install", f"sigs.k8s.io/kwok/cmd/kwok@v{versions.KWOK_VERSION}"]
            # Outside any module, so `go install pkg@version` uses kwok's own go.mod.
            kwok_env = env | {"GOBIN": str(staging), "GOFLAGS": "-buildvcs=false"}
            _run(cmd, staging, kwok_env, target / "build-kwok.log", "kwok", say)
        if trimaran in todo:
            # After the components, never beside them: one heavy Go build at a time on 2 cores.
            say(
                f"building the Trimaran scheduler (scheduler-plugins "
                f"v{versions.SCHEDULER_PLUGINS_VERSION} on Kubernetes "
                f"{versions.KUBERNETES_VERSION})"
            )
            cmd = [go, "build", "-buildvcs=false", "-ldflags", _version_ldflags()]
            cmd += ["-o", str(staging / trimaran), "."]
            _run(cmd, TRIMARAN_DIR, env, target / "build-trimaran.log", "Trimaran", say)
        if helm in todo:
            say(f"building helm {versions.HELM_VERSION}")
            log = target / "build-helm.log"
            _run(_helm_command(go, staging / helm), HELM_DIR, env, log, "helm", say)
        if metrics_server in todo:
            say(f"building metrics-server {versions.METRICS_SERVER_VERSION}")
            cmd = [go, "build", "-buildvcs=false", "-ldflags", _metrics_server_ldflags()]
            cmd += ["-o", str(staging / metrics_server), "."]
            log = target / "build-metrics-server.log"
            _run(cmd, METRICS_SERVER_DIR, env, log, "metrics-server", say)
        _install(staging, target, todo)
    say(f"sandbox binaries ready in {target} ({time.monotonic() - started:.0f} s)")
    return target


def _install(staging: Path, target: Path, names: Iterable[str]) -> None:
    for name in names:
        built = staging / name
        if not built.is_file():
            raise BuildError(f"the build reported success but produced no {name} in {staging}")
        built.chmod(0o755)
        built.replace(target / name)

"""The release workflow (.github/workflows/release.yaml) cannot run here (no registry, no
container engine): its structure is checked instead. On a version tag it builds the image for
amd64 and arm64 with buildx and pushes it, then pushes the chart as an OCI artifact; the
Dockerfile's base is pinned by digest and installs the locked, hashed dependencies."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yaml"


def workflow() -> dict:
    doc = yaml.safe_load(WORKFLOW.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


def steps(job: dict) -> list[dict]:
    return job["steps"]


def uses(job: dict) -> dict[str, dict]:
    return {s["uses"].split("@")[0]: s for s in steps(job) if "uses" in s}


def test_it_runs_on_version_tags_only_with_least_privilege():
    doc = workflow()
    assert doc["on"] == {"push": {"tags": ["v*.*.*"]}}
    assert doc["permissions"] == {"contents": "read"}
    for job in doc["jobs"].values():
        assert job["permissions"] == {"contents": "read", "packages": "write"}
        # every action pinned to a major version at least
        for step in steps(job):
            if "uses" in step:
                assert re.search(r"@v\d+", step["uses"]), step["uses"]


def test_the_image_is_multi_arch_and_pushed():
    job = workflow()["jobs"]["image"]
    actions = uses(job)
    assert {"docker/setup-qemu-action", "docker/setup-buildx-action",
            "docker/login-action", "docker/build-push-action"} <= set(actions)  # fmt: skip
    build = actions["docker/build-push-action"]["with"]
    assert set(build["platforms"].split(",")) == {"linux/amd64", "linux/arm64"}
    assert build["push"] is True


def test_the_chart_is_pushed_as_an_oci_artifact_after_the_image():
    doc = workflow()
    job = doc["jobs"]["chart"]
    assert job["needs"] == "image"
    script = "\n".join(s.get("run", "") for s in steps(job))
    assert "helm package charts/ballast" in script
    assert re.search(r"helm push \"?\S+\.tgz\"? \"\$\{CHART_REPO\}\"", script)
    assert doc["env"]["CHART_REPO"].startswith("oci://")
    helm = uses(job)["azure/setup-helm"]["with"]["version"]
    from sandbox.cluster import versions

    assert helm == f"v{versions.HELM_VERSION}"  # the helm the tests use


def test_the_dockerfile_pins_its_base_by_digest_and_installs_the_lock():
    text = (ROOT / "Dockerfile").read_text()
    base = re.search(r"^ARG BASE_IMAGE=(\S+)$", text, re.M)
    assert base and re.fullmatch(r"[\w./:-]+@sha256:[0-9a-f]{64}", base.group(1)), base
    assert "--require-hashes" in text and "requirements.lock" in text


def test_the_lock_pins_every_dependency_with_hashes():
    lock = (ROOT / "requirements.lock").read_text()
    pins = dict(re.findall(r"^([a-z0-9][a-z0-9._-]*)==(\S+) \\$", lock, re.M))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    assert wanted <= set(pins), wanted - set(pins)
    # each pin, its dependencies' included, is followed by its files' sha256 hashes
    for block in re.split(r"\n(?=[a-z0-9])", lock.split("\n", 1)[1]):
        if "==" in block.split("\n", 1)[0]:
            assert "--hash=sha256:" in block, block.split("\n", 1)[0]

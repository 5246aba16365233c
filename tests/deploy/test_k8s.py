"""The Kubernetes manifests render, hold together, and run the service the way the image and the docs say.

Rendering needs `kubectl` (Debian's kubernetes-client; deploy/ci-tools.sh installs it in CI): without it these tests
skip. kubernetes-validate comes from the deploy tools' venv `.venv-deploy` (`make deploy-check` makes it): without
it those tests skip, except under `make deploy-check` (DAGSCHED_DEPLOY_CHECK=1), where they fail.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from dagsched.cli import app
from dagsched.service.config import read_config
from dagsched.service.routes.k8s import router as k8s_router

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUSTOMIZATIONS = {"base": K8S / "base", "dev": K8S / "overlays" / "dev", "prod": K8S / "overlays" / "prod"}
DEPLOY_BIN = ROOT / ".venv-deploy" / "bin"
K8S_VERSION = re.search(r"^K8S_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)  # type: ignore[union-attr]
NAMESPACE = "dagsched-system"


def _kubectl() -> str:
    exe = shutil.which("kubectl")
    if exe is None:
        if os.environ.get("DAGSCHED_DEPLOY_CHECK"):
            pytest.fail("kubectl is missing under make deploy-check")
        pytest.skip("kubectl not found: apt-get install kubernetes-client (deploy/ci-tools.sh does it in CI)")
    return exe


def _tool(name: str) -> Path:
    exe = DEPLOY_BIN / name
    if not exe.exists():
        if os.environ.get("DAGSCHED_DEPLOY_CHECK"):
            pytest.fail(f".venv-deploy/bin/{name} is missing under make deploy-check")
        pytest.skip(".venv-deploy not found: `make deploy-check` creates it from deploy/requirements-deploy.lock")
    return exe


_RENDERED: dict[str, str] = {}


def render_text(path: Path) -> str:
    key = str(path)
    if key not in _RENDERED:
        done = subprocess.run(
            [_kubectl(), "kustomize", str(path)], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
        assert done.returncode == 0, done.stderr
        _RENDERED[key] = done.stdout
    return _RENDERED[key]


def render(name: str) -> list[dict[str, Any]]:
    path = K8S / "ray" if name == "ray" else KUSTOMIZATIONS[name]
    return [d for d in yaml.safe_load_all(render_text(path)) if d]


def find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The object of that kind and name; a generated ConfigMap or Secret has kustomize's hash suffix after it."""
    pattern = re.compile(rf"{re.escape(name)}(-[a-z0-9]{{10}})?")
    hits = [d for d in docs if d["kind"] == kind and pattern.fullmatch(d["metadata"]["name"])]
    assert len(hits) == 1, f"{kind}/{name}: {len(hits)} objects"
    return hits[0]


def serve_options() -> set[str]:
    serve = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    return {opt for param in serve.params for opt in param.opts}


def documented_command() -> list[str]:
    """What the image runs, per the Deploy section (README.md's once it has one, else docs/deploy.md's)."""
    for doc in (ROOT / "README.md", ROOT / "docs" / "deploy.md"):
        section = re.search(r"^## Deploy\n(.*?)(?=^## )", doc.read_text() + "\n## end", re.S | re.M)
        if section is not None:
            found = re.search(r"the image runs `([^`]+)`", section.group(1))
            assert found, f"{doc.name}'s Deploy section does not say what the image runs"
            return shlex.split(found.group(1))
    raise AssertionError("no '## Deploy' section")


def service_pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = find(docs, "Deployment", "dagsched")["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("name", ["base", "dev", "prod"])
def test_renders_and_every_object_is_namespaced_where_it_should_be(name: str) -> None:
    """Every kustomization renders; every namespaced object is in dagsched-system except the scheduler's RoleBinding
    to kube-system's extension-apiserver-authentication-reader, which must stay in kube-system."""
    docs = render(name)
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "Service", "PodDisruptionBudget", "ConfigMap", "NetworkPolicy", "ClusterRoleBinding"} <= kinds
    for d in docs:
        ns = d["metadata"].get("namespace")
        if d["kind"] in {"Namespace", "ClusterRoleBinding"}:
            assert ns is None
        elif d["metadata"]["name"].endswith("extension-apiserver-authentication-reader"):
            assert ns == "kube-system"
        else:
            assert ns == NAMESPACE, f"{d['kind']}/{d['metadata']['name']} in {ns}"


@pytest.mark.parametrize("name", ["base", "prod"])
def test_service_deployment_is_hardened_probed_and_sized(name: str) -> None:
    """At least two replicas; /readyz readiness, /healthz liveness and startup; requests and limits on every
    container; non-root, read-only root, no privilege escalation, ALL capabilities dropped, seccomp RuntimeDefault."""
    docs = render(name)
    dep = find(docs, "Deployment", "dagsched")
    if name == "prod":  # the HorizontalPodAutoscaler owns the count there
        assert (
            "replicas" not in dep["spec"]
            and find(docs, "HorizontalPodAutoscaler", "dagsched")["spec"]["minReplicas"] >= 2
        )
    else:
        assert dep["spec"]["replicas"] >= 2
    pod = dep["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    main = pod["containers"][0]
    assert main["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert main["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert main["startupProbe"]["httpGet"]["path"] == "/healthz"
    for c in pod["containers"] + pod["initContainers"]:
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        assert set(c["resources"]["requests"]) == set(c["resources"]["limits"]) == {"cpu", "memory"}
    assert main["resources"]["requests"]["memory"] == "640Mi"  # the measured 569-607 MiB, plus headroom


def test_service_runs_the_documented_command_with_its_config_and_secrets() -> None:
    """The container runs the image's documented command plus `--config` at the mounted ConfigMap's file; that file
    is a runtime config dagsched accepts; the token and store URL come from the Secret, which dev generates."""
    docs = render("dev")
    pod = service_pod(docs)
    main = pod["containers"][0]
    cmd = main["command"]
    doc = documented_command()
    assert cmd[: len(doc)] == doc
    assert set(cmd[2::2]) <= serve_options() and len(cmd[2:]) % 2 == 0
    config_path = Path(cmd[cmd.index("--config") + 1])
    mount = next(m for m in main["volumeMounts"] if m["mountPath"] == str(config_path.parent))
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    cm = find(docs, "ConfigMap", "dagsched-config")
    assert volume["configMap"]["name"] == cm["metadata"]["name"]
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / config_path.name
        file.write_text(cm["data"][config_path.name])
        config = read_config(file)  # raises, naming the field, if dagsched would refuse it
    assert config.default_scheduler == "sampling"
    env = {e["name"]: e for e in main["env"]}
    secret = find(docs, "Secret", "dagsched-secrets")
    for var, key in (("DAGSCHED_API_TOKEN", "api-token"), ("DAGSCHED_STORE_URL", "store-url")):
        ref = env[var]["valueFrom"]["secretKeyRef"]
        assert ref["key"] == key and ref["name"] == secret["metadata"]["name"]
        assert key in secret["data"]
    assert env["DAGSCHED_ENVIRONMENT"]["value"] == "dev"
    assert "Secret" not in {d["kind"] for d in render("prod")}, "prod must not carry a Secret in git"


def test_writable_paths_are_emptydirs_seeded_from_the_image() -> None:
    """Every path the process writes (numba's cache, uploaded models, /tmp) is an emptyDir mount; the init container
    copies the image's precompiled kernels into the cache's emptyDir."""
    pod = service_pod(render("base"))
    main = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in main["env"]}
    empty = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    mounts = {m["mountPath"]: m["name"] for m in main["volumeMounts"]}
    for path in (env["NUMBA_CACHE_DIR"], env["DAGSCHED_MODEL_DIR"], "/tmp/x"):
        owner = max((m for m in mounts if path.startswith(m + "/")), key=len)
        assert mounts[owner] in empty, f"{path} is not on an emptyDir"
    seed = pod["initContainers"][0]
    cache_volume = mounts[max((m for m in mounts if env["NUMBA_CACHE_DIR"].startswith(m + "/")), key=len)]
    assert seed["volumeMounts"][0]["name"] == cache_volume
    assert seed["command"][:2] == ["cp", "-R"] and seed["command"][2] == env["NUMBA_CACHE_DIR"]
    assert seed["image"] == main["image"]


def test_service_pdb_and_network_policy_select_the_service_pods() -> None:
    """The Service, the PodDisruptionBudget and the NetworkPolicy select exactly the service's pods, on the port the
    container names."""
    docs = render("prod")
    dep = find(docs, "Deployment", "dagsched")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    svc = find(docs, "Service", "dagsched")
    assert svc["spec"]["selector"].items() <= labels.items()
    port = svc["spec"]["ports"][0]
    assert port["port"] == 8080
    assert port["targetPort"] in {p["name"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]}
    pdb = find(docs, "PodDisruptionBudget", "dagsched")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"]["maxUnavailable"] == 1
    netpol = find(docs, "NetworkPolicy", "dagsched")
    assert netpol["spec"]["podSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]


def test_prod_autoscales_on_cpu_and_plan_latency() -> None:
    """prod's HorizontalPodAutoscaler scales the service Deployment between at least the PDB's two serving pods and
    more, on CPU utilisation of the request and on the custom metric the Prometheus adapter's rule serves (the p99 of
    the plan latency histogram the service exports); base and dev have none."""
    docs = render("prod")
    hpa = find(docs, "HorizontalPodAutoscaler", "dagsched")
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    dep = find(docs, "Deployment", "dagsched")
    assert (target["kind"], target["name"], target["apiVersion"]) == ("Deployment", dep["metadata"]["name"], "apps/v1")
    pdb = find(docs, "PodDisruptionBudget", "dagsched")
    assert hpa["spec"]["minReplicas"] - pdb["spec"]["maxUnavailable"] >= 2
    assert hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"]
    metrics = {m["type"]: m for m in hpa["spec"]["metrics"]}
    cpu = metrics["Resource"]["resource"]
    assert cpu["name"] == "cpu" and 0 < cpu["target"]["averageUtilization"] <= 100
    assert "cpu" in service_pod(docs)["containers"][0]["resources"]["requests"]  # utilisation is of the request
    custom = metrics["Pods"]["pods"]
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "adapter.yaml").read_text())["rules"]
    served = {r["name"]["as"]: r for r in rules}
    assert custom["metric"]["name"] in served
    assert "dagsched_plan_latency_seconds_bucket" in served[custom["metric"]["name"]]["seriesQuery"]
    assert custom["target"]["type"] == "AverageValue" and custom["target"]["averageValue"] == "50m"
    for name in ("base", "dev"):
        assert "HorizontalPodAutoscaler" not in {d["kind"] for d in render(name)}


def test_grpc_port_is_served_and_reachable() -> None:
    """The container serves gRPC (`--grpc-port`), names the port, and the Service and NetworkPolicy open it."""
    docs = render("prod")
    main = service_pod(docs)["containers"][0]
    port = int(main["command"][main["command"].index("--grpc-port") + 1])
    assert {"name": "grpc", "containerPort": port, "protocol": "TCP"} in main["ports"]
    svc_ports = {p["name"]: p for p in find(docs, "Service", "dagsched")["spec"]["ports"]}
    assert svc_ports["grpc"]["port"] == port and svc_ports["grpc"]["targetPort"] == "grpc"
    open_ports = {
        p["port"] for rule in find(docs, "NetworkPolicy", "dagsched")["spec"]["ingress"] for p in rule["ports"]
    }
    assert {8080, port} <= open_ports


def _scheduler_config(docs: list[dict[str, Any]]) -> dict[str, Any]:
    cm = find(docs, "ConfigMap", "dagsched-scheduler-config")
    config: dict[str, Any] = yaml.safe_load(cm["data"]["scheduler-config.yaml"])
    return config


def test_second_scheduler_profile_calls_the_service_extender_routes() -> None:
    """The kube-scheduler profile `dagsched` reaches the Service's port at /v1/k8s with verbs the service routes,
    sends every pod of the profile (no managedResources), and is ignorable; the default scheduler is left alone."""
    docs = render("prod")
    config = _scheduler_config(docs)
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in config["profiles"]] == ["dagsched"]
    (ext,) = config["extenders"]
    svc = find(docs, "Service", "dagsched")
    prefix = f"http://{svc['metadata']['name']}.{NAMESPACE}.svc.cluster.local:{svc['spec']['ports'][0]['port']}/v1/k8s"
    assert ext["urlPrefix"] == prefix
    routes = {r.path for r in k8s_router.routes}  # type: ignore[attr-defined]
    assert {f"/v1/k8s/{ext['filterVerb']}", f"/v1/k8s/{ext['prioritizeVerb']}"} <= routes
    assert ext["ignorable"] is True and "managedResources" not in ext
    example = yaml.safe_load((ROOT / "deploy" / "kube-scheduler-extender.yaml").read_text())
    assert example["extenders"] == config["extenders"], "the default-scheduler example drifted from the profile"
    assert [p["schedulerName"] for p in example["profiles"]] == ["default-scheduler"]


def test_second_scheduler_deployment_rbac_and_lease() -> None:
    """kube-scheduler pinned to the validated Kubernetes minor, reading the mounted config, with its ServiceAccount
    bound to system:kube-scheduler, system:volume-scheduler, the authentication reader, and a Role for exactly its
    own lease."""
    docs = render("prod")
    dep = find(docs, "Deployment", "dagsched-scheduler")
    assert dep["spec"]["replicas"] >= 2
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    minor = ".".join(K8S_VERSION.split(".")[:2])
    assert re.fullmatch(rf"registry\.k8s\.io/kube-scheduler:v{re.escape(minor)}\.\d+", c["image"]), c["image"]
    config_arg = next(a for a in c["command"] if a.startswith("--config="))
    config_path = Path(config_arg.split("=", 1)[1])
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == str(config_path.parent))
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    cm = find(docs, "ConfigMap", "dagsched-scheduler-config")
    assert volume["configMap"]["name"] == cm["metadata"]["name"] and config_path.name in cm["data"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 10259, "scheme": "HTTPS"}
    sa = pod["serviceAccountName"]
    bound = {
        (d["kind"], d["roleRef"]["name"])
        for d in docs
        if d["kind"] in {"ClusterRoleBinding", "RoleBinding"}
        and {"kind": "ServiceAccount", "name": sa, "namespace": NAMESPACE} in d["subjects"]
    }
    assert bound == {
        ("ClusterRoleBinding", "system:kube-scheduler"),
        ("ClusterRoleBinding", "system:volume-scheduler"),
        ("RoleBinding", "extension-apiserver-authentication-reader"),
        ("RoleBinding", "dagsched-scheduler-leader-election"),
    }
    lease = _scheduler_config(docs)["leaderElection"]
    role = find(docs, "Role", "dagsched-scheduler-leader-election")
    assert role["metadata"]["namespace"] == lease["resourceNamespace"]
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [lease["resourceName"]],
            "verbs": ["get", "update"],
        }
    ]


@pytest.mark.parametrize("name", ["base", "prod"])
def test_checkov_skips_carry_reasons(name: str) -> None:
    """Every checkov finding skipped in a manifest names its check and says why (`CKV_..=reason`)."""
    for d in render(name):
        for key, value in d["metadata"].get("annotations", {}).items():
            if key.startswith("checkov.io/skip"):
                check, _, reason = value.partition("=")
                assert re.fullmatch(r"CKV2?_K8S_\d+", check) and len(reason) > 30, value


# --- the RayCluster (a CRD: checked field by field, its pod templates as core/v1 PodTemplates) ---

# the RayCluster (ray.io/v1) fields this manifest may use, from KubeRay's API types; a misspelt key fails here
RAY_SPEC_KEYS = {"rayVersion", "enableInTreeAutoscaling", "autoscalerOptions", "headGroupSpec", "workerGroupSpecs",
                 "headServiceAnnotations", "suspend", "managedBy"}  # fmt: skip
RAY_HEAD_KEYS = {"serviceType", "headService", "enableIngress", "rayStartParams", "template"}
RAY_WORKER_KEYS = {"groupName", "replicas", "minReplicas", "maxReplicas", "idleTimeoutSeconds", "rayStartParams",
                   "template", "scaleStrategy", "suspend", "numOfHosts"}  # fmt: skip


def test_raycluster_fields() -> None:
    """ray.io/v1 RayCluster with known fields only; rayVersion the project's ray pin; rayStartParams all strings;
    worker replicas within min..max; every container the project image, with resources and the hardened context."""
    (rc,) = render("ray")
    assert (rc["apiVersion"], rc["kind"]) == ("ray.io/v1", "RayCluster")
    assert rc["metadata"]["namespace"] == NAMESPACE
    spec = rc["spec"]
    assert set(spec) <= RAY_SPEC_KEYS
    lock = (ROOT / "requirements.lock").read_text()
    ray_pin = re.search(r"^ray==(\S+)$", lock, re.M).group(1)  # type: ignore[union-attr]
    assert spec["rayVersion"] == ray_pin
    head = spec["headGroupSpec"]
    assert set(head) <= RAY_HEAD_KEYS and head["serviceType"] in {"ClusterIP", "NodePort", "LoadBalancer"}
    assert spec["workerGroupSpecs"]
    for group in [head, *spec["workerGroupSpecs"]]:
        assert all(isinstance(v, str) for v in group["rayStartParams"].values()), group["rayStartParams"]
    for worker in spec["workerGroupSpecs"]:
        assert set(worker) <= RAY_WORKER_KEYS
        assert worker["minReplicas"] <= worker["replicas"] <= worker["maxReplicas"]
    prod_image = service_pod(render("prod"))["containers"][0]["image"]
    for group in [head, *spec["workerGroupSpecs"]]:
        pod = group["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        for c in pod["containers"]:
            assert c["image"] == prod_image
            assert c["securityContext"]["readOnlyRootFilesystem"] is True
            assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
            assert set(c["resources"]["limits"]) == {"cpu", "memory"}
            assert c["readinessProbe"]["httpGet"]["path"].startswith("/api/")
            mounts = {m["mountPath"] for m in c["volumeMounts"]}
            assert {"/tmp", "/dev/shm", "/var/cache/dagsched"} <= mounts


def _validate(path: Path) -> None:
    exe = _tool("kubernetes-validate")
    done = subprocess.run(
        [str(exe), "--kubernetes-version", K8S_VERSION, "--strict", "--quiet", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "ERROR" not in done.stdout, done.stdout + done.stderr
    assert "Couldn't find schema" not in done.stdout, done.stdout  # an object it did not check is not a pass


@pytest.mark.parametrize("name", ["base", "dev", "prod"])
def test_kubernetes_validate_strict(name: str, tmp_path: Path) -> None:
    """kubernetes-validate, strict (unknown fields fail), accepts every rendered object for the pinned version."""
    out = tmp_path / f"{name}.yaml"
    out.write_text(render_text(KUSTOMIZATIONS[name]))
    _validate(out)


def test_raycluster_pod_templates_validate_as_pod_templates(tmp_path: Path) -> None:
    """The RayCluster's head and worker pod templates are valid core/v1 pod templates (strict), since the CRD's own
    schema is not at hand; a misspelt field inside a template would fail here."""
    (rc,) = render("ray")
    groups = [rc["spec"]["headGroupSpec"], *rc["spec"]["workerGroupSpecs"]]
    docs = [
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": f"ray-{i}"}, "template": g["template"]}
        for i, g in enumerate(groups)
    ]
    out = tmp_path / "ray-templates.yaml"
    out.write_text(yaml.safe_dump_all(docs))
    _validate(out)

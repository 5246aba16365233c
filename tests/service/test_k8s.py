"""The Kubernetes scheduler extender: kube-scheduler's ExtenderArgs in, ExtenderFilterResult / HostPriorityList out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dagsched.service.k8s import quantity

from .conftest import AUTH, nodes, workflow


def pod(cpu: str = "500m", mem: str = "1Gi", gpu: str | None = None, task: str = "b", wf: str = "w") -> dict[str, Any]:
    """A v1.Pod as kube-scheduler sends it (trimmed to what an extender reads)."""
    requests = {"cpu": cpu, "memory": mem}
    if gpu:
        requests["nvidia.com/gpu"] = gpu
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "etl-b-x7k2",
            "namespace": "default",
            "labels": {"dagsched.io/workflow": wf},
            "annotations": {"dagsched.io/task": task, "dagsched.io/runtime": "120"},
        },
        "spec": {
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": requests, "limits": requests}},
                {"name": "sidecar", "image": "envoy", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
            ],
            "schedulerName": "default-scheduler",
        },
    }


def node(name: str, cpu: str, mem: str, gpu: str | None = None, speed: str = "1", **spec: Any) -> dict[str, Any]:
    """A v1.Node with status.allocatable and dagsched's speed label."""
    alloc = {"cpu": cpu, "memory": mem, "pods": "110"}
    if gpu:
        alloc["nvidia.com/gpu"] = gpu
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "dagsched.io/speed": speed}},
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def args(p: dict, items: list[dict]) -> dict[str, Any]:
    return {"pod": p, "nodes": {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items}}


def test_quantities_parse_like_kubernetes() -> None:
    """500m = 0.5 cpu; 16Gi = 16 * 2^30 bytes; 1e3 = 1000; 2k = 2000."""
    assert quantity("500m", "x") == 0.5
    assert quantity("16Gi", "x") == 16 * 2**30
    assert quantity("1e3", "x") == 1000.0
    assert quantity("2k", "x") == 2000.0


def test_filter_returns_extender_filter_result(client: TestClient) -> None:
    """Requests sum over containers (0.6 cpu, 1.0625 GiB); a too-small, a cordoned and a GPU-less node fail, named."""
    items = [
        node("big", "4", "16Gi", gpu="1"),
        node("tiny", "500m", "8Gi", gpu="1"),
        node("cordoned", "8", "32Gi", gpu="1", unschedulable=True),
        node("nogpu", "8", "32Gi"),
    ]
    r = client.post("/v1/k8s/filter", json=args(pod(gpu="1"), items))
    assert r.status_code == 200
    res = r.json()
    assert set(res) == {"nodes", "nodenames", "failedNodes", "failedAndUnresolvableNodes", "error"}
    assert res["error"] == ""
    assert [n["metadata"]["name"] for n in res["nodes"]["items"]] == ["big"]
    assert res["nodes"]["kind"] == "NodeList"
    assert res["failedNodes"] == {
        "tiny": "dagsched: insufficient cpu 0.6 > allocatable 0.5",
        "cordoned": "node is cordoned (spec.unschedulable)",
        "nogpu": "dagsched: insufficient gpu 1 > allocatable 0",
    }


def test_filter_applies_the_config_rules(client: TestClient) -> None:
    """A rule on node labels (`node.labels["zone"] == "eu"`) filters too, naming the rule."""
    rules = {"rules": {"zone": 'node.labels["kubernetes.io/hostname"] != "b"'}}
    assert client.put("/v1/config", json=rules, headers=AUTH).status_code == 200
    res = client.post("/v1/k8s/filter", json=args(pod(), [node("a", "4", "8Gi"), node("b", "4", "8Gi")])).json()
    assert [n["metadata"]["name"] for n in res["nodes"]["items"]] == ["a"]
    assert res["failedNodes"] == {"b": 'dagsched: rule zone (node.labels["kubernetes.io/hostname"] != "b") fails'}


def test_filter_with_nodenames_passes_names_through(client: TestClient) -> None:
    """nodeCacheCapable extenders get `nodenames`: answered with `nodenames`, nothing failed."""
    res = client.post("/v1/k8s/filter", json={"pod": pod(), "nodenames": ["a", "b"]}).json()
    assert res["nodenames"] == ["a", "b"] and res["failedNodes"] == {} and res["error"] == ""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "body: malformed JSON"),
        (b'{"nodes": {"items": []}}', "pod: missing"),
        (b'{"pod": {"spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}}, "nodenames": []}',
         "pod.spec.containers[0].resources.requests.cpu: 'lots' is not a Kubernetes quantity"),
        (b'{"pod": {}, "nodes": {"items": "x"}}', "nodes.items: expected a list"),
    ],
)  # fmt: skip
def test_filter_never_500s(client: TestClient, body: bytes, message: str) -> None:
    """Faults go in `error` of a 200 answer (kube-scheduler skips an ignorable extender), never a 500."""
    r = client.post("/v1/k8s/filter", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200
    assert message in r.json()["error"]


def test_prioritize_returns_host_priority_list(client: TestClient) -> None:
    """Scores 0..10: the faster fitting node higher, a node that cannot hold the pod 0."""
    items = [node("slow", "4", "16Gi", speed="1"), node("fast", "4", "16Gi", speed="2"), node("tiny", "100m", "1Gi")]
    r = client.post("/v1/k8s/prioritize", json=args(pod(), items))
    assert r.status_code == 200
    scores = {x["host"]: x["score"] for x in r.json()}
    assert set(r.json()[0]) == {"host", "score"}
    assert scores == {"slow": 5, "fast": 9, "tiny": 0}


def test_prioritize_scores_nodes_all_of_speed_zero_by_headroom(client: TestClient) -> None:
    """Speed 0 on every fitting node (a label that says "never"): scored by headroom alone, no error."""
    items = [node("idle", "4", "16Gi", speed="0"), node("full", "1", "16Gi", speed="0")]
    r = client.post("/v1/k8s/prioritize", json=args(pod(), items))
    assert r.status_code == 200 and "x-dagsched-error" not in r.headers
    assert {x["host"]: x["score"] for x in r.json()} == {"idle": 2, "full": 1}


def test_prioritize_steers_a_planned_task_to_its_node(client: TestClient) -> None:
    """A pod whose (workflow, task) was planned by /v1/schedule scores 10 on the planned node."""
    client.post("/v1/schedule", json={"workflow": workflow("wk"), "nodes": nodes(), "scheduler": "heft"})
    items = [node("n0", "4", "16Gi", speed="2"), node("n2", "4", "16Gi", speed="1")]
    scores = {x["host"]: x["score"] for x in client.post("/v1/k8s/prioritize", json=args(pod(wf="wk"), items)).json()}
    assert scores["n2"] == 10 and scores["n0"] == 9
    names = client.post("/v1/k8s/prioritize", json={"pod": pod(wf="wk"), "nodenames": ["n0", "n2"]}).json()
    assert names == [{"host": "n0", "score": 0}, {"host": "n2", "score": 10}]


def test_prioritize_errors_give_zero_scores_and_a_header(client: TestClient) -> None:
    """A bad pod: every node scores 0, the reason in X-Dagsched-Error, status 200."""
    bad = {"pod": "nope", "nodes": {"items": [node("a", "1", "1Gi")]}}
    r = client.post("/v1/k8s/prioritize", json=bad)
    assert r.status_code == 200 and r.json() == [{"host": "a", "score": 0}]
    assert "pod: missing or not an object" in r.headers["x-dagsched-error"]
    assert 'dagsched_k8s_requests_total{outcome="error",verb="prioritize"} 1.0' in client.get("/v1/metrics").text


@pytest.mark.parametrize(
    ("cpu", "fault"),
    [
        ("-5", "'-5' is negative"),
        ("-500m", "'-500m' is negative"),
        ("1e400", "'1e400' is not finite"),
        ("1.2.3", "'1.2.3' is not a Kubernetes quantity"),
        (".", "'.' is not a Kubernetes quantity"),
        (float("nan"), "nan is not finite"),
        (float("inf"), "inf is not finite"),
        (-2, "-2 is negative"),
    ],
)
def test_a_request_that_is_no_quantity_or_negative_is_an_error_naming_container_and_resource(
    client: TestClient, cpu: Any, fault: str
) -> None:
    """A cpu request of "-5", "1e400", NaN or "1.2.3" is no request: filter says so in `error` and passes no node,
    prioritize scores every node 0 with the reason in X-Dagsched-Error; both name the container and the resource."""
    p = pod()
    p["spec"]["containers"][1]["resources"]["requests"]["cpu"] = cpu
    body = json.dumps(args(p, [node("a", "4", "16Gi"), node("b", "8", "16Gi")]))  # NaN as JSON's `NaN`
    where = "pod.spec.containers[1].resources.requests.cpu: "
    named = "(container 'sidecar', resource cpu)"
    r = client.post("/v1/k8s/filter", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200
    assert r.json()["nodes"] is None and r.json()["error"].startswith(where + fault) and named in r.json()["error"]
    r = client.post("/v1/k8s/prioritize", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json() == [{"host": "a", "score": 0}, {"host": "b", "score": 0}]
    assert r.headers["x-dagsched-error"].startswith(where + fault) and named in r.headers["x-dagsched-error"]


def test_node_quantities_that_are_negative_or_not_finite_are_errors(client: TestClient) -> None:
    """A node's allocatable cpu of "-4" or memory of "1e400" is refused naming the node's field."""
    for cpu, mem, message in (
        ("-4", "16Gi", "nodes.items[1].status.allocatable.cpu: '-4' is negative"),
        ("4", "1e400", "nodes.items[1].status.allocatable.memory: '1e400' is not finite"),
    ):
        res = client.post("/v1/k8s/filter", json=args(pod(), [node("a", "4", "16Gi"), node("b", cpu, mem)])).json()
        assert res["error"].startswith(message), res["error"]


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_a_caller_that_leaves_mid_body_is_logged_without_a_traceback(
    client: TestClient, verb: str, caplog: pytest.LogCaptureFixture
) -> None:
    """kube-scheduler (or the demo) stopped while sending: the extender notes it at INFO, never an ERROR traceback."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": f"/v1/k8s/{verb}", "raw_path": f"/v1/k8s/{verb}".encode(), "query_string": b"", "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"100")],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "state": {},
    }  # fmt: skip
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with caplog.at_level("INFO", logger="dagsched.service"):
        client.portal.call(client.app, scope, receive, send)  # type: ignore[union-attr]
    assert sent[0]["status"] == 200
    assert not [r for r in caplog.records if r.levelname == "ERROR" or r.exc_info]
    assert any("disconnected before its request body arrived" in r.getMessage() for r in caplog.records)

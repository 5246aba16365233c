"""The gRPC API against a real server on loopback, with a real client: every RPC answers as its HTTP route does,
through the same code (the same plan, stored the same way), with the same token and the same errors
(INVALID_ARGUMENT naming the field); the committed stubs are what the .proto generates."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from fastapi.testclient import TestClient
from google.protobuf import json_format

from dagsched.service.app import create_app
from dagsched.service.rpc import dagsched_pb2 as pb
from dagsched.service.rpc.client import Client
from dagsched.service.settings import Settings

from .conftest import AUTH, TOKEN, nodes, start_server, wfformat_workflow, workflow
from .test_k8s import args, node, pod

REPO = Path(__file__).resolve().parents[2]
PROTO = "src/dagsched/service/rpc/dagsched.proto"


@pytest.fixture
def both(make_settings: Callable[..., Settings]) -> Iterator[tuple[TestClient, Client]]:
    """An HTTP client and a gRPC client on one service (one process state), gRPC on a free loopback port."""
    with TestClient(create_app(make_settings(grpc_port=0))) as http:
        port = http.app.state.grpc.port  # type: ignore[attr-defined]
        with Client(f"127.0.0.1:{port}", token=TOKEN) as rpc:
            yield http, rpc


def _error(call: Callable[[], Any]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as err:
        call()
    return err.value


def test_schedule_plans_as_http_does_and_stores_the_plan(both: tuple[TestClient, Client]) -> None:
    http, rpc = both
    body = {"workflow": workflow("over-grpc"), "nodes": nodes(), "scheduler": "heft"}
    plan = rpc.schedule(body)
    over_http = http.post("/v1/schedule", json=body).json()
    assert plan.makespan == pytest.approx(10.0) == over_http["makespan"]
    assert [(a.task, a.node, a.start, a.finish) for a in plan.assignments] == [
        (a["task"], a["node"], a["start"], a["finish"]) for a in over_http["assignments"]
    ]
    stored = http.get(f"/v1/plans/{plan.plan_id}").json()
    assert stored["scheduler"] == plan.scheduler == "heft" and stored["workflow"] == "over-grpc"
    first = plan.assignments[0].evidence
    assert first.alternatives and first.alternatives[0].chosen and "exec_s" in first.terms
    assert json_format.MessageToDict(plan.objective)["value"] == pytest.approx(over_http["objective"]["value"])
    assert http.get("/v1/decisions", params={"plan_id": plan.plan_id}).json()["count"] == 4
    default = rpc.schedule({"workflow": workflow("default"), "nodes": nodes()})
    assert default.requested_scheduler == "sampling" and not default.HasField("fallback_reason")
    metrics = http.get("/v1/metrics").text
    assert 'dagsched_grpc_requests_total{code="OK",method="Schedule"} 2.0' in metrics


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda b: b.update(nodes=[]), "nodes"),
        (lambda b: b["nodes"][1].update(cpu=0), "nodes[1].cpu"),
        (lambda b: b["workflow"]["tasks"][2].update(runtime=-1), "workflow.tasks[2].runtime"),
        (lambda b: b["workflow"]["tasks"][1].update(dependencies=["nope"]), "workflow.tasks[1].dependencies"),
        (lambda b: b.update(scheduler="fastest"), "scheduler"),
        (lambda b: b["workflow"].pop("tasks"), "workflow"),
    ],
)
def test_bad_input_is_invalid_argument_naming_the_field(
    both: tuple[TestClient, Client], change: Callable[[dict], Any], field: str
) -> None:
    http, rpc = both
    body: dict[str, Any] = {"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}
    change(body)
    err = _error(lambda: rpc.schedule(body))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and err.details().startswith(field), err.details()
    r = http.post("/v1/schedule", json=body)  # the HTTP API says the same
    assert r.status_code == 422 and r.json()["detail"].split(":")[0] == err.details().split(":")[0]
    assert http.get("/v1/plans").json()["total"] == 0


def test_filter_and_prioritize_answer_as_the_extender(both: tuple[TestClient, Client]) -> None:
    http, rpc = both
    plan = rpc.schedule({"workflow": workflow("w"), "nodes": nodes(), "scheduler": "heft"})
    planned_b = next(a.node for a in plan.assignments if a.task == "b")
    items = [node("n0", "4", "16Gi"), node("n1", "1", "1Gi"), node("n2", "8", "32Gi", speed="2")]
    ext = args(pod(cpu="2", task="b", wf="w"), items)
    filtered = rpc.filter(ext)
    over_http = http.post("/v1/k8s/filter", json=ext).json()
    kept = [i["metadata"]["name"] for i in json_format.MessageToDict(filtered.nodes)["items"]]
    assert kept == [i["metadata"]["name"] for i in over_http["nodes"]["items"]] == ["n0", "n2"]
    assert dict(filtered.failed_nodes) == over_http["failedNodes"] and "n1" in filtered.failed_nodes
    scores = {p.host: p.score for p in rpc.prioritize(ext).priorities}
    assert scores == {h["host"]: h["score"] for h in http.post("/v1/k8s/prioritize", json=ext).json()}
    assert scores[planned_b] == 10 if planned_b in scores else max(scores.values()) < 10
    names = rpc.filter({"pod": pod(), "nodenames": ["a", "b"]})
    assert list(names.nodenames) == ["a", "b"] and not names.HasField("nodes")
    bad = _error(lambda: rpc.filter(args(pod(cpu="lots"), items)))
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert bad.details().startswith("pod.spec.containers[0].resources.requests.cpu")
    assert _error(lambda: rpc.prioritize({"nodenames": ["a"]})).details().startswith("pod:")


def test_an_extender_request_that_is_no_quantity_is_invalid_argument_naming_container_and_resource(
    both: tuple[TestClient, Client],
) -> None:
    """A cpu request of "-5" or "1e400": INVALID_ARGUMENT from Filter and Prioritize, naming the container and the
    resource, as the HTTP verbs' `error` does; nothing scores 10."""
    http, rpc = both
    for cpu, fault in (("-5", "'-5' is negative"), ("1e400", "'1e400' is not finite")):
        ext = args(pod(cpu=cpu), [node("n0", "4", "16Gi")])
        for call in (rpc.filter, rpc.prioritize):
            err = _error(lambda c=call, e=ext: c(e))  # type: ignore[misc]
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
            assert err.details().startswith(f"pod.spec.containers[0].resources.requests.cpu: {fault}")
            assert "(container 'main', resource cpu)" in err.details()
        assert http.post("/v1/k8s/filter", json=ext).json()["error"] == err.details()


@pytest.mark.parametrize("method", ["Schedule", "Filter", "Prioritize", "Explain", "Health", "ReportEvent"])
def test_bytes_that_do_not_decode_are_invalid_argument(both: tuple[TestClient, Client], method: str) -> None:
    """A request whose bytes are no protobuf message (sent on a raw channel) is INVALID_ARGUMENT saying so, and is
    counted by its code; never UNKNOWN."""
    http, rpc = both
    raw = rpc.channel.unary_unary(f"/dagsched.v1.Scheduler/{method}")
    for garbage in (b"\xff\xff\xff\xff", b"\x0a\xff\xff\xff\xff\x0f"):
        err = _error(lambda g=garbage: raw(g, metadata=(("authorization", f"Bearer {TOKEN}"),)))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (err.code(), err.details())
        assert err.details().startswith("body: not a valid dagsched.v1."), err.details()
    metrics = http.get("/v1/metrics").text
    assert f'dagsched_grpc_requests_total{{code="INVALID_ARGUMENT",method="{method}"}} 2.0' in metrics


def test_explain_and_health(both: tuple[TestClient, Client]) -> None:
    http, rpc = both
    plan = rpc.schedule({"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"})
    out = rpc.explain(plan.plan_id, task="c")
    data = json_format.MessageToDict(out.explanation, preserving_proto_field_name=True)
    over_http = http.get(f"/v1/plans/{plan.plan_id}/explain", params={"task": "c"}).json()
    assert out.scheduler == "heft" and data["task"]["task"] == "c"
    assert [t["task"] for t in data["tasks"]] == [t["task"] for t in over_http["tasks"]]
    missing = _error(lambda: rpc.explain("no-such-plan"))
    assert missing.code() == grpc.StatusCode.NOT_FOUND and missing.details().startswith("plan_id")
    assert _error(lambda: rpc.explain("")).code() == grpc.StatusCode.INVALID_ARGUMENT
    health = rpc.health()
    assert health.ready and health.status == "ready" and health.store == "ok" and health.model == "tiny-v1"
    assert http.get("/v1/stats").json()["grpc"]["port"] == http.app.state.grpc.port  # type: ignore[attr-defined]


def test_report_event_needs_the_token_and_keeps_the_order(both: tuple[TestClient, Client]) -> None:
    http, rpc = both
    plan = rpc.schedule({"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"})
    started = {"plan_id": plan.plan_id, "kind": "task_started", "task": "a", "node": "n2", "at": 0.0}
    port = http.app.state.grpc.port  # type: ignore[attr-defined]
    for token, code in ((None, grpc.StatusCode.UNAUTHENTICATED), ("wrong", grpc.StatusCode.UNAUTHENTICATED)):
        with Client(f"127.0.0.1:{port}", token=token) as anonymous:
            assert _error(lambda c=anonymous: c.report_event(started)).code() == code
    assert rpc.report_event(started).reason == "recorded"
    failed = rpc.report_event({**started, "kind": "task_failed", "at": 1.0})
    assert failed.replanned and failed.root_id == plan.plan_id and failed.plan_id != plan.plan_id
    assert http.get(f"/v1/plans/{failed.plan_id}").json()["root_id"] == plan.plan_id
    late = _error(lambda: rpc.report_event({**started, "at": 0.5}))
    assert late.code() == grpc.StatusCode.FAILED_PRECONDITION and late.details().startswith("at:")
    assert _error(lambda: rpc.report_event({**started, "plan_id": "nope"})).code() == grpc.StatusCode.NOT_FOUND
    unknown = _error(lambda: rpc.report_event({**started, "task": "zz", "at": 2.0}))
    assert unknown.code() == grpc.StatusCode.INVALID_ARGUMENT and unknown.details().startswith("task:")
    bad_kind = _error(lambda: rpc.report_event({**started, "kind": "exploded", "at": 2.0}))
    assert bad_kind.code() == grpc.StatusCode.INVALID_ARGUMENT and bad_kind.details().startswith("kind:")
    assert len(http.get(f"/v1/plans/{plan.plan_id}").json()["assignments"]) == 4  # nothing lost


def test_the_server_refuses_every_call_without_a_token_configured(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(grpc_port=0, api_token=None))) as http:
        rpc = Client(f"127.0.0.1:{http.app.state.grpc.port}", token=TOKEN)  # type: ignore[attr-defined]
        err = _error(lambda: rpc.report_event({"plan_id": "x", "kind": "node_up", "node": "n0", "at": 0.0}))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED
        assert rpc.health().ready  # read-only calls need no token, as over HTTP
        rpc.channel.close()


def test_dagsched_serve_serves_both(tmp_path: Path, policy_stem: Path) -> None:
    """`dagsched serve --grpc-port` (what `make run` starts): HTTP and gRPC from one process."""
    import socket

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base, proc = start_server(
        f"sqlite:///{tmp_path / 's.sqlite'}", policy_stem, tmp_path / "models", "--grpc-port", str(port)
    )
    try:
        with Client(f"127.0.0.1:{port}") as rpc:
            plan = rpc.schedule({"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"})
            assert rpc.health().ready
        assert httpx.get(f"{base}/v1/plans/{plan.plan_id}").json()["makespan"] == pytest.approx(plan.makespan)
        r = httpx.post(f"{base}/v1/events", json={"plan_id": plan.plan_id, "kind": "node_up", "node": "n0", "at": 0},
                       headers=AUTH)  # fmt: skip
        assert r.status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_the_committed_stubs_are_what_the_proto_generates(tmp_path: Path) -> None:
    """`make grpc-stubs` regenerates them; a .proto edited without regenerating fails here."""
    out = tmp_path / "gen"
    out.mkdir()
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I", str(REPO / "src"), f"--python_out={out}",
         f"--pyi_out={out}", f"--grpc_python_out={out}", str(REPO / PROTO)],
        check=True,
    )  # fmt: skip
    for name in ("dagsched_pb2.py", "dagsched_pb2.pyi", "dagsched_pb2_grpc.py"):
        generated = (out / "dagsched" / "service" / "rpc" / name).read_text()
        assert generated == (REPO / "src" / "dagsched" / "service" / "rpc" / name).read_text(), name
    assert pb.Plan.DESCRIPTOR.full_name == "dagsched.v1.Plan"


def test_a_wfformat_document_plans_as_over_http(both: tuple[TestClient, Client]) -> None:
    """A WfFormat 1.5 instance travels as a document (a Struct): HEFT on one node of speed 1 plans it in 2 + 4 s."""
    _, rpc = both
    wf = wfformat_workflow()
    plan = rpc.schedule({"workflow": wf, "nodes": [{"id": "solo", "cpu": 4}], "scheduler": "heft"})
    assert plan.makespan == pytest.approx(6.0) and [a.task for a in plan.assignments] == ["x", "y"]
    empty = _error(lambda: rpc.stub.Schedule(pb.ScheduleRequest(nodes=[pb.NodeState(id="n", cpu=1)])))
    assert empty.code() == grpc.StatusCode.INVALID_ARGUMENT and empty.details().startswith("workflow: required")

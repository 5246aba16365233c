"""POST /v1/schedule, GET /v1/plans/{id}, GET /v1/decisions: plans, evidence, fallback, bad input."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dagsched.service.app import create_app

from .conftest import nodes, wfformat_workflow, workflow

KEYS = {"plan_id", "scheduler", "fallback", "makespan", "cost", "assignments"}


def test_heft_plan_has_the_documented_keys_and_values(client: TestClient) -> None:
    """HEFT plans a -> (b, c) -> d all on the fastest node n2 (speed 2): makespan 10 s, cost 10 s at $2.5/h."""
    r = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"})
    assert r.status_code == 200, r.text
    plan = r.json()
    assert set(plan) >= KEYS
    assert plan["scheduler"] == "heft" and plan["fallback"] is False
    assert plan["makespan"] == pytest.approx(10.0)
    assert plan["cost"] == pytest.approx(10 * 2.5 / 3600)
    by_task = {a["task"]: a for a in plan["assignments"]}
    assert {t: a["node"] for t, a in by_task.items()} == {"a": "n2", "b": "n2", "c": "n2", "d": "n2"}
    assert (by_task["a"]["start"], by_task["a"]["finish"]) == pytest.approx((0.0, 5.0))
    assert (by_task["d"]["start"], by_task["d"]["finish"]) == pytest.approx((8.5, 10.0))
    for a in plan["assignments"]:
        assert set(a) == {"task", "node", "start", "finish", "evidence"}


def test_evidence_lists_alternatives_by_eft_and_terms(client: TestClient) -> None:
    """Evidence for task a: n2 finishes at 5, n1 at 6.67, n0 at 10 (runtime 10 / speed); terms add up."""
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).json()
    ev = next(a for a in plan["assignments"] if a["task"] == "a")["evidence"]
    assert [(x["node"], round(x["score"], 3), x["chosen"]) for x in ev["alternatives"]] == [
        ("n2", 5.0, True),
        ("n1", 6.667, False),
        ("n0", 10.0, False),
    ]
    assert ev["terms"]["exec_s"] == pytest.approx(5.0)
    assert ev["terms"]["cost"] == pytest.approx(5.0 * 2.5 / 3600)
    c_ev = next(a for a in plan["assignments"] if a["task"] == "c")["evidence"]
    # c's 1 GB input takes 0.8 s to reach another node at 1.25 GB/s: n1 starts at 5.8
    n1 = next(x for x in c_ev["alternatives"] if x["node"] == "n1")
    assert n1["start"] == pytest.approx(5.8)
    # the one objective (dagsched.sim.objective): makespan over the lower bound, 1 at best
    assert plan["objective"]["terms"]["makespan"] == pytest.approx(10.0 / plan["objective"]["lower_bound_s"])
    weights = plan["objective"]["weights"]
    value = sum(weights[k] * v for k, v in plan["objective"]["terms"].items())
    assert plan["objective"]["value"] == pytest.approx(value)


def test_default_scheduler_is_sampling_and_drl_is_the_loaded_policy(client: TestClient) -> None:
    """With no scheduler named `sampling` plans (untrained priority sampling: never longer than HEFT on predictions,
    no network; docs/service.md); HEFT or drl when named. drl is the loaded policy (its model version), and nothing
    falls back."""
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes()}).json()
    assert plan["requested_scheduler"] == plan["scheduler"] == "sampling" and plan["fallback"] is False
    assert plan["model_version"] is None
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).json()
    assert plan["requested_scheduler"] == plan["scheduler"] == "heft" and plan["fallback"] is False
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "drl"}).json()
    assert plan["requested_scheduler"] == "drl"
    assert plan["scheduler"] == "drl" and plan["fallback"] is False
    assert plan["model_version"] == "tiny-v1"
    assert {a["task"] for a in plan["assignments"]} == {"a", "b", "c", "d"}


def test_missing_policy_falls_back_to_heft_and_says_so(make_settings, tmp_path) -> None:
    """No policy file: the plan is HEFT's, `fallback` is true with the reason, and the fallback is counted."""
    with TestClient(create_app(make_settings(model_path=tmp_path / "nothing"))) as c:
        plan = c.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "drl"}).json()
        assert plan["scheduler"] == "heft" and plan["fallback"] is True
        assert "no learned policy" in plan["fallback_reason"]
        assert plan["makespan"] == pytest.approx(10.0)
        metrics = c.get("/v1/metrics").text
        assert 'dagsched_fallbacks_total{reason="no learned policy loaded from ' in metrics


def test_deadline_miss_falls_back_and_opens_the_breaker(client: TestClient) -> None:
    """A deadline the learned planner cannot meet -> HEFT; after `failures` misses the breaker opens."""
    auth = {"Authorization": "Bearer test-token"}
    cfg = {"decision_deadline_ms": 0.000001, "breaker": {"failures": 2, "cooldown_s": 60}}
    assert client.put("/v1/config", json=cfg, headers=auth).status_code == 200
    reasons = []
    for _ in range(3):
        plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "drl"}).json()
        assert plan["fallback"] is True and plan["scheduler"] == "heft"
        reasons.append(plan["fallback_reason"])
    assert "DeadlineExceeded" in reasons[0]
    assert "breaker is open" in reasons[2]
    assert "dagsched_breaker_open 1.0" in client.get("/v1/metrics").text


def test_plan_and_decisions_are_stored(client: TestClient) -> None:
    """GET /v1/plans/{id} returns the same plan; /v1/decisions?workflow= lists its four decisions."""
    plan = client.post("/v1/schedule", json={"workflow": workflow("etl"), "nodes": nodes(), "scheduler": "heft"}).json()
    stored = client.get(f"/v1/plans/{plan['plan_id']}").json()
    assert stored["assignments"] == plan["assignments"] and stored["environment"] == "test"
    d = client.get("/v1/decisions", params={"workflow": "etl"}).json()
    assert d["count"] == 4
    assert {x["task"]: x["node"] for x in d["decisions"]} == {"a": "n2", "b": "n2", "c": "n2", "d": "n2"}
    assert all(len(x["input_digest"]) == 64 and x["scheduler"] == "heft" for x in d["decisions"])
    assert client.get("/v1/decisions", params={"workflow": "nope"}).json()["count"] == 0
    r = client.get("/v1/plans/unknown")
    assert r.status_code == 404 and "unknown" in r.json()["detail"]


def test_free_capacity_is_planned_on(client: TestClient) -> None:
    """A node with 0 free cpu is left out (named in rejected_nodes); free gpu decides who runs a GPU task."""
    ns = nodes()
    ns[2]["free"] = {"cpu": 0, "mem": 16}
    ns[0]["gpu"] = 1
    ns[0]["free"]["gpu"] = 1
    wf = workflow()
    wf["tasks"][1]["resources"] = {"gpu": 1}
    plan = client.post("/v1/schedule", json={"workflow": wf, "nodes": ns, "scheduler": "heft"}).json()
    assert plan["rejected_nodes"] == [{"node": "n2", "constraint": "no free cpu"}]
    by_task = {a["task"]: a for a in plan["assignments"]}
    assert by_task["b"]["node"] == "n0"
    assert by_task["b"]["evidence"]["rejected"] == [{"node": "n1", "constraint": "capacity: gpu 1 > free 0"}]


def test_wfformat_workflow_is_accepted(client: TestClient) -> None:
    """A WfFormat 1.5 instance plans like a native workflow."""
    wf = wfformat_workflow()
    r = client.post("/v1/schedule", json={"workflow": wf, "nodes": nodes(1), "scheduler": "heft"})
    assert r.status_code == 200, r.text
    assert r.json()["makespan"] == pytest.approx(6.0)


BAD = [
    ("malformed JSON", b'{"workflow": ', 400, "malformed JSON at line 1, column 14"),
    ("malformed JSON, line 3", b'{"workflow": {"name": "w",\n "tasks": [1,\n 2,,]}}', 400, "at line 3, column 4"),
    ("too deep", b'{"workflow": ' + b"[" * 5000 + b"]" * 5000 + b"}", 400, "nested 5001 levels deep; at most 64"),
    (
        "runtime past what can be simulated",
        {"workflow": {"name": "r", "tasks": [{"id": "a", "runtime": 1e308}]}, "nodes": nodes()},
        422,
        "workflow.tasks[0].runtime: 1e+308 s is beyond what can be simulated (at most 1e+09 s",
    ),
    (
        "gpu request no node has",
        {"workflow": {"name": "g", "tasks": [{"id": "a", "runtime": 1, "resources": {"gpu": 2}}]}, "nodes": nodes()},
        422,
        "workflow.tasks[0].resources.gpu: task 'a' requests gpu=2",
    ),
    ("wrong type", {"workflow": workflow(), "nodes": [{"id": "n0", "cpu": "lots"}]}, 422, "nodes[0].cpu"),
    ("missing field", {"workflow": workflow()}, 422, "nodes"),
    ("unknown field", {"workflow": workflow(), "nodes": nodes(), "colour": 1}, 422, "colour: unknown field"),
    (
        "cycle",
        {"workflow": {"name": "c", "tasks": [{"id": "a", "runtime": 1, "dependencies": ["b"]},
                                              {"id": "b", "runtime": 1, "dependencies": ["a"]}]}, "nodes": nodes()},
        422,
        "cycle through tasks",
    ),
    (
        "unknown dependency",
        {"workflow": {"name": "u", "tasks": [{"id": "a", "runtime": 1, "dependencies": ["ghost"]}]}, "nodes": nodes()},
        422,
        "workflow.tasks[0].dependencies[0]: unknown task 'ghost'",
    ),
    (
        "impossible request",
        {"workflow": {"name": "g", "tasks": [{"id": "big", "runtime": 1, "resources": {"cpu": 64}}]}, "nodes": nodes()},
        422,
        "workflow.tasks[0].resources.cpu: task 'big' requests cpu=64",
    ),
    ("unknown scheduler", {"workflow": workflow(), "nodes": nodes(), "scheduler": "magic"}, 422, "unknown scheduler"),
    ("unrecognised workflow", {"workflow": {"foo": 1}, "nodes": nodes()}, 422, "workflow.document: unrecognised"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "body", "status", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_gets_4xx_naming_the_problem(client: TestClient, what, body, status, message) -> None:
    """Each bad request gets its 4xx with a message naming the field and fault; the next good request still plans."""
    if isinstance(body, bytes):
        r = client.post("/v1/schedule", content=body, headers={"content-type": "application/json"})
    else:
        r = client.post("/v1/schedule", json=body)
    assert r.status_code == status, r.text
    assert message in r.json()["detail"], r.json()
    ok = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"})
    assert ok.status_code == 200


def test_oversized_body_gets_413(make_settings) -> None:
    """A body over DAGSCHED_MAX_BODY_BYTES gets 413 naming the limit, with or without a Content-Length."""
    with TestClient(create_app(make_settings(max_body_bytes=2000))) as c:
        big = {"workflow": workflow(), "nodes": nodes(), "scheduler": "heft", "pad": "x" * 5000}
        r = c.post("/v1/schedule", json=big)
        assert r.status_code == 413 and "limit of 2000 bytes" in r.json()["detail"]

        def chunks():
            data = json.dumps(big).encode()
            for i in range(0, len(data), 1000):
                yield data[i : i + 1000]

        r = c.post("/v1/schedule", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        assert (
            c.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).status_code
            == 200
        )


def test_the_openapi_text_names_the_default_scheduler_the_config_has(client: TestClient) -> None:
    """What /openapi.json tells a client about the default scheduler is what the config's default is."""
    from dagsched.service.config import RuntimeConfig

    default = RuntimeConfig().default_scheduler
    spec = client.get("/openapi.json").json()
    field = spec["components"]["schemas"]["ScheduleRequest"]["properties"]["scheduler"]["description"]
    route = spec["paths"]["/v1/schedule"]["post"]["description"]
    assert f"({default})" in field
    assert f"`{default}`" in route
    assert client.get("/v1/config").json()["default_scheduler"] == default


def _on_loop_spy(planning: Any) -> list[bool]:
    """Whether each plan the planner makes runs on an event loop (True) or on a worker thread (False)."""
    planner_plan, on_loop = planning.planner.plan, []

    def spy(body, config):  # type: ignore[no-untyped-def]
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:
            on_loop.append(False)
        return planner_plan(body, config)

    planning.planner.plan = spy
    return on_loop


def test_a_small_plan_is_made_on_the_event_loop_and_a_large_or_waiting_one_on_a_thread(client: TestClient) -> None:
    """A small native workflow is planned where the request is served (no trip to the threadpool); a plan over
    SMALL_PLAN_CELLS, a WfFormat one, and any plan while another holds the lock go to a thread (the loop never waits
    on the lock); the plan that waited is the same plan."""
    from dagsched.service.planning import SMALL_PLAN_CELLS

    planning = client.app.state.service.planning  # type: ignore[attr-defined]
    on_loop = _on_loop_spy(planning)
    big = {"name": "wide", "tasks": [{"id": f"t{i}", "runtime": 1} for i in range(SMALL_PLAN_CELLS // 3 + 1)]}
    bodies = [{"workflow": workflow(), "nodes": nodes()}, {"workflow": big, "nodes": nodes()}]
    bodies.append({"workflow": wfformat_workflow(), "nodes": nodes()})
    heft = {"scheduler": "heft"}
    plans = [client.post("/v1/schedule", json=b | heft) for b in bodies]
    assert [r.status_code for r in plans] == [200, 200, 200]
    assert on_loop == [True, False, False]
    waiting = threading.Thread(target=lambda: plans.append(client.post("/v1/schedule", json=bodies[0] | heft)))
    with planning.lock:  # another plan runs: this one waits for it on a thread, and the loop answers meanwhile
        waiting.start()
        time.sleep(0.3)
        assert waiting.is_alive() and client.get("/healthz").status_code == 200
    waiting.join(30)
    assert on_loop == [True, False, False, False]
    assert plans[-1].status_code == 200 and plans[-1].json()["makespan"] == plans[0].json()["makespan"]


def test_loop_plan_cells_0_puts_every_plan_on_a_thread(make_settings) -> None:
    """DAGSCHED_LOOP_PLAN_CELLS=0: the extender never waits for a plan on the loop; the plan is the same."""
    with TestClient(create_app(make_settings(loop_plan_cells=0))) as c:
        on_loop = _on_loop_spy(c.app.state.service.planning)  # type: ignore[attr-defined]
        r = c.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"})
        assert r.status_code == 200 and r.json()["makespan"] == pytest.approx(10.0)
    assert on_loop == [False]

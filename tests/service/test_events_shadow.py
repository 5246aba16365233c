"""POST /v1/events (re-plans what is affected; 200 % overrun migrates) and shadow mode with its report."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from .conftest import AUTH, nodes, workflow


def _plan(client: TestClient) -> dict:
    return client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).json()


def _event(client: TestClient, **body) -> dict:
    r = client.post("/v1/events", json=body, headers=AUTH)
    assert r.status_code == 200, r.text
    return r.json()


def test_started_and_finished_are_recorded_without_replanning(client: TestClient) -> None:
    """task_started / task_finished change nothing: replanned false, no changed assignments."""
    plan = _plan(client)
    res = _event(client, plan_id=plan["plan_id"], kind="task_started", task="a", node="n2", at=0)
    assert res == {**res, "replanned": False, "changed": [], "plan_id": plan["plan_id"], "root_id": plan["plan_id"]}
    assert _event(client, plan_id=plan["plan_id"], kind="task_finished", task="a", at=5)["replanned"] is False


def test_node_down_moves_its_tasks(client: TestClient) -> None:
    """n2 (all four tasks) goes down at t=0: everything moves to n1, starting at the event time."""
    plan = _plan(client)
    res = _event(client, plan_id=plan["plan_id"], kind="node_down", node="n2", at=1.0)
    assert res["replanned"] is True and "4 task(s) move off it" in res["reason"]
    assert {c["task"]: (c["node"], c["previous_node"]) for c in res["changed"]} == {t: ("n1", "n2") for t in "abcd"}
    first = min(res["changed"], key=lambda c: c["start"])
    assert first["task"] == "a" and first["start"] == pytest.approx(1.0)
    revision = client.get(f"/v1/plans/{res['plan_id']}").json()
    assert revision["root_id"] == plan["plan_id"] and revision["makespan"] == pytest.approx(1.0 + 20 / 1.5)
    # the chain continues from the revision: the node comes back, tasks may return
    back = _event(client, plan_id=res["plan_id"], kind="node_up", node="n2", at=2.0)
    assert back["replanned"] is True and back["root_id"] == plan["plan_id"]


def test_node_down_counts_what_changed_and_says_why_an_unreported_task_runs_again(client: TestClient) -> None:
    """n2 goes down at 6 s, after `a` was planned to finish there (5 s) but never reported finished: the answer's
    count is the tasks `changed` lists off n2 (all four), and it says one of them runs again, and why."""
    plan = _plan(client)
    assert next(a for a in plan["assignments"] if a["task"] == "a")["finish"] == pytest.approx(5.0)
    res = _event(client, plan_id=plan["plan_id"], kind="node_down", node="n2", at=6.0)
    moved = [c for c in res["changed"] if c["previous_node"] == "n2"]
    assert len(moved) == len(res["changed"]) == 4
    assert res["reason"].startswith("node down: 4 task(s) move off it, 1 of them planned to have finished")
    assert "runs again" in res["reason"]


def test_overrun_past_200_percent_migrates(client: TestClient) -> None:
    """a (planned 5 s on n2) at 9 s runs on (180 %); at 11 s (220 %) it is migrated off n2."""
    plan = _plan(client)
    pid = plan["plan_id"]
    _event(client, plan_id=pid, kind="task_started", task="a", node="n2", at=0)
    res = _event(client, plan_id=pid, kind="task_overran", task="a", node="n2", at=9, elapsed_s=9)
    assert res["replanned"] is False and "180%" in res["reason"]
    res = _event(client, plan_id=pid, kind="task_overran", task="a", node="n2", at=11, elapsed_s=11)
    assert res["replanned"] is True and res["migrated"] == ["a"]
    moved = {c["task"]: c for c in res["changed"]}
    assert moved["a"]["node"] != "n2" and moved["a"]["start"] == pytest.approx(11.0)


def test_failed_task_is_replanned_and_bad_events_are_named(client: TestClient) -> None:
    """task_failed re-plans; unknown plan 404, unknown task/node and missing fields 422 naming them."""
    plan = _plan(client)
    pid = plan["plan_id"]
    assert _event(client, plan_id=pid, kind="task_failed", task="a", node="n2", at=3)["replanned"] is True
    for body, status, message in (
        ({"plan_id": "nope", "kind": "node_up", "node": "n0", "at": 0}, 404, "no plan 'nope'"),
        ({"plan_id": pid, "kind": "task_failed", "task": "ghost", "at": 0}, 422, "task: unknown task 'ghost'"),
        ({"plan_id": pid, "kind": "node_down", "node": "n9", "at": 0}, 422, "node: unknown node 'n9'"),
        ({"plan_id": pid, "kind": "task_overran", "task": "a", "at": 0}, 422, "elapsed_s: required"),
        ({"plan_id": pid, "kind": "exploded", "at": 0}, 422, "kind:"),
        ({"plan_id": pid, "kind": "node_up", "node": "n0", "at": -1}, 422, "at:"),
    ):
        r = client.post("/v1/events", json=body, headers=AUTH)
        assert r.status_code == status and message in r.json()["detail"], (body, r.json())
    assert 'dagsched_events_total{kind="task_failed"}' in client.get("/v1/metrics").text


def test_shadow_mode_stores_both_and_reports(client: TestClient) -> None:
    """With shadow: heft, every round_robin plan is also planned by HEFT; the report counts who wins."""
    client.put("/v1/config", json={"shadow": "heft"}, headers=AUTH)
    for _ in range(2):
        client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "round_robin"})
    report = client.get("/v1/shadow/report").json()
    assert report["shadow"] == "heft" and report["plans"] == 2
    (pair,) = report["pairs"]
    assert (pair["live"], pair["shadow"], pair["plans"]) == ("round_robin", "heft", 2)
    assert pair["shadow_wins"] == 2 and pair["makespan_ratio_mean"] > 1.0
    metrics = client.get("/v1/metrics").text
    assert 'dagsched_shadow_plans_total{winner="shadow"} 2.0' in metrics
    assert "dagsched_shadow_makespan_ratio" in metrics

"""The read-only routes the dashboard uses: stats, the plan list, a plan's graph and explanation, presets,
schedulers, the report's figures and the decisions log's filters."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.service.conftest import nodes, workflow

from dagsched.service.app import create_app


def _plan(client: TestClient, name: str = "w", scheduler: str = "heft") -> dict:
    r = client.post("/v1/schedule", json={"workflow": workflow(name), "nodes": nodes(), "scheduler": scheduler})
    assert r.status_code == 200, r.text
    return r.json()


def test_stats_count_this_process_plans_and_read_the_store(client: TestClient) -> None:
    before = client.get("/v1/stats").json()
    assert before["plans"]["total"] == 0 and before["decision_latency_ms"]["p99"] is None
    _plan(client)
    _plan(client, scheduler="drl")
    s = client.get("/v1/stats").json()
    assert s["plans"]["total"] == 2 and s["plans"]["stored"] == 2 and s["plans"]["per_s"] > 0
    assert s["decision_latency_ms"]["count"] >= 6  # a, then b and c (one instant or two), then d: per plan
    assert 0 < s["decision_latency_ms"]["p50"] <= s["decision_latency_ms"]["p99"]
    assert s["model"]["version"] == "tiny-v1" and s["breaker"]["open"] is False
    assert s["store"] == {"status": "ok", "dialect": "sqlite"}
    assert s["fallbacks"]["total"] == 0 and s["default_scheduler"] == "sampling"
    assert s["grpc"] == {"port": None} and s["canary"] is None  # no --grpc-port here, no canary
    assert s["calibration"] == {"enabled": True, "active": False}  # no executed run yet


def test_plan_list_filters_and_search(client: TestClient) -> None:
    a = _plan(client, "etl-nightly")
    b = _plan(client, "ml-train", scheduler="drl")
    everything = client.get("/v1/plans").json()
    assert everything["total"] == 2 and [p["plan_id"] for p in everything["plans"]] == [b["plan_id"], a["plan_id"]]
    assert "request" not in everything["plans"][0]
    assert [p["plan_id"] for p in client.get("/v1/plans", params={"q": "NIGHT"}).json()["plans"]] == [a["plan_id"]]
    assert [p["plan_id"] for p in client.get("/v1/plans", params={"q": b["plan_id"][:8]}).json()["plans"]] == [
        b["plan_id"]
    ]
    assert client.get("/v1/plans", params={"q": "%"}).json()["total"] == 0  # LIKE wildcards are literal
    assert client.get("/v1/plans", params={"scheduler": "drl"}).json()["plans"][0]["workflow"] == "ml-train"
    assert client.get("/v1/plans", params={"fallback": True}).json()["total"] == 0
    page = client.get("/v1/plans", params={"limit": 1, "offset": 1}).json()
    assert page["count"] == 1 and page["total"] == 2 and page["plans"][0]["plan_id"] == a["plan_id"]
    bad = client.get("/v1/plans", params={"limit": 0})
    assert bad.status_code == 422 and "limit" in bad.json()["detail"]


def test_graph_has_every_task_edge_and_node(client: TestClient) -> None:
    plan = _plan(client)
    g = client.get(f"/v1/plans/{plan['plan_id']}/graph").json()
    assert sorted(t["id"] for t in g["tasks"]) == ["a", "b", "c", "d"]
    assert {(e["source"], e["target"]) for e in g["edges"]} == {("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")}
    by_task = {x["task"]: x for x in plan["assignments"]}
    assert all(t["node"] == by_task[t["id"]]["node"] and t["finish"] == by_task[t["id"]]["finish"] for t in g["tasks"])
    assert [n["id"] for n in g["nodes"]] == ["n0", "n1", "n2"] and g["makespan"] == plan["makespan"]
    assert client.get("/v1/plans/nope/graph").status_code == 404


def test_explain_drl_plan_replays_it_and_attributes_one_task(client: TestClient) -> None:
    """A drl plan is replayed with the serving model: each task's choice is a distribution over the tasks ready when
    it was placed (a, the only entry, with probability 1), and `?task=` attributes that task's score completely."""
    plan = _plan(client, scheduler="drl")
    assert plan["scheduler"] == "drl" and not plan["fallback"]
    ex = client.get(f"/v1/plans/{plan['plan_id']}/explain").json()
    assert ex["policy"]["reproduced"] is True and ex["model_version"] == "tiny-v1"
    assert ex["policy"]["decisions"] == 4 and ex["policy"]["target"].startswith("the task's score")
    assert [t["task"] for t in ex["tasks"]] == [a["task"] for a in plan["assignments"]]
    for t in ex["tasks"]:
        probs = [a["probability"] for a in t["policy"]["alternatives"]]
        assert t["policy"]["alternatives"][0]["probability"] == max(probs) and sum(probs) <= 1 + 1e-9
        chosen = [a for a in t["policy"]["alternatives"] if a["chosen"]]
        assert len(chosen) == 1 and chosen[0]["task"] == t["task"]
        assert chosen[0]["probability"] == t["policy"]["probability"]
        assert t["evidence"]["alternatives"]  # the evidence every plan carries
    first = next(t for t in ex["tasks"] if t["task"] == "a")["policy"]
    assert first["probability"] == 1.0 and first["margin"] is None and len(first["alternatives"]) == 1
    assert ex["task"] is None
    one = client.get(f"/v1/plans/{plan['plan_id']}/explain", params={"task": "c"}).json()["task"]
    assert one["task"] == "c" and set(one) >= {"evidence", "policy", "attributions"}
    at = one["attributions"]
    assert abs(at["total"] - (at["output"] - at["baseline_output"])) <= 1e-2 * max(1.0, abs(at["total"]))
    assert {r["task"] for r in at["by_task"]} == {"a", "b", "c", "d"}
    assert {r["group"] for r in at["by_feature"]} == {"task", "global"}


def test_explain_heft_plan_gives_evidence_only_and_bad_task_names_the_field(client: TestClient) -> None:
    plan = _plan(client)
    ex = client.get(f"/v1/plans/{plan['plan_id']}/explain", params={"task": "b"}).json()
    assert ex["policy"] is None and ex["task"]["attributions"] is None and ex["task"]["policy"] is None
    assert ex["task"]["evidence"] == next(a["evidence"] for a in plan["assignments"] if a["task"] == "b")
    bad = client.get(f"/v1/plans/{plan['plan_id']}/explain", params={"task": "zz"})
    assert bad.status_code == 422 and bad.json()["detail"] == "task: no task 'zz' in this plan"
    assert client.get("/v1/plans/nope/explain").status_code == 404


def test_explain_is_in_the_openapi_spec_with_a_schema(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    op = spec["paths"]["/v1/plans/{plan_id}/explain"]["get"]
    ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ref.endswith("/ExplainResponse")
    assert "attributions" in spec["components"]["schemas"]["TaskDetail"]["properties"]


def test_decisions_filter_by_scheduler_model_and_fallback(client: TestClient) -> None:
    _plan(client)
    drl = _plan(client, scheduler="drl")
    rows = client.get("/v1/decisions", params={"scheduler": "drl"}).json()["decisions"]
    assert len(rows) == 4 and {r["plan_id"] for r in rows} == {drl["plan_id"]}
    assert client.get("/v1/decisions", params={"model_version": "tiny-v1"}).json()["count"] == 4
    assert client.get("/v1/decisions", params={"fallback": False}).json()["count"] == 8
    assert client.get("/v1/decisions", params={"fallback": True}).json()["count"] == 0
    assert all(r["fallback"] is False for r in rows)


def test_presets_and_schedulers_plan_as_given(client: TestClient) -> None:
    presets = client.get("/v1/clusters").json()["presets"]
    hetero = next(p for p in presets if p["name"] == "hetero-16")
    assert len(hetero["nodes"]) == 16
    names = client.get("/v1/schedulers").json()
    assert {"heft", "drl", "cpop"} <= set(names["schedulers"]) and names["default"] == "sampling"
    r = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": hetero["nodes"], "scheduler": "heft"})
    assert r.status_code == 200 and {a["node"] for a in r.json()["assignments"]} <= {n["id"] for n in hetero["nodes"]}


def test_report_lists_figures_and_serves_only_figures_inside(make_settings, tmp_path: Path) -> None:
    folder = tmp_path / "report"
    (folder / "figures").mkdir(parents=True)
    (folder / "report.md").write_text("# shared cluster under load\n\ntext\n")
    (folder / "figures" / "completion.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    (folder / "results.csv").write_text("a,b\n")
    (tmp_path / "secret.png").write_bytes(b"no")
    with TestClient(create_app(make_settings(report_dir=folder))) as c:
        rep = c.get("/v1/report").json()
        assert rep["available"] and rep["title"] == "shared cluster under load"
        assert rep["figures"] == [{"name": "figures/completion.png", "url": "/v1/report/files/figures/completion.png"}]
        assert c.get(rep["figures"][0]["url"]).content.startswith(b"\x89PNG")
        assert c.get("/v1/report/files/results.csv").status_code == 404
        assert c.get("/v1/report/files/../secret.png").status_code == 404
        assert c.get("/v1/report/files/%2E%2E/secret.png").status_code == 404
    with TestClient(create_app(make_settings())) as c:
        assert c.get("/v1/report").json() == {"available": False, "title": None, "figures": []}


@pytest.mark.parametrize("path", ["/", "/ui"])
def test_root_leads_to_the_dashboard(client: TestClient, path: str) -> None:
    r = client.get(path, follow_redirects=False)
    assert r.status_code in (307, 308) and r.headers["location"].endswith("/ui/")


def test_store_health_and_latency_are_exported(client: TestClient) -> None:
    _plan(client)
    assert client.get("/readyz").status_code == 200
    text = client.get("/v1/metrics").text
    assert "dagsched_store_up 1.0" in text
    assert 'dagsched_store_seconds_count{op="save_plan"} 1.0' in text
    assert 'dagsched_store_seconds_count{op="ping"} 1.0' in text

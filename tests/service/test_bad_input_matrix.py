"""The bad-input matrix: each class of bad request gets its status and a message naming the field and the fault,
and after each the service is healthy and the store is exactly as it was (row counts of every table)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from dagsched.service.app import create_app

from .conftest import AUTH, fresh_pg_schema, nodes, pg_url, workflow

JSON = {"content-type": "application/json"}


def _wf(**changes: Any) -> dict[str, Any]:
    return {**workflow(), **changes}


def _req(wf: dict | None = None, ns: list | None = None, **extra: Any) -> bytes:
    return json.dumps({"workflow": wf if wf is not None else workflow(), "nodes": ns if ns is not None else nodes(),
                       **extra}).encode()  # fmt: skip


def _tasks(*tasks: dict) -> dict[str, Any]:
    return _wf(tasks=list(tasks))


# name -> (method, path, body builder (plan id -> bytes), headers, expected status, expected text in `detail`)
Case = tuple[str, str, Callable[[str], bytes], dict[str, str], int, str]
CASES: dict[str, Case] = {
    "cycle": ("POST", "/v1/schedule", lambda _: _req(_tasks(
        {"id": "a", "runtime": 1, "dependencies": ["b"]}, {"id": "b", "runtime": 1, "dependencies": ["a"]})),
        JSON, 422, "cycle through tasks"),
    "self-loop": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": 1, "dependencies": ["a"]})),
                  JSON, 422, "workflow.tasks[0].dependencies[0]: cycle through tasks a -> a"),
    "unknown dependency": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": 1,
                           "dependencies": ["ghost"]})), JSON, 422, "unknown task 'ghost'"),
    "duplicate task id": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": 1},
                          {"id": "a", "runtime": 2})), JSON, 422, "duplicate task id 'a'"),
    "missing runtime": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a"})), JSON, 422,
                        "workflow.tasks[0].runtime"),
    "negative runtime": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": -1})), JSON, 422,
                         "workflow.tasks[0].runtime: Input should be greater than or equal to 0"),
    "NaN runtime": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": float("nan")})), JSON,
                    422, "workflow.tasks[0].runtime: Input should be a finite number"),
    "infinite runtime": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": float("inf")})),
                         JSON, 422, "workflow.tasks[0].runtime: Input should be a finite number"),
    "negative data size": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": 1},
                           {"id": "b", "runtime": 1, "dependencies": [{"task": "a", "data": -5}]})), JSON, 422,
                           "workflow.tasks[1].dependencies[0].data"),
    "NaN data size": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": 1},
                      {"id": "b", "runtime": 1, "dependencies": [{"task": "a", "data": float("nan")}]})), JSON, 422,
                      "workflow.tasks[1].dependencies[0].data: Input should be a finite number"),
    "runtime of the wrong type": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": "ten"})),
                                  JSON, 422, "workflow.tasks[0].runtime"),
    "boolean as a number": ("POST", "/v1/schedule", lambda _: _req(ns=[{"id": "n", "cpu": True}]), JSON, 422,
                            "nodes[0].cpu"),
    "empty task list": ("POST", "/v1/schedule", lambda _: _req(_wf(tasks=[])), JSON, 422, "workflow.tasks"),
    "empty node list": ("POST", "/v1/schedule", lambda _: _req(ns=[]), JSON, 422, "nodes: List should have at least"),
    "task no node can host": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": 1,
                              "resources": {"cpu": 64}})), JSON, 422, "no node can ever run it"),
    "node with zero capacity": ("POST", "/v1/schedule", lambda _: _req(ns=[{"id": "n", "cpu": 0}]), JSON, 422,
                                "nodes[0].cpu: Input should be greater than 0"),
    "node with negative memory": ("POST", "/v1/schedule", lambda _: _req(ns=[{"id": "n", "cpu": 2, "mem": -1}]),
                                  JSON, 422, "nodes[0].mem: Input should be greater than or equal to 0"),
    "duplicate nodes": ("POST", "/v1/schedule", lambda _: _req(ns=[{"id": "n", "cpu": 1}, {"id": "n", "cpu": 2}]),
                        JSON, 422, "nodes[1].id: duplicate node id 'n'"),
    "unknown field": ("POST", "/v1/schedule", lambda _: _req(priority_class="gold"), JSON, 422,
                      "priority_class: unknown field"),
    "unknown scheduler": ("POST", "/v1/schedule", lambda _: _req(scheduler="fastest"), JSON, 422,
                          "scheduler: unknown scheduler 'fastest'"),
    "malformed JSON": ("POST", "/v1/schedule", lambda _: b'{"workflow": {', JSON, 400,
                       "body: malformed JSON at line 1, column 15: Expecting property name"),
    "wrong content type": ("POST", "/v1/schedule", lambda _: _req(), {"content-type": "text/plain"}, 415,
                           "content-type: expected application/json, got text/plain"),
    "body past the size limit": ("POST", "/v1/schedule", lambda _: b" " * 2_000_001 + _req(), JSON, 413,
                                 "body: request body is over the limit"),
    "deeply nested JSON": ("POST", "/v1/schedule", lambda _: b"[" * 100_000 + b"]" * 100_000, JSON, 400,
                           "body: JSON nested 100000 levels deep; at most 64 are accepted"),
    "runtime past what can be simulated": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime":
                                           1e308})), JSON, 422, "workflow.tasks[0].runtime: 1e+308 s is beyond what "
                                           "can be simulated (at most 1e+09 s"),
    "price past what a cost can hold": ("POST", "/v1/schedule", lambda _: _req(ns=[{**nodes()[0], "price_per_hour":
                                        1e308}]), JSON, 422, "nodes[0].price_per_hour"),
    "transfer past what can be simulated": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": 1},
                                            {"id": "b", "runtime": 1, "dependencies": [{"task": "a", "data": 1e300}]})),
                                            JSON, 422, "bytes from 'a' to 'b' would take"),
    "gpu request no node has": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a", "runtime": 1,
                                "resources": {"gpu": 3}})), JSON, 422, "workflow.tasks[0].resources.gpu: task 'a'"),
    "huge id": ("POST", "/v1/schedule", lambda _: _req(_tasks({"id": "a" * 100_000, "runtime": 1})), JSON, 422,
                "workflow.tasks[0].id: String should have at most 256 characters"),
    "non-UTF-8 id": ("POST", "/v1/schedule", lambda _: b'{"workflow": {"name": "w", "tasks": [{"id": "\xff\xfe", '
                     b'"runtime": 1}]}, "nodes": [{"id": "n", "cpu": 1}]}', JSON, 400, "body:"),
    "broken WfFormat": ("POST", "/v1/schedule", lambda _: _req({"name": "x", "schemaVersion": "1.5", "workflow": {}}),
                        JSON, 422, "workflow.workflow.specification: required field is missing"),
    "event for an unknown plan": ("POST", "/v1/events", lambda _: json.dumps({"plan_id": "nope", "kind": "node_up",
                                  "node": "n0", "at": 1}).encode(), {**JSON, **AUTH}, 404, "plan_id: no plan 'nope'"),
    "event for an unknown task": ("POST", "/v1/events", lambda pid: json.dumps({"plan_id": pid, "kind":
                                  "task_started", "task": "zz", "at": 1}).encode(), {**JSON, **AUTH}, 422,
                                  "task: unknown task 'zz'"),
    "event out of a task's life": ("POST", "/v1/events", lambda pid: json.dumps({"plan_id": pid, "kind":
                                   "task_finished", "task": "d", "at": 1}).encode(), {**JSON, **AUTH}, 409,
                                   "task: 'd' is not running"),
    "event out of time order": ("POST", "/v1/events", lambda pid: json.dumps({"plan_id": pid, "kind": "node_up",
                                "node": "n0", "at": 0.5}).encode(), {**JSON, **AUTH}, 409,
                                "at: 0.5 s is before this plan's last event"),
    "event without the token": ("POST", "/v1/events", lambda pid: json.dumps({"plan_id": pid, "kind": "node_up",
                                "node": "n0", "at": 9}).encode(), JSON, 401, "missing bearer token"),
    "config with a bad rule": ("PUT", "/v1/config", lambda _: json.dumps({"rules": {"r": "node.__class__"}}).encode(),
                               {**JSON, **AUTH}, 422, "rules.r"),
    "unknown route": ("GET", "/v1/nothing", lambda _: b"", {}, 404, "path: nothing at /v1/nothing"),
    "wrong method": ("DELETE", "/v1/schedule", lambda _: b"", {}, 405, "method: DELETE is not allowed"),
}  # fmt: skip


def _counts(client: TestClient) -> dict[str, int]:
    engine = client.app.state.service.store.engine
    with engine.connect() as conn:
        tables = sa.inspect(conn).get_table_names()
        return {t: int(conn.execute(sa.text(f'SELECT count(*) FROM "{t}"')).scalar_one()) for t in sorted(tables)}


@pytest.fixture(params=["sqlite", "postgresql"])
def client(request: pytest.FixtureRequest, make_settings) -> Iterator[TestClient]:
    """The service on a fresh SQLite file, and on a fresh schema of the test PostgreSQL when there is one."""
    overrides = {}
    if request.param == "postgresql":
        url = pg_url()
        if url is None:
            pytest.skip("DAGSCHED_TEST_PG_URL is not set (deploy/ci-postgres.sh starts a PostgreSQL and prints one)")
        overrides["store_url"] = fresh_pg_schema(url)
    with TestClient(create_app(make_settings(sync_interval_s=0, **overrides))) as c:
        yield c


@pytest.fixture
def planned(client: TestClient) -> str:
    """A stored plan with one event (task 'a' started at 1 s), for the event cases."""
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).json()
    ev = {"plan_id": plan["plan_id"], "kind": "task_started", "task": "a", "node": "n2", "at": 1}
    assert client.post("/v1/events", json=ev, headers=AUTH).status_code == 200
    return str(plan["plan_id"])


def test_the_matrix_has_every_class_the_issue_names() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_refused_by_name_and_changes_nothing(client: TestClient, planned: str, name: str) -> None:
    method, path, build, headers, status, message = CASES[name]
    before = _counts(client)
    r = client.request(method, path, content=build(planned), headers=headers)
    assert r.status_code == status, (name, r.status_code, r.text[:300])
    detail = r.json()["detail"]
    assert message in detail, (name, detail)
    field, sep, fault = detail.partition(": ")
    assert sep and field and fault  # "<field>: <fault>"
    assert client.get("/healthz").status_code == 200 and client.get("/readyz").status_code == 200
    assert _counts(client) == before
    ok = client.post("/v1/schedule", json={"workflow": workflow("after"), "nodes": nodes(), "scheduler": "heft"})
    assert ok.status_code == 200 and ok.json()["makespan"] == pytest.approx(10.0)

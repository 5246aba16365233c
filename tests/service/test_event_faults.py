"""Faults reported through /v1/events while a plan runs: node failures mid-task, a node coming back, the same task
hit twice. A small executor plays the role of the cluster: it runs whatever the latest plan revision says, reports
each start and finish, injects the faults, and follows every re-plan. Every task must complete exactly once, and
the executed trace (attempts, outages) must pass the independent validator against the problem the service built."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from dagsched.io import workflow_from_dict
from dagsched.service.problem import build_problem
from dagsched.service.schemas import ScheduleRequest
from dagsched.sim.trace import Attempt, Outage, Trace
from dagsched.sim.validate import validate_trace

from .conftest import AUTH

EPS = 1e-9


def _workflow() -> dict[str, Any]:
    """Two chains joined at the end, with data on some edges (transfers matter when a re-plan moves a task)."""
    tasks = [{"id": "src", "runtime": 4}]
    for chain in ("a", "b"):
        prev = "src"
        for i in range(4):
            tid = f"{chain}{i}"
            tasks.append({"id": tid, "runtime": 6 + 2 * i, "dependencies": [{"task": prev, "data": 2e8 * (i % 2)}]})
            prev = tid
    tasks.append({"id": "sink", "runtime": 3, "dependencies": ["a3", {"task": "b3", "data": 5e8}]})
    return {"name": "faulty", "tasks": tasks}


def _nodes() -> list[dict[str, Any]]:
    return [{"id": f"n{i}", "cpu": 1, "mem": 4, "speed": 1 + 0.5 * i, "bandwidth": 1e8} for i in range(3)]


class Executor:
    """Runs the latest revision of a plan, reporting what happens; `faults` are (time, node, up_after_s)."""

    def __init__(self, client: TestClient, faults: list[tuple[float, str, float | None]]) -> None:
        self.c = client
        body = {"workflow": _workflow(), "nodes": _nodes(), "scheduler": "heft"}
        self.request = ScheduleRequest.model_validate(body)
        r = client.post("/v1/schedule", json=body)
        assert r.status_code == 200, r.text
        self.plan_id = r.json()["plan_id"]
        self.plan = {a["task"]: a for a in r.json()["assignments"]}
        self.faults = sorted(faults)
        self.ups: list[tuple[float, str]] = []
        self.running: dict[str, tuple[str, float]] = {}
        self.done: dict[str, tuple[str, float, float]] = {}
        self.attempts: list[tuple[str, str, float, float, str]] = []
        self.outages: list[tuple[str, float, float]] = []
        self.down: dict[str, float] = {}
        self.replans = 0

    def _event(self, **body: Any) -> dict[str, Any]:
        r = self.c.post("/v1/events", json={"plan_id": self.plan_id, **body}, headers=AUTH)
        assert r.status_code == 200, (body, r.text)
        out = r.json()
        if out["replanned"]:
            self.replans += 1
            self.plan_id = out["plan_id"]
            latest = self.c.get(f"/v1/plans/{self.plan_id}").json()
            self.plan.update({a["task"]: a for a in latest["assignments"]})
        return out

    def run(self) -> None:
        n = len(self.plan)
        for _ in range(500):
            if len(self.done) == n:
                return
            happenings: list[tuple[float, int, str, Any]] = []
            for t in self.running:
                happenings.append((self.plan[t]["finish"], 0, "finish", t))
            if self.faults:
                happenings.append((self.faults[0][0], 1, "down", self.faults[0]))
            if self.ups:
                happenings.append((self.ups[0][0], 1, "up", self.ups[0]))
            for t, a in self.plan.items():
                if t not in self.done and t not in self.running:
                    happenings.append((a["start"], 2, "start", t))
            at, _, kind, what = min(happenings)
            if kind == "finish":
                node, start = self.running.pop(what)
                self.done[what] = (node, start, at)
                self.attempts.append((what, node, start, at, "done"))
                self._event(kind="task_finished", task=what, node=node, at=at)
            elif kind == "start":
                node = self.plan[what]["node"]
                assert node not in self.down, f"{what} planned on {node}, which is down"
                self.running[what] = (node, at)
                self._event(kind="task_started", task=what, node=node, at=at)
            elif kind == "down":
                self.faults.pop(0)
                _, node, up_after = what
                for t, (nd, start) in list(self.running.items()):
                    if nd == node:  # killed by the failure: the attempt ends now, failed
                        del self.running[t]
                        self.attempts.append((t, nd, start, at, "failed"))
                self.down[node] = at
                if up_after is not None:
                    self.ups.append((at + up_after, node))
                    self.ups.sort()
                self._event(kind="node_down", node=node, at=at)
            else:
                self.ups.pop(0)
                node = what[1]
                self.outages.append((node, self.down.pop(node), at))
                self._event(kind="node_up", node=node, at=at)
        raise AssertionError("the plan did not finish within 500 happenings")

    def trace(self) -> tuple[Any, Trace]:
        cp, _, _, _ = build_problem(workflow_from_dict(self.request.workflow), self.request.nodes, [], 10**6)
        ti = {t: i for i, t in enumerate(cp.task_ids)}
        ni = {nd: j for j, nd in enumerate(cp.node_ids)}
        attempts = [
            Attempt(ti[t], ni[nd], s, e, o, float(cp.exec_s[ti[t], ni[nd]])) for t, nd, s, e, o in self.attempts
        ]
        outages = [Outage(ni[nd], s, e) for nd, s, e in self.outages]
        outages += [Outage(ni[nd], s, float("inf")) for nd, s in self.down.items()]
        return cp, Trace("heft", 0, False, 0.0, attempts=attempts, outages=outages)


def _first_task_on(ex: Executor, node: str) -> float:
    """A time in the middle of the first task planned on `node`."""
    a = min((a for a in ex.plan.values() if a["node"] == node), key=lambda a: a["start"])
    return (a["start"] + a["finish"]) / 2


@pytest.mark.parametrize(
    "scenario", ["node down mid-task, back later", "node down for good", "the same task hit twice"]
)
def test_faults_replan_so_every_task_completes_exactly_once(client: TestClient, scenario: str) -> None:
    probe = Executor(client, [])
    busiest = max(
        {a["node"] for a in probe.plan.values()}, key=lambda nd: sum(a["node"] == nd for a in probe.plan.values())
    )
    mid = _first_task_on(probe, busiest)
    if scenario == "node down mid-task, back later":
        faults = [(mid, busiest, 15.0)]
    elif scenario == "node down for good":
        faults = [(mid, busiest, None)]
    else:
        faults = [(mid, busiest, 1.0)]
    ex = Executor(client, faults)
    if scenario == "the same task hit twice":
        # after the first failure, fail the node the task was moved to, while it runs there again
        ex.run_until = None
        victim = min((t for t, a in ex.plan.items() if a["node"] == busiest), key=lambda t: ex.plan[t]["start"])
        original_event = ex._event

        def event_and_follow(**body: Any) -> dict[str, Any]:
            out = original_event(**body)
            if body["kind"] == "node_down" and body["node"] == busiest and len(ex.faults) == 0:
                again = ex.plan[victim]
                ex.faults.append(((max(again["start"], body["at"]) + again["finish"]) / 2, again["node"], 2.0))
            return out

        ex._event = event_and_follow  # type: ignore[method-assign]
    ex.run()
    failed = [a for a in ex.attempts if a[4] == "failed"]
    assert failed, "the fault hit no running task"
    if scenario == "the same task hit twice":
        assert sum(a[0] == victim for a in failed) == 2
    assert sorted(ex.done) == sorted(ex.plan) and ex.replans >= 1
    cp, trace = ex.trace()
    report = validate_trace(cp, trace)
    assert report.ok, report.violations[:5]


def test_a_replan_right_after_a_parent_finished_waits_for_its_data(client: TestClient) -> None:
    """p ran on the slow n0 (the executor's choice, reported in its events) and sent 1 GB to c at 100 MB/s: a
    re-plan half a second after p ended must not start c on another node before the data can arrive there."""
    nodes = [{"id": "n0", "cpu": 1, "speed": 1.0, "bandwidth": 1e8}, {"id": "n1", "cpu": 1, "speed": 1.0,
             "bandwidth": 1e8}, {"id": "n2", "cpu": 1, "speed": 3.0, "bandwidth": 1e8}]  # fmt: skip
    wf = {"name": "handoff", "tasks": [{"id": "p", "runtime": 1}, {"id": "c", "runtime": 60,
          "dependencies": [{"task": "p", "data": 1e9}]}]}  # fmt: skip
    plan = client.post("/v1/schedule", json={"workflow": wf, "nodes": nodes, "scheduler": "heft"}).json()
    pid = plan["plan_id"]
    for kind, at in (("task_started", 0.0), ("task_finished", 1.0)):
        r = client.post(
            "/v1/events", json={"plan_id": pid, "kind": kind, "task": "p", "node": "n0", "at": at}, headers=AUTH
        )
        assert r.status_code == 200, r.text
    r = client.post("/v1/events", json={"plan_id": pid, "kind": "node_up", "node": "n1", "at": 1.5}, headers=AUTH)
    out = r.json()
    assert out["replanned"] is True, out
    latest = client.get(f"/v1/plans/{out['plan_id']}").json()
    (c,) = [a for a in latest["assignments"] if a["task"] == "c"]
    assert [a["task"] for a in latest["assignments"]] == ["c"]  # p's stand-in is not part of the plan
    if c["node"] != "n0":
        assert c["start"] >= 1.5 + 10.0 - EPS, c  # 1 GB at 100 MB/s from n0, counted from the re-plan
    else:
        assert c["start"] >= 1.5 - EPS

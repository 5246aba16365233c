"""A simulated cluster that differs from what requests declare: it runs each plan on the true runtimes and reports
what happened (for the calibration tests and benchmark, and `traffic.demo`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dagsched.model.compiled import CompiledProblem
from dagsched.sim.config import SimConfig
from dagsched.sim.crosscheck import Placement, replay_in_dagsched
from dagsched.sim.trace import Trace
from dagsched.sim.validate import validate_trace


@dataclass(frozen=True)
class Truth:
    """How the real cluster differs from what requests declare."""

    node_speed: Mapping[str, float] = field(default_factory=dict)
    """node id -> true speed / declared speed (0.7: 30 % slower than it says)"""
    task_factor: Mapping[str, float] = field(default_factory=dict)
    """task name (`calibration.task_name`) -> true runtime / declared runtime"""
    noise_cv: float = 0.0  # coefficient of variation of the lognormal noise on every runtime (hidden from the planner)

    def true_exec_s(self, task: Any, node: Any) -> float:
        """The expected true runtime of `task` on `node` (a NodeState), noise aside."""
        from dagsched.service.calibration import declared_runtime, task_name

        declared = declared_runtime(task, node.id, node.speed)
        return declared * self.task_factor.get(task_name(task), 1.0) / self.node_speed.get(node.id, 1.0)


def true_problem(request: Mapping[str, Any], truth: Truth) -> CompiledProblem:
    """The request's problem (as the planner builds it: free capacity, no rules) on the true runtimes."""
    from dagsched.io import workflow_from_dict
    from dagsched.service.calibration import task_name
    from dagsched.service.problem import build_problem
    from dagsched.service.schemas import NodeState

    wf = workflow_from_dict(dict(request["workflow"]))
    tasks = []
    for t in wf.tasks:
        k = truth.task_factor.get(task_name(t), 1.0)
        update: dict[str, Any] = {"runtime": t.runtime * k}
        if t.costs:
            update["costs"] = {nd: c * k / truth.node_speed.get(nd, 1.0) for nd, c in t.costs.items()}
        tasks.append(t.model_copy(update=update))
    nodes = [NodeState.model_validate(n) for n in request["nodes"]]
    nodes = [n.model_copy(update={"speed": n.speed * truth.node_speed.get(n.id, 1.0)}) for n in nodes]
    cp, _, _, _ = build_problem(wf.model_copy(update={"tasks": tasks}), nodes, [], 10**9)
    return cp


def placement(cp: CompiledProblem, assignments: list[Mapping[str, Any]]) -> Placement:
    """Where each task was planned and each node's planned order (by planned start, then task index)."""
    ti = {t: i for i, t in enumerate(cp.task_ids)}
    ni = {n: j for j, n in enumerate(cp.node_ids)}
    node = [-1] * cp.n_tasks
    queues: list[list[int]] = [[] for _ in range(cp.n_nodes)]
    for a in sorted(assignments, key=lambda a: (a["start"], ti[a["task"]])):
        t, nd = ti[a["task"]], ni[a["node"]]
        node[t] = nd
        queues[nd].append(t)
    if -1 in node:
        raise ValueError(f"the plan leaves task '{cp.task_ids[node.index(-1)]}' out")
    return Placement(node, queues)


def execute(
    plan: Mapping[str, Any], request: Mapping[str, Any], truth: Truth, seed: int = 0
) -> tuple[list[dict[str, Any]], Trace, CompiledProblem]:
    """Run `plan` of `request` on the true times: the events to report in order, the trace, the true problem."""
    cp = true_problem(request, truth)
    trace = replay_in_dagsched(cp, placement(cp, plan["assignments"]), SimConfig(noise_cv=truth.noise_cv), seed)
    report = validate_trace(cp, trace)
    if not report.ok:
        raise AssertionError("the replayed run is invalid: " + "; ".join(report.violations[:3]))
    happenings = []
    for a in trace.attempts:
        task, node = cp.task_ids[a.task], cp.node_ids[a.node]
        happenings.append((a.start, 1, task, {"kind": "task_started", "task": task, "node": node, "at": a.start}))
        happenings.append((a.end, 0, task, {"kind": "task_finished", "task": task, "node": node, "at": a.end}))
    happenings.sort(key=lambda h: h[:3])
    return [h[3] for h in happenings], trace, cp


def report(client: Any, plan_id: str, events: list[dict[str, Any]], token: str) -> None:
    """POST each event to `/v1/events` (`client`: an httpx.Client or a TestClient on the service)."""
    headers = {"Authorization": f"Bearer {token}"}
    for e in events:
        r = client.post("/v1/events", json={"plan_id": plan_id, **e}, headers=headers)
        if r.status_code != 200:
            raise RuntimeError(f"/v1/events refused {e}: {r.status_code} {r.text}")


def plan_and_run(
    client: Any, body: Mapping[str, Any], truth: Truth, token: str, seed: int = 0
) -> tuple[dict[str, Any], float]:
    """Plan `body` on the service, run the plan on the true times, report it; (the plan, achieved makespan)."""
    r = client.post("/v1/schedule", json=dict(body))
    if r.status_code != 200:
        raise RuntimeError(f"/v1/schedule refused the request: {r.status_code} {r.text}")
    plan = r.json()
    events, trace, _ = execute(plan, body, truth, seed)
    report(client, plan["plan_id"], events, token)
    return plan, max(a.end for a in trace.attempts)


DRIFT = Truth(node_speed={"n3": 0.7}, task_factor={"model_training": 1.5})
"""Node n3 is 30 % slower than it declares; `model_training` tasks run 1.5 x their declared runtime."""


def drift_nodes() -> list[dict[str, Any]]:
    """Four nodes declaring speeds 1, 1.5, 1.5 and 2 (under `DRIFT` n3 really runs at 1.4), 1 Gb/s links."""
    speeds = (1.0, 1.5, 1.5, 2.0)
    return [
        {"id": f"n{i}", "cpu": 4, "mem": 16, "speed": s, "bandwidth": 1.25e8, "price_per_hour": 0.5 + 0.5 * s}
        for i, s in enumerate(speeds)
    ]


def ml_pipeline(seed: int, trainings: int = 4) -> dict[str, Any]:
    """A nightly ML pipeline whose runtimes vary with `seed`, with `trainings` model trainings."""
    import numpy as np

    rng = np.random.default_rng(seed)

    def u(lo: float, hi: float) -> float:
        return round(float(rng.uniform(lo, hi)), 1)

    tasks: list[dict[str, Any]] = [
        {"id": "ingest", "runtime": u(20, 40), "labels": {"program": "ingest"}},
        {"id": "clean_a", "runtime": u(20, 60), "labels": {"program": "clean"},
         "dependencies": [{"task": "ingest", "data": 1e9}]},
        {"id": "clean_b", "runtime": u(20, 60), "labels": {"program": "clean"}, "dependencies": ["ingest"]},
        {"id": "features", "runtime": u(30, 60), "resources": {"cpu": 2}, "labels": {"program": "features"},
         "dependencies": [{"task": "clean_a", "data": 5e8}, "clean_b"]},
    ]  # fmt: skip
    for k in range(trainings):
        tasks.append(
            {"id": f"train_{k}", "runtime": u(60, 180), "resources": {"cpu": int(rng.integers(2, 5))},
             "labels": {"program": "model_training"}, "dependencies": [{"task": "features", "data": 2e8}]}
        )  # fmt: skip
    tasks.append(
        {"id": "evaluate", "runtime": u(10, 20), "labels": {"program": "evaluate"},
         "dependencies": [f"train_{k}" for k in range(trainings)]}
    )  # fmt: skip
    tasks.append({"id": "report", "runtime": 5.0, "labels": {"program": "report"}, "dependencies": ["evaluate"]})
    return {"name": f"ml-nightly-{seed}", "tasks": tasks}

"""Calibrated predictions: factors fitted from executed runs, applied to plans, shown in the evidence and /v1/gap.

The end-to-end test runs a simulated reality (`traffic.simulated_cluster.DRIFT`: node n3 30 % slower than it declares,
`model_training` tasks 1.5 x their declared runtime): every plan is replayed in the simulator on the true times
and its events posted, so the service learns from what it is told happened."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.io import workflow_from_dict
from dagsched.service.app import create_app
from dagsched.service.calibration import Factor, Factors, Observation, calibrate, estimate, node_class, task_name
from dagsched.service.config import Calibration
from dagsched.service.schemas import NodeState
from dagsched.service.settings import Settings
from dagsched.traffic.simulated_cluster import DRIFT, drift_nodes, ml_pipeline, plan_and_run

from .conftest import AUTH, TOKEN

N_WORKFLOWS = 15


def _obs(name: str, node: str, cls: str, ratio: float, at: float = 0.0) -> Observation:
    return Observation(name, node, cls, 10.0, 10.0 * ratio, at)


def test_the_fit_finds_a_slow_node_and_a_long_task_kind() -> None:
    """n3 runs everything 1/0.7 x; model_training runs 1.5 x everywhere; with plenty of evidence and no shrinkage
    the factors are exactly those, and nothing else moves (the L1 fit prefers two factors to eight)."""
    obs = []
    for rep in range(5):
        for node, cls, s in (("n0", "a", 1.0), ("n1", "b", 1.0), ("n2", "b", 1.0), ("n3", "c", 1 / 0.7)):
            for name, k in (("ingest", 1.0), ("clean", 1.0), ("model_training", 1.5)):
                obs.append(_obs(name, node, cls, k * s, at=rep))
    f = estimate(obs, runs=5, settings=Calibration(shrinkage=0.0), now=10.0)
    assert f.active
    assert f.node_factor("n3") == pytest.approx(1 / 0.7, rel=1e-6)
    assert f.node_factor("n0") == f.node_factor("n1") == pytest.approx(1.0)
    assert f.task_factor("model_training", "a") == pytest.approx(1.5, rel=1e-6)
    assert f.task_factor("clean", "c") == pytest.approx(1.0)
    # a class model_training never ran on gets its name's factor
    assert f.task_factor("model_training", "never-seen") == pytest.approx(1.5, rel=1e-6)


def test_a_task_seen_only_on_the_slow_node_is_not_blamed_for_it() -> None:
    """`report` only ever ran on n3, where everything is 1/0.7 x slower: n3 is slow, `report` is not."""
    obs = [_obs(n, nd, nd, (1 / 0.7 if nd == "n3" else 1.0) * (1.5 if n == "train" else 1.0))
           for _ in range(4) for n in ("train", "clean") for nd in ("n0", "n1", "n3")]  # fmt: skip
    obs += [_obs("report", "n3", "n3", 1 / 0.7) for _ in range(4)]
    f = estimate(obs, runs=5, settings=Calibration(shrinkage=0.0), now=0.0)
    assert f.node_factor("n3") == pytest.approx(1 / 0.7, rel=1e-6)
    assert f.task_factor("report", "n3") == pytest.approx(1.0, abs=1e-6)


def test_shrinkage_floor_and_decay() -> None:
    """Few observations move a factor less; below min_observations none is used; before min_runs runs nothing acts;
    old observations weigh less (a node slow last month, normal this week, is nearly forgiven)."""
    few = [_obs("t", "n0", "a", 2.0) for _ in range(3)]
    many = [_obs("t", "n0", "a", 2.0) for _ in range(300)]
    cfg = Calibration(shrinkage=2.0, min_observations=3, min_runs=1)
    f_few, f_many = estimate(few, 1, cfg, now=0.0), estimate(many, 1, cfg, now=0.0)
    assert 1.0 < f_few.task_factor("t", "a") < f_many.task_factor("t", "a") < 2.0
    assert f_few.task_factor("t", "a") == pytest.approx(2.0 ** (3 / 5))
    assert estimate(few[:2], 1, cfg, now=0.0).task_factor("t", "a") == 1.0  # under the observation floor
    assert not estimate(many, 4, Calibration(min_runs=5), now=0.0).active  # under the run floor: nothing acts
    day = 86400.0
    old = [_obs("t", "n0", "a", 2.0, at=0.0) for _ in range(50)]
    new = [_obs("t", "n0", "a", 1.0, at=30 * day) for _ in range(10)]
    f = estimate(old + new, 10, Calibration(half_life_s=2 * day, shrinkage=0.0), now=30 * day)
    assert f.task_factor("t", "a") == pytest.approx(1.0)  # 50 obs at 2^-15 weigh less than 10 at 1


@settings(max_examples=40, deadline=None)
@given(
    node_f=st.lists(st.floats(0.3, 3.0), min_size=3, max_size=3),
    task_f=st.floats(0.3, 3.0),
    runtime=st.floats(0.5, 500.0),
    costs=st.booleans(),
)
def test_calibrated_runtime_is_declared_times_both_factors(
    node_f: list[float], task_f: float, runtime: float, costs: bool
) -> None:
    """For any factors, the problem the planner sees runs each task for declared x task factor x node factor on
    each node (through speed or per-node costs); with factors of 1 the input is returned unchanged."""
    from dagsched.service.problem import build_problem

    nodes = [NodeState(id=f"n{i}", cpu=4, speed=1.0 + i) for i in range(3)]
    task: dict[str, Any] = {"id": "x", "runtime": runtime, "labels": {"program": "job"}}
    if costs:
        task["costs"] = {f"n{i}": runtime * (i + 2) for i in range(3)}
    wf = workflow_from_dict({"name": "w", "tasks": [task, {"id": "y", "runtime": 1.0, "dependencies": ["x"]}]})
    classes = {n.id: node_class(n) for n in nodes}
    f = Factors(
        task={("job", classes["n1"]): Factor(task_f, task_f, 9, 9.0)},
        node={f"n{i}": Factor(v, v, 9, 9.0) for i, v in enumerate(node_f)},
        active=True,
    )
    wf2, nodes2, applied = calibrate(wf, nodes, f)
    cp, _, _, _ = build_problem(wf2, nodes2, [], 100)
    for j, n in enumerate(nodes):
        declared = wf.tasks[0].costs[n.id] if costs else runtime / n.speed
        k = task_f if n.id == "n1" else 1.0
        assert cp.exec_s[0, j] == pytest.approx(declared * k * node_f[j], rel=1e-9)
        assert cp.exec_s[1, j] == pytest.approx(1.0 / n.speed * node_f[j], rel=1e-9)
        ev = applied.evidence("x", n.id, float(cp.exec_s[0, j]))
        assert ev is not None and ev["declared_s"] == pytest.approx(declared)
    same_wf, same_nodes, _ = calibrate(wf, nodes, Factors(active=True))
    assert same_wf is wf and same_nodes == nodes
    assert [n.speed for n in nodes2] == [n.speed / v for n, v in zip(nodes, node_f, strict=True)]


@pytest.fixture
def reality_client(make_settings: Callable[..., Settings]) -> Iterator[Callable[[bool], TestClient]]:
    """make(calibrated) -> a client on a fresh service whose calibration is on or off, re-estimated every plan."""
    opened: list[Any] = []

    def make(calibrated: bool, name: str = "") -> TestClient:
        settings = make_settings(
            store_url=f"sqlite:///{make_settings().model_dir.parent / f'r{calibrated}{name}.sqlite'}"
        )
        client = TestClient(create_app(settings))
        client.__enter__()
        opened.append(client)
        config = client.get("/v1/config").json()
        config["calibration"] = {**config["calibration"], "enabled": calibrated, "refresh_s": 0}
        assert client.put("/v1/config", json=config, headers=AUTH).status_code == 200
        return client

    yield make
    for c in opened:
        c.__exit__(None, None, None)


def _body(seed: int) -> dict[str, Any]:
    return {"workflow": ml_pipeline(seed), "nodes": drift_nodes(), "scheduler": "heft"}


def test_calibration_learns_the_drift_and_shortens_the_achieved_makespan(reality_client) -> None:
    """After N executed workflows the calibrated predictions are within 5 % of the true runtimes (every assignment
    of a new plan), the factors in /v1/gap are those of the drift, and the achieved makespans of the workflows
    planned after the floor are shorter than the same workflows' without calibration."""
    achieved: dict[bool, list[float]] = {}
    for calibrated in (False, True):
        client = reality_client(calibrated)
        achieved[calibrated] = [plan_and_run(client, _body(i), DRIFT, TOKEN, seed=i)[1] for i in range(N_WORKFLOWS)]
        if not calibrated:
            continue
        plan = client.post("/v1/schedule", json=_body(1000)).json()
        assert plan["calibration"]["active"] and plan["calibration"]["runs"] == N_WORKFLOWS
        wf = workflow_from_dict(ml_pipeline(1000))
        nodes = {n["id"]: NodeState.model_validate(n) for n in drift_nodes()}
        for a in plan["assignments"]:
            true_s = DRIFT.true_exec_s(next(t for t in wf.tasks if t.id == a["task"]), nodes[a["node"]])
            cal = a["evidence"]["calibration"]
            assert cal["calibrated_s"] == pytest.approx(a["finish"] - a["start"])
            assert abs(cal["calibrated_s"] / true_s - 1) <= 0.05, (a["task"], a["node"], cal, true_s)
            assert cal["declared_s"] == pytest.approx(wf.tasks[[t.id for t in wf.tasks].index(a["task"])].runtime
                                                      / nodes[a["node"]].speed)  # fmt: skip
        gap = client.get("/v1/gap").json()
        factors = {r["node"]: r["factor"] for r in gap["calibration"]["node"]}
        assert factors["n3"] == pytest.approx(1 / 0.7, rel=0.05)
        assert all(factors[n] == pytest.approx(1.0, abs=0.01) for n in ("n0", "n1", "n2") if n in factors)
        by_name = {r["task"]: r["factor"] for r in gap["calibration"]["task_name"]}
        assert by_name["model_training"] == pytest.approx(1.5, rel=0.05)
        assert all(v == pytest.approx(1.0, abs=0.01) for k, v in by_name.items() if k != "model_training")
    floor = Calibration().min_runs
    off, on = np.array(achieved[False][floor:]), np.array(achieved[True][floor:])
    assert on.mean() < off.mean(), (on, off)
    assert (on < off - 1e-9).sum() > len(on) // 2


def test_gap_report_measures_the_drift(reality_client) -> None:
    """/v1/gap per node and per task name: everything on n3 ran at least 1/0.7 x its declared time, training 1.5 x
    (2.14 x on n3); every run is complete, achieved over planned > 1 uncalibrated; failures counted."""
    client = reality_client(False)
    for i in range(6):
        plan_and_run(client, _body(i), DRIFT, TOKEN, seed=i)
    plan = client.post("/v1/schedule", json=_body(99)).json()
    first = plan["assignments"][0]
    for kind, at in (("task_started", 0.0), ("task_failed", 1.0)):
        r = client.post("/v1/events", json={"plan_id": plan["plan_id"], "kind": kind, "task": first["task"],
                                            "node": first["node"], "at": at}, headers=AUTH)  # fmt: skip
        assert r.status_code == 200, r.text
    gap = client.get("/v1/gap", params={"since": "1h"}).json()
    assert gap["runs"] == {"read": 7, "clean": 7, "complete": 6}
    by_task = {r["key"]: r for r in gap["by_task"]}
    assert by_task["model_training"]["p10"] >= 1.5 - 1e-9 and by_task["model_training"]["p90"] <= 1.5 / 0.7 + 1e-9
    assert by_task["clean"]["p90"] <= 1 / 0.7 + 1e-9
    by_node = {r["key"]: r for r in gap["by_node"]}
    assert by_node["n3"]["p10"] == pytest.approx(1 / 0.7) and by_node["n3"]["count"] >= 6
    for node in ("n0", "n1", "n2"):
        if node in by_node:  # the true nodes: their tasks ran as declared, or 1.5 x for a training
            assert 1.0 - 1e-9 <= by_node[node]["p10"] <= by_node[node]["p90"] <= 1.5 + 1e-9
    assert gap["failures"] == {"started": 6 * 10 + 1, "failed": 1, "rate": pytest.approx(1 / 61)}
    m = gap["makespan"]
    assert m["runs"] == 6 and len(m["points"]) == 6 and m["ratio"]["p10"] > 1.0
    assert all(p["achieved"] > p["planned"] for p in m["points"])
    assert gap["transfers"]["count"] > 0 and gap["transfers"]["ratio"]["p10"] >= 1.0 - 1e-9
    assert client.get("/v1/gap", params={"since": "soon"}).status_code == 422


def test_the_gap_window_is_bounded_naming_the_limit(client: TestClient) -> None:
    """`since` longer than ten years (99999999d once read plans from a negative instant) is a 422 naming the
    limit; ten years is read."""
    for since in ("99999999d", "3651d", "522w"):
        r = client.get("/v1/gap", params={"since": since})
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == f"since: at most 3650d (ten years), got {since!r}"
    ok = client.get("/v1/gap", params={"since": "3650d"})
    assert ok.status_code == 200 and ok.json()["since"] > 0


def test_a_replan_after_an_event_is_calibrated(reality_client) -> None:
    """Once calibration acts, a re-plan's running task keeps its calibrated remaining time, and the re-plan's
    evidence carries the factors."""
    client = reality_client(True)
    for i in range(Calibration().min_runs):
        plan_and_run(client, _body(i), DRIFT, TOKEN, seed=i)
    plan = client.post("/v1/schedule", json=_body(50)).json()
    assert plan["calibration"]["active"]
    ingest = next(a for a in plan["assignments"] if a["task"] == "ingest")
    for body in (
        {"kind": "task_started", "task": "ingest", "node": ingest["node"], "at": 0.0},
        {"kind": "node_up", "node": "n0", "at": 1.0},
    ):  # fmt: skip  (node_up always re-plans)
        r = client.post("/v1/events", json={"plan_id": plan["plan_id"], **body}, headers=AUTH)
        assert r.status_code == 200, r.text
    out = r.json()
    assert out["replanned"]
    latest = client.get(f"/v1/plans/{out['plan_id']}").json()
    assert latest["calibration"]["active"]
    running = next(a for a in latest["assignments"] if a["task"] == "ingest")
    assert running["finish"] == pytest.approx(ingest["finish"])  # calibrated whole minus the 1 s it ran
    assert all(a["evidence"]["calibration"]["node_factor"] > 0 for a in latest["assignments"])


def test_calibration_can_be_switched_off(reality_client) -> None:
    """With `calibration.enabled: false` nothing changes in a plan however wrong the predictions proved."""
    client = reality_client(False)
    for i in range(Calibration().min_runs + 1):
        plan_and_run(client, _body(i), DRIFT, TOKEN, seed=i)
    plan = client.post("/v1/schedule", json=_body(7)).json()
    assert plan["calibration"]["enabled"] is False and plan["calibration"]["active"] is False
    assert all(a["evidence"]["calibration"] is None for a in plan["assignments"])
    assert client.get("/v1/gap").json()["window_calibration"]["node"]  # the runs would give factors


def test_names_and_classes() -> None:
    """Task name: dagsched.io/name, then program, then id. Node class: dagsched.io/class, instance type, shape."""
    wf = workflow_from_dict(
        {"name": "w", "tasks": [{"id": "a", "runtime": 1, "labels": {"program": "p", "dagsched.io/name": "n"}},
                                {"id": "b", "runtime": 1, "labels": {"program": "p"}}, {"id": "c", "runtime": 1}]}
    )  # fmt: skip
    assert [task_name(t) for t in wf.tasks] == ["n", "p", "c"]
    n = NodeState(id="x", cpu=4, mem=16, speed=1.5, labels={"node.kubernetes.io/instance-type": "m5.xlarge"})
    assert node_class(n) == "m5.xlarge"
    assert node_class(n.model_copy(update={"labels": {}})) == "4cpu-16GiB-0gpu-x1.5"
    assert math.isclose(DRIFT.true_exec_s(wf.tasks[0], n), 1 / 1.5)


def test_a_stale_estimate_is_refreshed_in_the_background() -> None:
    """The first estimate is made at once; later, a stale one is still answered at once (the plan never waits) while
    a background thread re-estimates, and the next call gets its result."""
    from dagsched.service.calibration import Calibrator

    calls: list[float] = []
    obs = [_obs("t", "n0", "a", 2.0) for _ in range(10)]

    def read(settings: Any, now: float) -> tuple[list[Observation], int]:
        calls.append(now)
        return obs[: 3 * len(calls)], 10

    cal = Calibrator(read)
    cfg = Calibration(refresh_s=10.0, shrinkage=0.0, min_runs=1)
    first = cal.factors(cfg, now=100.0)
    assert calls == [100.0] and first.observations == 3
    assert cal.factors(cfg, now=105.0) is first and len(calls) == 1  # fresh: no read
    assert cal.factors(cfg, now=111.0) is first  # stale: answered from the cache, refreshed behind
    assert cal._refreshing is not None
    cal._refreshing.join(10)
    assert len(calls) == 2 and cal.factors(cfg, now=112.0).observations == 6
    assert cal.factors(Calibration(refresh_s=0.0, min_runs=1), now=113.0).observations == 9  # 0: every call reads

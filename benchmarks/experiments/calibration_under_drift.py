"""Calibrated predictions against a drifting reality: prediction error and achieved makespan, with and without.

Two services in this process (one SQLite store each), one with calibration on and one off, plan the same N
ML pipelines (`traffic.simulated_cluster.ml_pipeline`, HEFT) on four nodes; each plan is replayed in the simulator
on the true times (`traffic.simulated_cluster.DRIFT`: n3 30 % slower than it declares, `model_training` 1.5 x its
declared runtime, optional hidden noise) and its events posted to `/v1/events`, so each service learns only from
what it is told. Prints, per arm, over the workflows planned after the calibration floor: the error of the predicted
task runtimes against the actual ones, the error of the planned makespan against the achieved one, and the
achieved makespan; the paired ratio calibrated / uncalibrated with a 95 % bootstrap interval; then, after the N
workflows, the calibrated prediction of every (task, node) pair of a new workflow against the truth, and the
factors learned. Prints; asserts nothing.

    .venv/bin/python benchmarks/experiments/calibration_under_drift.py --workflows 30 --noise-cv 0.1
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from fastapi.testclient import TestClient

from dagsched.bench.stats import bootstrap_ci
from dagsched.io import workflow_from_dict
from dagsched.service.app import create_app
from dagsched.service.calibration import calibrate
from dagsched.service.schemas import NodeState
from dagsched.service.settings import Settings
from dagsched.traffic.simulated_cluster import DRIFT, Truth, drift_nodes, execute, ml_pipeline

TOKEN = "bench-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def service(folder: Path, calibrated: bool) -> TestClient:
    settings = Settings(
        store_url=f"sqlite:///{folder / f'calibrated-{calibrated}.sqlite'}",
        model_dir=folder / "models",
        api_token=TOKEN,
        environment="bench",
    )
    client = TestClient(create_app(settings))
    client.__enter__()
    config = client.get("/v1/config").json()
    config["calibration"] = {**config["calibration"], "enabled": calibrated, "refresh_s": 0}
    assert client.put("/v1/config", json=config, headers=AUTH).status_code == 200
    return client


def run_arm(client: TestClient, n: int, truth: Truth) -> list[dict[str, Any]]:
    """Plan, replay and report N workflows; per workflow the task and makespan predictions and outcomes."""
    out = []
    for i in range(n):
        body = {"workflow": ml_pipeline(i), "nodes": drift_nodes(), "scheduler": "heft"}
        plan = client.post("/v1/schedule", json=body).json()
        events, trace, cp = execute(plan, body, truth, seed=i)
        for e in events:
            r = client.post("/v1/events", json={"plan_id": plan["plan_id"], **e}, headers=AUTH)
            assert r.status_code == 200, r.text
        actual = {cp.task_ids[a.task]: a.end - a.start for a in trace.attempts}
        predicted = {a["task"]: a["finish"] - a["start"] for a in plan["assignments"]}
        out.append(
            {
                "task_error": np.mean([abs(predicted[t] / actual[t] - 1) for t in actual]),
                "makespan_error": abs(plan["makespan"] / max(a.end for a in trace.attempts) - 1),
                "achieved": max(a.end for a in trace.attempts),
                "calibrated": bool(plan["calibration"]["active"]),
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workflows", type=int, default=30)
    ap.add_argument("--noise-cv", type=float, default=0.0, help="hidden lognormal noise on every true runtime")
    args = ap.parse_args()
    truth = Truth(DRIFT.node_speed, DRIFT.task_factor, args.noise_cv)
    folder = Path(tempfile.mkdtemp(prefix="bench-calibration-"))
    arms = {}
    clients = {}
    for calibrated in (False, True):
        clients[calibrated] = service(folder, calibrated)
        arms[calibrated] = run_arm(clients[calibrated], args.workflows, truth)
    floor = next(i for i, w in enumerate(arms[True]) if w["calibrated"])
    print(
        f"{args.workflows} workflows, noise CV {args.noise_cv:g}; calibration acts from workflow {floor + 1} on; "
        f"figures over the {args.workflows - floor} workflows from there"
    )
    print(f"{'':14} {'task runtime error':>20} {'makespan error':>16} {'achieved makespan s':>21}")
    for calibrated in (False, True):
        rows = arms[calibrated][floor:]
        print(
            f"{'calibrated' if calibrated else 'uncalibrated':14} "
            f"{100 * np.mean([r['task_error'] for r in rows]):19.1f}% "
            f"{100 * np.mean([r['makespan_error'] for r in rows]):15.1f}% "
            f"{np.mean([r['achieved'] for r in rows]):21.1f}"
        )
    ratio = np.array(
        [a["achieved"] / b["achieved"] for a, b in zip(arms[True][floor:], arms[False][floor:], strict=True)]
    )
    lo, hi = bootstrap_ci(ratio)
    print(
        f"achieved makespan calibrated / uncalibrated: mean {ratio.mean():.3f} (95 % CI {lo:.3f} to {hi:.3f}), "
        f"shorter on {(ratio < 1 - 1e-9).sum()} of {len(ratio)}, longer on {(ratio > 1 + 1e-9).sum()}"
    )
    # every (task, node) pair of a workflow never seen, predicted with the factors the calibrated service holds
    client = clients[True]
    gap = client.get("/v1/gap", params={"since": "1d"}).json()
    wf = workflow_from_dict(ml_pipeline(10_000))
    nodes = [NodeState.model_validate(n) for n in drift_nodes()]
    state = client.app.state.service  # type: ignore[attr-defined]
    wf2, nodes2, _ = calibrate(wf, nodes, state.planner.factors(state.config))
    errors = []
    for t, t2 in zip(wf.tasks, wf2.tasks, strict=True):
        for n, n2 in zip(nodes, nodes2, strict=True):
            predicted = t2.costs[n.id] if t2.costs else t2.runtime / n2.speed
            errors.append(abs(predicted / DRIFT.true_exec_s(t, n) - 1))
    declared = [abs(t.runtime / n.speed / DRIFT.true_exec_s(t, n) - 1) for t in wf.tasks for n in nodes]
    print(
        f"after {args.workflows} workflows, every (task, node) pair of a new workflow: prediction error "
        f"mean {100 * np.mean(errors):.2f} %, max {100 * np.max(errors):.2f} % (declared: mean "
        f"{100 * np.mean(declared):.2f} %, max {100 * np.max(declared):.2f} %)"
    )
    cal = gap["calibration"]
    print(
        "node factors (truth n3 1.429): "
        + ", ".join(f"{r['node']} {r['factor']:.3f} ({r['count']})" for r in cal["node"])
    )
    print(
        "task name factors (truth model_training 1.5): "
        + ", ".join(f"{r['task']} {r['factor']:.3f} ({r['count']})" for r in cal["task_name"])
    )
    for c in clients.values():
        c.__exit__(None, None, None)


if __name__ == "__main__":
    main()

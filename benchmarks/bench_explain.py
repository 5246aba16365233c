"""What explaining a drl plan costs, beside what planning it costs: a 1,000-task workflow on 100 nodes.

Figures, in one process, one torch thread, the shipped priority policy (drl-v3), the service's sampling
(drl's service options, as /v1/schedule plans and `GET /v1/plans/{id}/explain` replays):
- plan: drl plans the workflow (what /v1/schedule runs, less HTTP and the store), validated;
- overview: `GET /v1/plans/{id}/explain`: the plan replayed, then every task's probability among the tasks
  ready when it was placed;
- one task (`?task=`): the same, plus Integrated Gradients (64 steps) of that task's score, also timed alone;
- /v1/schedule latency (a 50-task workflow, drl, through the app in-process) alone, then while explanations of
  the 1,000-task plan run in another thread: explanations are computed on request only, and the question is how
  much one running beside the planner slows it (they share the interpreter).
Prints medians; asserts nothing about time.

Run: .venv/bin/python benchmarks/bench_explain.py [--tasks 1000] [--cluster large-100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from dagsched.explain.plan import explain_plan
from dagsched.explain.priority import attribute
from dagsched.generate import cluster_preset, generate_workflow
from dagsched.io.native import workflow_to_native
from dagsched.model import Problem, compile_problem
from dagsched.policy.priority_net import load_cached_priority_policy
from dagsched.schedulers import Scheduler, make_scheduler
from dagsched.sim.run import simulate


def _median(f: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--cluster", default="large-100")
    ap.add_argument("--family", default="layered")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200, help="/v1/schedule calls timed alone and beside")
    args = ap.parse_args()
    torch.set_num_threads(1)
    policy = load_cached_priority_policy()
    wf = generate_workflow(args.family, args.tasks, seed=1)
    cp = compile_problem(Problem(workflows=[wf], cluster=cluster_preset(args.cluster)))
    print(f"{args.family} {cp.n_tasks} tasks, {len(cp.pred_idx)} edges on {args.cluster} ({cp.n_nodes} nodes)")

    def make() -> Scheduler:
        return make_scheduler("drl", service=True, policy=policy)  # as the service builds it

    simulate(cp, make())  # warm: numba kernels, caches
    t_plan, result = _median(lambda: simulate(cp, make(), validate=True), args.repeats)
    assert result.valid, result.violations[:3]
    done = [a for a in result.trace.attempts if a.outcome == "done"]
    assignments = [
        {"task": cp.task_ids[a.task], "node": cp.node_ids[a.node], "start": a.start, "finish": a.end, "evidence": {}}
        for a in done
    ]
    print(f"plan (drl, service sampling, validated): {t_plan:8.3f} s")

    def overview() -> dict[str, Any]:
        return explain_plan(cp, assignments, "drl", policy=policy, model_version="bench", replayer=make)

    t_over, out = _median(overview, args.repeats)
    assert out["policy"]["reproduced"], "the replay did not make the plan"
    print(f"overview (replay + every task's choice): {t_over:8.3f} s  ({t_over / t_plan:.2f} x plan)")

    target = min(out["tasks"], key=lambda t: t["policy"]["probability"])["task"]  # the least certain choice
    t = cp.task_ids.index(target)
    attribute(policy, cp, False, t, steps=2)  # warm: Captum's import
    t_ig, at = _median(lambda: attribute(policy, cp, False, t), args.repeats)

    def one_task() -> dict[str, Any]:
        return explain_plan(cp, assignments, "drl", policy=policy, task=target, model_version="bench", replayer=make)

    t_one, _ = _median(one_task, args.repeats)
    print(f"one task ({target}): Integrated Gradients: {t_ig:8.3f} s  ({at['steps']} steps, error {at['delta']:.1e})")
    print(f"one task explained, total:              {t_one:8.3f} s  ({t_one / t_plan:.2f} x plan)")

    # /v1/schedule alone and beside explanations, through the app in process
    from fastapi.testclient import TestClient

    from dagsched.service.app import create_app
    from dagsched.service.settings import Settings

    small = generate_workflow("etl_star", 50, seed=2)
    body = {
        "workflow": workflow_to_native(small),
        "nodes": [n.model_dump(exclude={"boot_delay", "labels"}) for n in cluster_preset("hetero-16").nodes],
        "scheduler": "drl",
    }
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(store_url=f"sqlite:///{Path(tmp) / 's.sqlite'}", model_dir=Path(tmp) / "m")
        with TestClient(create_app(settings)) as client:

            def schedule_times(n: int) -> list[float]:
                out = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    r = client.post("/v1/schedule", json=body)
                    out.append(time.perf_counter() - t0)
                    assert r.status_code == 200 and not r.json()["fallback"], r.text
                return out

            schedule_times(5)
            alone = schedule_times(args.requests)
            stop = threading.Event()
            explained = [0]

            def explain_loop() -> None:
                while not stop.is_set():
                    one_task()
                    explained[0] += 1

            worker = threading.Thread(target=explain_loop)
            worker.start()
            beside = schedule_times(args.requests)
            stop.set()
            worker.join()
    a, b = statistics.median(alone), statistics.median(beside)
    print(f"/v1/schedule (50 tasks, drl) p50: alone {1e3 * a:.1f} ms, beside explanations {1e3 * b:.1f} ms")
    print(f"  ({b / a:.2f} x; {explained[0]} explanations of the large plan ran meanwhile)")


if __name__ == "__main__":
    main()

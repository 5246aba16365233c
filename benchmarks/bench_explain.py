"""What explaining costs, beside what planning costs: a 1,000-task workflow on 100 nodes.

Figures, in one process, one torch thread, the shipped policy:
- plan: the drl scheduler plans the workflow (what /v1/schedule runs, less HTTP and the store);
- overview: every decision's alternatives and probabilities (a replay of the plan; `GET /v1/plans/{id}/explain`);
- one decision: the same replay keeping one decision whole, then Integrated Gradients (256 steps) and the GAT
  attention for it (`?task=`), split into its parts;
- /v1/schedule latency (a 50-task workflow, through the app in-process) alone, then while explanations of the
  1,000-task plan run in another thread: explanations are computed on request only, and the question is how
  much one running beside the planner slows it (they share the interpreter).
Prints medians; asserts nothing about time.

Run: .venv/bin/python benchmarks/bench_explain.py [--tasks 1000] [--nodes large-100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import torch

from dagsched.explain import policy as ep
from dagsched.explain.plan import explain_plan
from dagsched.generate import cluster_preset, generate_workflow
from dagsched.io.native import workflow_to_native
from dagsched.model import Problem, compile_problem
from dagsched.policy.files import load_cached_policy
from dagsched.schedulers.drl import DRLScheduler
from dagsched.sim.run import simulate


def _median(f, repeats: int) -> tuple[float, object]:
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
    args = ap.parse_args()
    torch.set_num_threads(1)
    policy = load_cached_policy()
    wf = generate_workflow(args.family, args.tasks, seed=1)
    cp = compile_problem(Problem(workflows=[wf], cluster=cluster_preset(args.cluster)))
    print(f"{args.family} {cp.n_tasks} tasks, {len(cp.pred_idx)} edges on {args.cluster} ({cp.n_nodes} nodes)")

    sched = DRLScheduler(policy=policy)
    simulate(cp, sched)  # warm: numba kernels, caches
    t_plan, result = _median(lambda: simulate(cp, DRLScheduler(policy=policy), validate=True), args.repeats)
    done = [a for a in result.trace.attempts if a.outcome == "done"]
    decisions = len(result.trace.decision_latency_s)
    print(f"plan (drl, validated):            {t_plan:8.3f} s  ({decisions} decision points)")

    t_replay, rep = _median(lambda: ep.replay(cp, policy), args.repeats)
    print(
        f"overview (replay, every pick):    {t_replay:8.3f} s  ({len(rep.picks)} picks; {t_replay / t_plan:.2f} x plan)"
    )

    target = min(rep.by_task, key=lambda t: rep.by_task[t].probability)  # a decision with alternatives
    t_keep, rep1 = _median(lambda: ep.replay(cp, policy, keep={target}), args.repeats)
    rec = rep1.recorded[target]
    ids = (list(cp.task_ids), list(cp.node_ids))
    t_ig, at = _median(lambda: ep.attribute(policy, rec, *ids), args.repeats)
    t_att, _ = _median(lambda: ep.attention(policy, rec.obs, target, ids[0]), args.repeats)
    print(f"one decision: replay keeping it:  {t_keep:8.3f} s")
    print(f"              Integrated Gradients: {t_ig:8.3f} s  ({at['steps']} steps, error {at['delta']:.1e})")
    print(f"              GAT attention:      {t_att:8.3f} s")
    per_decision_ms = 1e3 * t_plan / max(decisions, 1)
    total = t_keep + t_ig + t_att
    print(f"              total:              {total:8.3f} s  (a decision inside the plan: {per_decision_ms:.2f} ms)")

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
                    assert r.status_code == 200, r.text
                return out

            schedule_times(5)
            alone = schedule_times(40)
            stop = threading.Event()
            explained = [0]

            def explain_loop() -> None:
                assignments = [
                    {
                        "task": cp.task_ids[a.task],
                        "node": cp.node_ids[a.node],
                        "start": a.start,
                        "finish": a.end,
                        "evidence": {},
                    }
                    for a in done
                ]
                while not stop.is_set():
                    explain_plan(cp, assignments, "drl", policy=policy, task=cp.task_ids[target])
                    explained[0] += 1

            worker = threading.Thread(target=explain_loop)
            worker.start()
            beside = schedule_times(40)
            stop.set()
            worker.join()
    a, b = statistics.median(alone), statistics.median(beside)
    print(f"/v1/schedule (50 tasks, drl) p50: alone {1e3 * a:.1f} ms, beside explanations {1e3 * b:.1f} ms")
    print(f"  ({b / a:.2f} x; {explained[0]} explanations of the large plan ran meanwhile)")


if __name__ == "__main__":
    main()

"""Where 0.85 x the best online heuristic's mean completion sits against what no scheduler beats by much: each
workflow alone.

The goal asks drl for a mean workflow completion time of 0.85 x the best online heuristic's (`fair`) at load 0.85.
On the same held-out streams this bench prints, per stream, `fair`'s steady-state mean completion and two floors
over the same workflows (those `stream_metrics` counts):

- `alone`: each workflow run by itself on the idle cluster (submitted at 0, no other workflow) in the same `shared`
  mode (runtime noise, stragglers, failures), the mean over `--repeats` simulator seeds, by the better on that
  workflow of `--alone` (default HEFT, which plans ahead, and `fair`, the earliest-finish node at each decision,
  which adapts to the noise): what the workflow takes when it never waits for another. Not a bound (neither is
  optimal, and the runs draw their own noise and failures), the level a stream would match if sharing cost nothing;
- `critical path`: the longest path with every task on its fastest host, no data transfers, no noise
  (`model.graph.critical_path_fastest_s`): a bound below any run.

and the goal's 0.85 x fair over each. A goal below `alone` asks the loaded stream to finish its workflows faster than
each finishes on an empty cluster. Over all the stream's workflows (the pooled bound holds for the whole stream,
not for a subset of it) it also prints a lower bound on the mean completion that counts contention, on predicted
runtimes: the larger of the mean critical path and, per resource (cpu, memory, GPUs), the mean completion of
preemptive shortest-remaining-work-first on one server as fast as the whole cluster (a task holds `request x
runtime` at speed 1; a node serves `capacity x speed` of it per second). Any schedule of the cluster is a schedule
of that server with the same completions, and on one server SRPT minimises the total (Schrage 1968), so no
scheduler's mean is below it. Asserts nothing.

    .venv/bin/python benchmarks/experiments/shared_cluster_floors.py --workflows 80 --load 0.85 --arrival poisson \
        --seeds 105,106,107,108,109,110 [--repeats 3] [--alone heft,fair]
"""

from __future__ import annotations

import heapq
import time

import numpy as np
from held_out_streams import generated_streams, stream_arguments

from dagsched.bench.stats import bootstrap_ci
from dagsched.model import compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.model.entities import Problem
from dagsched.model.graph import critical_path_fastest_s
from dagsched.schedulers import make_scheduler
from dagsched.sim.config import SimConfig, mode_settings
from dagsched.sim.engine import Simulator
from dagsched.sim.metrics import DRAIN_FRACTION, WARMUP_FRACTION, steady_state, workflow_outcomes

GOAL = 0.85
"""The goal measured against: drl's mean completion <= GOAL x the best online heuristic's."""


def pooled_srpt_completion_s(submit_s: np.ndarray, work: np.ndarray, rate: float) -> np.ndarray:
    """Each job's completion (finish - submission) under preemptive shortest-remaining-work-first on one server
    doing `rate` work per second: the least total completion time any schedule of that server has."""
    finish = np.array(submit_s, dtype=np.float64)
    heap: list[tuple[float, int]] = []
    now = 0.0
    for j in np.argsort(submit_s, kind="stable").tolist():
        arrival = float(submit_s[j])
        while heap and now + heap[0][0] / rate <= arrival:  # finish the smallest ones before the next arrival
            left, k = heapq.heappop(heap)
            now += left / rate
            finish[k] = now
        if heap and now < arrival:  # the smallest one runs until the arrival
            left, k = heapq.heappop(heap)
            heapq.heappush(heap, (left - (arrival - now) * rate, k))
        now = max(now, arrival)
        if work[j] > 0:
            heapq.heappush(heap, (float(work[j]), j))
    while heap:
        left, k = heapq.heappop(heap)
        now += left / rate
        finish[k] = now
    return finish - submit_s


def contention_bound_s(cp: CompiledProblem) -> float:
    """max(mean critical path on the fastest hosts, max over resources of the pooled SRPT mean completion), over
    every workflow of the stream: no schedule's mean completion on predicted runtimes is below it."""
    bound = float(critical_path_fastest_s(cp).mean())
    for r in range(3):
        rate = float(cp.cap[:, r] @ cp.speed)
        work = np.bincount(cp.task_wf, cp.req[:, r] * cp.runtime_s, minlength=cp.n_workflows)
        if rate > 0:
            bound = max(bound, float(pooled_srpt_completion_s(cp.wf_submit_s, work, rate).mean()))
    return bound


def main() -> None:
    ap = stream_arguments(__doc__)
    ap.add_argument("--repeats", type=int, default=3, help="simulator seeds per workflow run alone")
    ap.add_argument("--alone", default="heft,fair", help="schedulers of the runs alone (the better one counts)")
    ap.add_argument("--scheduler", default="fair", help="the online heuristic the goal is measured against")
    args = ap.parse_args()
    config = SimConfig(**mode_settings("shared"))
    alone_ratio, path_ratio, bound_ratio = [], [], []
    for seed, stream in generated_streams(args):
        t0 = time.perf_counter()
        cp = compile_problem(stream.problem())
        sim, online = Simulator(cp, config, seed), make_scheduler(args.scheduler)
        online.reset(cp, sim.decision_point(), seed)
        out = workflow_outcomes(cp, sim.run(online))
        counted = steady_state(out.submit_s, WARMUP_FRACTION, DRAIN_FRACTION)
        loaded = float(out.completion_s[counted].mean())
        alone = []
        for w in counted:
            wf = stream.workflows[int(w)].model_copy(update={"submit_time": 0.0})
            one = compile_problem(Problem(name=wf.name, workflows=[wf], cluster=stream.cluster))
            means = []
            for name in args.alone.split(","):
                runs = []
                for r in range(args.repeats):
                    solo, scheduler = Simulator(one, config, 1000 * seed + r), make_scheduler(name)
                    scheduler.reset(one, solo.decision_point(), r)
                    runs.append(float(workflow_outcomes(one, solo.run(scheduler)).completion_s[0]))
                means.append(np.mean(runs))
            alone.append(min(means))
        alone_mean = float(np.mean(alone))
        path_mean = float(critical_path_fastest_s(cp)[counted].mean())
        alone_ratio.append(alone_mean / loaded)
        path_ratio.append(path_mean / loaded)
        loaded_all, bound = float(out.completion_s.mean()), contention_bound_s(cp)
        bound_ratio.append(bound / loaded_all)
        print(
            f"seed {seed}: {args.scheduler} {loaded:7.1f} s  goal {GOAL * loaded:7.1f} s  "
            f"alone {alone_mean:7.1f} s ({alone_mean / loaded:.3f} x)  "
            f"critical path {path_mean:7.1f} s ({path_mean / loaded:.3f} x)  {len(counted)} workflows; "
            f"all {cp.n_workflows}: {args.scheduler} {loaded_all:7.1f} s, bound {bound:7.1f} s "
            f"({bound / loaded_all:.3f} x)  {time.perf_counter() - t0:5.1f} s",
            flush=True,
        )
    print(f"\n{args.workflows} workflows, load {args.load}, {args.arrival}, seeds {args.seeds}: / {args.scheduler}")
    for name, ratios in (
        ("alone", alone_ratio),
        ("critical path", path_ratio),
        ("bound, all wf", bound_ratio),
    ):
        r = np.array(ratios)
        low, high = bootstrap_ci(r)
        print(f"  {name:14s} {r.mean():.3f} [{low:.3f}, {high:.3f}]  (the goal: {GOAL})")


if __name__ == "__main__":
    main()

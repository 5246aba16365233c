"""How low can a stream's mean completion go: each workflow alone on the empty cluster, and a bound that counts
contention, beside `srpt_hold`, `fair` and `fair_cap_local`; and how much of what sharing costs the stream goals
("mean completion <= 0.95 x srpt_hold", on the stage-structured family also "<= 0.85 x fair") ask to remove.

Each group is a cluster, an arrival process and a mix, as in `stream_levers.py` (seeds 401 and up by default: the
held-out streams). Each stream runs the three schedulers with the same simulator seed in the `shared` mode. Two
floors:

- `alone`: over the workflows `stream_metrics` counts (the steady state: the first `WARMUP_FRACTION` and last
  `DRAIN_FRACTION` of them by submission left out), each runs by itself on the empty cluster
  (`streams.alone_problem`) at its own submission time, with the stream's simulator seed (each node fails and
  straggles at the same instants as in the stream run) and the runtime noise its tasks drew in the stream (their
  first attempts' factors; a retry draws afresh), under `srpt_hold`, `heft` and `srpt_local`; the shortest of the
  three counts. Not a bound (no scheduler here is optimal alone), the level a stream would reach if sharing cost
  nothing. What lies between a scheduler's mean and alone's is its contention delay. (The noise matters: run alone
  with the seed's own draws, every workflow meets the same first factors, and on stage-structured jobs their mean
  moves by some 10 %.)
- `bound`: over all the stream's workflows (it holds for the whole stream, not a subset), on predicted runtimes, the
  larger of the mean critical path on the fastest hosts and, per resource (cpu, memory, GPUs), the mean completion of
  preemptive shortest-remaining-work-first on one server as fast as the whole cluster (a task holds `request x
  runtime` at speed 1; a node serves `capacity x speed` of it per second). Any schedule of the cluster is a schedule
  of that server with the same completions, and on one server SRPT minimises the total (Schrage 1968): no
  scheduler's mean is below it.

Per stream it prints each scheduler's steady-state mean completion, its ratio to alone and its contention delay, and
the bound against each scheduler's mean over all workflows. Per group, the mean over the streams [95 % bootstrap
interval] of each scheduler's ratio to alone and the bound's ratio to it, and the share of contention delay a goal
asks to remove: of `srpt_hold`, 0.05 x srpt_hold / (srpt_hold - alone); of `fair_cap_local`, (fair_cap_local - 0.95
x srpt_hold) / (fair_cap_local - alone) (negative: it is there already), and the same for 0.85 x fair. Each share
is also given on the group's means over the streams (its interval by resampling streams): a stream whose delay is
near 0 makes its own share huge, and the mean of the shares with it.

Prints; asserts nothing. `--workers` runs streams in parallel processes; the output order does not change.

    nice -n 19 .venv/bin/python benchmarks/experiments/shared_cluster_floors.py \
        --seeds 401,402,403,404,405,406,407,408,409,410 --workflows hetero-16=150,homog-8=100
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from held_out_streams import group_arguments, workflows_by_cluster

from dagsched.bench.stats import bootstrap_ci
from dagsched.generate import cluster_preset
from dagsched.generate.streams import alone_problem, generate_stream
from dagsched.model import compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.model.graph import critical_path_fastest_s
from dagsched.schedulers import make_scheduler
from dagsched.sim.config import SimConfig, mode_settings
from dagsched.sim.disruptions import Disruptions
from dagsched.sim.engine import Simulator
from dagsched.sim.metrics import DRAIN_FRACTION, WARMUP_FRACTION, WorkflowOutcomes, steady_state, workflow_outcomes

SCHEDULERS = ("srpt_hold", "fair", "fair_cap_local")
ALONE = ("srpt_hold", "heft", "srpt_local")
"""The schedulers of the runs alone: the shortest counts, per workflow."""
GOAL = 0.95
"""The goal measured against: mean completion <= GOAL x srpt_hold's."""
FAIR_GOAL = 0.85
"""The stage-structured family's second goal: mean completion <= FAIR_GOAL x fair's."""


@dataclass(frozen=True)
class Job:
    group: str
    seed: int
    workflows: int
    load: float


@dataclass(frozen=True)
class StreamResult:
    job: Job
    tasks: int
    counted: int
    mean: dict[str, float]
    """each scheduler's mean completion over the counted workflows"""
    mean_all: dict[str, float]
    """each scheduler's mean completion over all the stream's workflows"""
    bound: float
    """`contention_bound_s` of the stream"""
    alone: float
    """the mean alone completion of the same workflows"""
    shortest_by: dict[str, float]
    """per scheduler of ALONE, the share of the counted workflows whose alone run is shortest under it (ties: the
    first listed)"""
    wall_s: float


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


def run(
    cp: CompiledProblem, config: SimConfig, seed: int, name: str, noise: list[float] | None = None
) -> WorkflowOutcomes:
    """One run of `name`; `noise`: the tasks' first-attempt runtime factors instead of the seed's."""
    sim = Simulator(cp, config, seed)
    if noise is not None:
        sim.disruptions.first_noise = noise
    sched = make_scheduler(name)
    sched.reset(cp, sim.decision_point(), seed)
    return workflow_outcomes(cp, sim.run(sched))


def measure(job: Job) -> StreamResult:
    """One stream: the schedulers over its steady state, and each counted workflow alone."""
    t0 = time.perf_counter()
    cluster, arrival, mix = job.group.split(":")
    config = SimConfig(**mode_settings("shared"))
    stream = generate_stream(cluster_preset(cluster), job.workflows, job.load, arrival, seed=job.seed, mix=mix)
    cp = compile_problem(stream.problem())
    noise = Disruptions.draw(job.seed, config, cp.n_tasks, cp.n_nodes).first_noise  # what the stream runs draw
    mean: dict[str, float] = {}
    mean_all: dict[str, float] = {}
    counted = steady_state(cp.wf_submit_s, WARMUP_FRACTION, DRAIN_FRACTION)  # by submission: the same for every run
    for name in SCHEDULERS:
        out = run(cp, config, job.seed, name)
        mean[name] = float(out.completion_s[counted].mean())
        mean_all[name] = float(out.completion_s.mean())
    alone, shortest = [], [0] * len(ALONE)
    for w in counted.tolist():
        one = compile_problem(alone_problem(stream.workflows[w], stream.cluster))
        own = noise[int(cp.wf_task_ptr[w]) : int(cp.wf_task_ptr[w + 1])]  # its tasks, in the same order
        by = [float(run(one, config, job.seed, name, own).completion_s[0]) for name in ALONE]
        alone.append(min(by))
        shortest[int(np.argmin(by))] += 1
    return StreamResult(
        job=job,
        tasks=cp.n_tasks,
        counted=len(counted),
        mean=mean,
        mean_all=mean_all,
        bound=contention_bound_s(cp),
        alone=float(np.mean(alone)),
        shortest_by={name: k / len(counted) for name, k in zip(ALONE, shortest, strict=True)},
        wall_s=time.perf_counter() - t0,
    )


def results(jobs: list[Job], workers: int) -> Iterator[StreamResult]:
    """Each job's result, in the jobs' order."""
    if workers <= 1:
        yield from map(measure, jobs)
        return
    with ProcessPoolExecutor(workers) as pool:
        yield from pool.map(measure, jobs)


def interval(values: list[float]) -> str:
    x = np.array(values)
    low, high = bootstrap_ci(x)
    return f"{x.mean():.3f} [{low:.3f}, {high:.3f}]"


def hold_asks(hold: np.ndarray, alone: np.ndarray) -> float:
    """The share of srpt_hold's contention delay that a cut to GOAL x srpt_hold removes."""
    return float((1 - GOAL) * hold.mean() / (hold.mean() - alone.mean()))


def other_asks(other: np.ndarray, hold: np.ndarray, alone: np.ndarray, goal: float = GOAL) -> float:
    """The share of another scheduler's contention delay it must remove to reach `goal` x the baseline `hold`."""
    return float((other.mean() - goal * hold.mean()) / (other.mean() - alone.mean()))


def fair_asks(other: np.ndarray, fair: np.ndarray, alone: np.ndarray) -> float:
    """The share of another scheduler's contention delay it must remove to reach FAIR_GOAL x fair."""
    return other_asks(other, fair, alone, FAIR_GOAL)


def of_means(asks: Callable[..., float], *columns: np.ndarray) -> str:
    """`asks` on the means over the streams [95 % bootstrap interval, the streams resampled]."""
    low, high = bootstrap_ci(np.arange(len(columns[0])), lambda i: asks(*(c[i.astype(int)] for c in columns)))
    return f"{asks(*columns):.3f} [{low:.3f}, {high:.3f}]"


def summary(label: str, streams: list[StreamResult]) -> None:
    """Means over the streams [95 % CI] of each scheduler's ratio to alone, and of what the goal asks."""
    print(f"{label}: mean [95 % CI] over {len(streams)} streams")
    for name in SCHEDULERS:
        to_alone = interval([r.mean[name] / r.alone for r in streams])
        print(f"  {name:14s} / alone {to_alone}; bound / it {interval([r.bound / r.mean_all[name] for r in streams])}")
    hold = np.array([r.mean["srpt_hold"] for r in streams])
    fcl = np.array([r.mean["fair_cap_local"] for r in streams])
    fair = np.array([r.mean["fair"] for r in streams])
    alone = np.array([r.alone for r in streams])
    for goal, asks, columns in (
        (f"{GOAL} x srpt_hold asks of srpt_hold     ", hold_asks, (hold, alone)),
        (f"{GOAL} x srpt_hold asks of fair_cap_local", other_asks, (fcl, hold, alone)),
        (f"{FAIR_GOAL} x fair asks of fair_cap_local     ", fair_asks, (fcl, fair, alone)),
    ):
        per_stream = [asks(*row) for row in zip(*columns, strict=True)]
        print(f"  {goal} {interval(per_stream)} of its contention delay; of the means {of_means(asks, *columns)}")


def main() -> None:
    ap = group_arguments(__doc__)
    ap.add_argument("--workers", type=int, default=2, help="streams run at once, in separate processes")
    args = ap.parse_args()
    sizes = workflows_by_cluster(args)
    seeds = [int(s) for s in args.seeds.split(",")]
    groups = args.groups.split(",")
    jobs = [Job(g, seed, sizes[g.split(":")[0]], args.load) for g in groups for seed in seeds]
    by_group: dict[str, list[StreamResult]] = {g: [] for g in groups}
    every: list[StreamResult] = []
    for r in results(jobs, args.workers):
        g = r.job.group
        for name in SCHEDULERS:
            m = r.mean[name]
            print(
                f"{g} seed {r.job.seed} {name:14s} mean completion {m:8.1f} s  / alone {m / r.alone:.3f}  "
                f"contention delay {m - r.alone:8.1f} s;  all {r.mean_all[name]:8.1f} s, bound / it "
                f"{r.bound / r.mean_all[name]:.3f}",
                flush=True,
            )
        by = ", ".join(f"{name} {share:.0%}" for name, share in r.shortest_by.items())
        print(
            f"{g} seed {r.job.seed} {'alone':14s} mean completion {r.alone:8.1f} s  (shortest by {by})  "
            f"{r.counted} workflows counted, {r.tasks} tasks; bound {r.bound:8.1f} s  {r.wall_s:6.1f} s",
            flush=True,
        )
        by_group[g].append(r)
        every.append(r)
        if len(by_group[g]) == len(seeds):
            print()
            summary(f"{g}: {r.job.workflows} workflows, load {args.load}, seeds {args.seeds}", by_group[g])
            print()
    if len(groups) > 1:
        summary("every group", every)


if __name__ == "__main__":
    main()

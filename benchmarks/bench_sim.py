"""Simulator throughput, HEFT planning time and decision latency per scheduler.

Prints figures; asserts nothing about wall-clock time (the machine is shared).
Workload: a 1,000-task random layered DAG on the 100-node `large-100` cluster.
Run: .venv/bin/python benchmarks/bench_sim.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.schedulers import make_scheduler, registered_names
from dagsched.schedulers.base import Scheduler
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Decision, Simulator
from dagsched.sim.validate import validate_trace


class Replay(Scheduler):
    """Replays a finished run's assignments: measures the engine alone, not a policy."""

    name = "replay"

    def __init__(self, node_of: dict[int, int], start_of: dict[int, float]) -> None:
        super().__init__()
        self.node_of = node_of
        self.start_of = start_of

    def decide(self, sim: Simulator) -> Decision:
        out, taken = [], set()
        for t in sorted(sim.ready_tasks(), key=self.start_of.__getitem__):
            nd = self.node_of[t]
            if nd not in taken and sim.can_start(t, nd):
                out.append((t, nd))
                taken.add(nd)  # classic mode: one start per node per instant
        return Decision(out)


def _time(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=1000)
    args = parser.parse_args()
    wf = generate_workflow("random", args.tasks, seed=1)
    cp = compile_problem(Problem(workflows=[wf], cluster=cluster_preset("large-100")))
    print(f"workload: {cp.n_tasks} tasks, {len(cp.succ_idx)} edges, {cp.n_nodes} nodes; {args.repeats} repeats\n")

    classic = SimConfig(classic=True)
    sim = Simulator(cp, classic, 1)
    heft = make_scheduler("heft")
    heft.reset(cp, sim.decision_point(), 1)
    trace = sim.run(heft)
    assert validate_trace(cp, trace).ok
    node_of = {a.task: a.node for a in trace.attempts}
    start_of = {a.task: a.start for a in trace.attempts}

    engine_s: list[float] = []

    def engine_only() -> None:
        s = Simulator(cp, classic, 1)
        r = Replay(node_of, start_of)
        r.reset(cp, s.decision_point(), 1)
        t0 = time.perf_counter()
        tr = s.run(r)
        engine_s.append(time.perf_counter() - t0 - sum(tr.decision_latency_s))

    times = _time(engine_only, args.repeats)
    events = 2 * cp.n_tasks  # a start and a finish per task
    print("engine replaying HEFT's plan, classic mode (engine = run time minus time inside decide())")
    median, engine = statistics.median(times), statistics.median(engine_s)
    print(f"  whole run median {median * 1e3:8.1f} ms -> {events / median:10,.0f} task events/s")
    print(f"  engine    median {engine * 1e3:8.1f} ms -> {events / engine:10,.0f} task events/s")

    def plan_heft() -> None:
        h = make_scheduler("heft")
        s = Simulator(cp, classic, 1)
        h.reset(cp, s.decision_point(), 1)
        s.step()  # the arrival at t=0 makes the workflow visible
        h._replan(s.decision_point())  # the whole plan, as at the first decision

    times = _time(plan_heft, args.repeats)
    print(
        f"\nHEFT planning, {cp.n_tasks} tasks x {cp.n_nodes} nodes: median {statistics.median(times):.3f} s, "
        f"min {min(times):.3f} s"
    )

    print("\nwhole runs, cloud mode, noise CV 0.2 (one run each; latency per decision)")
    print(f"  {'scheduler':<14}{'run s':>9}{'decisions':>11}{'mean ms':>10}{'p99 ms':>10}{'makespan':>12}")
    for name in registered_names():
        s = Simulator(cp, SimConfig(noise_cv=0.2), 1)
        sched = make_scheduler(name)
        t0 = time.perf_counter()
        sched.reset(cp, s.decision_point(), 1)
        tr = s.run(sched)
        wall = time.perf_counter() - t0
        lat = sorted(tr.decision_latency_s)
        p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
        makespan = max(a.end for a in tr.attempts)
        print(
            f"  {name:<14}{wall:9.2f}{len(lat):11d}{statistics.mean(lat) * 1e3:10.2f}{p99 * 1e3:10.2f}{makespan:12.1f}"
        )


if __name__ == "__main__":
    main()

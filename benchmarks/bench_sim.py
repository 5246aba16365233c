"""Simulator throughput, HEFT planning time and decision latency per scheduler.

Prints figures; asserts nothing about wall-clock time (the machine is shared).
First, the engine alone on workflow streams (the shared suite's default mix on `large-100`, load
0.85, Poisson, cloud mode) of about 1k, 10k, 100k and 1M tasks, this tree's engine side by side with a
previous one (`--baseline`, a git revision checked out as a worktree and run in a child process through
PYTHONPATH): each task goes to the least-loaded node that fits it, nodes start their tasks in arrival and
topological order (`QueueReplay`, a look at each node's next task), and engine time = run time minus time in
decide(). A task event is a start or an end. The stream and placement are built once and shared.
The decision point computes its ready set on first read; the replay never reads it, as HEFT's dispatch does
not. The column `+ready` counts, as engine time too, the replay reading `dp.ready` at every decision (what a
scheduler that looks at the ready set pays the engine); the previous engine built it at every decision anyway.
The previous engine is run only up to `--baseline-max-tasks` (it slows down as the ready set grows).
Each size runs `--rounds` child processes per engine, alternated (new, old, new, old, ...), and reports the
medians: one run per engine at 100k and 1M had read 182k and 206k events/s for the same engine an hour apart.
Each timed run starts after `gc.collect()`, the collector left on: without it a 1M-task run paid, inside the
engine's time, full collections walking the millions of objects just unpickled (183k instead of 196k events/s
for the same engine); the engine still pays for the garbage it makes itself.
Then: a 1,000-task random layered DAG on `large-100` replaying HEFT's plan, HEFT's planning time, and
whole runs per scheduler.
`--whole-runs heft,fcfs,...` also runs those schedulers whole (engine and decisions) on a stream of
`--whole-run-tasks` tasks, this tree and the baseline alternated per round; `--streams-only` stops there.
Run: .venv/bin/python benchmarks/bench_sim.py [--repeats N] [--sizes 1000,10000,100000,1000000]
     [--baseline REV | --baseline none] [--baseline-max-tasks N] [--rounds N] [--whole-runs NAMES]
     [--whole-run-tasks N] [--streams-only]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.streams import generate_stream
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


TASKS_PER_WORKFLOW = 78.5
"""Mean tasks per workflow of the default stream mix (measured): sizes are asked for in tasks."""
BASELINE = "7078079"
"""The commit before the engine's speed-ups: the engine the side-by-side compares with."""


class QueueReplay(Scheduler):
    """Starts each node's tasks in a fixed order, each as soon as it can start.

    Each decision looks at the head of every node's queue (m lookups), never at the whole ready set: on a loaded
    stream thousands of tasks are ready, and a replay that walked them all at every decision would measure
    itself (and evict the engine's state from the caches), not the engine. Heads are taken in task order,
    which is the order a walk of the ascending ready set meets them in: the same starts, in the same order.
    """

    name = "queue_replay"

    def __init__(self, queues: list[list[int]], read_ready: bool = False) -> None:
        super().__init__()
        self.queues, self.head = queues, [0] * len(queues)
        self.waiting = set(range(len(queues)))  # nodes with tasks left to start
        self.read_ready, self.ready_s = read_ready, 0.0

    def decide(self, dp) -> Decision:
        if self.read_ready:  # what reading the ready set costs the engine
            t0 = time.perf_counter()
            _ = dp.ready
            self.ready_s += time.perf_counter() - t0
        out, free, wake = [], None, math.inf
        queues, head, status = self.queues, self.head, dp.status
        heads = sorted((queues[nd][head[nd]], nd) for nd in self.waiting if status[queues[nd][head[nd]]] == 1)
        for _, nd in heads:
            q = queues[nd]
            if free is None:
                free = dp.free.copy()
            while head[nd] < len(q):
                h = q[head[nd]]
                if dp.status[h] != 1:  # not ready
                    break
                if not dp.can_start(h, nd, free):
                    arrival = dp.data_ready_s(h, nd)
                    if arrival > dp.now:
                        wake = min(wake, arrival)
                    break
                free[nd] -= dp.request(h)
                out.append((h, nd))
                head[nd] += 1
            if head[nd] == len(q):
                self.waiting.discard(nd)
        return Decision(out, wake if math.isfinite(wake) else None)


def stream_workload(n_tasks: int) -> tuple[object, list[list[int]]]:
    """A stream of about n_tasks tasks on large-100 and its placement: least-loaded fitting node, per-node
    order by (submission, topological rank) so no node waits on a task queued behind it elsewhere."""
    n_wf = max(1, round(n_tasks / TASKS_PER_WORKFLOW))
    stream = generate_stream(cluster_preset("large-100"), n_wf, 0.85, "poisson", seed=1)
    cp = compile_problem(stream.problem())
    rank = np.empty(cp.n_tasks, dtype=np.int64)
    rank[cp.topo] = np.arange(cp.n_tasks)
    order = np.lexsort((rank, cp.wf_submit_s[cp.task_wf]))
    fits = np.all(cp.req[:, None, :] <= cp.cap[None, :, :] + 1e-9, axis=2)
    share = cp.exec_s * (cp.req[:, 0:1] / cp.cap[None, :, 0])  # core-seconds per core of the node
    load = np.zeros(cp.n_nodes)
    queues: list[list[int]] = [[] for _ in range(cp.n_nodes)]
    for t in order.tolist():
        nd = int(np.argmin(np.where(fits[t], load, np.inf)))
        load[nd] += share[t, nd]
        queues[nd].append(t)
    return cp, queues


def engine_events_per_s(workload: Path, repeats: int, read_ready: bool) -> dict[str, float]:
    """Median engine-only task events/s replaying the pickled workload (whatever engine is importable); with
    `read_ready` the replay reads the ready set at every decision and that read counts as engine time."""
    with workload.open("rb") as fh:
        cp, queues = pickle.load(fh)
    config = SimConfig(noise_cv=0.2)
    engine_s: list[float] = []
    events = 0
    for _ in range(repeats):
        sim = Simulator(cp, config, 1)
        replay = QueueReplay(queues, read_ready)
        replay.reset(cp, sim.decision_point(), 1)
        gc.collect()  # the set-up's garbage (the unpickled workload): not the engine's to pay for
        t0 = time.perf_counter()
        trace = sim.run(replay)
        engine_s.append(time.perf_counter() - t0 - sum(trace.decision_latency_s) + replay.ready_s)
        events = 2 * len(trace.attempts)
        del sim, trace
    engine = statistics.median(engine_s)
    return {"tasks": cp.n_tasks, "events": events, "engine_s": engine, "events_per_s": events / engine}


def _baseline_src(rev: str) -> Path:
    """A worktree of `rev` (made once, kept under the temp folder), its src/ for PYTHONPATH."""
    root = Path(tempfile.gettempdir()) / f"dagsched-engine-{rev}"
    if not root.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(root), rev], check=True, capture_output=True)
    return root / "src"


def _in_child(
    src: Path | None, workload: Path, repeats: int, read_ready: bool = False, whole_run: str | None = None
) -> dict[str, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    cmd = [sys.executable, __file__, "--engine-only", str(workload), "--repeats", str(repeats)]
    if read_ready:
        cmd.append("--read-ready")
    if whole_run:
        cmd += ["--whole-run", whole_run]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def engine_scaling(sizes: list[int], baseline: str | None, repeats: int, baseline_max_tasks: int, rounds: int) -> None:
    """Each size: `rounds` child runs per engine, alternated new, old, new, old, ... so the shared machine's drift
    falls on both alike; the medians over rounds, their ratio, and the range of the new engine's rounds."""
    src = _baseline_src(baseline) if baseline else None
    print("engine alone on streams (large-100, default mix, load 0.85, cloud mode), task events/s")
    print(f"median of {rounds} rounds per engine, alternated; '+ready': new engine, ready set read each decision")
    head = f"{'asked':>9}{'tasks':>9}{'events':>10}{'build s':>9}{'new s':>9}{'new events/s':>14}{'new range':>18}"
    head += f"{'+ready':>10}"
    if src:
        head += f"{'old s':>9}{'old events/s':>14}{'speed-up':>10}"
    print(head)
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            t0 = time.perf_counter()
            workload = Path(tmp) / f"stream-{size}.pkl"
            with workload.open("wb") as fh:
                pickle.dump(stream_workload(size), fh, protocol=pickle.HIGHEST_PROTOCOL)
            build = time.perf_counter() - t0
            # short runs are noisy: a 1k-task stream is replayed 10x as often as a 10k one
            reps = repeats * max(1, 10_000 // size) if size <= 100_000 else 1
            run_old = src is not None and size <= baseline_max_tasks
            news: list[dict[str, float]] = []
            olds: list[dict[str, float]] = []
            for _ in range(rounds):
                news.append(_in_child(None, workload, reps))
                if run_old:  # the old engine is slow on long streams: one run per round past 10k
                    olds.append(_in_child(src, workload, reps if size <= 10_000 else 1))
            ready = _in_child(None, workload, 1 if size > 10_000 else reps, read_ready=True)
            new_eps = statistics.median(r["events_per_s"] for r in news)
            lo, hi = min(r["events_per_s"] for r in news), max(r["events_per_s"] for r in news)
            row = f"{size:>9,}{news[0]['tasks']:>9,}{news[0]['events']:>10,}{build:>9.1f}"
            row += f"{statistics.median(r['engine_s'] for r in news):>9.2f}{new_eps:>14,.0f}"
            row += f"{f'{lo:,.0f}-{hi:,.0f}':>18}{ready['events_per_s']:>10,.0f}"
            if olds:
                old_eps = statistics.median(r["events_per_s"] for r in olds)
                row += f"{statistics.median(r['engine_s'] for r in olds):>9.2f}{old_eps:>14,.0f}"
                row += f"{new_eps / old_eps:>9.2f}x"
            print(row, flush=True)
    print()


def whole_run_s(workload: Path, name: str, repeats: int) -> dict[str, float]:
    """Median seconds of whole runs (engine and decisions) of scheduler `name` on the pickled stream (whatever
    engine is importable), and its decisions."""
    with workload.open("rb") as fh:
        cp, _ = pickle.load(fh)
    times: list[float] = []
    decisions = 0
    for _ in range(repeats):
        sim = Simulator(cp, SimConfig(noise_cv=0.2), 1)
        sched = make_scheduler(name)
        sched.reset(cp, sim.decision_point(), 1)
        gc.collect()
        t0 = time.perf_counter()
        trace = sim.run(sched)
        times.append(time.perf_counter() - t0)
        decisions = len(trace.decision_latency_s)
    return {"run_s": statistics.median(times), "decisions": decisions}


def whole_runs(names: list[str], size: int, baseline: str | None, repeats: int, rounds: int) -> None:
    """Whole runs (engine plus the schedulers' decisions, which read the state through the decision point) on a
    stream of about `size` tasks, this tree's engine and the baseline's alternated per round; medians over rounds
    and their ratio."""
    src = _baseline_src(baseline) if baseline else None
    print(f"whole runs on a stream of about {size:,} tasks (large-100, load 0.85, cloud mode), seconds per run")
    print(f"median of {rounds} rounds per engine, alternated, each the median of {repeats} runs")
    print(f"  {'scheduler':<14}{'decisions':>11}{'new s':>9}{'old s':>9}{'new/old':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        workload = Path(tmp) / f"stream-{size}.pkl"
        with workload.open("wb") as fh:
            pickle.dump(stream_workload(size), fh, protocol=pickle.HIGHEST_PROTOCOL)
        for name in names:
            news: list[dict[str, float]] = []
            olds: list[dict[str, float]] = []
            for _ in range(rounds):
                news.append(_in_child(None, workload, repeats, whole_run=name))
                if src is not None:
                    olds.append(_in_child(src, workload, repeats, whole_run=name))
            new = statistics.median(r["run_s"] for r in news)
            row = f"  {name:<14}{int(news[0]['decisions']):>11,}{new:>9.3f}"
            if olds:
                old = statistics.median(r["run_s"] for r in olds)
                row += f"{old:>9.3f}{new / old:>9.3f}"
            print(row, flush=True)
    print()


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
    parser.add_argument("--sizes", default="1000,10000,100000,1000000", help="stream sizes in tasks; '' skips")
    parser.add_argument("--baseline", default=BASELINE, help="git revision of the previous engine; 'none' skips")
    parser.add_argument("--baseline-max-tasks", type=int, default=100_000, help="largest stream the old engine runs")
    parser.add_argument("--rounds", type=int, default=3, help="child runs per engine and stream size, alternated")
    parser.add_argument("--engine-only", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--read-ready", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--whole-run", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--whole-runs", default="", help="schedulers run whole on a stream, side by side with the baseline"
    )
    parser.add_argument("--whole-run-tasks", type=int, default=2000, help="stream size of --whole-runs")
    parser.add_argument("--streams-only", action="store_true", help="stop after the side-by-side measurements")
    args = parser.parse_args()
    if args.engine_only is not None:  # the child process of `engine_scaling` and `whole_runs`
        if args.whole_run:
            print(json.dumps(whole_run_s(args.engine_only, args.whole_run, args.repeats)))
        else:
            print(json.dumps(engine_events_per_s(args.engine_only, args.repeats, args.read_ready)))
        return
    baseline = None if args.baseline == "none" else args.baseline
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
        engine_scaling(sizes, baseline, args.repeats, args.baseline_max_tasks, args.rounds)
    if args.whole_runs:
        whole_runs(args.whole_runs.split(","), args.whole_run_tasks, baseline, args.repeats, args.rounds)
    if args.streams_only:
        return
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

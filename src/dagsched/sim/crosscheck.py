"""Cross-check dagsched's timings against SimGrid on the same placement and order.

A trace fixes where each task ran (`Placement.node`) and in which order each node started its tasks
(`Placement.queues`). Both simulators then replay exactly that, each task as soon as its inputs are on
its node, its request fits and the task before it on the node has started: dagsched through
`OrderReplay` (a scheduler like any other, so the engine is what is checked), SimGrid through
`dagsched.sim.simgrid_replay` (hosts, links and actors; its own clock). `compare` then gives the largest
difference of any task's start and finish. docs/simulator.md reports the figures and explains each
difference in cloud mode.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import READY, Decision, DecisionPoint, Scheduler
from dagsched.sim.engine import Simulator
from dagsched.sim.trace import Trace


@dataclass(frozen=True)
class Placement:
    """Where each task ran and the order each node started its tasks in."""

    node: list[int]
    """node of each task"""
    queues: list[list[int]]
    """per node, its tasks by start time (ties by task index)"""


def placement_of(cp: CompiledProblem, trace: Trace) -> Placement:
    """The placement and per-node order of a trace whose tasks each ran once, to completion."""
    done = [a for a in trace.attempts if a.outcome == "done"]
    if len(done) != len(trace.attempts) or len(done) != cp.n_tasks:
        raise ValueError("a replay needs a trace in which every task ran exactly once (no failures, no migrations)")
    node = [-1] * cp.n_tasks
    queues: list[list[int]] = [[] for _ in range(cp.n_nodes)]
    for a in sorted(done, key=lambda a: (a.start, a.task)):
        node[a.task] = a.node
        queues[a.node].append(a.task)
    return Placement(node, queues)


class OrderReplay(Scheduler):
    """Starts each node's tasks in a fixed order, each as soon as it can start (work-conserving per node).

    Not a policy: the cross-check's way to make dagsched's engine replay a placement. Time complexity per
    decision: O(nodes + starts). Tie-break: none needed (the order is given).
    """

    name = "order-replay"
    uses_seed = False

    def __init__(self, placement: Placement) -> None:
        super().__init__()
        self.placement = placement
        self.head = [0] * len(placement.queues)

    def decide(self, dp: DecisionPoint) -> Decision:
        out: list[tuple[int, int]] = []
        free = dp.free.copy()
        wake = math.inf
        for nd, queue in enumerate(self.placement.queues):
            while self.head[nd] < len(queue):
                t = queue[self.head[nd]]
                if dp.status[t] != READY:
                    break
                if not dp.can_start(t, nd, free):
                    arrival = dp.data_ready_s(t, nd)
                    if arrival > dp.now:
                        wake = min(wake, arrival)
                    break
                free[nd] -= dp.request(t)
                out.append((t, nd))
                self.head[nd] += 1
        return Decision(out, wake if math.isfinite(wake) else None)


def replay_in_dagsched(cp: CompiledProblem, placement: Placement, config: SimConfig, seed: int = 0) -> Trace:
    """dagsched's engine replaying the placement (same seed: the same hidden noise per task)."""
    sim = Simulator(cp, config, seed)
    replay = OrderReplay(placement)
    replay.reset(cp, sim.decision_point(), seed)
    return sim.run(replay)


def simgrid_payload(
    cp: CompiledProblem, placement: Placement, trace: Trace, config: SimConfig, contention: bool = False
) -> dict[str, Any]:
    """What `simgrid_replay` needs of one problem (JSON-able); work per task is the trace's nominal seconds."""
    work = [0.0] * cp.n_tasks
    for a in trace.attempts:
        work[a.task] = a.nominal_s
    m = cp.n_nodes
    bandwidth = np.where(np.eye(m, dtype=bool), 0.0, cp.bandwidth)
    classic = config.classic
    node_pos = {nid: i for i, nid in enumerate(cp.node_ids)}
    links = cp.problem.cluster.links
    own = sorted({(min(node_pos[k.a], node_pos[k.b]), max(node_pos[k.a], node_pos[k.b])) for k in links})
    boot = cp.boot_delay_s if config.effective_boot_delay else np.zeros(m)
    return {
        "speed": cp.speed.tolist(),
        "cores": [1] * m if classic else [max(1, math.ceil(c)) for c in cp.cap[:, 0].tolist()],
        "cap": [[1.0, math.inf, math.inf]] * m if classic else cp.cap.tolist(),
        "boot_s": boot.tolist(),
        "bandwidth": bandwidth.tolist(),
        "node_bw": [n.bandwidth for n in cp.problem.cluster.nodes],
        "own_links": own,
        "latency_s": cp.latency_s,
        "contention": contention or config.network_contention,
        "fetch_on_place": config.network_contention and not classic,
        "node": placement.node,
        "queues": placement.queues,
        "work_s": work,
        "req": [[1.0, 0.0, 0.0]] * cp.n_tasks if classic else cp.req.tolist(),
        "release_s": cp.wf_submit_s[cp.task_wf].tolist(),
        "edges": [
            [int(cp.pred_idx[i]), t, float(cp.pred_data[i])]
            for t in range(cp.n_tasks)
            for i in range(int(cp.pred_ptr[t]), int(cp.pred_ptr[t + 1]))
        ],
    }


def run_simgrid(payloads: Sequence[dict[str, Any]], timeout_s: float = 600.0) -> list[dict[str, list[float]]]:
    """Run `simgrid_replay` on a batch in a fresh process (SimGrid's engine is one per process)."""
    proc = subprocess.run(
        [sys.executable, "-m", "dagsched.sim.simgrid_replay"],
        input=json.dumps(list(payloads)),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"SimGrid replay failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    result: list[dict[str, list[float]]] = json.loads(proc.stdout)
    return result


@dataclass(frozen=True)
class Comparison:
    """How far SimGrid's starts and finishes are from dagsched's on one problem."""

    n_tasks: int
    max_rel_finish: float
    """largest |dagsched - SimGrid| / max(|dagsched|, |SimGrid|) over task finishes (0 where both are 0)"""
    max_rel_start: float
    max_abs_finish_s: float
    makespan_dagsched_s: float
    makespan_simgrid_s: float

    @property
    def makespan_rel(self) -> float:
        return _rel(self.makespan_dagsched_s, self.makespan_simgrid_s)


def _rel(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale > 0 else 0.0


def compare(cp: CompiledProblem, trace: Trace, simgrid: dict[str, list[float]]) -> Comparison:
    """dagsched's trace against SimGrid's starts and finishes of the same tasks."""
    start = np.full(cp.n_tasks, np.nan)
    finish = np.full(cp.n_tasks, np.nan)
    for a in trace.attempts:
        start[a.task], finish[a.task] = a.start, a.end
    sg_start, sg_finish = np.asarray(simgrid["start"]), np.asarray(simgrid["finish"])
    if np.isnan(sg_finish).any():
        raise RuntimeError(f"SimGrid left {int(np.isnan(sg_finish).sum())} tasks unfinished")

    def rel(a: np.ndarray[Any, np.dtype[np.float64]], b: np.ndarray[Any, np.dtype[np.float64]]) -> float:
        scale = np.maximum(np.abs(a), np.abs(b))
        diff = np.abs(a - b)
        return float(np.max(np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), 0.0)))

    return Comparison(
        n_tasks=cp.n_tasks,
        max_rel_finish=rel(finish, sg_finish),
        max_rel_start=rel(start, sg_start),
        max_abs_finish_s=float(np.max(np.abs(finish - sg_finish))),
        makespan_dagsched_s=float(np.max(finish)),
        makespan_simgrid_s=float(np.max(sg_finish)),
    )


def cross_check(
    problems: Sequence[tuple[CompiledProblem, Trace]], config: SimConfig, seed: int = 0, contention: bool = False
) -> list[Comparison]:
    """Replay each (problem, trace) in dagsched and in SimGrid (one SimGrid process for the batch); compare."""
    replays, payloads = [], []
    for cp, trace in problems:
        placement = placement_of(cp, trace)
        replayed = replay_in_dagsched(cp, placement, config, seed)
        replays.append(replayed)
        payloads.append(simgrid_payload(cp, placement, replayed, config, contention))
    results = run_simgrid(payloads)
    return [compare(cp, tr, res) for (cp, _), tr, res in zip(problems, replays, results, strict=True)]

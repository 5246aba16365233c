"""Static list planners (HEFT, CPOP, PEFT): plan ahead, dispatch the plan, re-plan when reality deviates.

A subclass holds only its priority and node-selection rule in `plan_tasks`. This
base owns the rest, once: estimating when a task's inputs reach each node from
the live state and the plan so far, dispatching each node's tasks in planned order
as soon as they can start, and re-planning the unstarted tasks when a workflow
arrives, a planned node goes down, a task is migrated, or a task ends late by more
than `replan_slack` of its planned time (at most `max_replans` times per run).
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers.base import Scheduler
from dagsched.sim.engine import DONE, READY, RUNNING, WAITING, Decision, Simulator
from dagsched.sim.slots import NodeTimeline

_EPS = 1e-9


class PlanState:
    """Where and when every task runs or is planned to end, for data-arrival estimates."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.cp = sim.cp
        self.node = sim.node_of.copy()
        self.finish = sim.finish_s.copy()
        for t in sim.running:
            self.finish[t] = sim.predicted_end_s(t)

    def arrival_s(self, t: int) -> np.ndarray:
        """Estimated time t's inputs are on each node (parents done, running or planned)."""
        cp = self.cp
        at = np.full(cp.n_nodes, max(float(cp.wf_submit_s[cp.task_wf[t]]), self.sim.now))
        for k in range(cp.pred_ptr[t], cp.pred_ptr[t + 1]):
            p = cp.pred_idx[k]
            src = int(self.node[p])
            arrival = self.finish[p] + cp.pred_data[k] / cp.bandwidth[src] + cp.latency_s
            arrival[src] = self.finish[p]
            np.maximum(at, arrival, out=at)
        return at

    def place(self, t: int, nd: int, finish_s: float) -> None:
        self.node[t] = nd
        self.finish[t] = finish_s


def earliest_finish(
    sim: Simulator, lines: list[NodeTimeline], t: int, arrival: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Insertion-based (start, finish) of t on every node; inf where it cannot run or should not."""
    m = sim.cp.n_nodes
    start = np.full(m, np.inf)
    req = sim.request(t)
    for nd in range(m):
        line = lines[nd]
        cap = line.cap
        if req[0] > cap[0] or req[1] > cap[1] or req[2] > cap[2] or not np.isfinite(line.available_from):
            continue
        if sim.avoid_node[t] == nd and m > 1:
            continue
        start[nd] = line.earliest_start(float(arrival[nd]), float(sim.cp.exec_s[t, nd]), req)
    return start, start + sim.cp.exec_s[t]


class StaticPlanner(Scheduler):
    """Plan at reset, dispatch per node in planned order, re-plan the rest when needed."""

    replan_slack: float = 0.5
    max_replans: int = 20

    def reset(self, cp: CompiledProblem, sim: Simulator, seed: int = 0) -> None:
        super().reset(cp, sim, seed)
        self.node = np.full(cp.n_tasks, -1, dtype=np.int64)
        self.planned_start = np.full(cp.n_tasks, np.inf)
        self.planned_finish = np.full(cp.n_tasks, np.inf)
        self.queues: list[list[int]] = [[] for _ in range(cp.n_nodes)]
        self.planned_wf = np.zeros(cp.n_workflows, dtype=bool)
        self.watch: set[int] = set()
        self.replans = 0
        self.prepare(cp)

    def prepare(self, cp: CompiledProblem) -> None:
        """Per-problem precomputation (ranks); called once at reset."""

    @abstractmethod
    def plan_tasks(self, sim: Simulator, tasks: list[int], lines: list[NodeTimeline], state: PlanState) -> None:
        """Place every task of `tasks` (unstarted, parents placed or in `tasks`) with `self.assign`."""

    def assign(self, lines: list[NodeTimeline], state: PlanState, t: int, nd: int, start: float) -> None:
        """Record t on nd from `start`, reserving its slot."""
        finish = start + float(self.cp.exec_s[t, nd])
        lines[nd].reserve(start, finish, self._sim.request(t))
        state.place(t, nd, finish)
        self.node[t] = nd
        self.planned_start[t] = start
        self.planned_finish[t] = finish

    def _replan(self, sim: Simulator) -> None:
        self._sim = sim
        self.planned_wf = sim.submitted.copy()
        unstarted = (sim.status == WAITING) | (sim.status == READY)
        tasks = [int(t) for t in np.flatnonzero(unstarted & sim.submitted[sim.cp.task_wf])]
        self.node[tasks] = -1
        self.plan_tasks(sim, tasks, sim.node_timelines(), PlanState(sim))
        self.queues = [[] for _ in range(sim.cp.n_nodes)]
        for t in sorted(tasks, key=lambda t: (self.planned_start[t], t)):
            self.queues[int(self.node[t])].append(t)

    def _needs_replan(self, sim: Simulator) -> bool:
        if not np.array_equal(sim.submitted, self.planned_wf):
            return True
        late = False
        for t in list(self.watch):
            if sim.status[t] == DONE:
                self.watch.discard(t)
                planned = self.planned_finish[t] - self.planned_start[t]
                late = late or sim.finish_s[t] - self.planned_finish[t] > self.replan_slack * planned + 1e-6
            elif sim.status[t] == READY and sim.avoid_node[t] == self.node[t]:
                self.watch.discard(t)
                return True  # migrated off its planned node
        for nd, queue in enumerate(self.queues):
            if queue and not sim.node_up[nd]:
                return True
        return late and self.replans < self.max_replans

    def decide(self, sim: Simulator) -> Decision:
        if self._needs_replan(sim):
            if self.planned_wf.any():
                self.replans += 1
            self._replan(sim)
        free = sim.free.copy()
        assignments: list[tuple[int, int]] = []
        wake = np.inf
        for nd, queue in enumerate(self.queues):
            while queue and sim.status[queue[0]] in (RUNNING, DONE):
                queue.pop(0)
            for t in list(queue):
                if sim.status[t] != READY:
                    break
                req = sim.request(t)
                ok_now = sim.node_up[nd] and sim.node_available_s[nd] <= sim.now + _EPS
                fits = ok_now and all(free[nd, r] + _EPS >= req[r] for r in range(3))
                arrival = sim.data_ready_s(t, nd)
                if not fits or arrival > sim.now + _EPS:
                    if arrival > sim.now + _EPS:
                        wake = min(wake, arrival)
                    elif ok_now is False:
                        wake = min(wake, float(sim.node_available_s[nd]))
                    break
                free[nd] -= req
                assignments.append((t, nd))
                queue.remove(t)
                self.watch.add(t)
        return Decision(assignments, wake if np.isfinite(wake) else None)

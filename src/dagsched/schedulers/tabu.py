"""Tabu search over task-to-node assignments and priorities, starting from HEFT's plan.

What it does: plans with HEFT, then improves the plan by tabu search (Glover 1989; for DAG
scheduling e.g. Porto and Ribeiro 1995). A solution is a node per task and a priority order
(a topological order); it is evaluated by placing the tasks in that order on their nodes at
their earliest insertion slots over the live state's timelines, on predicted runtimes (the
schedule the static planners' dispatcher runs, exactly so in classic mode). Each iteration
draws `neighbours` moves (move one task to another node that can hold it; swap two adjacent
tasks of the order that are not parent and child), takes the best move that is not tabu (a
tabu move is allowed when it beats the best plan: aspiration), and forbids undoing it for
`tenure` iterations. The best plan found is dispatched by the StaticPlanner machinery, which
re-plans the rest (HEFT, then tabu with a quarter of the budget) when reality deviates.
Budget: `work` task placements per plan (deterministic); optional `time_s` wall-clock cap.
Complexity per evaluation: O(v (d + k)) with d the in-degree and k the planned uses per node.
Tie-breaks: equal makespans keep the earlier drawn move; moves are drawn from the seeded rng.
Never worse than its HEFT start on predicted runtimes: the start plan is the first incumbent.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dagsched.model.compiled import data_arrival_s
from dagsched.schedulers.base import register
from dagsched.schedulers.heft import HEFT
from dagsched.schedulers.static import PlanState
from dagsched.sim.decision import DecisionPoint
from dagsched.sim.slots import NodeTimeline

_EPS = 1e-9  # the simulator's tolerance in fits_now


def _clone(lines: list[NodeTimeline]) -> list[NodeTimeline]:
    return [line.copy() for line in lines]


@register
class Tabu(HEFT):
    name = "tabu"
    best_for = "small problems, near the optimum"

    work: float = 100_000.0
    """task placements per plan (a re-plan gets a quarter)"""
    time_s: float | None = None
    """optional wall-clock cap per plan (non-deterministic)"""
    neighbours: int = 16
    tenure: int = 7

    def plan_tasks(self, dp: DecisionPoint, tasks: list[int], lines: list[NodeTimeline], state: PlanState) -> None:
        base_lines = _clone(lines)
        base_node, base_finish = state.node.copy(), state.finish.copy()
        super().plan_tasks(dp, tasks, _clone(lines), PlanState(dp))  # HEFT's plan: the start
        order = self.in_rank_order(tasks)
        if len(order) < 2 or not all(math.isfinite(self.planned_start[t]) for t in order):
            self._commit(dp, lines, state, order, {t: int(self.node[t]) for t in order})
            return
        ev = _Evaluator(dp, base_lines, base_node, base_finish)
        assign = {t: int(self.node[t]) for t in order}
        hosts = {t: ev.hosts(t) for t in order}
        best_order, best_assign = list(order), dict(assign)
        best = current = ev.makespan(order, assign)
        budget = self.work / (1 if self.replans == 0 else 4)
        deadline = math.inf if self.time_s is None else time.perf_counter() + self.time_s
        tabu: dict[tuple[int, int, int], int] = {}
        it = 0
        rng = self.rng
        pos_of = {t: i for i, t in enumerate(order)}
        while budget > 0 and time.perf_counter() < deadline:
            it += 1
            chosen: tuple[float, tuple[int, int, int], list[int], dict[int, int]] | None = None
            for _ in range(self.neighbours):
                budget -= len(order)
                if rng.random() < 0.5:
                    t = order[int(rng.integers(len(order)))]
                    others = [n for n in hosts[t] if n != assign[t]]
                    if not others:
                        continue
                    nd = others[int(rng.integers(len(others)))]
                    move, undo = (0, t, nd), (0, t, assign[t])
                    cand_order, cand_assign = order, {**assign, t: nd}
                else:
                    i = int(rng.integers(len(order) - 1))
                    a, b = order[i], order[i + 1]
                    if ev.is_parent(a, b):
                        continue
                    move, undo = (1, min(a, b), max(a, b)), (1, min(a, b), max(a, b))
                    cand_order = order[:i] + [b, a] + order[i + 2 :]
                    cand_assign = assign
                value = ev.makespan(cand_order, cand_assign)
                if tabu.get(move, 0) > it and value >= best - 1e-9:
                    continue  # tabu, and no aspiration
                if chosen is None or value < chosen[0] - 1e-12:
                    chosen = (value, undo, cand_order, cand_assign)
            if chosen is None:
                continue
            current, undo, order, assign = chosen
            tabu[undo] = it + self.tenure
            if current < best - 1e-9:
                best, best_order, best_assign = current, list(order), dict(assign)
        del pos_of
        self.evaluations = getattr(self, "evaluations", 0) + ev.count
        self._commit(dp, lines, state, best_order, best_assign)

    def _commit(
        self, dp: DecisionPoint, lines: list[NodeTimeline], state: PlanState, order: list[int], assign: dict[int, int]
    ) -> None:
        """Place `order` on `assign` for real (the planner's timelines and plan state)."""
        for t in order:
            nd = assign[t]
            dur = float(self.cp.exec_s[t, nd])
            req = dp.request(t)
            cap = lines[nd].cap
            fits = all(req[r] <= cap[r] + _EPS for r in range(3)) and math.isfinite(lines[nd].available_from)
            start = lines[nd].earliest_start(float(state.arrival_s(t)[nd]), dur, req) if fits else math.inf
            self.assign(lines, state, t, nd, start)


class _Evaluator:
    """Makespan of (order, assignment) on predicted runtimes from the live state, in plain Python."""

    def __init__(self, dp: DecisionPoint, lines: list[NodeTimeline], node: np.ndarray, finish: np.ndarray) -> None:
        cp = dp.cp
        self.dp, self.lines = dp, lines
        self.node0, self.finish0 = node.tolist(), finish.tolist()
        ptr = cp.pred_ptr.tolist()
        idx, data = cp.pred_idx.tolist(), cp.pred_data.tolist()
        self.preds = [
            list(zip(idx[ptr[t] : ptr[t + 1]], data[ptr[t] : ptr[t + 1]], strict=True)) for t in range(cp.n_tasks)
        ]
        self.parent_sets = [set(idx[ptr[t] : ptr[t + 1]]) for t in range(cp.n_tasks)]
        self.bw = cp.bandwidth.tolist()
        self.lat = float(cp.latency_s)
        self.exec = cp.exec_s.tolist()
        self.ready0 = [max(float(cp.wf_submit_s[cp.task_wf[t]]), dp.now) for t in range(cp.n_tasks)]
        self.req = [dp.request(t) for t in range(cp.n_tasks)]
        self.done_max = max((f for f in self.finish0 if math.isfinite(f)), default=dp.now)
        self.t0 = float(cp.wf_submit_s.min())
        self.count = 0

    def hosts(self, t: int) -> list[int]:
        """Nodes that are up and can ever hold t (not the one it overran on, unless it is the only one)."""
        req = self.req[t]
        ok = [
            nd
            for nd, line in enumerate(self.lines)
            if math.isfinite(line.available_from) and all(req[r] <= line.cap[r] + _EPS for r in range(3))
        ]
        avoid = int(self.dp.avoid_node[t])
        return [n for n in ok if n != avoid] if avoid in ok and len(ok) > 1 else ok

    def is_parent(self, a: int, b: int) -> bool:
        return a in self.parent_sets[b]

    def makespan(self, order: list[int], assign: dict[int, int]) -> float:
        self.count += 1
        lines = _clone(self.lines)
        node, finish = list(self.node0), list(self.finish0)
        bw, lat, ex = self.bw, self.lat, self.exec
        worst = self.done_max
        for t in order:
            nd = assign[t]
            ready = self.ready0[t]
            for p, d in self.preds[t]:
                src = node[p]
                at = finish[p] if src == nd else data_arrival_s(finish[p], d, bw[src][nd], lat)
                if at > ready:
                    ready = at
            dur = ex[t][nd]
            start = lines[nd].earliest_start(ready, dur, self.req[t])
            lines[nd].reserve(start, start + dur, self.req[t])
            node[t], finish[t] = nd, start + dur
            if start + dur > worst:
                worst = start + dur
        return worst - self.t0

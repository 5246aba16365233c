"""Exact: the optimal classic-mode schedule of a small problem by branch and bound, as a planner.

Tasks are appended to their node's end in nondecreasing (start, topological position) order,
which enumerates every semi-active schedule exactly once (an optimal schedule is semi-active,
Baker 1974); a branch is cut when a lower bound (the current makespan; each unscheduled task's
earliest start plus its longest remaining path on its fastest node) reaches the incumbent (HEFT's
makespan by default). Exponential in the task count: meant for problems of about a dozen tasks,
as the yardstick of the heuristics' and the policy's gaps (`bench.budget.exact_gaps`) and as a
teacher. Not registered: no suite should run it on large problems.
Tie-breaks: moves in increasing (finish, start, task, node) order, so the first optimum found is kept.
Departures: classic mode only (one task per node at a time, exact runtimes), one submission time;
`ExactPlanner` falls back to HEFT's plan for anything else or past `max_tasks`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dagsched.model.compiled import CompiledProblem, data_arrival_s
from dagsched.schedulers.heft import HEFT
from dagsched.schedulers.static import PlanState
from dagsched.sim.decision import READY, WAITING, DecisionPoint
from dagsched.sim.slots import NodeTimeline


@dataclass(frozen=True)
class ExactResult:
    makespan: float
    order: list[int]
    """tasks in the order they are appended (nondecreasing start)"""
    node: list[int]
    """node of each task"""
    nodes_explored: int


def exact_makespan(cp: CompiledProblem, upper_bound: float = math.inf, max_nodes: int = 5_000_000) -> ExactResult:
    """The optimal classic-mode makespan of a small single-submission problem by branch and bound (at most
    `max_nodes` search nodes); `upper_bound` prunes from the start (a known schedule's makespan)."""
    n, m = cp.n_tasks, cp.n_nodes
    ex = cp.exec_s.tolist()
    bw = cp.bandwidth.tolist()
    lat = float(cp.latency_s)
    ptr, idx, data = cp.pred_ptr.tolist(), cp.pred_idx.tolist(), cp.pred_data.tolist()
    preds = [list(zip(idx[ptr[t] : ptr[t + 1]], data[ptr[t] : ptr[t + 1]], strict=True)) for t in range(n)]
    submit = [float(cp.wf_submit_s[cp.task_wf[t]]) for t in range(n)]
    t0 = float(cp.wf_submit_s.min())
    pos = [0] * n
    for i, t in enumerate(cp.topo.tolist()):
        pos[t] = i
    fastest = cp.exec_s.min(axis=1).tolist()
    tail = [0.0] * n  # longest path from t's start to an exit on fastest nodes, transfers free
    sptr, sidx = cp.succ_ptr.tolist(), cp.succ_idx.tolist()
    for t in reversed(cp.topo.tolist()):
        tail[t] = fastest[t] + max((tail[s] for s in sidx[sptr[t] : sptr[t + 1]]), default=0.0)
    best: list[Any] = [upper_bound + 1e-6, [], []]
    node = [-1] * n
    finish = [0.0] * n
    free = [0.0] * m
    left = [len(p) for p in preds]
    order: list[int] = []
    explored = [0]

    def data_ready(t: int, nd: int) -> float:
        r = submit[t]
        for p, d in preds[t]:
            at = finish[p] if node[p] == nd else data_arrival_s(finish[p], d, bw[node[p]][nd], lat)
            r = max(r, at)
        return r

    def rec(last: tuple[float, int], span: float) -> None:
        explored[0] += 1
        if explored[0] > max_nodes:
            raise RuntimeError(f"exact search exceeded {max_nodes} nodes; use a smaller problem")
        if len(order) == n:
            if span < best[0] - 1e-9:
                best[0], best[1], best[2] = span, list(order), list(node)
            return
        avail = [t for t in range(n) if node[t] < 0 and left[t] == 0]
        lb = span
        for t in avail:
            est = min(max(free[nd], data_ready(t, nd)) for nd in range(m))
            lb = max(lb, est - t0 + tail[t])
        if lb >= best[0] - 1e-9:
            return
        moves = []
        for t in avail:
            for nd in range(m):
                start = max(free[nd], data_ready(t, nd))
                if (start, pos[t]) < last:
                    continue  # not canonical: this schedule is enumerated in another order
                moves.append((start + ex[t][nd], start, t, nd))
        moves.sort()
        for end, start, t, nd in moves:
            if end - t0 >= best[0] - 1e-9:
                continue
            old = free[nd]
            node[t], finish[t], free[nd] = nd, end, end
            for s in sidx[sptr[t] : sptr[t + 1]]:
                left[s] -= 1
            order.append(t)
            rec((start, pos[t]), max(span, end - t0))
            order.pop()
            for s in sidx[sptr[t] : sptr[t + 1]]:
                left[s] += 1
            node[t], free[nd] = -1, old

    rec((-math.inf, -1), 0.0)
    if not best[1]:
        raise ValueError("no schedule beats the given upper bound")
    return ExactResult(float(best[0]), list(best[1]), list(best[2]), explored[0])


class ExactPlanner(HEFT):
    """Dispatches the exact optimum of a small classic problem (HEFT's plan where the optimum is out of reach)."""

    name = "exact"
    max_tasks: int = 12
    """largest problem planned exactly"""

    def plan_tasks(self, dp: DecisionPoint, tasks: list[int], lines: list[NodeTimeline], state: PlanState) -> None:
        cp = self.cp
        fresh = len(tasks) == cp.n_tasks and bool(np.all((dp.status == WAITING) | (dp.status == READY)))
        single = bool(np.all(cp.wf_submit_s == cp.wf_submit_s[0]))
        if not (dp.classic and fresh and single and cp.n_tasks <= self.max_tasks):
            super().plan_tasks(dp, tasks, lines, state)
            return
        heft_lines = [NodeTimeline(line.cap, line.available_from) for line in lines]
        super().plan_tasks(dp, tasks, heft_lines, PlanState(dp))  # HEFT's plan: the incumbent
        incumbent = float(np.max(self.planned_finish[tasks])) - float(cp.wf_submit_s.min())
        best = exact_makespan(cp, upper_bound=incumbent)
        node = np.full(cp.n_tasks, -1, dtype=np.int64)
        finish = np.zeros(cp.n_tasks)
        free = [float(line.available_from) for line in lines]
        for t in best.order:  # the optimum's starts: each task at its node's end or its inputs' arrival
            nd = int(best.node[t])
            start = max(free[nd], float(cp.input_arrival_s(t, node, finish, float(cp.wf_submit_s[0]))[nd]))
            node[t], finish[t] = nd, start + float(cp.exec_s[t, nd])
            free[nd] = finish[t]
            self.assign(lines, state, t, nd, start)

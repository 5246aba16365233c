"""HEFT with a one-step lookahead on the node: the rollout algorithm over HEFT (Bertsekas, Tsitsiklis and Wu 1997).

Tasks in HEFT's order (decreasing upward rank). Each tries the `candidates` nodes where it would finish
earliest (insertion policy, as HEFT), completes the plan from each with HEFT itself, and keeps the node
whose completed plan ends first. HEFT's own node is always a candidate, and completing from it
reproduces the HEFT plan that the previous step scored, so the planned makespan never rises from one
step to the next and never ends above HEFT's plan (a rollout's cost-improvement property); that holds
too once the budget is spent, since the task then takes HEFT's node. Ties keep the earlier-finishing node. The
bound is on the plan: in classic mode the run is the plan, in cloud mode runtimes differ from the estimates and the
dispatcher re-plans.

O(k v^2 p) against HEFT's O(v^2 p), so the lookahead stops once the completions of a run (its first plan
and any re-plans) have placed `max_placements` tasks (a budget that is deterministic, unlike a time
budget) and from there plans as HEFT.
"""

from __future__ import annotations

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers.base import register
from dagsched.schedulers.heft import HEFT
from dagsched.schedulers.static import PlanState, earliest_finish
from dagsched.sim.decision import DecisionPoint
from dagsched.sim.slots import NodeTimeline, Timelines


def nearest_nodes(finish: np.ndarray, k: int) -> np.ndarray:
    """The (at most) k nodes of earliest finite finish, earliest first, ties by lowest index (HEFT's first)."""
    order = np.argsort(finish, kind="stable")[:k]
    return np.asarray(order[np.isfinite(finish[order])])


def heft_completion_s(
    dp: DecisionPoint, lines: Timelines, state: PlanState, order: list[int], first_node: int, first_start: float
) -> float:
    """When the plan ends if order[0] goes on `first_node` from `first_start` and HEFT places the rest.

    Works on copies: `lines` and `state` are left as they were. The end counts every task placed in
    `state` before (running ones, and those planned earlier in this pass)."""
    lines, state = lines.copy(), state.copy()
    exec_s = dp.cp.exec_s
    for j, t in enumerate(order):
        if j == 0:
            nd, start = first_node, first_start
        else:
            starts, finishes = earliest_finish(dp, lines, t, state.arrival_s(t))
            nd = int(np.argmin(finishes))
            start = float(starts[nd])
        end = start + float(exec_s[t, nd])
        lines[nd].reserve(start, end, dp.request(t))
        state.place(t, nd, end)
    return state.end_s(0.0)


@register
class HEFTLookahead(HEFT):
    name = "heft_lookahead"
    best_for = "communication-dominated workflows, where a plan may take about a second"
    uses_seed = False
    candidates: int = 4
    """how many of a task's earliest-finish nodes it tries"""
    max_placements: int = 200_000
    """task placements the completions may make in a run (20-40 us each here); then plain HEFT"""

    def prepare(self, cp: CompiledProblem) -> None:
        super().prepare(cp)
        self.left = self.max_placements
        self.looked = self.choices = 0  # choices of two or more nodes; those the plan was completed for

    def looked_at(self, t: int, tried: np.ndarray, ends: list[float]) -> int:
        """The node t goes on once the plan was completed from each of `tried`: the first that ends earliest."""
        return int(tried[int(np.argmin(ends))])

    def plan_tasks(self, dp: DecisionPoint, tasks: list[int], lines: list[NodeTimeline], state: PlanState) -> None:
        timelines = lines if isinstance(lines, Timelines) else Timelines(lines)
        order = self.in_rank_order(tasks)
        for i, t in enumerate(order):
            start, finish = earliest_finish(dp, timelines, t, state.arrival_s(t))
            nodes = nearest_nodes(finish, self.candidates)
            nd = int(nodes[0]) if len(nodes) else int(np.argmin(finish))  # none: HEFT's unplaced case
            self.choices += len(nodes) > 1
            if len(nodes) > 1 and self.left >= len(nodes) * (len(order) - i):
                ends = [heft_completion_s(dp, timelines, state, order[i:], int(n), float(start[n])) for n in nodes]
                nd = self.looked_at(t, nodes, ends)
                self.left -= len(nodes) * (len(order) - i)
                self.looked += 1
            self.assign(timelines, state, t, nd, float(start[nd]))

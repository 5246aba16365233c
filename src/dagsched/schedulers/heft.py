"""HEFT: Heterogeneous Earliest Finish Time (Topcuoglu, Hariri and Wu, IEEE TPDS 2002).

Tasks in decreasing upward rank; each goes to the node giving it the earliest finish
time, inserted into the first idle slot long enough (insertion policy). O(v^2 p) in
the paper's analysis; here O(e p + v p k) with k the planned uses per node.
Tie-breaks: equal ranks by topological position, equal finish times by lowest node
index. Departures: in cloud mode a "slot" is a resource-aware earliest start (several
tasks share a node while their requests fit); c̄ averages transfer time over node
pairs rather than dividing by the mean bandwidth (the same when links are equal).
"""

from __future__ import annotations

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.model.ranks import rank_order, upward_rank
from dagsched.schedulers.base import register
from dagsched.schedulers.static import PlanState, StaticPlanner, earliest_finish
from dagsched.sim.decision import DecisionPoint
from dagsched.sim.slots import NodeTimeline


@register
class HEFT(StaticPlanner):
    name = "heft"
    best_for = "a reference: every single-workflow figure is a ratio to it, and the service falls back to it"
    uses_seed = False

    def prepare(self, cp: CompiledProblem) -> None:
        self.rank = upward_rank(cp)
        self.order = rank_order(self.rank, cp)
        self.order_pos = np.empty(cp.n_tasks, dtype=np.int64)
        self.order_pos[self.order] = np.arange(cp.n_tasks)

    def in_rank_order(self, tasks: list[int]) -> list[int]:
        """`tasks` by decreasing upward rank (their order in `self.order`), without walking the whole problem."""
        return sorted(tasks, key=self.order_pos.__getitem__)

    def plan_tasks(self, dp: DecisionPoint, tasks: list[int], lines: list[NodeTimeline], state: PlanState) -> None:
        if self.compiled:  # the rank order is topological, so a ready queue by rank takes it as it is
            self.plan_by_priority(dp, tasks, lines, state, self.rank)
            return
        for t in self.in_rank_order(tasks):
            start, finish = earliest_finish(dp, lines, t, state.arrival_s(t))
            nd = int(np.argmin(finish))
            self.assign(lines, state, t, nd, float(start[nd]))


@register
class HEFTKeep(HEFT):
    """HEFT on a shared cluster that plans each arriving workflow around the earlier ones' committed slots
    instead of re-planning them (`StaticPlanner.replan_on_arrival`)."""

    name = "heft_keep"
    best_for = "nothing; an ablation that measures what re-planning on arrival is worth (HEFT re-plans better)"
    replan_on_arrival = False

"""PEFT: Predict Earliest Finish Time (Arabnejad and Barbosa, IEEE TPDS 2014).

Builds the optimistic cost table OCT(t, n), the shortest path from t's end to an exit
task if t ran on n; tasks are taken from a queue of ready tasks by decreasing rank_oct
(the mean of t's OCT row) and each goes to the node minimising the optimistic EFT,
O_EFT(t, n) = EFT(t, n) + OCT(t, n), with the insertion policy. O(v^2 p) for the table
(here O(e p)) plus O(v log v + v p k) for placing, k the planned uses per node.
Tie-breaks: equal rank_oct by topological position, equal O_EFT by lowest node index.
Departures: in planning a task is ready once its parents are placed (on re-planning,
parents running or done count as placed); in cloud mode slots are resource-aware and
c̄ averages transfer time over node pairs, as in HEFT.
"""

from __future__ import annotations

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.model.ranks import optimistic_cost_table
from dagsched.schedulers.base import register
from dagsched.schedulers.static import PlanState, StaticPlanner, earliest_finish, ready_first
from dagsched.sim.decision import DecisionPoint
from dagsched.sim.slots import NodeTimeline


@register
class PEFT(StaticPlanner):
    name = "peft"
    best_for = "nothing alone; a textbook baseline and one of drl's candidate plans"
    uses_seed = False

    def prepare(self, cp: CompiledProblem) -> None:
        self.oct = optimistic_cost_table(cp)
        self.rank_oct = self.oct.mean(axis=1)

    def plan_tasks(self, dp: DecisionPoint, tasks: list[int], lines: list[NodeTimeline], state: PlanState) -> None:
        if self.compiled:
            self.plan_by_priority(dp, tasks, lines, state, self.rank_oct, node_bias=self.oct)
            return
        for t in ready_first(self.cp, tasks, self.rank_oct):
            start, finish = earliest_finish(dp, lines, t, state.arrival_s(t))
            nd = int(np.argmin(finish + self.oct[t]))
            self.assign(lines, state, t, nd, float(start[nd]))


@register
class PEFTKeep(PEFT):
    """PEFT planning each arriving workflow around the earlier ones' committed slots (`replan_on_arrival`)."""

    name = "peft_keep"
    best_for = "nothing; an ablation that measures what re-planning on arrival is worth (PEFT re-plans better)"
    replan_on_arrival = False

"""CPOP: Critical Path On a Processor (Topcuoglu, Hariri and Wu, IEEE TPDS 2002).

Priority rank_u + rank_d; the tasks of one critical path (priority equal to the entry
task's, within a relative tolerance of 1e-9) all go to the critical-path processor, the
node minimising the sum of their execution times; every other task goes to the node
giving it the earliest finish time (insertion policy). Tasks are taken from a queue of
ready tasks, highest priority first (in planning a task is ready once its parents are
placed; on re-planning, parents already running or done count as placed).
O(e p + v log v + v p k) with k the planned uses per node (the paper: O(v^2 p)).
Tie-breaks: equal priorities by topological position; the critical path follows the
lowest-index child of critical priority; equal sums or finish times by lowest node index.
Departures: with several workflows each has its own critical path and processor (the
paper has one DAG); a critical task its processor cannot take (too small, down, or the
node it was migrated off) goes by earliest finish time instead, as the paper leaves
that case open; in cloud mode slots are resource-aware, as in HEFT.
"""

from __future__ import annotations

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.model.ranks import downward_rank, upward_rank
from dagsched.schedulers.base import register
from dagsched.schedulers.static import PlanState, StaticPlanner, earliest_finish, ready_first
from dagsched.sim.decision import DecisionPoint
from dagsched.sim.slots import NodeTimeline

_REL_TOL = 1e-9


@register
class CPOP(StaticPlanner):
    name = "cpop"
    best_for = "communication-heavy workflows among the textbook heuristics; one of drl's candidate plans"
    uses_seed = False

    given_priority: np.ndarray | None = None
    """upward + downward rank when the caller has computed them already (drl does, for its network's inputs)"""

    def prepare(self, cp: CompiledProblem) -> None:
        given = self.given_priority
        self.priority = given if given is not None else upward_rank(cp) + downward_rank(cp)
        self.critical_path = [self._critical_path(cp, w) for w in range(cp.n_workflows)]
        self.cp_node: dict[int, int] = {}  # per workflow, chosen at its first plan
        self.on_path = {t: w for w, path in enumerate(self.critical_path) for t in path}

    def _critical_path(self, cp: CompiledProblem, w: int) -> list[int]:
        """Walk from the entry task of highest priority through children of the same priority."""
        lo, hi = int(cp.wf_task_ptr[w]), int(cp.wf_task_ptr[w + 1])
        entries = [t for t in range(lo, hi) if len(cp.preds(t)) == 0]
        t = max(entries, key=lambda e: (self.priority[e], -e))
        length = float(self.priority[t])
        path = [t]
        while True:
            on_path = [int(c) for c in cp.succs(t) if abs(self.priority[c] - length) <= _REL_TOL * max(length, 1.0)]
            if not on_path:
                return path
            t = min(on_path)
            path.append(t)

    def _processor(self, dp: DecisionPoint, w: int) -> int:
        """The node minimising the critical path's total execution time, among nodes that can hold its tasks and
        that placement rules allow for all of them."""
        if w not in self.cp_node:
            path = self.critical_path[w]
            total = self.cp.exec_s[path].sum(axis=0)
            for t in path:
                total[np.any(dp.cap < np.asarray(dp.request(t)), axis=1)] = np.inf
            if self.cp.allowed is not None:
                total[~self.cp.allowed[path].all(axis=0)] = np.inf
            self.cp_node[w] = int(np.argmin(total)) if np.isfinite(total).any() else -1
        return self.cp_node[w]

    def pinned_nodes(self, dp: DecisionPoint, tasks: list[int]) -> np.ndarray:
        """Each task's critical-path processor where it is on its workflow's critical path, else -1 (the
        compiled decoder's `pinned`)."""
        pinned = np.full(self.cp.n_tasks, -1, dtype=np.int64)
        for t in tasks:
            if t in self.on_path:
                pinned[t] = self._processor(dp, self.on_path[t])
        return pinned

    def plan_tasks(self, dp: DecisionPoint, tasks: list[int], lines: list[NodeTimeline], state: PlanState) -> None:
        on_path = self.on_path
        if self.compiled:
            self.plan_by_priority(dp, tasks, lines, state, self.priority, pinned=self.pinned_nodes(dp, tasks))
            return
        for t in ready_first(self.cp, tasks, self.priority):
            start, finish = earliest_finish(dp, lines, t, state.arrival_s(t))
            nd = self._processor(dp, on_path[t]) if t in on_path else -1
            if nd < 0 or not np.isfinite(finish[nd]):
                nd = int(np.argmin(finish))
            self.assign(lines, state, t, nd, float(start[nd]))


@register
class CPOPKeep(CPOP):
    """CPOP planning each arriving workflow around the earlier ones' committed slots (`replan_on_arrival`)."""

    name = "cpop_keep"
    best_for = "nothing; an ablation that measures what re-planning on arrival is worth (CPOP keeps better)"
    replan_on_arrival = False

"""FIFO by workflow: the oldest workflow's ready tasks first, in its own list order, each to the startable
node that finishes it first.

The default job scheduler of Hadoop and Spark (the FIFO baseline of Zaharia et al., "Delay
scheduling", EuroSys 2010, and of Decima, Mao et al., SIGCOMM 2019): jobs are served in arrival
order and a later job only gets what the earlier ones leave. Work-conserving: a task that cannot
start now is passed over, so the room it cannot use goes to the next one. O(r log r + r p) per
decision for r ready tasks and p nodes. Ties: submission time, then the workflow's position in the
problem, then the task's position in its workflow; equal finish times to the lowest node index.
Departure: Spark hands a task any free executor; here the node is speed-aware (earliest finish),
so that FIFO's order, not a blind placement, is what is measured (`fcfs` is the blind one).
"""

from __future__ import annotations

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers.base import register
from dagsched.schedulers.greedy import ListScheduler
from dagsched.sim.decision import DecisionPoint


@register
class FIFO(ListScheduler):
    name = "fifo"
    best_for = "nothing; a baseline of the literature on shared clusters (Decima's FIFO)"
    uses_seed = False

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        by_arrival = np.lexsort((np.arange(cp.n_workflows), cp.wf_submit_s))
        wf_rank = np.empty(cp.n_workflows, dtype=np.int64)
        wf_rank[by_arrival] = np.arange(cp.n_workflows)
        self.position = wf_rank[cp.task_wf] * cp.n_tasks + np.arange(cp.n_tasks)  # workflow first, then list order

    def order(self, ready: list[int]) -> list[int]:
        return sorted(ready, key=lambda t: int(self.position[t]))

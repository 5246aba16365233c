"""`srpt_hold` with a parallelism cap per workflow: the few shortest workflows share the cluster, heSRPT's way.

Each decision ranks the workflows with a task ready or running by work left (running tasks whole, as
`srpt_hold`) and gives rank r of m a share of the cluster, heSRPT's for a speed-up k^p (`levers.hesrpt_shares`):
with p = `SPEEDUP_P` = 0.5 and m = 2 the shorter gets 3/4, with m = 4 the four get 0.44, 0.31, 0.19 and 0.06. A
workflow's cap is its share of the up nodes' capacity (the dominant resource, as DRF counts it), at least one
task; a task of a workflow at its cap waits until every workflow below its cap has been served
(`levers.capped_order`), so no core stands idle that a capped task could use. The cap comes from the workflow's
work left (its rank) and the cluster's load (how many workflows compete); with one workflow open it is the whole
cluster. Order within and between workflows, node choice and the hold are `srpt_hold`'s.
Source: Decima (Mao et al., SIGCOMM 2019) decides each job's parallelism limit besides the next stage; heSRPT
(Berg, Vesilo and Harchol-Balter, 2019) gives the optimal shares when jobs gain less from each extra server.
Departure: the cap is a priority, not a limit (work-conserving); `SRPTCap(hard=True)` makes it a limit, as
Decima's and `fair_cap`'s, the ablation that tells the two apart (docs/shared-cluster.md).
Complexity: `srpt_hold`'s plus O(w log w) per decision for the ranks of w open workflows and O(running) for what
each holds. Ties: `srpt_hold`'s; equal work left ranks by workflow index.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers.base import register
from dagsched.schedulers.levers import capped_order, held_by_workflow, hesrpt_shares, one_over_cap, up_capacity
from dagsched.schedulers.srpt_hold import HOLD_MARGIN, SRPTHold
from dagsched.sim.decision import Decision, DecisionPoint

SPEEDUP_P = 0.5
"""heSRPT's speed-up exponent: a workflow on k times the room runs k^p times as fast (sublinear: its critical path
and its barriers limit it). Set, not tuned: the middle of heSRPT's range."""


@register
class SRPTCap(SRPTHold):
    name = "srpt_cap"
    best_for = (
        "nowhere yet: 0.98-1.04 x srpt_hold's mean completion on the measured groups; the parallelism cap as a "
        "priority, beside fair_cap's hard one"
    )

    def __init__(self, margin: float | None = HOLD_MARGIN, p: float = SPEEDUP_P, hard: bool = False) -> None:
        super().__init__(margin)
        hesrpt_shares(1, p)  # checks p
        self.p = p
        self.hard = hard
        """True: the cap is a limit (a workflow at its cap starts nothing more at this decision, room or not), the
        ablation that asks whether the cap helps by ordering or by keeping room free"""

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.held = np.zeros((cp.n_workflows, 3))
        self.cap_share = np.ones(cp.n_workflows)
        self.total = np.ones(3)

    def decide(self, dp: DecisionPoint) -> Decision:
        self.view = dp
        self.held = held_by_workflow(self.cp, dp)
        self.total = up_capacity(dp)
        task_wf = self.cp.task_wf
        open_wf = np.unique(np.concatenate([task_wf[dp.ready], task_wf[list(dp.running)]]).astype(np.int64))
        left = dp.work_left(self.work)[open_wf]
        ranked = open_wf[np.lexsort((open_wf, left))]
        self.cap_share = np.ones(self.cp.n_workflows)
        self.cap_share[ranked] = hesrpt_shares(len(ranked), self.p)
        return super().decide(dp)

    def assigned(self, t: int, nd: int) -> None:
        super().assigned(t, nd)
        self.held[int(self.cp.task_wf[t])] += self.view.request(t)

    def at_cap(self, t: int) -> bool:
        w = int(self.cp.task_wf[t])
        return one_over_cap(self.held[w], self.total, self.cap_share[w])

    def order(self, ready: list[int]) -> Iterator[int]:
        yield from capped_order(super().order(ready), self.at_cap, strict=self.hard)

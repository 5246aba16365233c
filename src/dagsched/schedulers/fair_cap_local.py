"""`fair_cap` placing as `srpt_local` does: the hand rule with the learned dispatcher's levers and node choice.

`fair_cap`'s order and hard parallelism cap (a workflow at `CAP_FACTOR` times its weighted fair share starts
nothing more), `srpt_hold`'s hold (a task waits for a clearly faster busy node; on nodes of one speed never) and
`srpt_local`'s node: the earliest-finish startable node, the tie broken by first fit over the nodes whose room the
ready tasks waiting on their inputs there do not need. It is `drl_stream_levers` with the learned order replaced by
fair sharing: the ablation that says what the learning adds over the levers themselves.
Source: `fair_cap` (Decima's tuned weighted fair), `srpt_local` (room beside the data).
Complexity: `fair_cap`'s plus `srpt_local`'s per decision. Ties: `fair`'s order, the lowest node index.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dagsched.schedulers.base import register
from dagsched.schedulers.fair_cap import WeightedFairCap
from dagsched.schedulers.srpt_local import SRPTLocal
from dagsched.sim.decision import DecisionPoint


@register
class FairCapLocal(WeightedFairCap, SRPTLocal):
    name = "fair_cap_local"
    best_for = "shared clusters under load: fair_cap's cap with room kept beside the data"

    def work_left(self, dp: DecisionPoint) -> npt.NDArray[np.float64]:
        """`srpt_hold`'s sizes, which only its order reads: fair's order weighs the workflows with a ready task by
        their own work left, so this skips summing every workflow's at each decision."""
        return self.left

    def assigned(self, t: int, nd: int) -> None:
        WeightedFairCap.assigned(self, t, nd)  # fair's share bookkeeping does not pass the call on
        SRPTLocal.assigned(self, t, nd)

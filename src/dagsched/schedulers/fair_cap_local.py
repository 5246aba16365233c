"""`fair_cap` placing as `srpt_local` does: the hand rule with the learned dispatcher's levers and node choice.

`fair_cap`'s order and hard parallelism cap (a workflow at `CAP_FACTOR` times its weighted fair share starts
nothing more), `srpt_hold`'s hold (a task waits for a clearly faster busy node; on nodes of one speed never) and
`srpt_local`'s node: the earliest-finish startable node, the tie broken by first fit over the nodes whose room the
ready tasks waiting on their inputs there do not need. It is `drl_stream_levers` with the learned order and cap
replaced by `fair_cap`'s and no admission hold: the ablation that says what the learning adds over the hand levers,
and the stream rule to use, since that is little. Held out (seeds 401-410, load 0.85), its mean completion is 0.850 and
0.736 x `srpt_hold`'s on homog-8 streams of 100 workflows (Poisson, bursty; level with `fair_cap`), 0.885 and 0.843
on streams of analytics jobs alone, 1.022 and 0.925 on hetero-16 streams of 150; `drl_stream_levers` is 1.082,
1.019, 1.005, 1.010, 0.965 and 0.990 x it on the same six groups, shorter by an interval excluding 1 only on
hetero-16 Poisson (docs/shared-cluster.md, "The hand rule with the same levers").
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
    best_for = (
        "shared clusters under load, the stream rule to use: 0.850 and 0.736 x srpt_hold's mean completion on held-out "
        "homog-8 streams (Poisson, bursty), 0.885 and 0.843 on analytics jobs alone, 0.925 on hetero-16 bursty; on "
        "nodes of several speeds with Poisson arrivals (1.022) drl_stream_levers is shorter"
    )
    ties = "response_ratio"

    def work_left(self, dp: DecisionPoint) -> npt.NDArray[np.float64]:
        """`srpt_hold`'s sizes, which only its order reads: fair's order weighs the workflows with a ready task by
        their own work left, so this skips summing every workflow's at each decision."""
        return self.left

    def assigned(self, t: int, nd: int) -> None:
        WeightedFairCap.assigned(self, t, nd)  # fair's share bookkeeping does not pass the call on
        SRPTLocal.assigned(self, t, nd)

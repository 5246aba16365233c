"""`fair_cap` placing as `srpt_local` does: the hand rule with the learned dispatcher's levers and node choice.

`fair_cap`'s order and hard parallelism cap (a workflow at `CAP_FACTOR` times its weighted fair share starts nothing
more), `srpt_hold`'s hold (a task waits for a clearly faster busy node; on nodes of one speed never) and `srpt_local`'s
node: the earliest-finish startable node, the tie broken by first fit over the nodes whose room the ready tasks waiting
on their inputs there do not need. Among the workflows holding nothing, whose fair key is 0 whatever their size, the one
with the least work left per second waited goes first (highest response ratio next; `fair` and `fair_cap` take the
earliest listed). It is `drl_stream_levers` with the learned order and cap replaced by these rules and no admission
hold: the ablation that says what the learning adds over the hand levers, which is nothing. `fair_cap_gpu_first` is this
rule with the GPUs served first, the stream rule to use. Held out (seeds 401-410, load 0.85), its mean completion is
0.986 and 0.897 x `srpt_hold`'s on hetero-16 streams of 150 workflows (Poisson, bursty), 0.851 and 0.740 on homog-8
streams of 100, 0.886 and 0.843 on streams of analytics jobs alone; `drl_stream_levers` is 0.996, 1.019, 1.081, 1.016,
1.003 and 1.011 x it on the same six groups, shorter by an interval excluding 1 on none (docs/shared-cluster.md, "The
hand rule with the same levers"). The response-ratio order was chosen on training streams (seeds 301-306): against the
earliest listed it took hetero-16 from 1.030 and 0.976 x `srpt_hold` to 1.007 and 0.890, and by work left alone a large
workflow waited to the end of a loaded bursty homog-8 stream (cost 1.165 x).
Source: `fair_cap` (Decima's tuned weighted fair), `srpt_local` (room beside the data), highest response ratio
next (Brinch Hansen, 1971) for the workflows queued with nothing running.
Complexity: `fair_cap`'s plus `srpt_local`'s per decision. Ties: equal response ratios by workflow position, the
lowest node index.
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
        "shared clusters under load (fair_cap_gpu_first, the same where no task needs a GPU, is shorter where GPUs "
        "bind): 0.986 and 0.897 x srpt_hold's mean completion on held-out "
        "hetero-16 streams (Poisson, bursty), 0.851 and 0.740 on homog-8, 0.886 and 0.843 on analytics jobs alone; "
        "the learned levers (drl_stream_levers) are no shorter on any of the six"
    )
    ties = "response_ratio"

    def work_left(self, dp: DecisionPoint) -> npt.NDArray[np.float64]:
        """`srpt_hold`'s sizes, which only its order reads: fair's order weighs the workflows with a ready task by
        their own work left, so this skips summing every workflow's at each decision."""
        return self.left

    def assigned(self, t: int, nd: int) -> None:
        WeightedFairCap.assigned(self, t, nd)  # fair's share bookkeeping does not pass the call on
        SRPTLocal.assigned(self, t, nd)

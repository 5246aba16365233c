"""The learned dispatch index with its parallelism cap and admission hold, placing as `srpt_local` does.

`drl_stream` loading `stream-index-v1-levers.safetensors` (`policy.stream_index.SHIPPED_LEVERS`): the same order
and hold heads, and per workflow with a ready task a learned cap (a hard limit at a factor of its weighted fair
share, as `fair_cap`'s) and, while none of its tasks has started, a learned admission hold (as `srpt_admit`'s); both
heads are still at the hand rules' values (factor 4, busy share 0.85, ratio 1). Its node is `srpt_local`'s choice
(first fit over the earliest-finish nodes whose room the tasks waiting on their inputs there do not need), not the
node head's: with the head, which spreads, the levers were 1.143 and 1.053 x `srpt_hold` on held-out streams of
analytics jobs; with `srpt_local`'s choice 0.889 and 0.851, and level on mixed streams (1.002 and 1.005 x the head's on
hetero-16, 0.995 on homog-8 bursty, 1.056 [0.978, 1.190] on homog-8 Poisson, shorter on 7 of 10; docs/shared-cluster.md,
"The levers beside the data"). The same levers and node rule as hand rules (`fair_cap_local`) are as short or shorter on
all six held-out groups (this one is 0.996 [0.989, 1.003] x the hand rule on hetero-16 with Poisson arrivals,
1.003-1.081 on the others): the learning adds nothing over the levers, so the hand rule (now with the GPUs served first,
`fair_cap_gpu_first`) is the stream rule to use and this one stays registered as the learned ablation ("The hand rule
with the same levers"). `drl_stream` with its default weights has no lever heads, so the two levers need this name to be
picked where schedulers are chosen by name (the benchmark, the CLI, the service).
Source, complexity and ties: `drl_stream`'s and `srpt_local`'s.
"""

from __future__ import annotations

from dagsched.policy.stream_index import SHIPPED_LEVERS
from dagsched.schedulers.base import register
from dagsched.schedulers.drl_stream import DRLStream
from dagsched.schedulers.srpt_local import SRPTLocal


@register
class DRLStreamLevers(DRLStream, SRPTLocal):
    name = "drl_stream_levers"
    best_for = (
        "none measured over fair_cap_local, the same levers and node rule by hand: 0.996 [0.989, 1.003] x its mean "
        "completion on held-out hetero-16 streams with Poisson arrivals, 1.003-1.081 on five other groups; kept as the "
        "learned ablation"
    )
    default_weights = SHIPPED_LEVERS

    def choose_node(self, t: int, startable: list[int]) -> int | None:
        """None when t waits for a clearly faster busy node (at t's learned margin), else `srpt_local`'s node."""
        self.use_learned_margin(t)
        return SRPTLocal.choose_node(self, t, startable)

"""`srpt_hold` that spreads: of the nodes that finish a task equally soon, the one left with the most cores free.

`srpt_hold`, like every list rule here, breaks a tie of finish times by the lowest node index: on nodes of one speed
it fills node 0, then node 1 (first fit). This rule keeps `srpt_hold`'s order, hold and earliest-finish choice and
breaks the tie the other way, by the share of the node's cores still free once the task is placed, the most first
(worst fit; Kubernetes' default node score, `LeastAllocated`, spreads the same way). A task starts only where its
inputs are: first fit keeps the lowest nodes full, so a task whose parent ran there waits for its inputs to reach
another node, while spreading leaves room beside the parent's output. On held-out streams of stage-structured
analytics jobs (homog-8, load 0.85, seeds 401-410) it is 0.901 and 0.935 x `srpt_hold`'s mean completion (Poisson,
bursty; shorter on all 20), and 0.966 and 0.961 x `drl_stream`'s, whose gain there is the same choice (its node
head prefers the node left freer; with one candidate node it is `srpt_hold`); with transfers free the gain is mostly
gone, and on mixed streams it is level with `srpt_hold` or longer (docs/shared-cluster.md, "Spreading"). It bills
8-9 % more there: more nodes hold a few tasks each.
Source: worst-fit placement (Johnson's bin-packing rules, 1974) as the tie-break of the earliest-finish node
choice; `srpt_hold` (docs/shared-cluster.md) for the rest.
Complexity: `srpt_hold`'s plus O(p) per task placed for its p startable nodes. Ties: equal shares by the lowest
node index.
"""

from __future__ import annotations

from dagsched.schedulers.base import register
from dagsched.schedulers.srpt_hold import SRPTHold
from dagsched.sim.decision import Decision, DecisionPoint


@register
class SRPTSpread(SRPTHold):
    name = "srpt_spread"
    best_for = (
        "streams of stage-structured analytics jobs: 0.901 and 0.935 x srpt_hold's mean completion on homog-8 "
        "(Poisson, bursty), the shortest measured there; level or longer on mixed streams"
    )

    def decide(self, dp: DecisionPoint) -> Decision:
        self.request = dp.request
        self.free_cores: list[float] = dp.free[:, 0].tolist()  # kept current as this decision places tasks
        self.cap_cores: list[float] = self.cp.cap[:, 0].tolist()
        return super().decide(dp)

    def assigned(self, t: int, nd: int) -> None:
        super().assigned(t, nd)
        self.free_cores[nd] -= self.request(t)[0]

    def choose_node(self, t: int, startable: list[int]) -> int | None:
        nd = super().choose_node(t, startable)
        if nd is None:
            return None
        exec_s = self.cp.exec_s[t].tolist()
        free, cap, cores = self.free_cores, self.cap_cores, self.request(t)[0]
        ties = [n for n in startable if exec_s[n] <= exec_s[nd]]
        return min(ties, key=lambda n: (-(free[n] - cores) / cap[n], n))

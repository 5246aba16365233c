"""Weighted fair sharing with a parallelism cap: Decima's tuned weighted fair baseline.

`fair`'s order (the workflow furthest below its weighted dominant share goes next, weight = work left^-2), and a
hard cap: a workflow whose dominant share of the up nodes has reached `CAP_FACTOR` times its weighted fair share
(its weight over the sum of the weights of the workflows with a ready task) starts nothing more at this decision,
even if room is left (`levers.capped_order`, strict; a workflow holding nothing is never at its cap, so nothing
stalls). Plain `fair` hands a workflow any room left after the others' turns; the cap keeps a long workflow from
filling the cluster when the short ones' tasks come ready a moment later. (A cap that only defers would change
nothing here: fair's order already serves the workflows by share over weight, the quantity the cap bounds.)
Source: Mao et al., "Learning Scheduling Algorithms for Data Processing Clusters" (Decima, SIGCOMM 2019), the
"optimally tuned weighted fair" baseline: each job's executor share is proportional to its remaining work to a
tuned power, and that share is its parallelism limit; DRF (Ghodsi et al., NSDI 2011) for several resources.
`CAP_FACTOR` was chosen among 1, 2 and 4 on training streams only (`benchmarks/experiments/stream_levers.py`, seeds
301-302, 30 workflows on hetero-16 and of analytics jobs on homog-8, `tune-fair-cap-301-302.txt` in
docs/results/stream-levers/): the looser the cap, the shorter; 4 is the loosest tried, and no factor tried was
shorter than `fair` on average.
Departure: the shares are dominant-resource shares of cpu, memory and GPUs, not executor counts.
Complexity: `fair`'s plus O(w) per decision for the w workflows' weights. Ties: `fair`'s.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dagsched.schedulers.base import register
from dagsched.schedulers.fair import WeightedFair
from dagsched.schedulers.levers import capped_order, one_over_cap, over_cap, up_capacity, weighted_fair_caps
from dagsched.sim.decision import Decision, DecisionPoint

CAP_FACTOR = 4.0
"""A workflow's cap is this many times its weighted fair share of the cluster's dominant resource."""


@register
class WeightedFairCap(WeightedFair):
    name = "fair_cap"
    best_for = (
        "homogeneous shared clusters under load: 0.851 and 0.736 x srpt_hold's mean completion on homog-8 streams of "
        "100 workflows (Poisson, bursty), a learned cap no shorter; Decima's tuned weighted-fair baseline; "
        "fair_cap_local, which also keeps room beside the data, is level there and shorter elsewhere"
    )

    def __init__(self, cap_factor: float = CAP_FACTOR) -> None:
        super().__init__()
        if not cap_factor > 0:
            raise ValueError(f"cap_factor must be positive, got {cap_factor!r}")
        self.cap_factor = cap_factor

    def decide(self, dp: DecisionPoint) -> Decision:
        self.cap_total = up_capacity(dp)
        ready_wf = np.unique(self.cp.task_wf[dp.ready]).astype(np.int64)
        self.cap_share = np.zeros(self.cp.n_workflows)
        self.cap_share[ready_wf] = weighted_fair_caps(dp.work_left_of(self.work, ready_wf), self.cap_factor, self.alpha)
        self.grown: set[int] = set()  # the workflows given a task since `order` last read what each holds
        return super().decide(dp)

    def at_cap(self, t: int) -> bool:
        """Only a workflow given a task in this decision can have reached its cap since `order` left out those at it."""
        w = int(self.cp.task_wf[t])
        return w in self.grown and one_over_cap(self.held[w], self.cap_total, self.cap_share[w])

    def assigned(self, t: int, nd: int) -> None:
        super().assigned(t, nd)
        self.grown.add(int(self.cp.task_wf[t]))

    def order(self, ready: list[int]) -> Iterator[int]:
        # a workflow at its cap now stays there for this decision (what it holds only grows): its tasks go at once
        capped = over_cap(self.held, self.cap_total, self.cap_share)
        task_wf = self.cp.task_wf
        open_now = [t for t in ready if not capped[task_wf[t]]]
        self.grown = set()  # what was placed before (a subclass serving some tasks first) is in `capped`
        yield from capped_order(super().order(open_now), self.at_cap, strict=True)

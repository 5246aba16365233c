"""Max-Min: map next the ready task whose best completion time is largest (Ibarra and Kim, JACM 1977).

As benchmarked by Braun et al. (JPDC 2001): each round computes every unmapped ready
task's minimum completion time over the nodes, maps the task with the largest one to
its best node (long tasks first, so short ones fill in around them), and repeats.
O(r^2 p) per decision for r ready tasks (plus the slot search). Tie-breaks: equal
completion times by lowest task index, then lowest node index. Departure: as Min-Min,
the batch is the set of tasks ready at each decision, with resource-aware slots.
"""

from __future__ import annotations

import numpy as np

from dagsched.schedulers.base import register
from dagsched.schedulers.greedy import BatchMapper


@register
class MaxMin(BatchMapper):
    name = "max_min"
    best_for = "the srasearch and bwa traces (the best of all there); a textbook batch-mode baseline"
    uses_seed = False

    def pick(self, best_ect: np.ndarray, candidates: list[int]) -> int:
        return int(np.argmax(best_ect))

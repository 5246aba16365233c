"""Min-Min: map next the ready task whose best completion time is smallest (Ibarra and Kim, JACM 1977).

As benchmarked by Braun et al. (JPDC 2001): each round computes every unmapped ready
task's minimum completion time over the nodes, maps the task with the smallest one to
its best node, updates that node's planned use, and repeats. O(r^2 p) per decision for
r ready tasks (plus the slot search). Tie-breaks: equal completion times by lowest task
index, then lowest node index. Departure: the papers map a static batch of independent
tasks; here each decision maps the tasks ready now (the dynamic batch mode of Maheswaran
et al. 1999), with resource-aware slots that honour data arrival.
"""

from __future__ import annotations

import numpy as np

from dagsched.schedulers.base import register
from dagsched.schedulers.greedy import BatchMapper


@register
class MinMin(BatchMapper):
    name = "min_min"
    best_for = "nothing; a textbook batch-mode baseline"
    uses_seed = False

    def pick(self, best_ect: np.ndarray, candidates: list[int]) -> int:
        return int(np.argmin(best_ect))

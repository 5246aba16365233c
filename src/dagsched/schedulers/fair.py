"""Weighted fair sharing: the workflow furthest below its weighted share of the cluster goes next.

Decima's strongest hand-tuned baseline (Mao et al., SIGCOMM 2019, section 7.2, "optimally tuned
weighted fair"): each job's share of the cluster is proportional to its remaining work raised to a
tuned power alpha (alpha = 0 is plain fair sharing, as Spark's and YARN's fair schedulers do;
alpha < 0 favours short jobs, alpha > 0 long ones). With several resources the share is the dominant
one (Dominant Resource Fairness, Ghodsi et al., NSDI 2011): a workflow's dominant share is the largest,
over cpu, memory and GPUs, of what its running tasks hold divided by the cluster's total. Each pick
serves the workflow with the smallest dominant share / weight, its ready task with the longest tail
(upward rank on the fastest hosts) first, on the startable node that finishes it first; the share
grows by what that task takes before the next pick.
`ALPHA` was tuned by `benchmarks/experiments/fair_alpha.py` on 8 streams no suite uses (100 workflows of the
default mix at load 0.85 on homog-8 and hetero-16, Poisson and bursty, seeds 101-102): geometric-mean
ratio of mean completion time to the best alpha on each stream 1.007 at alpha -2, 1.017 at -1, 1.020
at -0.5, 1.016 at 0, 1.041 at 0.5 and 1.055 at 1 (favouring short workflows helps, a little).
O(r log r + r p + w v) per decision for r ready tasks, p nodes and the v tasks of the w workflows
with a ready task (their remaining work). Ties: equal keys by workflow position (`ties`:
by work left per second waited in `fair_cap_local`), equal tails by task index,
equal finish times by the lowest node index.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from dagsched.model.compiled import CompiledProblem, task_work
from dagsched.schedulers.base import register
from dagsched.schedulers.greedy import ListScheduler
from dagsched.schedulers.levers import held_by_workflow
from dagsched.schedulers.progress import tail_path_s
from dagsched.sim.decision import Decision, DecisionPoint

ALPHA = -2.0
"""Share proportional to remaining work ** ALPHA."""
TIES = ("position", "work_left", "response_ratio")


@register
class WeightedFair(ListScheduler):
    name = "fair"
    best_for = "shared clusters among the classic online heuristics, at every load"
    uses_seed = False
    alpha: float = ALPHA
    ties: str = "position"
    """How workflows of equal key are ordered: `position` (the earliest listed first), `work_left` (the least first)
    or `response_ratio` (the least work left per second waited since arrival first). Every workflow holding nothing
    has the key 0 whatever its size, so under load this orders the queued ones; the response ratio serves the small
    first, as the key would, and a large one once it has waited long enough, as highest-response-ratio-next does (by
    work left alone, a large one can wait for ever on a loaded bursty stream)."""

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        if self.ties not in TIES:
            raise ValueError(f"ties must be one of {', '.join(TIES)}, got {self.ties!r}")
        super().reset(cp, dp, seed)
        self.work = task_work(cp)
        self.tail_s = tail_path_s(cp)
        self.total = np.maximum(dp.cap.sum(axis=0), 1e-12)
        self.held = np.zeros((cp.n_workflows, 3))
        self.weight: dict[int, float] = {}
        self._last: tuple[int, int] | None = None

    def decide(self, dp: DecisionPoint) -> Decision:
        self.dp = dp
        self.held = held_by_workflow(self.cp, dp)
        return super().decide(dp)

    def order(self, ready: list[int]) -> Iterator[int]:
        task_wf, tail = self.cp.task_wf, self.tail_s
        queues: dict[int, list[int]] = {}
        for t in sorted(ready, key=lambda t: (-float(tail[t]), t)):
            queues.setdefault(int(task_wf[t]), []).append(t)
        workflows = sorted(queues)
        left = self.dp.work_left_of(self.work, np.array(workflows, dtype=np.int64))
        weight = {w: max(float(x), 1e-9) ** self.alpha for w, x in zip(workflows, left, strict=True)}
        tie = dict.fromkeys(workflows, 0.0)
        if self.ties == "work_left":
            tie = dict(zip(workflows, left.tolist(), strict=True))
        elif self.ties == "response_ratio":
            waited = self.dp.now - self.cp.wf_submit_s[workflows]
            tie = {w: x / max(s, 1e-9) for w, x, s in zip(workflows, left.tolist(), waited.tolist(), strict=True)}
        heap = [(self._share(w) / weight[w], tie[w], w) for w in workflows]
        heapq.heapify(heap)
        while heap:
            _, _, w = heapq.heappop(heap)
            tasks = queues[w]
            while tasks:
                t = tasks.pop(0)
                self._last = None
                yield t
                if self._last is not None:  # placed: its share grew, it queues again behind the others
                    if tasks:
                        heapq.heappush(heap, (self._share(w) / weight[w], tie[w], w))
                    break
            # a task passed over cannot start later in this decision (room only shrinks): the next one of w tries

    def assigned(self, t: int, nd: int) -> None:
        self.held[int(self.cp.task_wf[t])] += self.dp.request(t)
        self._last = (t, nd)

    def _share(self, w: int) -> float:
        return float(np.max(self.held[w] / self.total))

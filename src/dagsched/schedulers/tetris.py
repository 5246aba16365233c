"""Tetris: multi-resource packing, the (task, node) pair with the best alignment plus remaining-work score first.

Grandl et al., "Multi-resource packing for cluster schedulers", SIGCOMM 2014. For every pair of a
ready task and a node that can start it now, the alignment score is the dot product of the task's
request and the node's free room, both as fractions of the node's capacity (cpu, memory, GPUs):
large when the task fills what the node has left, so fragmentation falls. To cut job completion
time it adds a shortest-remaining-time term p = -(remaining work of the task's workflow), weighted
eps = M x mean(alignment) / mean(|p|) over the candidates so that neither term drowns the other
(the paper's combination; M = 1 here). The best pair is placed, the node's room shrinks, and the
scores are taken again until no pair can start. A resource a node has none of adds nothing.
O(a k p) per decision for a placements, k ready tasks and p nodes. Ties: the first maximum, so
the lowest task index, then the lowest node index.
Departures: the paper's fairness knob (serve only the jobs furthest from their fair share) is off
(f = 0), and its remote-read penalty is replaced by the simulator's rule that a task starts only
where its inputs are: a pair whose inputs have not arrived is not a candidate yet. Node speed is
not scored, as in the paper.
"""

from __future__ import annotations

import numpy as np

from dagsched.model.compiled import CompiledProblem, task_work
from dagsched.schedulers.base import Scheduler, register
from dagsched.sim.decision import Decision, DecisionPoint

REMAINING_WORK_WEIGHT = 1.0
"""M: the remaining-work term's weight relative to the mean alignment score."""


@register
class Tetris(Scheduler):
    name = "tetris"
    best_for = "nothing; a baseline of the literature on shared clusters (multi-resource packing)"
    uses_seed = False

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.work = task_work(cp)
        cap = dp.cap
        self.inv_cap = np.where((cap > 0) & np.isfinite(cap), 1.0 / np.where(cap > 0, cap, 1.0), 0.0)  # (m, 3)

    def decide(self, dp: DecisionPoint) -> Decision:
        ready = np.asarray(dp.ready_tasks(), dtype=np.int64)
        free = dp.free.copy()
        ok, wake = dp.startable(ready, free)
        if not ok.any():
            return Decision([], wake if np.isfinite(wake) else None)
        req = dp.requests(ready)
        workflows = sorted({int(w) for w in self.cp.task_wf[ready]})
        left = dict(zip(workflows, dp.work_left(self.work)[workflows], strict=True))
        srtf = -np.array([left[int(w)] for w in self.cp.task_wf[ready]])
        norm_req = req[:, None, :] * self.inv_cap[None, :, :]  # (k, m, 3)
        assignments: list[tuple[int, int]] = []
        while ok.any():
            free_share = np.zeros_like(free)  # a resource the node has none of, or unlimited (classic), counts 0
            np.multiply(np.maximum(free, 0.0), self.inv_cap, out=free_share, where=self.inv_cap > 0)
            align = np.einsum("kmr,mr->km", norm_req, free_share)
            rows = ok.any(axis=1)
            mean_p = float(np.mean(np.abs(srtf[rows])))
            eps = REMAINING_WORK_WEIGHT * float(align[ok].mean()) / mean_p if mean_p > 0 else 0.0
            score = np.where(ok, align + eps * srtf[:, None], -np.inf)
            i, nd = np.unravel_index(int(np.argmax(score)), score.shape)
            assignments.append((int(ready[i]), int(nd)))
            free[nd] -= req[i]
            ok[i, :] = False
            ok[:, nd] &= np.all(free[nd] + 1e-9 >= req, axis=1)
        return Decision(assignments, wake if np.isfinite(wake) else None)

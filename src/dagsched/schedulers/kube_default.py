"""Kubernetes default: what kube-scheduler's default profile does with each pod, blind to the DAG.

Pods (ready tasks) leave the queue in PrioritySort order: higher `priority` first, then
FIFO (task index). Each is filtered to the nodes that are up and fit its request
(NodeResourcesFit's filter) and scored by the two default resource scorers, weight 1
each: NodeResourcesFit's LeastAllocated strategy, the mean over cpu and memory of
(capacity - requested) x 100 / capacity, and NodeResourcesBalancedAllocation,
(1 - std of the requested/capacity fractions) x 100, both counted with the pod placed.
The best total wins; ties go to the lowest node index. The pod is then bound to that
node, holding its request there (the scheduler cache's "assume") until its inputs have
arrived and it starts, as a pod waits in its init container for its data.
References: https://kubernetes.io/docs/concepts/scheduling-eviction/kube-scheduler/,
https://kubernetes.io/docs/reference/scheduling/config/#scheduling-plugins and the plugins
noderesources/least_allocated.go and balanced_allocation.go of kubernetes/kubernetes.
O(r p) per decision for r ready tasks and p nodes.
Departures: scores are real numbers (Kubernetes truncates each to an integer, which only
makes more ties); a resource a node has none of is left out of its scores, as upstream,
and an unlimited one (classic mode's memory) counts as a fraction 0; pods with no request
are not given the 100m cpu / 200 MiB scoring default; GPUs are filtered but not scored;
plugins with nothing to act on in this model (taints, affinity, topology spread, image
locality) are absent. It ignores speed, data locality and transfers: that is the point.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers.base import Scheduler, register
from dagsched.sim.decision import READY, Decision, DecisionPoint

_EPS = 1e-9
MAX_NODE_SCORE = 100.0


@register
class KubeDefault(Scheduler):
    name = "kube_default"
    best_for = "nothing; what a Kubernetes cluster does without dagsched, the shared report's reference"
    uses_seed = False

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.bound: dict[int, int] = {}  # pod -> node it is bound to, waiting for its inputs

    def decide(self, dp: DecisionPoint) -> Decision:
        for t, nd in list(self.bound.items()):
            if dp.status[t] != READY or not dp.node_up[nd]:
                del self.bound[t]  # started, or its node failed: back to the queue
        free = dp.free.copy()
        for t, nd in self.bound.items():
            free[nd] -= dp.request(t)
        assignments: list[tuple[int, int]] = []
        wake = np.inf
        queue = sorted(dp.ready_tasks(), key=lambda t: (-int(self.cp.priority[t]), t))
        # the filter for every unbound pod at once, kept current as pods are bound: on a loaded cluster most
        # pods fit nowhere, and they are passed over without scoring (schedule_one would find no node)
        unbound = np.asarray([t for t in queue if t not in self.bound], dtype=np.int64)
        row = {int(t): i for i, t in enumerate(unbound)}
        req = dp.requests(unbound)
        up = dp.node_up & (dp.node_available_s <= dp.now + _EPS)
        feasible = up[None, :] & np.all(free[None, :, :] + _EPS >= req[:, None, :], axis=2)
        any_feasible = feasible.any(axis=1).tolist()
        for t in queue:
            if t not in self.bound:
                if not any_feasible[row[t]]:
                    continue  # unschedulable for now; retried at the next event
                nd = self.schedule_one(dp, t, free)
                self.bound[t] = nd
                free[nd] -= dp.request(t)
                feasible[:, nd] &= np.all(free[nd] + _EPS >= req, axis=1)
                any_feasible = feasible.any(axis=1).tolist()
            nd = self.bound[t]
            arrival = dp.data_ready_s(t, nd)
            if arrival <= dp.now + _EPS and dp.node_available_s[nd] <= dp.now + _EPS:
                assignments.append((t, nd))
                del self.bound[t]
            elif arrival > dp.now + _EPS:
                wake = min(wake, arrival)
        return Decision(assignments, wake if np.isfinite(wake) else None)

    def schedule_one(self, dp: DecisionPoint, t: int, free: np.ndarray) -> int:
        """Filter then score: the node to bind pod t to, or -1 when none fits now."""
        req = np.asarray(dp.request(t))
        feasible = dp.node_up & (dp.node_available_s <= dp.now + _EPS) & np.all(free + _EPS >= req, axis=1)
        nodes = np.flatnonzero(feasible)
        caps = dp.cap[nodes, :2].tolist()
        after = (free[nodes, :2] - req[:2]).tolist()
        best, best_score = -1, -math.inf
        for nd, cap, left in zip(nodes.tolist(), caps, after, strict=True):
            score = self.score(cap, left)
            if score > best_score + _EPS:
                best, best_score = nd, score
        return best

    @staticmethod
    def score(cap: Sequence[float], free_after: Sequence[float]) -> float:
        """LeastAllocated + BalancedAllocation of a node with capacity `cap` and `free_after` left (cpu, mem).

        Plain float arithmetic in numpy's order (mean: sum / n; std: sqrt of the mean squared deviation), so
        the scores are numpy's to the bit at a fraction of the cost (a node is scored per pod and node).
        """
        least: list[float] = []
        fractions: list[float] = []
        for c, f in zip(cap, free_after, strict=True):
            if c <= 0:
                continue  # the node has none of it: upstream skips the resource
            used = 0.0 if math.isinf(c) else min(max((c - f) / c, 0.0), 1.0)
            least.append((1.0 - used) * MAX_NODE_SCORE)
            fractions.append(used)
        if not least:
            return 0.0
        n = len(fractions)
        mean_used = sum(fractions) / n
        std = math.sqrt(sum((u - mean_used) * (u - mean_used) for u in fractions) / n)
        balanced = (1.0 - std) * MAX_NODE_SCORE
        return sum(least) / n + balanced

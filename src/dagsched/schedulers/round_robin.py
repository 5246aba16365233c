"""Round robin: ready tasks in index order, each to the next node in a fixed cycle that can start it now.

The textbook load-spreading baseline (as in load balancers and the Hadoop/Kubernetes
literature's naive policies). The position in the cycle is kept across decisions: after
a task goes to node n, the search for the next task starts at n + 1. O(r p) per decision.
Tie-breaks: none arise; tasks by index, nodes by cycle order. DAG-, speed- and data-blind.
"""

from __future__ import annotations

from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers.base import register
from dagsched.schedulers.greedy import ListScheduler
from dagsched.sim.decision import DecisionPoint


@register
class RoundRobin(ListScheduler):
    name = "round_robin"
    best_for = "nothing; a floor for the online baselines"
    uses_seed = False

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.next_node = 0

    def order(self, ready: list[int]) -> list[int]:
        return ready

    def choose_node(self, t: int, startable: list[int]) -> int:
        m = self.cp.n_nodes
        nd = min(startable, key=lambda n: (n - self.next_node) % m)
        self.next_node = (nd + 1) % m
        return nd

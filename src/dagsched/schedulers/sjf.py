"""Shortest job first: ready tasks by predicted runtime, each to the startable node that finishes it first.

The classic queueing discipline (Conway, Maxwell and Miller, Theory of Scheduling,
1967) with a speed-aware node choice. A task's runtime is its predicted execution time
averaged over the nodes. O(r log r + r p) per decision for r ready tasks. Tie-breaks:
equal runtimes by lowest task index, equal finish times by lowest node index.
DAG-blind: it ignores ranks and transfers, and starts only what can start now.
"""

from __future__ import annotations

from dagsched.model.compiled import CompiledProblem
from dagsched.model.ranks import mean_exec_s
from dagsched.schedulers.base import register
from dagsched.schedulers.greedy import ListScheduler
from dagsched.sim.decision import DecisionPoint


@register
class SJF(ListScheduler):
    name = "sjf"
    best_for = "nothing; a baseline of the literature on shared clusters"
    uses_seed = False

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.mean_runtime_s = mean_exec_s(cp)

    def order(self, ready: list[int]) -> list[int]:
        return sorted(ready, key=lambda t: (float(self.mean_runtime_s[t]), t))

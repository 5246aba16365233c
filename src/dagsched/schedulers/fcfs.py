"""First come, first served: ready tasks in submission order, each to the first node that can start it.

Baseline of every batch system. O(ready x nodes) per decision. Ties: lowest task
index (submission order), then lowest node index. DAG-blind and speed-blind.
"""

from __future__ import annotations

from dagsched.schedulers.base import Scheduler, register
from dagsched.schedulers.greedy import ListScheduler


@register
class FCFS(ListScheduler):
    name = "fcfs"
    best_for = "nothing; a baseline of the literature on shared clusters (Spark/YARN FIFO)"
    uses_seed = False

    def order(self, ready: list[int]) -> list[int]:
        return ready

    def choose_node(self, t: int, startable: list[int]) -> int:
        return startable[0]


__all__ = ["FCFS", "Scheduler"]

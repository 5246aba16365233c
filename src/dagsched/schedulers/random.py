"""Random: ready tasks in random order, each to a random node that can start it now.

The floor every policy must clear. O(ready x nodes) per decision. Seeded by the run's seed.
"""

from __future__ import annotations

from dagsched.schedulers.base import register
from dagsched.schedulers.greedy import ListScheduler


@register
class RandomScheduler(ListScheduler):
    name = "random"
    best_for = "nothing; the floor every online scheduler is measured above"

    def order(self, ready: list[int]) -> list[int]:
        return [ready[i] for i in self.rng.permutation(len(ready))]

    def choose_node(self, t: int, startable: list[int]) -> int:
        return startable[int(self.rng.integers(len(startable)))]

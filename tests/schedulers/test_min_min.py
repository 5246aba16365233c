"""Min-Min on three independent tasks and two nodes of different speed."""

from __future__ import annotations

from dagsched.model import CompiledProblem
from dagsched.sim.config import SimConfig
from dagsched.sim.run import simulate

CLASSIC = SimConfig(classic=True)


def placements(cp: CompiledProblem, name: str) -> dict[str, tuple[str, float, float]]:
    result = simulate(cp, name, CLASSIC)
    assert result.valid, result.violations
    return {cp.task_ids[a.task]: (cp.node_ids[a.node], a.start, a.end) for a in result.trace.attempts}


def test_min_min_maps_the_quickest_task_first(two_speed_tasks: CompiledProblem) -> None:
    """Min-Min: best completion times a 1.5, b 2, c 5 (all on fast): a, then b (3.5 on fast < 4 on slow),
    then c (8.5 on fast < 10 on slow); everything queues on the fast node, makespan 8.5."""
    got = placements(two_speed_tasks, "min_min")
    assert got == {"a": ("fast", 0.0, 1.5), "b": ("fast", 1.5, 3.5), "c": ("fast", 3.5, 8.5)}

"""Max-Min on three independent tasks and two nodes of different speed."""

from __future__ import annotations

import pytest

from dagsched.model import CompiledProblem
from dagsched.sim.config import SimConfig
from dagsched.sim.run import simulate

CLASSIC = SimConfig(classic=True)


def placements(cp: CompiledProblem, name: str) -> dict[str, tuple[str, float, float]]:
    result = simulate(cp, name, CLASSIC)
    assert result.valid, result.violations
    return {cp.task_ids[a.task]: (cp.node_ids[a.node], a.start, a.end) for a in result.trace.attempts}


def test_max_min_maps_the_longest_task_first(two_speed_tasks: CompiledProblem) -> None:
    """Max-Min: c first (5 on fast), then b (best 4 on slow beats a's best 3 on slow), then a
    (6.5 on fast after c < 7 on slow after b); makespan 6.5, two units less than Min-Min here."""
    got = placements(two_speed_tasks, "max_min")
    assert got == {"c": ("fast", 0.0, 5.0), "b": ("slow", 0.0, 4.0), "a": ("fast", 5.0, 6.5)}
    assert max(end for _, _, end in got.values()) == pytest.approx(6.5)

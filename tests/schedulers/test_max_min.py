"""Max-Min: the textbook choice on three tasks, and exactly the frozen reference's decisions everywhere.

The reference (batch_reference.py) is BatchMapper before its re-search was batched; the batched
one must give the same trace, attempt for attempt, in classic and cloud mode, under failures and
migrations, on generated families and on small random problems.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.model import CompiledProblem
from dagsched.schedulers import simulate
from dagsched.sim.config import SimConfig

CLASSIC = SimConfig(classic=True)


def _load_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("batch_reference", Path(__file__).with_name("batch_reference.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load_reference()


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


@pytest.mark.parametrize(("family", "n_tasks", "cluster", "mode", "seed"), ref.GRID)
def test_max_min_decides_as_the_reference(family: str, n_tasks: int, cluster: str, mode: str, seed: int) -> None:
    """Same attempts (task, node, start, end, outcome) as the reference on generated problems, through
    both re-search paths; the failure and straggler modes really fail and migrate tasks."""
    trace = ref.assert_same_decisions(ref.grid_problem(family, n_tasks, cluster), "max_min", ref.MODES[mode], seed)
    outcomes = Counter(a.outcome for a in trace.attempts)
    assert outcomes["done"] == n_tasks
    if mode == "failures":
        assert outcomes["failed"] > 0
    if mode == "stragglers":
        assert outcomes["overrun"] > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=ref.small_problems(), seed=st.integers(0, 2**16))
def test_max_min_decides_as_the_reference_on_random_problems(
    case: tuple[CompiledProblem, SimConfig], seed: int
) -> None:
    """Same attempts as the reference on random small problems (shrunk to a minimal one on failure)."""
    cp, config = case
    ref.assert_same_decisions(cp, "max_min", config, seed)

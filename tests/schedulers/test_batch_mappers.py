"""Min-Min and Max-Min (one BatchMapper, two orders): the textbook choice on three tasks, and exactly the
frozen reference's decisions everywhere.

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
MAPPERS = ("min_min", "max_min")


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


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Min-Min: best completion times a 1.5, b 2, c 5 (all on fast): a, then b (3.5 on fast < 4 on slow),
        # then c (8.5 on fast < 10 on slow); everything queues on the fast node, makespan 8.5.
        ("min_min", {"a": ("fast", 0.0, 1.5), "b": ("fast", 1.5, 3.5), "c": ("fast", 3.5, 8.5)}),
        # Max-Min: c first (5 on fast), then b (best 4 on slow beats a's best 3 on slow), then a
        # (6.5 on fast after c < 7 on slow after b); makespan 6.5, two units less than Min-Min here.
        ("max_min", {"c": ("fast", 0.0, 5.0), "b": ("slow", 0.0, 4.0), "a": ("fast", 5.0, 6.5)}),
    ],
)
def test_the_textbook_choice_on_three_tasks(
    two_speed_tasks: CompiledProblem, name: str, expected: dict[str, tuple[str, float, float]]
) -> None:
    assert placements(two_speed_tasks, name) == expected


@pytest.mark.parametrize("name", MAPPERS)
@pytest.mark.parametrize(("family", "n_tasks", "cluster", "mode", "seed"), ref.GRID)
def test_decides_as_the_reference(name: str, family: str, n_tasks: int, cluster: str, mode: str, seed: int) -> None:
    """Same attempts (task, node, start, end, outcome) as the reference on generated problems, through
    both re-search paths; the failure and straggler modes really fail and migrate tasks."""
    trace = ref.assert_same_decisions(ref.grid_problem(family, n_tasks, cluster), name, ref.MODES[mode], seed)
    outcomes = Counter(a.outcome for a in trace.attempts)
    assert outcomes["done"] == n_tasks
    if mode == "failures":
        assert outcomes["failed"] > 0
    if mode == "stragglers":
        assert outcomes["overrun"] > 0


@pytest.mark.parametrize("name", MAPPERS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=ref.small_problems(), seed=st.integers(0, 2**16))
def test_decides_as_the_reference_on_random_problems(
    name: str, case: tuple[CompiledProblem, SimConfig], seed: int
) -> None:
    """Same attempts as the reference on random small problems (shrunk to a minimal one on failure)."""
    cp, config = case
    ref.assert_same_decisions(cp, name, config, seed)

"""The exact solver: its optimum on small problems, and the planner that dispatches it."""

from __future__ import annotations

import pytest

from dagsched.generate.small import small_problems
from dagsched.schedulers import simulate
from dagsched.schedulers.exact import ExactPlanner, exact_makespan
from dagsched.sim.config import MODES


@pytest.mark.parametrize("index", range(6))
def test_the_planner_runs_the_optimum_and_never_loses_to_heft(index: int) -> None:
    """On small classic problems the exact planner's simulated makespan is the branch and bound's optimum,
    and no worse than HEFT's."""
    cp = small_problems(6, seed=21, max_tasks=9)[index]
    classic = MODES["classic"]
    heft = simulate(cp, "heft", classic).metrics.makespan
    optimum = exact_makespan(cp, upper_bound=heft).makespan
    result = simulate(cp, ExactPlanner(), classic)
    assert result.valid, result.violations
    assert result.metrics.makespan == pytest.approx(optimum, abs=1e-9)
    assert optimum <= heft + 1e-9


def test_the_paper_example_optimum(heft_example) -> None:
    """HEFT's textbook example: HEFT gives 80; the exact planner gives the optimum, below it."""
    result = simulate(heft_example, ExactPlanner(), MODES["classic"])
    assert result.valid and result.metrics.makespan < 80.0 - 1e-9
    assert result.metrics.makespan == pytest.approx(exact_makespan(heft_example, upper_bound=80.0).makespan)

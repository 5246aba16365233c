"""heft_lookahead, HEFT's rollout over the node choice.

The rollout's promise is that it never ends a workflow later than HEFT in classic mode (exact runtimes),
because HEFT's node is always a candidate and completing from it reproduces the plan last scored.
Checked on random single workflows.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.clusters import random_cluster
from dagsched.model import CompiledProblem, Problem, compile_problem
from dagsched.schedulers import simulate
from dagsched.schedulers.heft_lookahead import HEFTLookahead
from dagsched.sim.config import SimConfig

from .test_all_schedulers import problems

CLASSIC = SimConfig(classic=True)


def _one_workflow(case: tuple[CompiledProblem, SimConfig]) -> bool:
    """One workflow, classic mode: the run is the plan (zero-length tasks included: their instants are held in
    the planning timelines, so no plan puts a longer task across one), and the rollout bounds the plan."""
    cp, config = case
    return cp.n_workflows == 1 and config.classic


@st.composite
def generated(draw: st.DrawFn) -> CompiledProblem:
    """A workflow of a topology family, 8-60 tasks, CCR 0.1-10, on a random heterogeneous cluster."""
    family = draw(st.sampled_from(["layered", "random", "etl_star"]))
    wf = generate_workflow(
        family, draw(st.integers(8, 60)), draw(st.integers(0, 10**6)), ccr=draw(st.sampled_from([0.1, 1.0, 5.0, 10.0]))
    )
    cluster = random_cluster(draw(st.integers(2, 10)), draw(st.integers(0, 10**6)), heterogeneity=0.9)
    return compile_problem(Problem(workflows=[wf], cluster=cluster))


def makespan(cp: CompiledProblem, scheduler: object) -> float:
    result = simulate(cp, scheduler, CLASSIC, 0)  # type: ignore[arg-type]
    assert result.valid, result.violations[:5]
    return result.metrics.makespan


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=problems().filter(_one_workflow))
def test_lookahead_never_ends_after_heft_on_small_random_problems(case: tuple[CompiledProblem, SimConfig]) -> None:
    """Zero-length tasks, per-node costs, resource requests and slow links included."""
    cp, _ = case
    heft = makespan(cp, "heft")
    assert makespan(cp, HEFTLookahead()) <= heft * (1 + 1e-9) + 1e-9


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cp=generated())
def test_lookahead_never_ends_after_heft_on_generated_workflows(cp: CompiledProblem) -> None:
    heft = makespan(cp, "heft")
    assert makespan(cp, HEFTLookahead()) <= heft * (1 + 1e-9)


class _Recording(HEFTLookahead):
    """Keeps the best completed end of every looked-at choice, in planning order."""

    def prepare(self, cp: CompiledProblem) -> None:
        super().prepare(cp)
        self.best_ends: list[float] = []

    def looked_at(self, t: int, tried: np.ndarray, ends: list[float]) -> int:
        self.best_ends.append(min(ends))
        return super().looked_at(t, tried, ends)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cp=generated())
def test_the_completed_plan_never_gets_longer_from_one_choice_to_the_next(cp: CompiledProblem) -> None:
    """The rollout's cost-improvement property, step by step; the run ends where the last plan scored said."""
    planner = _Recording()
    end = makespan(cp, planner)
    ends = planner.best_ends
    assert all(b <= a * (1 + 1e-12) for a, b in zip(ends, ends[1:], strict=False))
    if ends:
        assert end == pytest.approx(ends[-1], rel=1e-9)


def _etl(ccr: float, n: int = 40, seed: int = 3) -> CompiledProblem:
    wf = generate_workflow("etl_star", n, seed, ccr=ccr)
    return compile_problem(Problem(workflows=[wf], cluster=cluster_preset("hetero-16")))


def test_without_budget_the_lookahead_is_heft() -> None:
    cp = _etl(5.0)
    planner = HEFTLookahead()
    planner.max_placements = 0
    result = simulate(cp, planner, CLASSIC, 0)
    assert result.trace.attempts == simulate(cp, "heft", CLASSIC, 0).trace.attempts
    assert planner.looked == 0 and planner.choices > 0


def test_the_lookahead_beats_heft_somewhere_it_is_expected_to() -> None:
    """Communication-heavy stars on a heterogeneous cluster: HEFT's greedy node costs transfers later."""
    ratios = [
        makespan(_etl(5.0, 40, seed), HEFTLookahead()) / makespan(_etl(5.0, 40, seed), "heft") for seed in (1, 2, 3)
    ]
    assert max(ratios) <= 1.0 and min(ratios) < 0.99

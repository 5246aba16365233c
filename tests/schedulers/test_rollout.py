"""Rollout over base heuristics: never worse than the best base on predicted runtimes, and better somewhere."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.small import small_problems
from dagsched.model import Problem, compile_problem
from dagsched.schedulers import simulate
from dagsched.schedulers.exact import exact_makespan
from dagsched.schedulers.rollout import BASES, Rollout, complete_from_here
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator

CLASSIC = SimConfig(classic=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), max_tasks=st.integers(5, 10), max_nodes=st.integers(2, 4))
def test_never_worse_than_the_best_base_and_never_better_than_the_optimum(
    seed: int, max_tasks: int, max_nodes: int
) -> None:
    """Fortified rollout on exact runtimes: base best >= rollout >= the branch-and-bound optimum."""
    cp = small_problems(1, seed=seed, max_tasks=max_tasks, max_nodes=max_nodes)[0]
    bases = min(simulate(cp, name, CLASSIC).metrics.makespan for name in BASES)
    result = simulate(cp, Rollout(), CLASSIC)
    assert result.valid, result.violations[:3]
    optimum = exact_makespan(cp, upper_bound=bases).makespan
    assert optimum - 1e-6 <= result.metrics.makespan <= bases + 1e-6


def test_a_completion_from_the_start_is_the_base_run() -> None:
    """`complete_from_here` at time 0 plays the base exactly as a whole run does."""
    cp = compile_problem(
        Problem(workflows=[generate_workflow("layered", 30, seed=2, ccr=2.0)], cluster=cluster_preset("hetero-16"))
    )
    sim = Simulator(cp, CLASSIC, 0)
    dp = sim.next_decision()
    assert dp is not None
    for name in ("heft", "min_min"):
        makespan, _, starts = complete_from_here(dp, name)
        assert makespan == pytest.approx(simulate(cp, name, CLASSIC).metrics.makespan)
        assert sorted(t for t, _, _ in starts) == list(range(cp.n_tasks))


def test_beats_heft_on_a_communication_heavy_dag() -> None:
    """Layered 40 tasks, CCR 5, hetero-16 (measured: HEFT 1566.5 s, rollout 1559.8 s): strictly better."""
    cp = compile_problem(
        Problem(workflows=[generate_workflow("layered", 40, seed=3, ccr=5.0)], cluster=cluster_preset("hetero-16"))
    )
    heft = simulate(cp, "heft", CLASSIC).metrics.makespan
    rollout = Rollout()
    result = simulate(cp, rollout, CLASSIC)
    assert result.metrics.makespan < heft - 1.0
    assert rollout.base_makespans["heft"] == pytest.approx(heft)


def test_noisy_runs_stay_valid() -> None:
    """With noise the live run leaves the kept plan; the bases are asked again and the trace validates."""
    cp = compile_problem(
        Problem(workflows=[generate_workflow("random", 25, seed=4, ccr=1.0)], cluster=cluster_preset("hetero-16"))
    )
    result = simulate(cp, Rollout(("heft", "sjf_cp")), SimConfig(noise_cv=0.3), seed=5)
    assert result.valid, result.violations[:3]

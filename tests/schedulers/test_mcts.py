"""MCTS (UCT and policy-guided PUCT): legal actions only, budget-one reduction, determinism, no leaks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.bench.budget import small_problems
from dagsched.model import CompiledProblem
from dagsched.rl.policy import PolicyFileError, SchedulingPolicy, save_policy
from dagsched.schedulers.mcts import MCTS, MCTSUCT, MCTSConfig
from dagsched.schedulers.search_common import WAIT, legal_pairs, plan_completion
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator
from dagsched.sim.run import simulate
from dagsched.sim.validate import validate_trace

CLASSIC = SimConfig(classic=True)


@pytest.fixture(scope="module")
def untrained_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    stem = tmp_path_factory.mktemp("policy") / "untrained"
    save_policy(SchedulingPolicy(hidden=16, layers=1), stem)
    return stem


class _Checked(MCTSUCT):
    """mcts_uct that asserts every pair it returns is legal when applied in order."""

    def decide(self, sim: Simulator):  # type: ignore[no-untyped-def]
        decision = super().decide(sim)
        probe = sim.fork()
        for t, nd in decision.assignments:
            assert probe.can_start(t, nd), (t, nd, sim.now)
            probe.start(t, nd)
        return decision


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, 19), classic=st.booleans(), seed=st.integers(0, 100))
def test_search_never_returns_an_illegal_action(index: int, classic: bool, seed: int) -> None:
    """Every (task, node) the search returns passes sim.can_start when applied, and the trace validates."""
    cp = small_problems(20, seed=3)[index]
    config = CLASSIC if classic else SimConfig(noise_cv=0.3)
    result = simulate(cp, _Checked(MCTSConfig(sims=8)), config, seed=seed)
    assert result.valid, result.violations


def test_one_simulation_plays_the_rollout_policys_choice(heft_example: CompiledProblem) -> None:
    """With a budget of one simulation, the first action is HEFT's plan completion's first start (here T1 on P3),
    and the whole run reproduces HEFT's schedule of the paper (makespan 80)."""
    sim = Simulator(heft_example, CLASSIC)
    sim.step()
    sched = MCTSUCT(MCTSConfig(sims=1))
    sched.reset(heft_example, sim)
    _, first = plan_completion(sim.fork(), sched.order)
    assert sched.decide(sim).assignments[0] == first[0] == (0, 2)
    assert simulate(heft_example, MCTSUCT(MCTSConfig(sims=1)), CLASSIC).metrics.makespan == pytest.approx(80.0)


def test_puct_with_one_simulation_plays_the_policy_argmax(
    heft_example: CompiledProblem, untrained_policy: Path
) -> None:
    """PUCT with one simulation plays the legal action of highest prior (the policy's masked argmax)."""
    sim = Simulator(heft_example, CLASSIC)
    sim.step()
    sched = MCTS(MCTSConfig(sims=1), policy_path=untrained_policy)
    sched.reset(heft_example, sim)
    pairs = legal_pairs(sim)
    from dagsched.schedulers.mcts import _Node

    priors = sched._priors(sim.fork(), pairs + [WAIT])
    best = max(pairs, key=lambda a: priors[a])
    decision = sched.decide(sim)
    assert decision.assignments[:1] == [best] or (priors[WAIT] > priors[best] and not decision.assignments)
    assert isinstance(_Node, type)


def test_search_beats_heft_on_the_paper_example(heft_example: CompiledProblem) -> None:
    """With 256 simulations per decision UCT finds a schedule of 76 < HEFT's 80 on the paper's example."""
    result = simulate(heft_example, MCTSUCT(MCTSConfig(sims=256)), CLASSIC)
    assert result.valid and result.metrics.makespan <= 76.0 + 1e-9


def test_same_seed_same_plan(untrained_policy: Path) -> None:
    """Two runs with the same seed give identical attempts (budgets count work, not wall time)."""
    cp = small_problems(3, seed=5)[2]
    config = SimConfig(noise_cv=0.2)
    for make in (lambda: MCTSUCT(MCTSConfig(sims=16)), lambda: MCTS(MCTSConfig(sims=16), policy_path=untrained_policy)):
        a = simulate(cp, make(), config, seed=4).trace.attempts
        b = simulate(cp, make(), config, seed=4).trace.attempts
        assert a == b


def test_forks_never_leak_into_the_live_simulation(untrained_policy: Path) -> None:
    """decide() leaves every array and container of the live simulator as it found it."""
    cp = small_problems(3, seed=7)[0]
    for sched in (MCTSUCT(MCTSConfig(sims=32)), MCTS(MCTSConfig(sims=32), policy_path=untrained_policy)):
        sim = Simulator(cp, SimConfig(noise_cv=0.3), seed=1)
        sim.step()
        sched.reset(cp, sim)
        names = ("status", "node_of", "start_s", "finish_s", "free", "attempts", "node_up", "node_available_s")
        before = {k: getattr(sim, k).copy() for k in names}
        extra = (sim.now, set(sim.ready), dict(sim.running), len(sim._heap), len(sim.trace.attempts))
        sched.decide(sim)
        for k in names:
            np.testing.assert_array_equal(getattr(sim, k), before[k])
        assert (sim.now, set(sim.ready), dict(sim.running), len(sim._heap), len(sim.trace.attempts)) == extra


def test_traces_validate_in_cloud_mode_with_failures() -> None:
    """A run with noise, failures and stragglers yields a trace the independent validator accepts."""
    cp = small_problems(2, seed=11)[1]
    config = SimConfig(noise_cv=0.3, mtbf_s=40.0, mttr_s=5.0, straggler_rate_per_h=60.0, straggler_duration_s=5.0)
    trace = simulate(cp, MCTSUCT(MCTSConfig(sims=8)), config, seed=2).trace
    assert validate_trace(cp, trace).violations == []


def test_a_missing_policy_names_its_path(heft_example: CompiledProblem, tmp_path: Path) -> None:
    """mcts without its model raises at reset with the missing path in the message."""
    sim = Simulator(heft_example, CLASSIC)
    with pytest.raises(PolicyFileError, match="nowhere.safetensors"):
        MCTS(policy_path=tmp_path / "nowhere").reset(heft_example, sim)

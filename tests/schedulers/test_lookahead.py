"""heft_lookahead (HEFT's rollout) and drl_plan (the rollout where the learned node rule doubts HEFT).

The rollout's promise is that it never ends a workflow later than HEFT in classic mode (exact runtimes),
because HEFT's node is always a candidate and completing from it reproduces the plan last scored;
`drl_plan` keeps the promise whichever choices it skips. Checked on random single workflows.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.clusters import random_cluster
from dagsched.model import CompiledProblem, Problem, compile_problem
from dagsched.model.errors import InputError
from dagsched.policy.node_rule import N_FEATURES, PLAN_FEATURES, SHIPPED_NODE_RULE, NodeRule, PlanContext
from dagsched.schedulers import simulate
from dagsched.schedulers.drl_plan import DRLPlan
from dagsched.schedulers.heft_lookahead import Choice, HEFTLookahead
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
    assert makespan(cp, DRLPlan()) <= heft * (1 + 1e-9) + 1e-9


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cp=generated())
def test_lookahead_and_drl_plan_never_end_after_heft_on_generated_workflows(cp: CompiledProblem) -> None:
    heft = makespan(cp, "heft")
    assert makespan(cp, HEFTLookahead()) <= heft * (1 + 1e-9)
    assert makespan(cp, DRLPlan()) <= heft * (1 + 1e-9)


class _Recording(HEFTLookahead):
    """Keeps the best completed end of every looked-at choice, in planning order."""

    def prepare(self, cp: CompiledProblem) -> None:
        super().prepare(cp)
        self.best_ends: list[float] = []

    def looked_at(self, t: int, tried: np.ndarray, ends: list[float], choice: Choice) -> int:
        self.best_ends.append(min(ends))
        return super().looked_at(t, tried, ends, choice)


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


def test_drl_plan_gate_at_its_extremes_is_heft_and_the_full_lookahead() -> None:
    """Never doubting HEFT (risk 1) gives HEFT's schedule; doubting every choice and keeping every candidate
    (risk 0, min_share 0) gives heft_lookahead's; the shipped gate looks at some choices in between."""
    cp = _etl(5.0)
    never, always, shipped = DRLPlan(), DRLPlan(), DRLPlan()
    never.risk = 1.0
    always.risk, always.min_share = 0.0, 0.0
    attempts = {
        name: simulate(cp, s, CLASSIC, 0).trace.attempts
        for name, s in [("never", never), ("always", always), ("shipped", shipped)]
    }
    assert attempts["never"] == simulate(cp, "heft", CLASSIC, 0).trace.attempts and never.looked == 0
    full = HEFTLookahead()
    assert attempts["always"] == simulate(cp, full, CLASSIC, 0).trace.attempts and always.looked == full.looked
    assert 0 < shipped.looked < full.looked


def test_features_say_what_they_name() -> None:
    cp = _etl(5.0)
    context = PlanContext(cp)
    finish = np.array([5.0, 3.0, np.inf, 4.0] + [9.0] * (cp.n_nodes - 4))
    start = finish - cp.exec_s[0]
    nodes = np.array([1, 3, 0, 4])
    choice = Choice(start, finish, np.zeros(cp.n_nodes), np.zeros(cp.n_nodes), np.full(cp.n_tasks, -1), 0.0)
    x = context.features(0, nodes, choice)
    assert x.shape == (4, N_FEATURES) and np.isfinite(x).all()
    col = {name: x[:, i] for i, name in enumerate(PLAN_FEATURES)}
    assert col["finish_gap"][0] == 0 and np.all(np.diff(col["finish_gap"]) >= 0)
    o_finish = finish + context.oct[0]
    assert col["is_peft_choice"].sum() <= 1
    assert (col["is_peft_choice"] == (nodes == np.argmin(o_finish))).all()
    assert col["o_finish_gap"].min() >= 0 and np.isclose(col["o_finish_gap"][nodes == np.argmin(o_finish)], 0).all()
    assert col["hosts_share"][0] == pytest.approx((cp.n_nodes - 1) / cp.n_nodes)


def test_a_node_rule_round_trips_and_refuses_other_features(tmp_path: Path) -> None:
    rule = NodeRule.load(SHIPPED_NODE_RULE)
    rule.save(tmp_path / "copy")
    again = NodeRule.load(tmp_path / "copy")
    x = np.random.default_rng(0).normal(size=(4, N_FEATURES))
    assert np.allclose(again.scores(x), rule.scores(x), atol=1e-5)
    p = again.probabilities(x)
    assert p.sum() == pytest.approx(1.0) and (p >= 0).all() and p.argmax() == again.scores(x).argmax()
    assert set(rule.meta["config"]["held_out"]) >= {"etl_star", "montage", "epigenomics", "1000genome"}
    bad = dict(again.meta, features=list(PLAN_FEATURES[:-1]))
    (tmp_path / "copy.json").write_text(json.dumps(bad))
    with pytest.raises(InputError, match="node_rule"):
        NodeRule.load(tmp_path / "copy")


def test_the_gate_reads_its_settings_from_the_rule_else_the_trainers_defaults() -> None:
    """drl_plan and the DAgger labeller take risk and min_share from the rule's JSON; a rule that records none
    gets the trainer's defaults (the same constants), not another pair."""
    from dataclasses import replace as dc_replace

    from dagsched.rl.node_rule import LabellingPlanner, NodeRuleConfig
    from dagsched.schedulers.drl_plan import MIN_SHARE, RISK

    rule = NodeRule.load(SHIPPED_NODE_RULE)
    assert (DRLPlan(rule).risk, DRLPlan(rule).min_share) == (rule.meta["risk"], rule.meta["min_share"])
    bare = dc_replace(rule, meta={k: v for k, v in rule.meta.items() if k not in ("risk", "min_share")})
    labeller = LabellingPlanner(bare, 0.5, np.random.default_rng(0), 4)
    assert (DRLPlan(bare).risk, DRLPlan(bare).min_share) == (labeller.risk, labeller.min_share) == (RISK, MIN_SHARE)
    assert (NodeRuleConfig().risk, NodeRuleConfig().min_share) == (RISK, MIN_SHARE)

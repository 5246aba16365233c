"""Training the node rule of `drl_plan`: labels from HEFT's rollout, DAgger rounds, held-out families never drawn."""

from __future__ import annotations

import numpy as np
import pytest

from dagsched.model import compile_problem
from dagsched.policy.node_rule import N_FEATURES, NodeRule
from dagsched.rl.node_rule import CLASSIC, LabellingPlanner, NodeRuleConfig, draw_problem, train_node_rule
from dagsched.schedulers import simulate
from dagsched.schedulers.heft_lookahead import HEFTLookahead

HELD_OUT = ("etl_star", "montage", "epigenomics", "1000genome", "srasearch", "nextflow")


def test_training_never_draws_a_held_out_family() -> None:
    cfg = NodeRuleConfig(tasks=(10, 60), recipe_share=0.5)
    rng = np.random.default_rng(0)
    names = [draw_problem(cfg, rng).workflows[0].name for _ in range(200)]
    trained = {*cfg.families, *cfg.recipes}
    assert all(name.split("-")[0] in trained for name in names)
    assert not any(name.startswith(h) for h in HELD_OUT for name in names)
    assert {name.split("-")[0] for name in names} >= {"layered", "random", "blast"}


def test_labels_are_the_rollout_and_the_teacher_acts_as_heft_lookahead() -> None:
    """With beta 1 the labelling planner plays heft_lookahead's plan, and each label says how much later than the
    best candidate's completed plan each candidate's ends (0 for the best)."""
    cfg = NodeRuleConfig(tasks=(20, 40))
    cp = compile_problem(draw_problem(cfg, np.random.default_rng(5)))
    planner = LabellingPlanner(None, 1.0, np.random.default_rng(0), cfg.candidates)
    ours = simulate(cp, planner, CLASSIC, 0)
    assert ours.trace.attempts == simulate(cp, HEFTLookahead(), CLASSIC, 0).trace.attempts
    assert planner.samples
    for x, gaps in planner.samples:
        assert x.shape == (len(gaps), N_FEATURES) and 2 <= len(gaps) <= cfg.candidates
        assert gaps.min() == 0 and (gaps >= 0).all()


def test_a_short_training_run_keeps_its_history_and_its_best_round(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = NodeRuleConfig(seed=3, rounds=2, problems_per_round=3, tasks=(10, 25), validation_problems=3, epochs=3)
    rule = train_node_rule(cfg, log=lambda _: None, tb_dir=tmp_path / "tb")
    history = rule.meta["history"]
    assert [h["round"] for h in history] == [0, 1] and history[0]["beta"] == 1.0
    assert rule.meta["best_validation_vs_heft"] == min(h["validation_vs_heft"] for h in history)
    assert all(0.0 <= h["validation_looked_share"] <= 1.0 for h in history)
    assert list((tmp_path / "tb").iterdir()), "no TensorBoard event file"
    rule.save(tmp_path / "rule")
    again = NodeRule.load(tmp_path / "rule")
    x = np.random.default_rng(1).normal(size=(3, N_FEATURES))
    assert again.scores(x) == pytest.approx(rule.scores(x), abs=1e-4)
    assert again.meta["config"]["held_out"] == list(HELD_OUT)

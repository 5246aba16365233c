"""Explanations of drl's plans: the replay reproduces the plan, each task's choice is a distribution over its
ready set, Integrated Gradients of a score is complete, and an attribution follows the input that made the score."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dagsched.explain.cli import explain_problem
from dagsched.generate.clusters import random_cluster
from dagsched.generate.topologies import generate_workflow
from dagsched.model.compiled import compile_problem
from dagsched.model.entities import Problem
from dagsched.policy.priority_features import TASK_FEATURES, task_features
from dagsched.policy.priority_net import PriorityPolicy


def _problem(family: str, n: int, seed: int):
    wf = generate_workflow(family, n, seed=seed, ccr=3.0)
    return compile_problem(Problem(workflows=[wf], cluster=random_cluster(5, seed, heterogeneity=0.9)))


@pytest.mark.parametrize("family", ["etl_star", "layered"])
def test_replay_choices_and_completeness(family: str) -> None:
    torch.manual_seed(1)
    policy = PriorityPolicy(head_init=1.0).eval()
    cp = _problem(family, 25, 3)
    out = explain_problem(cp, "drl", None, policy, "test")
    assert out["policy"]["reproduced"] is True
    assert out["policy"]["decisions"] == cp.n_tasks
    for t in out["tasks"]:
        pol = t["policy"]
        assert 0 < pol["probability"] <= 1
        assert sum(a["chosen"] for a in pol["alternatives"]) == 1
        assert sum(a["probability"] for a in pol["alternatives"]) <= 1 + 1e-9
    at = out["task"]["attributions"]
    assert at["total"] == pytest.approx(at["output"] - at["baseline_output"], abs=1e-3 * max(1.0, abs(at["output"])))
    assert {r["task"] for r in at["by_task"]} == set(cp.task_ids)


def test_a_score_made_of_the_upward_rank_is_attributed_to_it() -> None:
    """With the learned head at zero the score is prior_scale x the task's own rank_u / scale: Integrated Gradients
    gives all of it to that feature of that task's row."""
    policy = PriorityPolicy(head_init=0.0).eval()
    cp = _problem("random", 20, 5)
    x = task_features(cp, False).x
    out = explain_problem(cp, "drl", cp.task_ids[0], policy, "test")
    at = out["task"]["attributions"]
    top = at["by_feature"][0]
    assert (top["group"], top["feature"]) == ("task", "rank_u")
    assert top["value"] == pytest.approx(20.0 * float(x[0, TASK_FEATURES.index("rank_u")]), rel=1e-3)
    others = [abs(r["value"]) for r in at["by_feature"][1:]]
    assert max(others) < 1e-4
    by_task = {r["task"]: r["value"] for r in at["by_task"]}
    assert np.isclose(by_task[cp.task_ids[0]], top["value"], rtol=1e-3)

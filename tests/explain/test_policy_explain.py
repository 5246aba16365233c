"""Explanations of the learned policy: the replay reproduces the plan, Integrated Gradients is complete, an
attribution follows the feature it attributes, and the attention read back is a distribution per task."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.explain import policy as ep
from dagsched.generate.clusters import random_cluster
from dagsched.generate.topologies import generate_workflow
from dagsched.model.compiled import compile_problem
from dagsched.model.entities import Problem
from dagsched.policy.features import NODE_FEATURES, PAIR_FEATURES, TASK_FEATURES
from dagsched.policy.files import load_cached_policy
from dagsched.policy.gnn import SchedulingPolicy
from dagsched.schedulers.drl import DRLScheduler
from dagsched.sim.run import simulate


@pytest.fixture(scope="module")
def shipped() -> SchedulingPolicy:
    torch.set_num_threads(1)
    return load_cached_policy()


def _problem(family: str, n: int, seed: int, nodes: int = 6):
    wf = generate_workflow(family, n, seed=seed, ccr=3.0)
    return compile_problem(Problem(workflows=[wf], cluster=random_cluster(nodes, seed, heterogeneity=0.9)))


def _hardest(cp, policy: SchedulingPolicy) -> tuple[int, ep.Recorded]:
    """The decision the policy was least sure of (most room for attribution)."""
    rep = ep.replay(cp, policy, keep=set(range(cp.n_tasks)))
    t = min(rep.by_task, key=lambda t: rep.by_task[t].probability)
    return t, rep.recorded[t]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    family=st.sampled_from(["layered", "etl_star", "random", "ml_pipeline"]),
    n=st.integers(8, 40),
    seed=st.integers(0, 10_000),
)
def test_replay_reproduces_the_plan_and_its_distributions(shipped, family: str, n: int, seed: int) -> None:
    cp = _problem(family, n, seed)
    result = simulate(cp, DRLScheduler(policy=shipped), validate=True)
    planned = {a.task: a.node for a in result.trace.attempts if a.outcome == "done"}
    rep = ep.replay(cp, shipped)
    assert rep.reproduced(planned) and set(rep.by_task) == set(planned)
    for pick in rep.picks:
        probs = [a["probability"] for a in pick.alternatives]
        assert probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-9
        chosen = [a for a in pick.alternatives if a["chosen"]]
        assert len(chosen) == 1 and chosen[0]["probability"] == pytest.approx(pick.probability)
        assert (chosen[0]["task"], chosen[0]["node"]) == (pick.task, pick.node)
        assert pick.margin >= 0  # greedy: the chosen action has the best logit in the decode's support


@pytest.mark.parametrize("family,seed", [("etl_star", 3), ("layered", 5)])
def test_integrated_gradients_is_complete(shipped, family: str, seed: int) -> None:
    cp = _problem(family, 30, seed)
    _, rec = _hardest(cp, shipped)
    at = ep.attribute(shipped, rec, list(cp.task_ids), list(cp.node_ids))
    moved = at["output"] - at["baseline_output"]
    assert abs(moved) > 0.1  # the decision's input is far from the baseline's: a real test of the axiom
    assert at["total"] == pytest.approx(moved, rel=1e-2, abs=1e-3)
    by_feature = sum(r["value"] for r in at["by_feature"])
    assert by_feature == pytest.approx(at["total"], abs=1e-6)
    # per task plus per node double-counts nothing but the pair features (they belong to a task and a node)
    pair_sum = sum(r["value"] for r in at["by_feature"] if r["group"] == "pair")
    glob = sum(r["value"] for r in at["by_feature"] if r["group"] == "global")
    tasks = sum(r["value"] for r in at["by_task"])
    nodes = sum(r["value"] for r in at["by_node"])
    assert tasks + nodes - pair_sum + glob == pytest.approx(at["total"], abs=1e-6)
    # the output attributed is the log-probability of the choice the replay made
    assert np.exp(at["output"]) == pytest.approx(
        max(a["probability"] for a in ep.replay(cp, shipped).by_task[_hardest(cp, shipped)[0]].alternatives),
        rel=1e-4,
    )


def test_an_attribution_follows_the_feature_that_drove_the_choice(shipped) -> None:
    cp = _problem("etl_star", 30, 3)
    _, rec = _hardest(cp, shipped)
    ids = (list(cp.task_ids), list(cp.node_ids))
    at = ep.attribute(shipped, rec, *ids)
    top = next(r for r in at["by_feature"] if r["group"] in ("task", "node", "pair"))  # sorted by |value|
    group, name = top["group"], top["feature"]
    obs = rec.obs
    columns = {"task": ("task_x", TASK_FEATURES), "node": ("node_x", NODE_FEATURES), "pair": ("pair_x", PAIR_FEATURES)}
    field, names = columns[group]
    x = getattr(obs, field).copy()
    x[..., names.index(name)] *= 0.25  # the driving feature, moved most of the way to the baseline
    changed = dataclasses.replace(rec, obs=dataclasses.replace(obs, **{field: x}))
    again = ep.attribute(shipped, changed, *ids)
    value = next(r["value"] for r in again["by_feature"] if (r["group"], r["feature"]) == (group, name))
    assert abs(value) < abs(top["value"]) - 0.05 * abs(top["value"])
    others = {(r["group"], r["feature"]): r["value"] for r in again["by_feature"]}
    assert again["output"] != pytest.approx(at["output"], abs=1e-4)
    # zeroing it (the baseline's value) leaves it nothing: IG multiplies by (input - baseline)
    x[..., names.index(name)] = 0.0
    zero = ep.attribute(shipped, dataclasses.replace(rec, obs=dataclasses.replace(obs, **{field: x})), *ids)
    assert next(r["value"] for r in zero["by_feature"] if (r["group"], r["feature"]) == (group, name)) == 0.0
    assert len(others) == len(at["by_feature"])


def test_attention_into_a_task_is_a_distribution_over_its_neighbours(shipped) -> None:
    cp = _problem("layered", 30, 5)
    t, rec = _hardest(cp, shipped)
    att = ep.attention(shipped, rec.obs, t, list(cp.task_ids))
    parents = {cp.task_ids[p] for p in cp.preds(t)} | {cp.task_ids[t]}
    children = {cp.task_ids[c] for c in cp.succs(t)} | {cp.task_ids[t]}
    for layer in range(shipped.config.layers):
        along = [e for e in att if e["layer"] == layer and e["direction"] == "along"]
        against = [e for e in att if e["layer"] == layer and e["direction"] == "against"]
        assert {e["source"] for e in along} == parents and {e["source"] for e in against} == children
        assert sum(e["weight"] for e in along) == pytest.approx(1.0, abs=1e-5)
        assert sum(e["weight"] for e in against) == pytest.approx(1.0, abs=1e-5)

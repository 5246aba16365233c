"""The priority trainer's pieces: the Plackett-Luce likelihood over ready sets, its losses, the generated command
line, and a short run that writes a model the drl scheduler loads."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from dagsched.generate.small import small_problems
from dagsched.rl.priority_curriculum import Draw, draw_problem
from dagsched.rl.priority_train import (
    PriorityTrainConfig,
    plackett_luce,
    pomo_loss,
    prepare,
    slim_loss,
    smoke_config,
    train,
)
from dagsched.sim import listsched
from dagsched.sim.listsched import ready_pairs


def _linear_extensions(preds: list[list[int]]) -> list[tuple[int, ...]]:
    n = len(preds)
    return [
        p for p in itertools.permutations(range(n)) if all(p.index(a) < p.index(t) for t in range(n) for a in preds[t])
    ]


def test_likelihood_matches_the_ready_set_product_and_sums_to_one() -> None:
    """For a small DAG, each decoded order's log-likelihood is the product over steps of exp(s[t]) / sum over the
    ready set, and the probabilities of all orders the DAG allows sum to 1."""
    cp = small_problems(1, seed=3, max_tasks=6, max_nodes=2)[0]
    preds = [cp.preds(t).tolist() for t in range(cp.n_tasks)]
    p = prepare(Draw(cp, True, "small", cp.n_tasks, cp.n_nodes, 1.0, 1.0))
    scores = torch.tensor(np.random.default_rng(0).normal(size=cp.n_tasks) * 2, dtype=torch.float64)
    orders = _linear_extensions(preds)
    total = 0.0
    for order in orders:
        prio = np.empty(cp.n_tasks)
        prio[list(order)] = -np.arange(cp.n_tasks, dtype=float)  # decode exactly this order
        out = listsched.decode(p.decode, prio)
        assert tuple(out.orders[0].tolist()) == order
        logp, _ = plackett_luce(scores, out.orders, out.ready_steps)
        # by hand
        placed: set[int] = set()
        want = 0.0
        for t in order:
            ready = [r for r in range(cp.n_tasks) if r not in placed and all(a in placed for a in preds[r])]
            want += float(scores[t]) - math.log(sum(math.exp(float(scores[r])) for r in ready))
            placed.add(t)
        assert float(logp[0]) == pytest.approx(want, abs=1e-9)
        total += math.exp(want)
    assert total == pytest.approx(1.0, abs=1e-9)


def test_ready_pairs_cover_each_ready_set() -> None:
    """Pairs (step, task) of two decodes: each step's group holds exactly its ready set."""
    orders = np.array([[0, 1, 2], [0, 2, 1]])
    steps = np.array([[0, 1, 1], [0, 1, 1]])  # 1 and 2 both become ready once 0 is placed
    group, task = ready_pairs(orders, steps)
    sets = {int(g): sorted(int(t) for gg, t in zip(group, task, strict=True) if gg == g) for g in set(group)}
    assert sets == {0: [0], 1: [1, 2], 2: [2], 3: [0], 4: [1, 2], 5: [1]}


def test_losses_point_the_right_way() -> None:
    """POMO raises the likelihood of samples shorter than the mean and lowers the others; SLIM raises the best's."""
    logp = torch.zeros(3, requires_grad=True)
    spans = np.array([10.0, 12.0, 14.0])
    pomo_loss(logp, spans, 12.0, 5).backward()
    assert logp.grad is not None and logp.grad[0] < 0 < logp.grad[2] and logp.grad[1] == 0
    logp2 = torch.zeros(3, requires_grad=True)
    slim_loss(logp2, spans, 5).backward()
    assert logp2.grad is not None and logp2.grad[0] < 0 and logp2.grad[1] == 0 == logp2.grad[2]


def test_config_validation_names_the_field() -> None:
    with pytest.raises(ValueError, match="samples"):
        replace(PriorityTrainConfig(), samples=1)
    with pytest.raises(ValueError, match="ccr"):
        replace(PriorityTrainConfig(), ccr=(0.0, 1.0))


def test_generated_command_line_parses_every_field(tmp_path: Path) -> None:
    """`dagsched train-priority` takes each config field as an option (tuples comma-separated, literals by name);
    a bad value exits 2 naming the option."""
    from dagsched.cli import app

    out = tmp_path / "m"
    result = CliRunner().invoke(
        app,
        [
            "train-priority",
            "--iterations",
            "2",
            "--batch",
            "1",
            "--samples",
            "3",
            "--stages",
            "12,15",
            "--method",
            "slim",
            "--eval-every",
            "1",
            "--eval-problems",
            "1",
            "--out-dir",
            str(tmp_path),
            "--model-out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    meta = json.loads(out.with_suffix(".json").read_text())
    cfg = meta["training"]["config"]
    assert cfg["stages"] == [12, 15] and cfg["method"] == "slim" and cfg["samples"] == 3
    assert "--method slim" in meta["training"]["command"] and "--stages 12,15" in meta["training"]["command"]
    assert "etl_star" in meta["held_out_families"]
    bad = CliRunner().invoke(app, ["train-priority", "--ccr", "1"])
    assert bad.exit_code == 2 and "ccr" in bad.output


def test_a_short_run_is_reproducible_and_loads(tmp_path: Path) -> None:
    """The same seed gives the same weights; the model loads and the drl scheduler plans with it."""
    from dagsched.generate import cluster_preset, generate_workflow
    from dagsched.model import Problem, compile_problem
    from dagsched.policy.priority_net import load_priority_policy
    from dagsched.schedulers import simulate
    from dagsched.schedulers.priority_sampling import PrioritySampling

    cfg = replace(smoke_config(), out_dir=str(tmp_path), model_out=str(tmp_path / "a"))
    a, _ = train(cfg)
    b, _ = train(replace(cfg, name="again", model_out=str(tmp_path / "b")))
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(va, vb), k
    loaded = load_priority_policy(tmp_path / "a")
    cp = compile_problem(Problem(workflows=[generate_workflow("etl_star", 30, 1)], cluster=cluster_preset("small-3")))
    assert simulate(cp, PrioritySampling(policy=loaded, samples=4), seed=2).valid


def test_curriculum_draws_cover_the_ranges() -> None:
    """Drawn problems respect the size, node and mode ranges and use only training sources."""
    from dagsched.rl.priority_curriculum import TRAIN_FAMILIES, TRAIN_RECIPES

    rng = np.random.default_rng(0)
    draws = [draw_problem(rng, (10, 60), (0.1, 10), (2, 10), (2, 20), 0.3, 0.5) for _ in range(20)]
    assert all(d.source in TRAIN_FAMILIES + TRAIN_RECIPES for d in draws)
    assert all(2 <= d.n_nodes <= 20 and 0.1 <= d.ccr <= 10 for d in draws)
    assert {d.classic for d in draws} == {True, False}
    speeds = [d.cp.speed for d in draws if d.n_nodes >= 2]
    assert all(
        s.max() / s.min() == pytest.approx(d.heterogeneity, rel=1e-2) for s, d in zip(speeds, draws, strict=False)
    )

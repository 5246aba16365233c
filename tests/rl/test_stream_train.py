"""Training the stream index: the ES estimate points along the cost's slope, the imitation loss is Plackett-Luce's,
the config's command line is the dataclass, and a tiny run writes weights that say what they trained on."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from dagsched.policy.stream_index import LEVER_PARAMS, IndexNet
from dagsched.rl.config_cli import command_from_config, field_docs
from dagsched.rl.stream_train import (
    Adam,
    StreamTrainConfig,
    centred_ranks,
    es_gradient,
    plackett_luce_loss,
    train,
)


def test_centred_ranks_keep_the_order_in_minus_half_to_half() -> None:
    """Ranks, not values: an outlier counts like any other run."""
    r = centred_ranks(np.array([3.0, -1.0, 1000.0, 2.0]))
    assert r.tolist() == pytest.approx([1 / 6, -0.5, 0.5, -1 / 6])


def test_es_gradient_points_along_a_linear_costs_slope() -> None:
    """Costs a . theta evaluated at theta +/- sigma eps on three streams (each with its own offset, as streams differ):
    the rank-shaped antithetic estimate is nearly parallel to a; its sign follows the cost's."""
    rng = np.random.default_rng(0)
    a, theta, sigma = rng.normal(size=6), rng.normal(size=6), 0.1
    eps = rng.standard_normal((400, 6))
    offsets = np.array([[0.0], [50.0], [-3.0]])
    plus = offsets + (theta + sigma * eps) @ a
    minus = offsets + (theta - sigma * eps) @ a
    g = es_gradient(eps, plus, minus, sigma)
    assert g @ a / (np.linalg.norm(g) * np.linalg.norm(a)) > 0.9
    assert es_gradient(eps, -plus, -minus, sigma) @ a < 0


def test_adam_descends_a_quadratic() -> None:
    theta, adam = np.array([3.0, -2.0]), Adam(2, lr=0.1)
    for _ in range(300):
        theta = adam.step(theta, 2 * theta)
    assert np.abs(theta).max() < 0.05


def test_plackett_luce_loss_is_the_orders_likelihood() -> None:
    """Two rows: [s0, s1] with the teacher's order 0, 1 gives softplus(s1 - s0); a row padded after one task
    carries no place; the loss falls as the teacher's first task's score rises."""
    import torch

    s = torch.tensor([[2.0, 0.5, 0.0], [1.0, 9.0, 9.0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    assert float(plackett_luce_loss(s, mask, 8)) == pytest.approx(math.log1p(math.exp(0.5 - 2.0)), rel=1e-6)
    full = torch.tensor([[0.0, 1.0, 2.0]])
    three = torch.ones(1, 3, dtype=torch.bool)
    two_places = (math.log(math.exp(0) + math.exp(1) + math.exp(2)) - 0) + (math.log(math.exp(1) + math.exp(2)) - 1)
    assert float(plackett_luce_loss(full, three, 8)) == pytest.approx(two_places / 2, rel=1e-6)
    assert float(plackett_luce_loss(full + torch.tensor([[3.0, 0, 0]]), three, 8)) < two_places / 2


def test_the_command_line_is_generated_from_the_config() -> None:
    """Every field is an option with its docstring; no options give the dataclass's defaults; tuples parse from
    commas, and a pair given three values is refused naming the field (exit 2)."""
    docs = field_docs(StreamTrainConfig)
    assert set(docs) == {f.name for f in dataclasses.fields(StreamTrainConfig)}
    seen: list[StreamTrainConfig] = []
    app = typer.Typer()
    app.command()(command_from_config(StreamTrainConfig, seen.append))
    runner = CliRunner()
    assert runner.invoke(app, []).exit_code == 0 and seen[-1] == StreamTrainConfig()
    out = runner.invoke(app, ["--load-range", "0.6,0.9", "--clusters", "homog-8", "--seed", "4"])
    assert out.exit_code == 0, out.output
    assert seen[-1].load_range == (0.6, 0.9) and seen[-1].clusters == ("homog-8",) and seen[-1].seed == 4
    bad = runner.invoke(app, ["--load-range", "0.5,0.7,0.9"])
    assert bad.exit_code == 2 and "2 comma-separated values" in bad.output
    assert len(seen) == 2
    assert "seeds the streams drawn" in runner.invoke(app, ["--help"]).output


def test_a_tiny_run_writes_weights_that_say_what_they_trained_on(tmp_path) -> None:
    """Imitation on one short stream, one ES generation, one validation stream: the three weight files load, the
    history has the imitation and both ES rows, the metadata names the clusters and what was held out (families,
    arrivals, seeds), and ES moved the cap and admission heads only (`es_params`' default)."""
    cfg = StreamTrainConfig(
        out=str(tmp_path),
        workflows=(6, 5),
        imitation_streams=1,
        imitation_steps=5,
        generations=1,
        pairs=1,
        streams_per_generation=1,
        validation_every=1,
        validation=("homog-8:0.8:poisson",),
    )
    best = train(cfg)
    for name in ("imitation", "best", "last"):
        net = IndexNet.load(tmp_path / f"{name}.safetensors")
        assert "stages" in net.meta["trained_on"] and "hetero-16" in net.meta["trained_on"]
        held_out = net.meta["held_out"]
        assert "layered" in held_out and "diurnal" in held_out and "below 10000" in held_out
        assert "stages" not in held_out and "poisson" not in held_out
        assert json.loads(net.meta["config"])["workflows"] == [6, 5]
    start, last = IndexNet.load(tmp_path / "imitation.safetensors"), IndexNet.load(tmp_path / "last.safetensors")
    moved = {k for k in start.params if not np.array_equal(start.params[k], last.params[k])}
    assert moved and moved <= set(LEVER_PARAMS)
    assert last.meta["stage"] == "ES, generation 1" and best.meta["stage"].startswith("ES, best validated (generation")
    history = json.loads((tmp_path / "history.json").read_text())["history"]
    assert [h["phase"] for h in history] == ["imitation", "es", "es"]
    assert history[-1]["validation"] > 0
    assert best.flat().shape == last.flat().shape
    assert (tmp_path / "curves.png").stat().st_size > 0

"""PISA adversarial search: it finds bad instances, they read back exactly, and the search is seeded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from dagsched.bench import adversarial
from dagsched.io import read_problem
from dagsched.model import compile_problem
from dagsched.schedulers import simulate
from dagsched.sim.config import SimConfig


@pytest.fixture(scope="module")
def fcfs_vs_heft() -> adversarial.AdversarialResult:
    return adversarial.worst_case("fcfs", "heft", iterations=300, seed=1)


def test_search_finds_an_instance_where_fcfs_is_worse_than_heft(fcfs_vs_heft: adversarial.AdversarialResult) -> None:
    """fcfs is DAG- and speed-blind: a few hundred steps find makespan(fcfs) / makespan(heft) well above 1."""
    r = fcfs_vs_heft
    assert r.ratio >= 1.0
    assert r.ratio > 1.5
    assert r.ratio == pytest.approx(r.makespan_a / r.makespan_b)
    assert len(r.best_by_iteration) == 301
    assert all(b >= a for a, b in zip(r.best_by_iteration, r.best_by_iteration[1:], strict=False))
    assert r.best_by_iteration[-1] == r.ratio
    assert 3 <= r.instance.n_tasks <= 12 and 2 <= r.instance.n_nodes <= 4


def test_written_instance_resimulates_to_the_same_ratio(
    fcfs_vs_heft: adversarial.AdversarialResult, tmp_path: Path
) -> None:
    """The classic JSON file holds tasks/edges/machines/links (one link per pair) and reproduces the ratio exactly."""
    path = tmp_path / "worst.json"
    adversarial.write_instance(fcfs_vs_heft.instance, path)
    doc = json.loads(path.read_text())
    inst = fcfs_vs_heft.instance
    assert len(doc["tasks"]) == inst.n_tasks and set(doc["tasks"][0]) == {"id", "cost"}
    assert len(doc["edges"]) == len(inst.edges) and all(set(e) == {"src", "dst", "data"} for e in doc["edges"])
    assert len(doc["machines"]) == inst.n_nodes
    assert len(doc["links"]) == inst.n_nodes * (inst.n_nodes - 1) // 2
    cp = compile_problem(read_problem(path))
    config = SimConfig(classic=True)
    fcfs = simulate(cp, "fcfs", config, adversarial.SIM_SEED)
    heft = simulate(cp, "heft", config, adversarial.SIM_SEED)
    assert fcfs.valid and heft.valid
    assert fcfs.metrics.makespan / heft.metrics.makespan == pytest.approx(fcfs_vs_heft.ratio, rel=1e-12)


def test_search_is_reproducible_from_its_seed() -> None:
    """Same seed, same instance and ratio; another seed starts elsewhere."""
    one = adversarial.worst_case("heft", "cpop", iterations=40, seed=5)
    two = adversarial.worst_case("heft", "cpop", iterations=40, seed=5)
    other = adversarial.worst_case("heft", "cpop", iterations=40, seed=6)
    assert one.instance == two.instance and one.ratio == two.ratio
    assert one.best_by_iteration == two.best_by_iteration
    assert other.instance != one.instance


def test_perturbations_keep_a_valid_small_dag() -> None:
    """2,000 random moves: the DAG stays acyclic, sizes stay in range, weights stay within their bounds."""
    rng = np.random.default_rng(0)
    inst = adversarial.random_instance(rng)
    n_edges = set()
    for _ in range(2000):
        inst = adversarial.perturb(inst, rng)
        n_edges.add(len(inst.edges))
        assert all(adversarial.COST_MIN <= c <= 1 for c in inst.cost)
        assert all(adversarial.SPEED_MIN <= s <= 1 for s in inst.speed)
        assert all(adversarial.BANDWIDTH_MIN <= w <= 1 for _, _, w in inst.bandwidth)
        assert all(0 <= x <= 1 and s != d for s, d, x in inst.edges)
    inst.problem()  # the Workflow validator refuses cycles
    assert len(n_edges) > 3  # edges were both added and removed


def test_pairwise_worst_covers_every_ordered_pair() -> None:
    """Three schedulers: six ordered pairs, each a finite ratio of at least 1 for a pair of different policies."""
    worst = adversarial.pairwise_worst(["heft", "fcfs", "sjf"], iterations=15, seed=0)
    assert sorted(worst) == sorted((a, b) for a in ("heft", "fcfs", "sjf") for b in ("heft", "fcfs", "sjf") if a != b)
    assert all(np.isfinite(v) and v > 0 for v in worst.values())
    assert worst[("fcfs", "heft")] >= 1.0


def test_cli_prints_the_ratio_and_writes_the_instance(tmp_path: Path) -> None:
    """`dagsched adversarial A B --out FILE`: exit 0 with the ratio; an unknown scheduler exits 2 naming it."""
    app = typer.Typer()
    adversarial.register(app)
    app.command("noop")(lambda: None)  # a second command, so typer keeps the subcommand name
    out = tmp_path / "w.json"
    result = CliRunner().invoke(
        app, ["adversarial", "fcfs", "heft", "--iterations", "20", "--seed", "2", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    expected = adversarial.worst_case("fcfs", "heft", 20, 2).ratio
    assert f"= {expected:.4f}" in result.output
    assert json.loads(out.read_text())["machines"]
    bad = CliRunner().invoke(app, ["adversarial", "nosuch", "heft", "--iterations", "5"])
    assert bad.exit_code == 2
    assert "nosuch" in bad.output

"""Training the node rule (`drl_plan`) by DAgger on the labels of HEFT's rollout (`heft_lookahead`).

Each round plans problems of the training families with `drl_plan`, the teacher's choice taken with
probability beta (1 in the first round, falling to `beta_min`) and the learner's otherwise, so the states are
those the learner reaches (Ross et al. 2011); the learner acts as `drl_plan` does, completing the plan
only where the rule doubts HEFT's node. Every visited choice of two or more nodes is labelled with the
end of the HEFT-completed plan from each candidate, and the rule is fitted on everything gathered so
far to name the candidate that ends first (HEFT's where they tie). After each round `drl_plan` with the
rule plans a fixed validation set of the training families; the round with the lowest mean makespan /
HEFT's is kept. Families and recipes listed in `held_out` are never drawn.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.clusters import random_cluster
from dagsched.generate.recipes import min_tasks, recipe_workflow
from dagsched.model import Problem, compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.policy.node_rule import N_FEATURES, PLAN_FEATURES, NodeRule
from dagsched.schedulers import simulate
from dagsched.schedulers.drl_plan import MIN_SHARE, RISK, DRLPlan, gate_settings
from dagsched.schedulers.heft_lookahead import Choice
from dagsched.sim.config import SimConfig, mode_settings


@dataclass
class NodeRuleConfig:
    """Everything a node-rule training run depends on; recorded in the model's JSON."""

    seed: int = 0
    rounds: int = 6
    """DAgger rounds"""
    problems_per_round: int = 150
    candidates: int = 4
    """earliest-finish nodes offered per task"""
    hidden: int = 64
    layers: int = 2
    epochs: int = 30
    """passes over the aggregate per round"""
    batch_size: int = 256
    lr: float = 1e-3
    beta_min: float = 0.0
    families: tuple[str, ...] = ("layered", "random", "ml_pipeline")
    recipes: tuple[str, ...] = ("blast", "bwa", "cycles", "seismology", "soykb")
    recipe_share: float = 0.25
    held_out: tuple[str, ...] = ("etl_star", "montage", "epigenomics", "1000genome", "srasearch", "nextflow")
    """never drawn in training (nor is any real WfCommons trace)"""
    clusters: tuple[str, ...] = ("hetero-16", "small-3", "random")
    random_nodes: tuple[int, int] = (2, 16)
    heterogeneity: float = 0.9
    ccr_range: tuple[float, float] = (0.1, 10.0)
    tasks: tuple[int, int] = (10, 100)
    validation_problems: int = 24
    risk: float = RISK
    """drl_plan completes the plan for a choice when the rule gives the non-HEFT nodes this much belief"""
    min_share: float = MIN_SHARE
    """... and only from the candidates it gives at least this much"""
    budget_s: float = float("inf")
    """stop gathering after this many seconds (the current round finishes)"""
    history: list[dict[str, float]] = field(default_factory=list)


CLASSIC = SimConfig(**mode_settings("classic"))


def draw_problem(cfg: NodeRuleConfig, rng: np.random.Generator) -> Problem:
    """One training workflow on one cluster (training families and recipes only)."""
    cluster_name = cfg.clusters[int(rng.integers(len(cfg.clusters)))]
    if cluster_name == "random":
        n_nodes = int(rng.integers(cfg.random_nodes[0], cfg.random_nodes[1] + 1))
        cluster = random_cluster(n_nodes, int(rng.integers(2**31)), heterogeneity=cfg.heterogeneity)
    else:
        cluster = cluster_preset(cluster_name)
    n = int(rng.integers(cfg.tasks[0], cfg.tasks[1] + 1))
    recipes = [r for r in cfg.recipes if r not in cfg.held_out and min_tasks(r) <= cfg.tasks[1]]
    if recipes and rng.random() < cfg.recipe_share:
        recipe = recipes[int(rng.integers(len(recipes)))]
        wf = recipe_workflow(recipe, max(n, min_tasks(recipe)), int(rng.integers(2**31)))
    else:
        families = [f for f in cfg.families if f not in cfg.held_out]
        if cluster_name == "random":
            families = [f for f in families if f != "ml_pipeline"] or families  # GPU tasks need GPU nodes
        family = families[int(rng.integers(len(families)))]
        lo, hi = np.log(cfg.ccr_range[0]), np.log(cfg.ccr_range[1])
        ccr = float(np.exp(rng.uniform(lo, hi)))
        wf = generate_workflow(family, n, int(rng.integers(2**31)), ccr=ccr)
    return Problem(name="node-rule-train", workflows=[wf], cluster=cluster)


class LabellingPlanner(DRLPlan):
    """`drl_plan` that completes the plan from every candidate, records the ends as the label of the choice,
    and acts as DAgger says: the teacher's best node with probability `beta`, else the guided planner's."""

    max_placements = 10**12

    def __init__(self, rule: NodeRule | None, beta: float, rng: np.random.Generator, candidates: int) -> None:
        self.rule = rule  # type: ignore[assignment]
        self.candidates = candidates
        self.beta, self.rng = beta, rng
        self.risk, self.min_share = gate_settings(rule) if rule else (0.0, 0.0)
        self.samples: list[tuple[np.ndarray, np.ndarray]] = []

    def worth_looking(self, t: int, nodes: np.ndarray, choice: Choice) -> np.ndarray:
        return nodes

    def looked_at(self, t: int, tried: np.ndarray, ends: list[float], choice: Choice) -> int:
        gaps = (np.asarray(ends) - min(ends)) / self.context.scale
        x = self.context.features(t, tried, choice)
        self.samples.append((x, gaps))
        if self.rule is None or self.rng.random() < self.beta:
            return int(tried[int(np.argmin(gaps))])
        guided = self.gate(x)  # the candidates drl_plan would complete from
        return int(tried[guided][int(np.argmin(gaps[guided]))])


class _Scorer(nn.Module):
    def __init__(self, hidden: int, layers: int) -> None:
        super().__init__()
        dims = [N_FEATURES] + [hidden] * layers
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:], strict=True))
        self.out = nn.Linear(dims[-1], 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.out(x).squeeze(-1)


def fit(samples: list[tuple[np.ndarray, np.ndarray]], cfg: NodeRuleConfig, model: _Scorer) -> dict[str, np.ndarray]:
    """Fit `model` to name each choice's best candidate (the first that ends earliest: HEFT's node where all
    tie, so the rule learns where HEFT's node is good enough too); returns the feature standardisation."""
    k, n = cfg.candidates, len(samples)
    xs = np.zeros((n, k, N_FEATURES), dtype=np.float32)
    gaps = np.full((n, k), np.inf, dtype=np.float32)
    for i, (x, g) in enumerate(samples):
        xs[i, : len(x)] = x
        gaps[i, : len(g)] = g
    mask = np.isfinite(gaps)
    flat = xs[mask]
    mean, std = flat.mean(axis=0), flat.std(axis=0) + 1e-6
    x_t = torch.from_numpy((xs - mean) / std)
    m_t, best = torch.from_numpy(mask), torch.from_numpy(gaps.argmin(axis=1))
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    for _ in range(cfg.epochs):
        for idx in torch.randperm(n, generator=gen).split(cfg.batch_size):
            scores = model(x_t[idx]).masked_fill(~m_t[idx], -1e9)
            loss = nn.functional.cross_entropy(scores, best[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {"mean": mean.astype(np.float64), "std": std.astype(np.float64)}


def to_rule(model: _Scorer, norm: dict[str, np.ndarray], cfg: NodeRuleConfig, extra: dict[str, Any]) -> NodeRule:
    weights = dict(norm)
    for i, layer in enumerate(model.hidden):
        weights[f"w{i}"] = layer.weight.detach().numpy().T.astype(np.float64)
        weights[f"b{i}"] = layer.bias.detach().numpy().astype(np.float64)
    weights["w_out"] = model.out.weight.detach().numpy().T.astype(np.float64)
    weights["b_out"] = model.out.bias.detach().numpy().astype(np.float64)
    meta = {
        "kind": "node_rule",
        "features": list(PLAN_FEATURES),
        "candidates": cfg.candidates,
        "layers": cfg.layers,
        "hidden": cfg.hidden,
        "config": {k: None if v == float("inf") else v for k, v in asdict(cfg).items() if k != "history"},
        **extra,
    }
    return NodeRule(weights, meta)


def validation_set(cfg: NodeRuleConfig) -> list[CompiledProblem]:
    rng = np.random.default_rng(10_000 + cfg.seed)
    return [compile_problem(draw_problem(cfg, rng)) for _ in range(cfg.validation_problems)]


def validate(rule: NodeRule, problems: list[CompiledProblem]) -> tuple[float, float]:
    """`drl_plan` with `rule` over `problems`, classic mode: mean makespan / HEFT's, and the share of choices it
    completed the plan for (of those of two or more candidates, which `heft_lookahead` completes every one of)."""
    ratios, looked, choices = [], 0, 0
    for cp in problems:
        planner = DRLPlan(rule=rule)
        ours = simulate(cp, planner, CLASSIC, 0, validate=False).metrics.makespan
        ratios.append(ours / simulate(cp, "heft", CLASSIC, 0, validate=False).metrics.makespan)
        looked, choices = looked + planner.looked, choices + planner.choices
    return float(np.mean(ratios)), looked / max(choices, 1)


def train_node_rule(cfg: NodeRuleConfig, log: Any = print, tb_dir: str | Path | None = None) -> NodeRule:
    """DAgger rounds; returns the rule of the best validation round, its history in `meta` (and TensorBoard)."""
    writer = None
    if tb_dir is not None:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(str(tb_dir))
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(cfg.seed)
    val = validation_set(cfg)
    samples: list[tuple[np.ndarray, np.ndarray]] = []
    rule: NodeRule | None = None
    best: tuple[float, NodeRule] | None = None
    t0 = time.perf_counter()
    for r in range(cfg.rounds):
        beta = 1.0 if r == 0 else max(cfg.beta_min, 1.0 - r / max(cfg.rounds - 1, 1))
        for _ in range(cfg.problems_per_round):
            cp = compile_problem(draw_problem(cfg, rng))
            planner = LabellingPlanner(rule, beta, rng, cfg.candidates)
            simulate(cp, planner, CLASSIC, 0, validate=False)
            samples.extend(planner.samples)
        model = _Scorer(cfg.hidden, cfg.layers)
        norm = fit(samples, cfg, model)
        elapsed = time.perf_counter() - t0
        rule = to_rule(model, norm, cfg, {"risk": cfg.risk, "min_share": cfg.min_share})
        score, share = validate(rule, val)
        cfg.history.append(
            {
                "round": r,
                "beta": beta,
                "choices": len(samples),
                "validation_vs_heft": score,
                "validation_looked_share": share,
                "elapsed_s": elapsed,
            }
        )
        log(
            f"round {r}: beta {beta:.2f}, {len(samples)} labelled choices, validation makespan / HEFT {score:.4f}, "
            f"completed {share:.1%} of choices, {elapsed:.0f} s"
        )
        if writer is not None:
            writer.add_scalar("validation/makespan_over_heft", score, r)
            writer.add_scalar("validation/completed_share", share, r)
            writer.add_scalar("data/choices", len(samples), r)
        if best is None or score < best[0]:
            best = (score, rule)
        if elapsed > cfg.budget_s:
            break
    if writer is not None:
        writer.close()
    assert best is not None
    best[1].meta.update(history=cfg.history, best_validation_vs_heft=best[0], train_seconds=time.perf_counter() - t0)
    return best[1]

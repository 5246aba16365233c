"""Training the priority policy of `drl`: sampled plans of one problem teach its scores (POMO or SLIM).

One iteration, in the order it runs: draw `batch` problems from the curriculum (`priority_curriculum`);
for each, one forward pass gives the scores s; K Gumbel-perturbed copies of s are decoded by the compiled
list scheduler (`sim.listsched`), each a permutation drawn from the Plackett-Luce distribution over the
ready sets, with its planned makespan; then

- `pomo` (Kwon et al. 2020): REINFORCE on the permutations' log-likelihood with the K samples' mean makespan
  as the shared per-problem baseline, advantages in units of HEFT's makespan on the problem;
- `slim` (Corsini et al. 2024): self-imitation, the cross-entropy of the best sample's choices;

plus an optional entropy bonus (the mean entropy of the choice at each step) and an anchor (the mean square of
the network's learned part, what it adds to its rank prior). Every `eval_every` iterations
a fixed validation set drawn from the training distribution (never from the held-out families) is planned
greedily and with K samples, beside rank_u with the same noise (the untrained ablation); the checkpoint of
best sampled validation makespan is kept (a greedy plan longer than HEFT's counted against it). Scalars go
to TensorBoard (`<out_dir>/<name>/tb`) and into the model's JSON. One command and a seed reproduce a run:
`dagsched train-priority --seed 1 ...` (see `PriorityTrainConfig`); torch and numpy draw only from that seed, on
one thread. `--method expert` runs expert iteration instead (`rl.priority_expert`).
"""

from __future__ import annotations

import json
import math
import resource
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from dagsched.model.compiled import CompiledProblem
from dagsched.policy.priority_features import PriorityInputs, task_features
from dagsched.policy.priority_net import PriorityConfig, PriorityPolicy, save_priority_policy
from dagsched.rl.priority_config import PriorityTrainConfig
from dagsched.rl.priority_curriculum import HELD_OUT, TRAIN_FAMILIES, TRAIN_RECIPES, Draw, draw_problem
from dagsched.sim import listsched
from dagsched.sim.config import SimConfig
from dagsched.sim.listsched import ready_pairs

# ---- the permutation's likelihood -----------------------------------------------------------------------


def plackett_luce(scores: Tensor, orders: np.ndarray, ready_steps: np.ndarray) -> tuple[Tensor, Tensor]:
    """(log-likelihood of each decode's order (K,), mean entropy of the choice per step (K,)) under the
    Plackett-Luce distribution of `scores` over the ready sets: at step i the chosen task has probability
    exp(s[t_i]) / sum over the ready set of exp(s[r])."""
    k_rows, length = orders.shape
    group, task = ready_pairs(orders, ready_steps)
    g = torch.from_numpy(group)
    s = scores.double()
    vals = s[torch.from_numpy(task)]
    peak = torch.full((k_rows * length,), -math.inf, dtype=s.dtype).scatter_reduce(0, g, vals.detach(), "amax")
    total = torch.zeros(k_rows * length, dtype=s.dtype).index_add(0, g, torch.exp(vals - peak[g]))
    lse = peak + torch.log(total)
    chosen = s[torch.from_numpy(orders.ravel())]
    logp = (chosen - lse).view(k_rows, length).sum(dim=1)
    p = torch.exp(vals - lse[g])
    ent = torch.zeros(k_rows * length, dtype=s.dtype).index_add(0, g, -p * (vals - lse[g]))
    return logp, ent.view(k_rows, length).mean(dim=1)


def pomo_loss(logp: Tensor, spans: np.ndarray, unit: float, n_steps: int) -> Tensor:
    """REINFORCE with the samples' mean makespan as baseline; advantages in `unit`s (HEFT's makespan, or the samples'
    standard deviation), the sum of log-probabilities per step (sizes weigh alike)."""
    adv = torch.from_numpy((spans.mean() - spans) / max(unit, 1e-12))
    return -(adv * logp).mean() / n_steps


def slim_loss(logp: Tensor, spans: np.ndarray, n_steps: int) -> Tensor:
    """Self-imitation: the negative log-likelihood of the best sample's order, per step."""
    return -logp[int(np.argmin(spans))] / n_steps


# ---- one problem ----------------------------------------------------------------------------------------


@dataclass
class Prepared:
    """A problem ready to decode: its network inputs and the decoder's (an empty cluster at time 0)."""

    inputs: PriorityInputs
    decode: listsched.DecodeInputs
    x: Tensor
    edge_index: Tensor
    heft_span: float


def prepare(draw: Draw) -> Prepared:
    return prepare_problem(draw.cp, draw.classic)


def prepare_problem(cp: CompiledProblem, classic: bool) -> Prepared:
    """`cp` ready to decode from an empty cluster at time 0, in classic or cloud mode."""
    from dagsched.schedulers.static import PlanState, decode_inputs
    from dagsched.sim.config import MODES
    from dagsched.sim.engine import Simulator

    sim = Simulator(cp, MODES["classic"] if classic else SimConfig())
    sim.step()
    dp = sim.decision_point()
    dec = decode_inputs(dp, list(range(cp.n_tasks)), dp.node_timelines(), PlanState(dp))
    inputs = task_features(cp, classic)
    heft = float(listsched.decode(dec, inputs.rank_u).spans[0])
    return Prepared(inputs, dec, torch.from_numpy(inputs.x), torch.from_numpy(inputs.edge_index), heft)


def problem_loss(
    policy: PriorityPolicy, p: Prepared, cfg: PriorityTrainConfig, rng: np.random.Generator
) -> tuple[Tensor, dict[str, float]]:
    """The loss of one problem (`cfg.method` on K = `cfg.samples` Gumbel samples of the scores, with the entropy
    bonus and the anchor) and its statistics: best sample over HEFT, entropy, the samples' spread."""
    scores, learned = policy.forward_parts(p.x, p.edge_index)
    noise = rng.gumbel(size=(cfg.samples, len(p.inputs.rank_u)))
    out = listsched.decode_many(p.decode, scores.detach().double().numpy() + noise)
    logp, ent = plackett_luce(scores, out.orders, out.ready_steps)
    n_steps = out.orders.shape[1]
    if cfg.method == "pomo":
        unit = p.heft_span if cfg.advantage == "heft" else float(out.spans.std())
        loss = pomo_loss(logp, out.spans, unit, n_steps)
    elif cfg.method == "slim":
        loss = slim_loss(logp, out.spans, n_steps)
    else:
        raise ValueError(f"method {cfg.method!r} has no per-sample loss (expert iteration: rl.priority_expert)")
    loss = loss - cfg.entropy * ent.mean() + cfg.anchor * learned.pow(2).mean()
    stats = {
        "entropy": float(ent.mean().detach()),
        "best_sample_vs_heft": float(out.spans.min()) / p.heft_span,
        "sample_spread": float(out.spans.std() / max(out.spans.mean(), 1e-12)),
    }
    return loss, stats


def evaluate(policy: PriorityPolicy, problems: list[Prepared], samples: int, seed: int) -> dict[str, float]:
    """Validation: greedy and best-of-K planned makespan over HEFT's, and the same K with rank_u's scores and the
    same noise (the untrained ablation), means over `problems`."""
    rng = np.random.default_rng(seed)
    greedy, sampled, untrained = [], [], []
    scale = policy.config.prior_scale
    for p in problems:
        s = policy.scores(p.inputs)
        noise = rng.gumbel(size=(samples, len(s)))
        rank = p.inputs.rank_u / p.inputs.scale_s * scale
        greedy.append(listsched.decode(p.decode, s).spans[0] / p.heft_span)
        sampled.append(listsched.decode_many(p.decode, s + noise).spans.min() / p.heft_span)
        untrained.append(listsched.decode_many(p.decode, rank + noise).spans.min() / p.heft_span)
    return {
        "val_greedy_vs_heft": float(np.mean(greedy)),
        "val_sampled_vs_heft": float(np.mean(sampled)),
        "val_untrained_vs_heft": float(np.mean(untrained)),
        "val_sampled_vs_untrained": float(np.mean(np.array(sampled) / np.array(untrained))),
    }


# ---- the loop -------------------------------------------------------------------------------------------


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def train(cfg: PriorityTrainConfig, report: Any = None) -> tuple[PriorityPolicy, dict[str, Any]]:
    """Train from `cfg`; returns the selected policy and its training record. `report(metrics)` (optional) is
    called after each validation (Ray Tune's hook)."""
    if cfg.method == "expert":
        from dagsched.rl.priority_expert import train_expert

        return train_expert(cfg, report)
    from torch.utils.tensorboard import SummaryWriter

    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    run_dir = Path(cfg.out_dir) / cfg.name
    run_dir.mkdir(parents=True, exist_ok=True)
    writer = SummaryWriter(str(run_dir / "tb"))
    policy = PriorityPolicy(PriorityConfig(hidden=cfg.hidden, layers=cfg.layers, prior_scale=cfg.prior_scale))
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    eval_rng = np.random.default_rng(cfg.seed + 10**6)
    top = min(300, max(cfg.stages))
    val = [
        prepare(
            draw_problem(
                eval_rng,
                (cfg.min_tasks, top),
                cfg.ccr,
                cfg.heterogeneity,
                cfg.nodes,
                cfg.recipe_share,
                cfg.classic_share,
            )
        )
        for _ in range(cfg.eval_problems)
    ]
    history: list[dict[str, Any]] = []
    best: tuple[float, dict[str, Tensor], int] | None = None
    cpu0, wall0 = cpu_seconds(), time.time()
    it = 0
    for it in range(1, cfg.iterations + 1):
        stage = min(len(cfg.stages) - 1, (it - 1) * len(cfg.stages) // cfg.iterations)
        size = (cfg.min_tasks, cfg.stages[stage])
        policy.train()
        losses, entropies, ratios, spreads = [], [], [], []
        opt.zero_grad()
        for _ in range(cfg.batch):
            draw = draw_problem(rng, size, cfg.ccr, cfg.heterogeneity, cfg.nodes, cfg.recipe_share, cfg.classic_share)
            loss, stats = problem_loss(policy, prepare(draw), cfg, rng)
            (loss / cfg.batch).backward()
            losses.append(float(loss.detach()))
            entropies.append(stats["entropy"])
            ratios.append(stats["best_sample_vs_heft"])
            spreads.append(stats["sample_spread"])
        grad_norm = float(torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip))
        opt.step()
        row: dict[str, Any] = {
            "iteration": it,
            "stage_max_tasks": cfg.stages[stage],
            "loss": float(np.mean(losses)),
            "entropy": float(np.mean(entropies)),
            "best_sample_vs_heft": float(np.mean(ratios)),
            "sample_spread": float(np.mean(spreads)),
            "grad_norm": grad_norm,
            "prior_rank_u": float(policy.prior.weight[0, 0]),
            "cpu_s": cpu_seconds() - cpu0,
        }
        for key in ("loss", "entropy", "best_sample_vs_heft", "sample_spread", "grad_norm", "prior_rank_u"):
            writer.add_scalar(f"train/{key}", row[key], it)
        if it % cfg.eval_every == 0 or it == cfg.iterations:
            policy.eval()
            row.update(evaluate(policy, val, cfg.eval_samples, cfg.seed + 7))
            for key, value in row.items():
                if key.startswith("val_"):
                    writer.add_scalar(f"val/{key[4:]}", value, it)
            # selected: the best sampled plans, a greedy plan longer than HEFT's counted against it
            score = row["val_sampled_vs_heft"] + max(0.0, row["val_greedy_vs_heft"] - 1.0)
            if best is None or score < best[0]:
                best = (score, {k: v.detach().clone() for k, v in policy.state_dict().items()}, it)
            if report is not None:
                report(row)
        history.append(row)
        if cpu_seconds() - cpu0 > cfg.cpu_budget_s:
            break
    writer.close()
    if best is not None:
        policy.load_state_dict(best[1])
    policy.eval()
    from dagsched.rl.config_cli import command_line

    record = {
        "version": cfg.name,
        "training": {
            "algorithm": {
                "pomo": "POMO: REINFORCE on the Plackett-Luce log-likelihood, the K samples' mean as baseline",
                "slim": "SLIM: self-imitation of the best of K samples",
            }[cfg.method],
            "command": f"dagsched train-priority {command_line(cfg)}".strip(),
            "config": asdict(cfg),
            "selected_iteration": best[2] if best else it,
            "iterations_run": it,
            "cpu_s": round(cpu_seconds() - cpu0, 1),
            "wall_s": round(time.time() - wall0, 1),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "torch": torch.__version__,
            "training_families": list(TRAIN_FAMILIES),
            "training_recipes": list(TRAIN_RECIPES),
            "history": history,
        },
        "held_out_families": list(HELD_OUT),
    }
    save_run(policy, record, run_dir, cfg.model_out, history)
    return policy, record


def save_run(
    policy: PriorityPolicy, record: dict[str, Any], run_dir: Path, model_out: str | None, history: list[Any]
) -> None:
    """A finished run's files: the selected policy in the run's folder (and at `model_out` when given), its history."""
    save_priority_policy(policy, run_dir / "selected", record)
    if model_out:
        save_priority_policy(policy, model_out, record)
    (run_dir / "history.json").write_text(json.dumps(history))


def finetune(
    policy: PriorityPolicy,
    problems: list[CompiledProblem],
    passes: int,
    lr: float,
    seed: int,
    cfg: PriorityTrainConfig | None = None,
) -> tuple[PriorityPolicy, dict[str, float]]:
    """A copy of `policy` after `passes` passes of this trainer's updates over `problems` (cloud mode, as the
    service plans them), in batches of `cfg.batch` problems in a shuffled order each pass; `cfg` gives the method,
    K, the entropy bonus and the anchor (default: those drl-v3 was trained with). Returns the copy and the last
    pass's means (loss, entropy, best sample over HEFT)."""
    import copy

    cfg = cfg or replace(PriorityTrainConfig(), anchor=0.01)
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    new = copy.deepcopy(policy)
    opt = torch.optim.Adam(new.parameters(), lr=lr)
    prepared = [prepare_problem(cp, False) for cp in problems]
    stats: dict[str, float] = {}
    for _ in range(passes):
        new.train()
        rows: list[dict[str, float]] = []
        order = rng.permutation(len(prepared))
        for start in range(0, len(order), cfg.batch):
            batch = order[start : start + cfg.batch]
            opt.zero_grad()
            for i in batch:
                loss, row = problem_loss(new, prepared[int(i)], cfg, rng)
                (loss / len(batch)).backward()
                rows.append({**row, "loss": float(loss.detach())})
            torch.nn.utils.clip_grad_norm_(new.parameters(), cfg.grad_clip)
            opt.step()
        stats = {key: float(np.mean([r[key] for r in rows])) for key in ("loss", "entropy", "best_sample_vs_heft")}
    new.eval()
    stats["problems"] = float(len(prepared))
    return new, stats


def smoke_config() -> PriorityTrainConfig:
    """A run of seconds (tests, the CLI's --help example)."""
    return replace(PriorityTrainConfig(), iterations=4, batch=2, samples=4, stages=(20,), eval_every=2, eval_problems=2)

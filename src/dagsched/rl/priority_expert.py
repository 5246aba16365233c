"""Expert iteration for the priority policy of `drl`: a large-budget sampler labels problems with its best orders,
the network learns to put those orders first, and its scores centre the next generation's sampler.

One run (`dagsched train-priority --method expert ...`), in the order it runs: draw `expert_problems` training
problems once from the curriculum's largest stage (`min_tasks` to the last of `stages` tasks) and
`eval_problems` validation problems from the same distribution; then, for each of `expert_generations` generations:

1. teacher (`teach`): on each problem, the classic orders (HEFT's upward rank, PEFT's optimistic cost, CPOP's
   rank_u + rank_d) and the centre's greedy order, then `teacher_samples` Gumbel samples of the centre drawn in
   `teacher_rounds` cross-entropy rounds, each re-centred on the best orders of the one before
   (`schedulers.priority_sampling.sample_rounds`: the sampler `drl` plans with, at a budget tens of times
   larger); its `teacher_keep` best distinct orders are the labels. The centre is the untrained sampler's
   (`prior_scale` x rank_u / critical path) in the first generation and the network's scores after. Labels are
   cached on disk (`LabelCache`: one safetensors file per problem, teacher settings and centre), so a rerun
   labels nothing twice;
2. the labels are merged with the problem's earlier ones (the best distinct orders over every generation's teacher);
3. student: `epochs` passes of Adam (restarted each generation) over the problems in batches of `batch`, minimising
   the labels' negative Plackett-Luce log-likelihood per step (`priority_train.plackett_luce`, the same
   likelihood POMO and SLIM use), minus `entropy` x the mean entropy of the choice per step, plus `anchor` x the
   mean square of the network's learned part (what its head adds to the rank prior);
4. validation as in `priority_train.evaluate` (greedy and K-sample plans over HEFT, and untrained sampling with
   the same noise); the generation's weights are saved (`<out_dir>/<name>/generation-G`), and a rerun of the
   same command resumes after the last saved generation.

The weights kept are those of best validation (sampled makespan, a greedy plan longer than HEFT's counted
against it), the untrained start included. Sources: Anthony et al., expert iteration (NeurIPS 2017); Corsini et
al., self-labelling (SLIM, 2024), here against a teacher far stronger than the best of a few samples.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.numpy import load_file, save_file
from torch import Tensor

from dagsched.policy.priority_net import PriorityConfig, PriorityPolicy, load_priority_policy, save_priority_policy
from dagsched.rl.priority_config import PriorityTrainConfig
from dagsched.rl.priority_curriculum import HELD_OUT, TRAIN_FAMILIES, TRAIN_RECIPES, draw_problem
from dagsched.rl.priority_train import Prepared, cpu_seconds, evaluate, plackett_luce, prepare, save_run
from dagsched.schedulers.priority_sampling import sample_rounds
from dagsched.sim import listsched

# ---- the teacher and its labels -------------------------------------------------------------------------


@dataclass(frozen=True)
class TeacherSettings:
    """What a teacher's labels depend on besides the problem and the centre (part of the cache key)."""

    samples: int
    rounds: int
    elite: float
    keep: int
    step: float = 1.0

    @classmethod
    def of(cls, cfg: PriorityTrainConfig) -> TeacherSettings:
        return cls(cfg.teacher_samples, cfg.teacher_rounds, cfg.teacher_elite, cfg.teacher_keep)


@dataclass
class Labels:
    """A problem's best distinct orders, shortest first: orders (M, L), the step each task became ready at in each
    (M, n), and their planned makespans (M,)."""

    orders: np.ndarray
    ready_steps: np.ndarray
    spans: np.ndarray


def best_distinct(decodes: list[listsched.Decoded], keep: int) -> Labels:
    """The `keep` shortest distinct orders among `decodes` (equal makespans: the first decoded first)."""
    spans = np.concatenate([d.spans for d in decodes])
    orders = np.concatenate([d.orders for d in decodes])
    steps = np.concatenate([d.ready_steps for d in decodes])
    return _best_distinct(orders, steps, spans, keep)


def _best_distinct(orders: np.ndarray, steps: np.ndarray, spans: np.ndarray, keep: int) -> Labels:
    picked: list[int] = []
    seen: set[bytes] = set()
    for i in np.argsort(spans, kind="stable"):
        b = orders[i].tobytes()
        if b not in seen:
            seen.add(b)
            picked.append(int(i))
            if len(picked) == keep:
                break
    idx = np.asarray(picked, dtype=np.int64)
    return Labels(
        np.ascontiguousarray(orders[idx], dtype=np.int64),
        np.ascontiguousarray(steps[idx], dtype=np.int64),
        np.ascontiguousarray(spans[idx], dtype=np.float64),
    )


def merge(old: Labels | None, new: Labels, keep: int) -> Labels:
    """The `keep` best distinct orders of two label sets of one problem (the older first among equals)."""
    if old is None:
        return _best_distinct(new.orders, new.ready_steps, new.spans, keep)
    return _best_distinct(
        np.concatenate([old.orders, new.orders]),
        np.concatenate([old.ready_steps, new.ready_steps]),
        np.concatenate([old.spans, new.spans]),
        keep,
    )


def teach(p: Prepared, centre: np.ndarray, settings: TeacherSettings, seed: int) -> Labels:
    """The teacher's labels of one problem: the classic orders and the centre's greedy order, then
    `settings.samples` Gumbel samples around `centre` in `settings.rounds` cross-entropy rounds; the
    `settings.keep` shortest distinct orders."""
    inp = p.inputs
    fixed = np.vstack([inp.rank_u, inp.rank_oct, inp.rank_u + inp.rank_d, centre])
    decodes = [listsched.decode_many(p.decode, fixed)]
    rng = np.random.default_rng(seed)
    decodes += sample_rounds(
        p.decode, np.asarray(centre, dtype=np.float64), settings.samples, settings.rounds, settings.elite,
        settings.step, rng,
    )  # fmt: skip
    return best_distinct(decodes, settings.keep)


def label_key(p: Prepared, centre: np.ndarray, settings: TeacherSettings) -> str:
    """sha256 of the problem as the decoder and the network see it, the teacher's settings and its centre (to 1e-9)."""
    h = hashlib.sha256()
    ln = p.decode.lines
    # the timelines' segment buffers are allocated uninitialised past their used lengths: their counts (and every
    # problem array) are hashed, not the buffers; a training problem starts from an empty cluster at time 0
    skipped = {id(ln.seg_t), id(ln.seg_u), id(ln.pt_t), id(ln.pt_r)}
    arrays = [a for a in p.decode.args() if id(a) not in skipped]
    for a in (*arrays, p.inputs.x, p.inputs.edge_index):
        h.update(np.ascontiguousarray(a).tobytes() if isinstance(a, np.ndarray) else repr(a).encode())
    h.update(json.dumps(asdict(settings), sort_keys=True).encode())
    h.update(np.round(np.asarray(centre, dtype=np.float64), 9).tobytes())
    return h.hexdigest()


class LabelCache:
    """The teacher's labels on disk: `<folder>/<key>.safetensors` (orders, ready steps, spans); counts its hits
    and misses."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0

    def labels(self, p: Prepared, centre: np.ndarray, settings: TeacherSettings) -> Labels:
        """The cached labels of (`p`, `centre`, `settings`), or the teacher's, written to the cache first."""
        key = label_key(p, centre, settings)
        path = self.folder / f"{key}.safetensors"
        if path.exists():
            t = load_file(str(path))
            self.hits += 1
            return Labels(t["orders"], t["ready_steps"], t["spans"])
        self.misses += 1
        labels = teach(p, centre, settings, seed=int(key[:15], 16))
        tmp = path.with_name(f".{path.name}.tmp")
        save_file({"orders": labels.orders, "ready_steps": labels.ready_steps, "spans": labels.spans}, str(tmp))
        tmp.replace(path)
        return labels


# ---- the student ----------------------------------------------------------------------------------------


def expert_loss(
    policy: PriorityPolicy, p: Prepared, labels: Labels, entropy: float, anchor: float
) -> tuple[Tensor, dict[str, float]]:
    """The labels' negative Plackett-Luce log-likelihood per step (mean over the labels), minus `entropy` x the
    mean choice entropy, plus `anchor` x the mean square of the learned part; and (nll, entropy)."""
    scores, learned = policy.forward_parts(p.x, p.edge_index)
    logp, ent = plackett_luce(scores, labels.orders, labels.ready_steps)
    nll = -logp.mean() / labels.orders.shape[1]
    loss = nll - entropy * ent.mean() + anchor * learned.pow(2).mean()
    return loss, {"nll": float(nll.detach()), "entropy": float(ent.mean().detach())}


def fit(
    policy: PriorityPolicy,
    problems: list[Prepared],
    labels: list[Labels],
    cfg: PriorityTrainConfig,
    rng: np.random.Generator,
    cpu_limit_s: float = float("inf"),
) -> list[dict[str, float]]:
    """`cfg.epochs` passes of Adam over (problem, labels) pairs in shuffled batches of `cfg.batch`; each pass's mean
    loss, nll and entropy (stops early once the process has used `cpu_limit_s` CPU seconds)."""
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    policy.train()
    rows = []
    for _ in range(cfg.epochs):
        stats: list[dict[str, float]] = []
        order = rng.permutation(len(problems))
        for start in range(0, len(order), cfg.batch):
            batch = order[start : start + cfg.batch]
            opt.zero_grad()
            for i in batch:
                loss, row = expert_loss(policy, problems[int(i)], labels[int(i)], cfg.entropy, cfg.anchor)
                (loss / len(batch)).backward()
                stats.append({**row, "loss": float(loss.detach())})
            torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip)
            opt.step()
        rows.append({k: float(np.mean([s[k] for s in stats])) for k in ("loss", "nll", "entropy")})
        if cpu_seconds() > cpu_limit_s:
            break
    policy.eval()
    return rows


# ---- the loop -------------------------------------------------------------------------------------------


def _draws(cfg: PriorityTrainConfig, rng: np.random.Generator, n: int) -> list[Prepared]:
    size = (cfg.min_tasks, max(cfg.stages))
    return [
        prepare(draw_problem(rng, size, cfg.ccr, cfg.heterogeneity, cfg.nodes, cfg.recipe_share, cfg.classic_share))
        for _ in range(n)
    ]


def _untrained_centre(p: Prepared, prior_scale: float) -> np.ndarray:
    return np.asarray(p.inputs.rank_u / p.inputs.scale_s * prior_scale, dtype=np.float64)


class ResumeMismatch(ValueError):
    """A run's saved generation was trained with other settings than the run resuming it."""


RESUME_FREE = ("expert_generations", "cpu_budget_s", "out_dir", "name", "model_out", "label_cache", "iterations")
"""Settings a run may change when it resumes from saved generations (the rest decide what a generation trains)."""


def _resume_config(cfg: PriorityTrainConfig) -> dict[str, Any]:
    return {k: v for k, v in json.loads(json.dumps(asdict(cfg))).items() if k not in RESUME_FREE}


def _check_resumable(saved: dict[str, Any], cfg: PriorityTrainConfig, checkpoint: Path) -> None:
    """Refuse to resume from `checkpoint` when it was trained with other settings than `cfg` (naming them)."""
    now = _resume_config(cfg)
    differ = sorted(k for k in set(saved) | set(now) if saved.get(k) != now.get(k))
    if saved and differ:
        raise ResumeMismatch(
            f"{checkpoint}: saved by a run with other settings ({', '.join(differ)}); use another --name or "
            "--out-dir, or the same settings, to resume"
        )


def _selection_score(row: dict[str, Any]) -> float:
    return float(row["val_sampled_vs_heft"] + max(0.0, row["val_greedy_vs_heft"] - 1.0))


def train_expert(cfg: PriorityTrainConfig, report: Any = None) -> tuple[PriorityPolicy, dict[str, Any]]:
    """Expert iteration from `cfg` (see the module's docstring); returns the selected policy and its record.
    `report(metrics)` (optional) is called after each generation's validation."""
    from torch.utils.tensorboard import SummaryWriter

    from dagsched.rl.config_cli import command_line

    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    run_dir = Path(cfg.out_dir) / cfg.name
    run_dir.mkdir(parents=True, exist_ok=True)
    cache = LabelCache(cfg.label_cache or Path(cfg.out_dir) / "labels")
    settings = TeacherSettings.of(cfg)
    writer = SummaryWriter(str(run_dir / "tb"))
    policy = PriorityPolicy(PriorityConfig(hidden=cfg.hidden, layers=cfg.layers, prior_scale=cfg.prior_scale))
    policy.eval()
    cpu0, wall0 = cpu_seconds(), time.time()
    problems = _draws(cfg, rng, cfg.expert_problems)
    val = _draws(cfg, np.random.default_rng(cfg.seed + 10**6), cfg.eval_problems)
    start = {"generation": 0, **evaluate(policy, val, cfg.eval_samples, cfg.seed + 7)}
    history: list[dict[str, Any]] = [start]
    best: tuple[float, dict[str, Tensor], int] = (
        _selection_score(start),
        {k: v.detach().clone() for k, v in policy.state_dict().items()},
        0,
    )
    merged: list[Labels | None] = [None] * len(problems)
    generations_run = 0
    for r in range(1, cfg.expert_generations + 1):
        t_label = cpu_seconds()
        misses = cache.misses
        for i, p in enumerate(problems):
            centre = _untrained_centre(p, cfg.prior_scale) if r == 1 else policy.scores(p.inputs)
            merged[i] = merge(merged[i], cache.labels(p, centre, settings), settings.keep)
        labels = [m for m in merged if m is not None]
        teacher = float(np.mean([lab.spans[0] / p.heft_span for lab, p in zip(labels, problems, strict=True)]))
        checkpoint = run_dir / f"generation-{r}"
        if checkpoint.with_suffix(".safetensors").exists() and checkpoint.with_suffix(".json").exists():
            saved = load_priority_policy(checkpoint)
            _check_resumable(saved.meta.get("config", {}), cfg, checkpoint)
            policy.load_state_dict(saved.state_dict())
            row = dict(saved.meta["generation"])
        else:
            t_fit = cpu_seconds()
            epochs = fit(policy, problems, labels, cfg, np.random.default_rng([cfg.seed, r]), cpu0 + cfg.cpu_budget_s)
            row = {
                "generation": r,
                "teacher_vs_heft": teacher,
                "labelled": cache.misses - misses,
                "label_cpu_s": t_fit - t_label,
                "fit_cpu_s": cpu_seconds() - t_fit,
                "epochs": len(epochs),
                "loss_first": epochs[0]["loss"],
                "loss_last": epochs[-1]["loss"],
                "nll_last": epochs[-1]["nll"],
                "entropy_last": epochs[-1]["entropy"],
                "prior_rank_u": float(policy.prior.weight[0, 0].detach()),
                **evaluate(policy, val, cfg.eval_samples, cfg.seed + 7),
            }
            save_priority_policy(policy, checkpoint, {"generation": row, "config": _resume_config(cfg)})
        history.append(row)
        generations_run = r
        for key, value in row.items():
            if isinstance(value, float):
                writer.add_scalar(f"expert/{key}", value, r)
        if report is not None:
            report(row)
        if _selection_score(row) < best[0]:
            best = (_selection_score(row), {k: v.detach().clone() for k, v in policy.state_dict().items()}, r)
        if cpu_seconds() - cpu0 > cfg.cpu_budget_s:
            break
    writer.close()
    policy.load_state_dict(best[1])
    policy.eval()
    record = {
        "version": cfg.name,
        "training": {
            "algorithm": "expert iteration: the Plackett-Luce likelihood of a large-budget sampler's best orders, "
            "the trained scores centring the next generation's sampler",
            "command": f"dagsched train-priority {command_line(cfg)}".strip(),
            "config": asdict(cfg),
            "selected_generation": best[2],
            "generations_run": generations_run,
            "labels_cached": cache.hits,
            "labels_computed": cache.misses,
            "cpu_s": round(cpu_seconds() - cpu0, 1),
            "wall_s": round(time.time() - wall0, 1),
            "torch": torch.__version__,
            "training_families": list(TRAIN_FAMILIES),
            "training_recipes": list(TRAIN_RECIPES),
            "history": history,
        },
        "held_out_families": list(HELD_OUT),
    }
    save_run(policy, record, run_dir, cfg.model_out, history)
    return policy, record

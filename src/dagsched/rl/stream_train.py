"""Training the stream index (`drl_stream`): imitate srpt_hold's order, then evolution strategies on streams.

1. **Imitation.** srpt_hold runs on a few training streams; at each decision its order over the ready tasks is
   recorded with their features, and the score network is fitted to it by the Plackett-Luce likelihood of its
   first `imitation_positions` places (`plackett_luce_loss`). The hold margin starts at srpt_hold's 0.2 and the
   node head at the earliest finish, which is srpt_hold's rule exactly: the imitation start is srpt_hold up to
   how well the order was fitted. Its scores are then scaled to unit spread, so that one `sigma` suits all. The cap
   and admission heads start at the hand rules' values (`stream_index.lever_heads`: `fair_cap`'s cap, `srpt_admit`'s
   admission), so the imitation start is srpt_hold's order with those two levers.
2. **Evolution strategies with common random numbers.** Each generation draws `streams_per_generation` training
   streams (cluster, load in `load_range`, arrival process; seeds from `stream_seed0` up), and runs `pairs`
   antithetic pairs of parameter perturbations on each, every run of a stream with the same simulator seed
   (the same noise, stragglers and failures), so a pair's difference is the perturbation's doing. Fitness is
   the stream's steady-state mean completion time, rank-shaped per stream (`centred_ranks`); the gradient
   estimate (`es_gradient`) drives Adam. `es_params` names the parameters perturbed (the cap and admission heads
   by default, 42 of 254, a space ES can search in a few dozen generations; `all` for every one). Every
   `validation_every` generations the current parameters run on fixed validation streams beside srpt_hold; the
   best validated ones are kept.

Held out by construction: the training streams draw from `families` only (the default mix's other sources, the
WfChef recipes and the real traces, never), with `arrivals` only (diurnal never), from seeds `stream_seed0` up; the
weights' metadata names what was held out (`held_out`).

One command and a seed: `python -m dagsched.rl.stream_train --seed 0` (every `StreamTrainConfig` field is a
flag); it writes `<out>/imitation.safetensors`, `best.safetensors`, `last.safetensors`, `history.json` and
`curves.png`, and stops at `max_cpu_s` of CPU time.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dagsched.generate import cluster_preset
from dagsched.generate.streams import MIXES, Source, generate_stream
from dagsched.model import compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.policy.stream_index import LEVER_PARAMS, IndexNet, StreamContext
from dagsched.schedulers.base import Scheduler
from dagsched.schedulers.drl_stream import DRLStream
from dagsched.schedulers.srpt_hold import SRPTHold
from dagsched.sim.config import SimConfig, mode_settings
from dagsched.sim.decision import Decision, DecisionPoint
from dagsched.sim.engine import Simulator
from dagsched.sim.metrics import stream_metrics

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class StreamTrainConfig:
    """Everything a training run depends on; recorded in the weights' metadata."""

    seed: int = 0
    """seeds the streams drawn, the perturbations and the hidden layer's start"""
    out: str = "runs/stream-index"
    """folder of the run's weights, history and curves"""
    clusters: tuple[str, ...] = ("hetero-16", "homog-8")
    """cluster presets the training streams are drawn on"""
    workflows: tuple[int, ...] = (30, 30)
    """workflows per training stream on each of `clusters` (the suite's streams are 150 and 100)"""
    families: tuple[str, ...] = ("etl_star", "random", "ml_pipeline", "stages")
    """synthetic families of the training mix, at the default mix's sizes and weights (`stages` at 0.2); the
    default mix's others, its WfChef recipes and its real traces are kept for judging"""
    load_range: tuple[float, float] = (0.5, 0.95)
    """offered load of a training stream, drawn uniformly"""
    arrivals: tuple[str, ...] = ("poisson", "bursty")
    """arrival processes drawn from (diurnal and large-100 are kept for judging)"""
    stream_seed0: int = 10_000
    """training streams take seeds from here up (suite 1-10, held-out benches 101-999)"""
    hidden: int = 8
    """hidden units of the score network"""
    imitation_streams: int = 4
    """srpt_hold runs recorded for imitation"""
    imitation_decisions: int = 1500
    """at most this many decisions kept per recorded run (at random), each with at most 64 ready tasks"""
    imitation_positions: int = 8
    """Plackett-Luce places fitted per decision (srpt_hold's first ones)"""
    imitation_steps: int = 1500
    """full-batch Adam steps of the imitation fit"""
    imitation_lr: float = 0.05
    """Adam step size of the imitation fit"""
    generations: int = 60
    """ES generations at most (the CPU budget may stop it first)"""
    pairs: int = 4
    """antithetic perturbation pairs per stream and generation"""
    streams_per_generation: int = 4
    """training streams per generation, each run by every perturbation with one simulator seed"""
    es_params: tuple[str, ...] = LEVER_PARAMS
    """the parameters ES perturbs (the others stay at the imitation's); `all` for every one"""
    sigma: float = 0.1
    """standard deviation of the parameter perturbations"""
    lr: float = 0.03
    """Adam step size on the parameters"""
    validation_every: int = 5
    """generations between validations"""
    validation: tuple[str, ...] = (
        "hetero-16:0.85:poisson",
        "hetero-16:0.85:bursty",
        "homog-8:0.85:poisson",
        "homog-8:0.85:bursty",
        "hetero-16:0.6:poisson",
        "hetero-16:0.95:bursty",
        "homog-8:0.7:poisson",
        "homog-8:0.95:bursty",
    )
    """validation streams as cluster:load:arrival (seeds stream_seed0 + 5000 up, sizes as `workflows`)"""
    max_cpu_s: float = 2700.0
    """stop ES once the run has used this much CPU time (imitation and validation included)"""


# ---- pure pieces (tested) --------------------------------------------------------------------------------------


def centred_ranks(values: FloatArray) -> FloatArray:
    """Ranks mapped to [-0.5, 0.5] (lowest value -0.5): fitness shaping robust to one chaotic stream."""
    ranks = np.empty(len(values))
    ranks[np.argsort(values, kind="stable")] = np.arange(len(values))
    return ranks / max(len(values) - 1, 1) - 0.5


def es_gradient(eps: FloatArray, plus: FloatArray, minus: FloatArray, sigma: float) -> FloatArray:
    """Antithetic ES estimate of the gradient of the expected cost: eps (P, d) perturbations, plus/minus (S, P)
    costs per stream of theta +/- sigma eps, rank-shaped within each stream (its 2P runs share their noise)."""
    diff = np.zeros(eps.shape[0])
    for p_row, m_row in zip(plus, minus, strict=True):
        shaped = centred_ranks(np.concatenate([p_row, m_row]))
        diff += shaped[: len(p_row)] - shaped[len(p_row) :]
    return np.asarray(diff @ eps / (2.0 * sigma * eps.shape[0] * len(plus)), dtype=np.float64)


def plackett_luce_loss(scores: Any, mask: Any, positions: int) -> Any:
    """Mean negative log-likelihood of the first `positions` places of each row's order (rows hold the ready tasks
    in the teacher's order, padded where `mask` is False): -s_j + logsumexp(s_j, s_j+1, ...)."""
    import torch

    s = scores.masked_fill(~mask, -1e9)
    total, count = s.new_zeros(()), s.new_zeros(())
    for j in range(min(positions, s.shape[1] - 1)):
        valid = mask[:, j + 1]  # a place is informative only while something is left to rank below it
        nll = torch.logsumexp(s[:, j:], dim=1) - s[:, j]
        total = total + (nll * valid).sum()
        count = count + valid.sum()
    return total / count.clamp(min=1)


class Adam:
    """Adam on a parameter vector (Kingma and Ba, 2015), descending the gradient it is given."""

    def __init__(self, n: int, lr: float, beta1: float = 0.9, beta2: float = 0.999) -> None:
        self.lr, self.b1, self.b2 = lr, beta1, beta2
        self.m, self.v, self.t = np.zeros(n), np.zeros(n), 0

    def step(self, theta: FloatArray, grad: FloatArray) -> FloatArray:
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad**2
        m_hat, v_hat = self.m / (1 - self.b1**self.t), self.v / (1 - self.b2**self.t)
        return np.asarray(theta - self.lr * m_hat / (np.sqrt(v_hat) + 1e-8), dtype=np.float64)


# ---- streams and rollouts ----------------------------------------------------------------------------------------

SHARED = SimConfig(**mode_settings("shared"))


STAGES_WEIGHT = 0.2
"""Weight of the stage-structured analytics jobs in the training mix (the default mix's weights for the others)."""


def training_mix(families: Sequence[str]) -> list[Source]:
    """The default mix's synthetic sources of `families` (and the `stages` family at `STAGES_WEIGHT`)."""
    known = [s for s in (*MIXES["default"], *MIXES["stages"]) if s.kind == "synthetic"]
    sources = [s for s in known if s.names[0] in families]
    sources = [dataclasses.replace(s, weight=STAGES_WEIGHT) if s.names == ("stages",) else s for s in sources]
    missing = set(families) - {s.names[0] for s in sources}
    if missing:
        raise ValueError(f"families not in the synthetic mixes: {', '.join(sorted(missing))}")
    return sources


def training_stream(cfg: StreamTrainConfig, cluster: str, load: float, arrival: str, seed: int) -> CompiledProblem:
    n = cfg.workflows[cfg.clusters.index(cluster)] if cluster in cfg.clusters else cfg.workflows[0]
    stream = generate_stream(cluster_preset(cluster), n, load, arrival, seed=seed, mix=training_mix(cfg.families))
    return compile_problem(stream.problem())


def completion(cp: CompiledProblem, scheduler: Scheduler, seed: int) -> float:
    """Steady-state mean completion time of one run (the suite's objective)."""
    sim = Simulator(cp, SHARED, seed)
    scheduler.reset(cp, sim.decision_point(), seed)
    return float(stream_metrics(cp, sim.run(scheduler), SHARED).completion_mean)


class _Recorder(SRPTHold):
    """srpt_hold, recording at some decisions its order over the ready tasks with their features."""

    def __init__(self, keep: float, rng: np.random.Generator, width: int = 64) -> None:
        super().__init__()
        self.keep, self.rng, self.width = keep, rng, width
        self.rows: list[FloatArray] = []

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.ctx = StreamContext(cp)

    def decide(self, dp: DecisionPoint) -> Decision:
        self.view = dp
        return super().decide(dp)

    def order(self, ready: list[int]) -> Iterator[int]:
        served = list(super().order(ready))
        if len(served) >= 2 and self.rng.random() < self.keep:
            head, rest = served[:8], np.asarray(served[8:], dtype=np.int64)
            if len(rest) > self.width - 8:  # a sample of the rest, still in the teacher's order
                rest = rest[np.sort(self.rng.choice(len(rest), self.width - 8, replace=False))]
            tasks = np.concatenate([np.asarray(head, dtype=np.int64), rest])
            self.rows.append(self.ctx.features(self.view, tasks, self.left))
        yield from served


def imitate(cfg: StreamTrainConfig, net: IndexNet, rng: np.random.Generator) -> dict[str, float]:
    """Fit the score network to srpt_hold's order (in place); returns the fit's loss and top-1 agreement."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    rows: list[FloatArray] = []
    for i in range(cfg.imitation_streams):
        cluster = cfg.clusters[i % len(cfg.clusters)]
        load = float(rng.uniform(*cfg.load_range))
        cp = training_stream(cfg, cluster, load, cfg.arrivals[i % len(cfg.arrivals)], cfg.stream_seed0 + 9000 + i)
        rec = _Recorder(keep=1.0, rng=rng)
        completion(cp, rec, cfg.stream_seed0 + 9000 + i)
        keep = rng.permutation(len(rec.rows))[: cfg.imitation_decisions]
        rows += [rec.rows[k] for k in keep]
    width = max(len(r) for r in rows)
    x = np.zeros((len(rows), width, rows[0].shape[1]), dtype=np.float32)
    mask = np.zeros((len(rows), width), dtype=bool)
    for k, r in enumerate(rows):
        x[k, : len(r)], mask[k, : len(r)] = r, True
    xt, mt = torch.from_numpy(x), torch.from_numpy(mask)
    p = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True) for k, v in net.params.items()}
    fitted = ("w_lin", "w1", "b1", "w_out")
    opt = torch.optim.Adam([p[k] for k in fitted], lr=cfg.imitation_lr)

    def scores() -> Any:
        return xt @ p["w_lin"] + torch.tanh(xt @ p["w1"] + p["b1"]) @ p["w_out"]

    for _ in range(cfg.imitation_steps):
        opt.zero_grad()
        loss = plackett_luce_loss(scores(), mt, cfg.imitation_positions)
        loss.backward()
        opt.step()
    with torch.no_grad():
        s = scores()
        top1 = float((s.masked_fill(~mt, -1e9).argmax(dim=1) == 0).float().mean())
        spread = float(s[mt].std())
    for k in fitted:
        net.params[k] = p[k].detach().double().numpy() / (spread if k in ("w_lin", "w_out") else 1.0)
    return {"imitation_loss": float(loss.detach()), "imitation_top1": top1, "decisions": float(len(rows))}


def validate(cfg: StreamTrainConfig, net: IndexNet, problems: Sequence[tuple[CompiledProblem, int, float]]) -> float:
    """Mean over the validation streams of the net's mean completion / srpt_hold's on the same stream and seed."""
    return float(np.mean([completion(cp, DRLStream(net), seed) / base for cp, seed, base in problems]))


def train(cfg: StreamTrainConfig) -> IndexNet:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(cfg.seed)
    meta = {"config": dataclasses.asdict(cfg), "trained_on": _trained_on(cfg), "held_out": _held_out(cfg)}
    history: list[dict[str, Any]] = []

    def log(**row: Any) -> None:
        row.update(cpu_s=round(time.process_time() - cpu0, 1), wall_s=round(time.perf_counter() - wall0, 1))
        history.append(row)
        print(json.dumps(row), flush=True)
        (out / "history.json").write_text(json.dumps({"config": meta["config"], "history": history}, indent=1))

    net = IndexNet.initial(hidden=cfg.hidden, seed=cfg.seed)
    log(phase="imitation", **imitate(cfg, net, rng))
    problems = []
    for i, spec in enumerate(cfg.validation):
        cluster, load, arrival = spec.split(":")
        seed = cfg.stream_seed0 + 5000 + i
        cp = training_stream(cfg, cluster, float(load), arrival, seed)
        problems.append((cp, seed, completion(cp, SRPTHold(), seed)))
    best = validate(cfg, net, problems)
    net.save(out / "imitation.safetensors", stage="imitation of srpt_hold", validation_vs_srpt_hold=best, **meta)
    best_net, best_gen = net, 0
    log(phase="es", generation=0, validation=best)

    searched = np.concatenate(
        [np.full(net.params[k].size, cfg.es_params == ("all",) or k in cfg.es_params) for k in sorted(net.params)]
    )
    theta = net.flat()
    adam, done = Adam(len(theta), cfg.lr), 0
    for g in range(1, cfg.generations + 1):
        if time.process_time() - cpu0 > cfg.max_cpu_s:
            break
        done = g
        eps = rng.standard_normal((cfg.pairs, len(theta))) * searched
        plus, minus = (np.zeros((cfg.streams_per_generation, cfg.pairs)) for _ in range(2))
        for j in range(cfg.streams_per_generation):
            cluster = cfg.clusters[int(rng.integers(len(cfg.clusters)))]
            load, arrival = float(rng.uniform(*cfg.load_range)), cfg.arrivals[int(rng.integers(len(cfg.arrivals)))]
            seed = cfg.stream_seed0 + g * cfg.streams_per_generation + j
            cp = training_stream(cfg, cluster, load, arrival, seed)
            for i in range(cfg.pairs):
                plus[j, i] = completion(cp, DRLStream(net.with_flat(theta + cfg.sigma * eps[i])), seed)
                minus[j, i] = completion(cp, DRLStream(net.with_flat(theta - cfg.sigma * eps[i])), seed)
        grad = es_gradient(eps, plus, minus, cfg.sigma)
        theta = adam.step(theta, grad)
        row: dict[str, Any] = {"phase": "es", "generation": g, "grad_norm": float(np.linalg.norm(grad))}
        row["pair_spread"] = float(np.mean(np.abs(plus - minus) / (0.5 * (plus + minus))))
        if g % cfg.validation_every == 0:  # a checkpoint: a run stopped by hand keeps its best and last
            row["validation"] = validate(cfg, net.with_flat(theta), problems)
            if row["validation"] < best:
                best, best_net, best_gen = row["validation"], net.with_flat(theta), g
                best_net.save(out / "best.safetensors", stage=f"ES, best validated (generation {g})", **meta)
            net.with_flat(theta).save(out / "last.safetensors", stage=f"ES, generation {g}", **meta)
        log(**row)
    net.with_flat(theta).save(out / "last.safetensors", stage=f"ES, generation {done}", **meta)
    stage = f"ES, best validated (generation {best_gen}{': the imitation start' if best_gen == 0 else ''})"
    best_net.save(out / "best.safetensors", stage=stage, validation_vs_srpt_hold=best, **meta)
    plot_curves(out / "history.json", out / "curves.png")
    return best_net


def plot_curves(history_json: str | Path, png: str | Path) -> None:
    """Validation (mean completion / srpt_hold's) and the perturbation pairs' spread against CPU time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    record = json.loads(Path(history_json).read_text())
    rows = [h for h in record["history"] if h.get("phase") == "es"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    val = [(h["cpu_s"] / 60, h["validation"]) for h in rows if "validation" in h]
    a.plot(*zip(*val, strict=True), marker="o")
    a.axhline(1.0, color="grey", lw=0.8, ls="--")
    a.set_title("validation: mean completion / srpt_hold's", fontsize=9)
    spread = [(h["cpu_s"] / 60, h["pair_spread"]) for h in rows if "pair_spread" in h]
    if spread:
        b.plot(*zip(*spread, strict=True), marker=".", lw=0.8)
    b.set_title("|cost(+eps) - cost(-eps)| / mean, per generation", fontsize=9)
    for ax in (a, b):
        ax.set_xlabel("CPU minutes (imitation included)")
        ax.grid(alpha=0.3)
    fig.suptitle(f"drl_stream training, seed {record['config']['seed']}: srpt_hold imitation, then ES", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def _trained_on(cfg: StreamTrainConfig) -> str:
    return (
        f"streams of the families {', '.join(cfg.families)} on {', '.join(cfg.clusters)} "
        f"({', '.join(map(str, cfg.workflows))} workflows), offered load {cfg.load_range[0]}-{cfg.load_range[1]}, "
        f"{', '.join(cfg.arrivals)} arrivals, seeds {cfg.stream_seed0} and up"
    )


def _held_out(cfg: StreamTrainConfig) -> str:
    """What no training, imitation or validation stream drew from: families, arrivals, clusters, seeds."""
    seen = set(cfg.families)
    families = sorted({n for s in MIXES["default"] if s.kind == "synthetic" for n in s.names} - seen)
    return (
        f"families {', '.join(families)}, the WfChef recipes and the real traces of the default mix; arrivals "
        f"{', '.join(a for a in ('poisson', 'bursty', 'diurnal') if a not in cfg.arrivals)}; clusters other than "
        f"{', '.join(cfg.clusters)}; seeds below {cfg.stream_seed0}"
    )


def main() -> None:
    """`python -m dagsched.rl.stream_train --seed 0`: one option per `StreamTrainConfig` field, its docstring
    the help (`dagsched.rl.config_cli`)."""
    import typer

    from dagsched.rl.config_cli import command_from_config

    def run(cfg: StreamTrainConfig) -> None:
        train(cfg)

    typer.run(command_from_config(StreamTrainConfig, run))


if __name__ == "__main__":
    main()

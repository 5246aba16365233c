"""Train the scheduling policy: DAgger on a teacher (HEFT, rollout, expert iteration), then PPO or A2C on RLlib.

Reads top to bottom in the order it runs (`train`):

1. workloads: the training families (synthetic families and WfCommons recipes) on preset and
   random clusters, classic and cloud mode with noise; a curriculum of task-count stages from
   small to large DAGs. The held-out families never appear here (see `TrainConfig.held_out`).
2. imitation warm start (`dagsched.rl.imitation`): DAgger rounds with the configured teacher
   (`TrainConfig.teacher`: HEFT from here, rollout over base heuristics, expert iteration with the
   learner as one more base, or node rollout for the rank_node action space), in
   `dagsched/Scheduling-v0`; the value head learns returns-to-go.
   Pure RL from scratch rarely beats HEFT on static DAGs (DESIGN.md, "Learned policy").
3. fine-tuning on RLlib's new API stack through `SchedulingRLModule`, starting from the imitation
   weights, one algorithm per curriculum stage (weights carried over), rewards relative to HEFT
   (`EnvConfig.baseline="heft"`). RLlib 2.60 no longer ships A2C (it moved out of RLlib in 2.x),
   so `algo="a2c"` is PPO with one epoch over one full-batch minibatch, no clipping
   (`clip_param` 1e9) and no KL term: the plain advantage actor-critic gradient.
4. after each round or iteration: validation (makespan of the greedy `drl` scheduler / HEFT's on
   the same problems and seeds, through `simulate`), TensorBoard scalars under `runs/<name>/tb`,
   a checkpoint (`runs/<name>/checkpoint/policy.safetensors` + `state.json`); `resume=True`
   continues from it (the DAgger buffer and the optimiser's moments start afresh).
5. the best validated policy is written to `model_out` with a `training` record in its JSON.

`torch.set_num_threads(1)` everywhere: two threads on two cores made inference 5-20x slower.
"""

from __future__ import annotations

import json
import math
import resource
import shlex
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dagsched.model.compiled import CompiledProblem, compile_problem
from dagsched.model.entities import Problem
from dagsched.policy.files import load_policy, save_policy
from dagsched.policy.gnn import PolicyConfig, SchedulingPolicy
from dagsched.rl.env import SchedulingEnv
from dagsched.rl.imitation import Sample, dagger_round
from dagsched.rl.train_config import MODES, TrainConfig
from dagsched.sim.config import SimConfig

# ---- workloads --------------------------------------------------------------------------------


def env_fields(cfg: TrainConfig, stage: tuple[int, int], cluster: str, mode: str, slack: int = 1) -> dict[str, Any]:
    """EnvConfig fields of one (stage, cluster, mode); `slack` multiplies the padded sizes (recipes overshoot)."""
    families = tuple(f for f in cfg.families if cluster != "random" or f != "ml_pipeline")
    if cluster == "small-3":
        families = families or cfg.families
    fields_: dict[str, Any] = {
        "families": families,
        "n_tasks": stage,
        "cluster": None if cluster == "random" else cluster,
        "random_nodes": (2, 16),
        "ccr_range": cfg.ccr_range,
        "heterogeneity": cfg.heterogeneity,
        "max_tasks": stage[1] * slack,
        "max_edges": 16 * stage[1] * slack,
        "max_nodes": 16,
        "max_candidates": cfg.max_candidates,
        "sim": MODES[mode],
    }
    return fields_


def recipe_pool(cfg: TrainConfig, stage: tuple[int, int], rng: np.random.Generator) -> list[Problem]:
    """Two WfCommons recipe workflows per training recipe whose smallest size fits the stage, on hetero-16."""
    if not cfg.recipes:
        return []
    from dagsched.generate import cluster_preset
    from dagsched.generate.recipes import min_tasks, recipe_workflow

    cluster = cluster_preset("hetero-16")
    pool = []
    for recipe in cfg.recipes:
        lo = max(stage[0], min_tasks(recipe))
        if lo > stage[1]:
            continue
        for _ in range(2):
            n = int(rng.integers(lo, stage[1] + 1))
            wf = recipe_workflow(recipe, n, int(rng.integers(2**31)))
            if len(wf.tasks) <= 2 * stage[1]:
                pool.append(Problem(name=f"{recipe}-{n}", workflows=[wf], cluster=cluster))
    return pool


def validation_set(cfg: TrainConfig) -> list[tuple[CompiledProblem, SimConfig, int]]:
    """Fixed problems of the training families on hetero-16 in each mode (seeds far from training's)."""
    from dagsched.generate import cluster_preset, generate_workflow

    cluster = cluster_preset("hetero-16")
    out = []
    for mode in cfg.modes:
        for fam in cfg.families:
            for i in range(cfg.eval_problems):
                seed = 900_000 + 7 * i
                wf = generate_workflow(fam, cfg.eval_tasks, seed)
                cp = compile_problem(Problem(name=f"val-{fam}-{i}", workflows=[wf], cluster=cluster))
                out.append((cp, SimConfig(**MODES[mode]), seed))
    return out


def validate(policy: SchedulingPolicy, problems: list[tuple[CompiledProblem, SimConfig, int]]) -> float:
    """Mean over the problems of the greedy drl scheduler's makespan / HEFT's (same problem and seed)."""
    from dagsched.schedulers import simulate
    from dagsched.schedulers.drl import DRLScheduler

    ratios = []
    for cp, sim_cfg, seed in problems:
        drl = simulate(cp, DRLScheduler(policy=policy), sim_cfg, seed, validate=False).metrics.makespan
        heft = simulate(cp, "heft", sim_cfg, seed, validate=False).metrics.makespan
        ratios.append(drl / heft)
    return float(np.mean(ratios))


# ---- checkpoints --------------------------------------------------------------------------------


def save_checkpoint(cfg: TrainConfig, policy: SchedulingPolicy, state: dict[str, Any]) -> None:
    ckpt = cfg.run_dir / "checkpoint"
    save_policy(policy, ckpt / "policy")
    if state.get("best_ratio") is not None and state.get("best_is_current"):
        save_policy(policy, ckpt / "best")
    (ckpt / "state.json").write_text(json.dumps(state, indent=2) + "\n")


def load_checkpoint(cfg: TrainConfig) -> tuple[SchedulingPolicy, dict[str, Any]] | None:
    ckpt = cfg.run_dir / "checkpoint"
    if not (ckpt / "state.json").exists():
        return None
    return load_policy(ckpt / "policy"), json.loads((ckpt / "state.json").read_text())


# ---- the run ------------------------------------------------------------------------------------


class _Log:
    """TensorBoard scalars, a Rich progress bar, and the history kept in the checkpoint."""

    def __init__(self, cfg: TrainConfig, total: int, done: int) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(cfg.run_dir / "tb"))
        self.progress: Any = None
        if cfg.progress:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("return {task.fields[ret]}  eval makespan / HEFT {task.fields[ratio]}"),
                TimeElapsedColumn(),
            )
            self.progress.start()
            self.task = self.progress.add_task("train", total=total, completed=done, ret="-", ratio="-")

    def step(self, phase: str, step: int, scalars: dict[str, float]) -> None:
        for key, value in scalars.items():
            if isinstance(value, int | float) and math.isfinite(float(value)):
                self.writer.add_scalar(f"{phase}/{key}", float(value), step)
        self.writer.flush()
        if self.progress is not None:
            self.progress.update(
                self.task,
                advance=1,
                description=phase,
                ret=f"{scalars.get('episode_return', float('nan')):.3f}",
                ratio=f"{scalars.get('eval_ratio', float('nan')):.3f}",
            )

    def close(self) -> None:
        self.writer.close()
        if self.progress is not None:
            self.progress.stop()


def _stage_of(i: int, n_items: int, n_stages: int) -> int:
    return min(i * n_stages // max(n_items, 1), n_stages - 1)


def train(cfg: TrainConfig, command: str | None = None) -> dict[str, Any]:
    """Run imitation then RL fine-tuning as configured; returns the training record."""
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    t_start = time.perf_counter()
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    resumed = load_checkpoint(cfg) if cfg.resume else None
    if resumed is not None:
        policy, state = resumed
    else:
        policy = load_policy(cfg.init_policy) if cfg.init_policy else SchedulingPolicy(cfg.policy_config())
        state = {"round": 0, "rl_iteration": 0, "elapsed_s": 0.0, "best_ratio": None, "history": []}
    elapsed0 = float(state["elapsed_s"])
    val = validation_set(cfg)
    log = _Log(cfg, cfg.imitation_rounds + cfg.rl_iterations, state["round"] + state["rl_iteration"])

    def checkpoint(phase: str, step: int, scalars: dict[str, float]) -> None:
        scalars["eval_ratio"] = validate(policy, val)
        best = state["best_ratio"]
        state["best_is_current"] = best is None or scalars["eval_ratio"] < best
        if state["best_is_current"]:
            state["best_ratio"] = scalars["eval_ratio"]
            state["best_at"] = f"{phase} step {step}"
        state["elapsed_s"] = elapsed0 + time.perf_counter() - t_start
        scalars["elapsed_s"] = state["elapsed_s"]
        state["history"].append({"phase": phase, "step": step, **scalars})
        save_checkpoint(cfg, policy, state)
        log.step(phase, step, scalars)

    # ---- 1-2. imitation warm start (DAgger from HEFT-from-here) ----
    rng = np.random.default_rng([cfg.seed, state["round"]])
    optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    buffer: list[Sample] = []
    n_stages = len(cfg.stages)
    pools: dict[int, list[Problem]] = {}
    t_imit = time.perf_counter()
    while state["round"] < cfg.imitation_rounds and time.perf_counter() - t_imit < cfg.imitation_budget_s:
        r = state["round"]
        s = _stage_of(r, cfg.imitation_rounds, n_stages)
        stage = cfg.stages[s]
        if s not in pools:
            pools[s] = recipe_pool(cfg, stage, rng)
        envs = {
            (cl, mode): SchedulingEnv(env_fields(cfg, stage, cl, mode, slack=2))
            for cl in cfg.clusters
            for mode in cfg.modes
        }
        beta = max(cfg.beta_min, 1.0 - r / max(cfg.imitation_rounds - 1, 1) * (1.0 - cfg.beta_min))

        def episodes(
            pool: list[Problem] = pools[s], envs: dict[tuple[str, str], SchedulingEnv] = envs
        ) -> Iterator[tuple[SchedulingEnv, int, dict[str, Any] | None]]:
            for _ in range(cfg.episodes_per_round):
                seed = int(rng.integers(2**31))
                mode = cfg.modes[int(rng.integers(len(cfg.modes)))]
                options = None
                if pool and rng.random() < cfg.recipe_share:
                    env = envs[("hetero-16", mode)] if ("hetero-16", mode) in envs else next(iter(envs.values()))
                    options = {"problem": pool[int(rng.integers(len(pool)))]}
                else:
                    cl = cfg.clusters[int(rng.integers(len(cfg.clusters)))]
                    env = envs[(cl, mode)]
                yield env, seed, options

        stats, infos = dagger_round(
            policy,
            optimizer,
            episodes(),
            beta,
            rng,
            buffer,
            cfg.epochs,
            cfg.batch_size,
            cfg.buffer_size,
            r > 0,
            teacher_kind=cfg.teacher,
        )
        returns = [info["return"] for info in infos]
        ratios = [info["makespan"] / info["baseline"]["makespan_s"] for info in infos if "makespan" in info]
        wins: dict[str, int] = {}
        for info in infos:
            for base, n in info.get("teacher_wins", {}).items():
                wins[base] = wins.get(base, 0) + n
        state["round"] = r + 1
        scalars = {
            **stats,
            "episode_return": float(np.mean(returns)),
            "rollout_makespan_over_baseline": float(np.mean(ratios)) if ratios else math.nan,
            "beta": beta,
            "buffer": float(len(buffer)),
            "stage_max_tasks": float(stage[1]),
        }
        for base, n in wins.items():  # expert iteration's measure of progress: how often the learner's own was best
            scalars[f"teacher_share_{'learner' if base == 'drl' else base}"] = n / sum(wins.values())
        checkpoint("imitation", r + 1, scalars)
    state["round"] = max(state["round"], cfg.imitation_rounds)  # a spent budget ends the phase for good

    # ---- 3. RL fine-tuning on RLlib ----
    if cfg.rl_iterations > state["rl_iteration"]:
        rl_action_space(policy.config)  # refuses an action space the environment cannot sample
        rl_fine_tune(cfg, policy, state, checkpoint)

    # ---- 5. the best validated policy is the result ----
    best_path = cfg.run_dir / "checkpoint" / "best"
    final = load_policy(best_path) if best_path.with_suffix(".safetensors").exists() else policy
    model_out = Path(cfg.model_out) if cfg.model_out else cfg.run_dir / "policy"
    weights, meta_path = save_policy(final, model_out)
    record = {
        "command": command or "dagsched.rl.train.train(...)",
        "seed": cfg.seed,
        "wall_time_s": round(float(state["elapsed_s"]), 1),
        "algorithm": ", then ".join(
            ([f"from {cfg.init_policy}"] if cfg.init_policy else [])
            + ([_TEACHER_TEXT[cfg.teacher]] if cfg.imitation_rounds else [])
            + ([f"{cfg.algo.upper()} (RLlib {_ray_version()})"] if cfg.rl_iterations else [])
        ),
        "training_families": list(cfg.families),
        "training_recipes": list(cfg.recipes),
        "held_out_families": [*cfg.held_out, "all real WfCommons traces"],
        "curriculum": [list(s) for s in cfg.stages],
        "modes": list(cfg.modes),
        "clusters": list(cfg.clusters),
        "validation_makespan_over_heft": state["best_ratio"],
        "selected_checkpoint": state.get("best_at", "last"),
        "config": {f.name: _jsonable(getattr(cfg, f.name)) for f in fields(cfg)},
        "history": [_compact(h) for h in state["history"]],
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "torch": torch.__version__,
    }
    meta = json.loads(meta_path.read_text())
    meta["training"] = record
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    log.close()
    return {"weights": str(weights), **record}


_TEACHER_TEXT = {
    "heft": "DAgger imitation of HEFT-from-here",
    "rollout": "DAgger imitation of rollout over heft, peft, min_min, sjf_cp from here",
    "expert": "Expert iteration: DAgger on rollout over heft, peft, min_min, sjf_cp and the learner itself",
    "node_rollout": "DAgger on node rollout (rank_node action space: near-best nodes tried, completed by heft, peft)",
}

_HISTORY_KEYS = (
    "phase",
    "step",
    "eval_ratio",
    "episode_return",
    "accuracy",
    "bc_loss",
    "value_loss",
    "beta",
    "buffer",
    "stage_max_tasks",
    "teacher_share_learner",
    "teacher_share_heft",
    "teacher_share_wait",
    "elapsed_s",
    "learners/default_policy/policy_loss",
    "learners/default_policy/mean_kl_loss",
    "learners/default_policy/entropy",
    "learners/default_policy/vf_explained_var",
)


def _compact(h: dict[str, Any]) -> dict[str, Any]:
    """The few diagnostics of one round or iteration worth keeping beside a shipped model."""
    return {k.split("/")[-1]: round(v, 4) if isinstance(v, float) else v for k, v in h.items() if k in _HISTORY_KEYS}


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def _ray_version() -> str:
    try:
        import ray

        return str(ray.__version__)
    except ImportError:  # pragma: no cover
        return "?"


# ---- RLlib ----------------------------------------------------------------------------------------


def _make_env(env_config: dict[str, Any]) -> SchedulingEnv:
    torch.set_num_threads(1)
    return SchedulingEnv(dict(env_config))


def build_algorithm(cfg: TrainConfig, policy_config: PolicyConfig, env_config: dict[str, Any]) -> Any:
    """The RLlib Algorithm (PPO, or A2C as one-epoch unclipped PPO) on `dagsched/Scheduling-v0`."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.tune.registry import register_env

    from dagsched.rl.rllib_module import SchedulingRLModule

    register_env("dagsched-scheduling", _make_env)
    a2c = cfg.algo == "a2c"
    config = (
        PPOConfig()
        .environment("dagsched-scheduling", env_config=env_config)
        .env_runners(num_env_runners=cfg.env_runners, num_envs_per_env_runner=cfg.envs_per_runner)
        .learners(num_learners=0)
        .training(
            lr=cfg.rl_lr,
            gamma=cfg.gamma,
            lambda_=0.95,
            train_batch_size_per_learner=cfg.rl_batch,
            minibatch_size=cfg.rl_batch if a2c else min(cfg.rl_minibatch, cfg.rl_batch),
            num_epochs=1 if a2c else cfg.rl_epochs,
            clip_param=1e9 if a2c else cfg.clip_param,
            use_kl_loss=not a2c,
            kl_coeff=0.0 if a2c else 0.2,
            entropy_coeff=cfg.entropy_coeff,
            vf_loss_coeff=0.5,
            vf_clip_param=1e9,
            grad_clip=1.0,
        )
        .rl_module(
            rl_module_spec=RLModuleSpec(module_class=SchedulingRLModule, model_config={"policy": asdict(policy_config)})
        )
        .debugging(seed=cfg.seed)
    )
    return config.build_algo()


def set_algorithm_weights(algo: Any, policy: SchedulingPolicy) -> None:
    """Load `policy`'s weights into the learner's module and push them to every env runner."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    weights = {f"policy.{k}": v.detach().clone() for k, v in policy.state_dict().items()}
    algo.learner_group.set_weights({DEFAULT_MODULE_ID: weights})
    algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group, inference_only=True)


def algorithm_policy(algo: Any, policy_config: PolicyConfig) -> SchedulingPolicy:
    """A plain SchedulingPolicy (no Ray) holding the learner's current weights."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    weights = algo.learner_group.get_weights()[DEFAULT_MODULE_ID]
    state = {k.removeprefix("policy."): torch.as_tensor(np.asarray(v)) for k, v in weights.items()}
    policy = SchedulingPolicy(policy_config)
    policy.load_state_dict(state)
    policy.eval()
    return policy


def _flat(prefix: str, d: Any, out: dict[str, float]) -> None:
    if isinstance(d, dict):
        for k, v in d.items():
            _flat(f"{prefix}/{k}" if prefix else str(k), v, out)
    elif isinstance(d, int | float | np.floating | np.integer) and not isinstance(d, bool):
        out[prefix] = float(d)


def rl_action_space(config: PolicyConfig) -> str:
    """The environment's action space that samples what `config.action_space` decodes on one workflow: `pair`, or
    `rank_node` (the first startable task's node, or wait); the others have no per-step distribution to sample."""
    from dagsched.schedulers.drl import resolve_action

    action = resolve_action(str(config.action_space), one_workflow=True)
    if action not in ("pair", "rank_node"):
        raise ValueError(f"RL fine-tuning samples pair or rank_node actions; the policy decodes {action!r}")
    return action


def rl_fine_tune(cfg: TrainConfig, policy: SchedulingPolicy, state: dict[str, Any], checkpoint: Any) -> None:
    """RLlib iterations over the last `rl_stages` curriculum stages, rebuilding the algorithm per stage."""
    import ray

    if not ray.is_initialized():
        ray.init(address=cfg.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    stages = cfg.stages[-cfg.rl_stages :]
    t0 = time.perf_counter()
    algo = None
    current = -1
    while state["rl_iteration"] < cfg.rl_iterations and time.perf_counter() - t0 < cfg.rl_budget_s:
        it = state["rl_iteration"]
        s = _stage_of(it, cfg.rl_iterations, len(stages))
        if s != current:
            if algo is not None:
                policy.load_state_dict(algorithm_policy(algo, policy.config).state_dict())
                algo.stop()
            env_config = env_fields(cfg, stages[s], cfg.rl_cluster, cfg.rl_mode)
            env_config["action_space"] = rl_action_space(policy.config)
            if cfg.rl_reward is not None:
                env_config["reward"] = dict(cfg.rl_reward)
            algo = build_algorithm(cfg, policy.config, env_config)
            set_algorithm_weights(algo, policy)
            current = s
        result = algo.train()
        policy.load_state_dict(algorithm_policy(algo, policy.config).state_dict())
        state["rl_iteration"] = it + 1
        scalars: dict[str, float] = {}
        _flat("", {"env_runners": result.get("env_runners", {}), "learners": result.get("learners", {})}, scalars)
        scalars = {k: v for k, v in scalars.items() if "timer" not in k and "throughput" not in k.lower()}
        scalars["episode_return"] = scalars.get("env_runners/episode_return_mean", math.nan)
        scalars["stage_max_tasks"] = float(stages[s][1])
        checkpoint(cfg.algo, it + 1, scalars)
    if algo is not None:
        algo.stop()


def main_command() -> str:
    return "dagsched " + " ".join(shlex.quote(a) for a in sys.argv[1:])

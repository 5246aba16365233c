"""The per-decision policy trainer's settings, apart from the trainer so a command line can be built without torch."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dagsched.sim.config import mode_settings

if TYPE_CHECKING:
    from dagsched.policy.gnn import PolicyConfig


MODES: dict[str, dict[str, Any]] = {name: mode_settings(name) for name in ("classic", "cloud")}
"""Simulator settings of the two modes (the benchmark's `classic` and `cloud`)."""


@dataclass
class TrainConfig:
    """Everything a training run depends on; recorded in the checkpoint and the shipped model's JSON."""

    name: str = "drl"
    """run name: logs and checkpoints go to <out_dir>/<name>/"""
    out_dir: str = "runs"
    """root folder of TensorBoard logs and checkpoints"""
    model_out: str | None = None
    """stem of the final policy (.safetensors + .json); default <out_dir>/<name>/policy"""
    seed: int = 0
    """seeds torch, numpy and every episode drawn"""
    families: tuple[str, ...] = ("layered", "random", "ml_pipeline")
    """synthetic families trained on"""
    recipes: tuple[str, ...] = ("blast", "bwa", "cycles", "seismology", "soykb")
    """WfCommons recipes trained on (imitation only: the RLlib env draws synthetic families)"""
    held_out: tuple[str, ...] = ("etl_star", "montage", "epigenomics", "1000genome", "srasearch", "nextflow")
    """families never trained on, kept for generalisation evaluation (with every real trace)"""
    stages: tuple[tuple[int, int], ...] = ((10, 30), (20, 60), (40, 100))
    """curriculum: inclusive task-count ranges, small to large"""
    clusters: tuple[str, ...] = ("hetero-16", "small-3", "random")
    """cluster presets drawn from ('random': a random cluster of 2-16 nodes)"""
    ccr_range: tuple[float, float] | None = field(default=None, metadata={"flag": "ccr"})
    """draw each synthetic workflow's CCR log-uniformly from this range, LO-HI (none: the env's fixed 0.5)"""
    heterogeneity: float = 0.5
    """heterogeneity of the random clusters (1: node speeds spread most)"""
    modes: tuple[str, ...] = ("classic", "cloud")
    """simulator modes drawn from"""
    hidden: int = 32
    """policy embedding width"""
    layers: int = 2
    """message-passing rounds"""
    conv: Literal["gat", "gcn"] = "gat"
    """graph layer"""
    max_candidates: int = 16
    """K: ready tasks offered per decision"""
    imitation_rounds: int = 12
    """DAgger rounds in all, split evenly over the stages"""
    episodes_per_round: int = 16
    """episodes played per DAgger round"""
    recipe_share: float = 0.25
    """share of imitation episodes on a WfCommons recipe workflow"""
    epochs: int = 2
    """passes over the buffer per round"""
    batch_size: int = 64
    """minibatch size of behaviour cloning"""
    lr: float = 1e-3
    """Adam learning rate of imitation"""
    beta_min: float = 0.1
    """DAgger: the teacher acts with probability 1 in the first round, decaying linearly to this"""
    teacher: Literal["heft", "rollout", "expert", "node_rollout"] = "heft"
    """DAgger's teacher: HEFT from here; rollout over base heuristics from here (better than HEFT, slower);
    expert iteration, rollout over the base heuristics and the round's policy itself; or node_rollout, which
    trains a policy of the `rank_node` action space (the node of the highest-ranked startable task)"""
    buffer_size: int = 40000
    """DAgger aggregate, oldest dropped first"""
    imitation_budget_s: float = math.inf
    """stop imitation after this many seconds"""
    algo: Literal["ppo", "a2c"] = "ppo"
    """RL fine-tuning algorithm (a2c: PPO with one epoch and no clipping)"""
    rl_iterations: int = 0
    """RLlib iterations in all, split over the last `rl_stages` stages (0: imitation only)"""
    rl_stages: int = 2
    """how many of the largest curriculum stages RL fine-tunes on"""
    rl_budget_s: float = math.inf
    """stop RL fine-tuning after this many seconds"""
    rl_lr: float = 3e-5
    """RL learning rate (small: the imitation policy is a good start)"""
    rl_batch: int = 1000
    """env steps per RLlib iteration"""
    rl_minibatch: int = 250
    """PPO minibatch (at most `rl_batch`)"""
    rl_epochs: int = 4
    """PPO epochs per iteration"""
    clip_param: float = 0.2
    """PPO clip"""
    entropy_coeff: float = 0.001
    """entropy bonus"""
    gamma: float = 0.999
    """discount (the per-step rewards sum to the episode objective)"""
    rl_mode: str = "cloud"
    """simulator mode of the RLlib env"""
    rl_cluster: str = "hetero-16"
    """cluster of the RLlib env: a preset name, or 'random' (2-16 nodes of `heterogeneity`)"""
    init_policy: str | None = None
    """start from this saved policy (stem of .safetensors + .json) instead of a fresh network"""
    rl_reward: dict[str, float] | None = None
    """weights of the RLlib env's reward terms (`sim.objective.ObjectiveWeights` fields; None: its defaults)"""
    env_runners: int = 0
    """remote RLlib env runners (0: sample in the driver)"""
    envs_per_runner: int = 4
    """environments per env runner"""
    address: str | None = None
    """Ray cluster address (None: a local Ray)"""
    eval_problems: int = 3
    """validation problems per (mode, family) after each round"""
    eval_tasks: int = 50
    """tasks of each validation problem"""
    resume: bool = False
    """continue from <out_dir>/<name>/checkpoint"""
    progress: bool = True
    """show a Rich progress bar"""

    def __post_init__(self) -> None:
        from pydantic import ValidationError

        from dagsched.generate.clusters import PRESETS
        from dagsched.sim.objective import ObjectiveWeights

        if self.ccr_range is not None and not 0 < self.ccr_range[0] <= self.ccr_range[1]:
            raise ValueError(f"--ccr must be LO-HI with 0 < LO <= HI, e.g. 0.1-10, got {self.ccr_range}")
        if not self.stages or any(not 1 <= lo <= hi for lo, hi in self.stages):
            raise ValueError(f"--stages must be LO-HI task ranges with 1 <= LO <= HI, got {self.stages}")
        if not 0.0 <= self.heterogeneity <= 1.0:
            raise ValueError(f"--heterogeneity must be between 0 and 1, got {self.heterogeneity:g}")
        if self.rl_cluster != "random" and self.rl_cluster not in PRESETS:
            raise ValueError(f"--rl-cluster must be random or one of {', '.join(PRESETS)}, got {self.rl_cluster!r}")
        if self.rl_mode not in MODES:
            raise ValueError(f"--rl-mode must be one of {', '.join(MODES)}, got {self.rl_mode!r}")
        if self.init_policy is not None and not Path(self.init_policy + ".safetensors").exists():
            raise ValueError(f"--init-policy: no {self.init_policy}.safetensors")
        if self.rl_reward is not None:
            try:
                ObjectiveWeights(**self.rl_reward)
            except ValidationError as e:
                err = e.errors()[0]
                raise ValueError(f"--rl-reward: {'.'.join(str(x) for x in err['loc'])}: {err['msg']}") from None

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.name

    def policy_config(self) -> PolicyConfig:
        from dagsched.policy.gnn import PolicyConfig
        from dagsched.rl.imitation import TEACHER_ACTION_SPACE

        action_space = TEACHER_ACTION_SPACE[self.teacher]
        return PolicyConfig(hidden=self.hidden, layers=self.layers, conv=self.conv, heads=2, action_space=action_space)

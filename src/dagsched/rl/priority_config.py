"""The priority policy trainer's settings, apart from the trainer so a command line can be built without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class PriorityTrainConfig:
    """Train the priority policy of `drl` (learned task priorities, sampled, decoded by list scheduling)."""

    seed: int = 1
    """seed of everything drawn (problems, noise, the network's initialisation)"""
    method: Literal["pomo", "slim", "expert"] = "pomo"
    """pomo: policy gradient, the K samples' mean as baseline; slim: self-imitation of the best sample; expert: expert
    iteration, the Plackett-Luce likelihood of a large-budget sampler's best orders (`rl.priority_expert`)"""
    iterations: int = 1500
    """updates (each over `batch` problems)"""
    cpu_budget_s: float = 3600.0
    """stop once the process has used this much CPU time (seconds, all threads)"""
    batch: int = 4
    """problems per update"""
    samples: int = 16
    """K: Gumbel-perturbed plans per problem"""
    lr: float = 3e-4
    """Adam learning rate"""
    entropy: float = 0.0
    """weight of the mean per-step entropy bonus"""
    anchor: float = 0.0
    """weight of the mean square of the network's learned part (its head's output, what it adds to the prior): keeps
    the scores near the prior unless the samples agree on a change"""
    advantage: Literal["heft", "std"] = "heft"
    """pomo's advantage unit: HEFT's makespan on the problem, or the samples' standard deviation (each problem's
    samples then weigh alike however far apart their makespans are)"""
    hidden: int = 64
    """the network's width"""
    layers: int = 3
    """message-passing rounds"""
    prior_scale: float = 20.0
    """the prior's starting weight on rank_u / critical path (how sharply the untrained network follows HEFT)"""
    grad_clip: float = 1.0
    """gradient norm clip"""
    stages: tuple[int, ...] = (30, 100, 300, 1000)
    """curriculum: the largest problem of each stage (equal shares of the iterations)"""
    min_tasks: int = 10
    """the smallest problem drawn"""
    ccr: tuple[float, float] = (0.1, 10.0)
    """communication-to-computation ratio range (log-uniform)"""
    heterogeneity: tuple[float, float] = (2.0, 10.0)
    """fastest over slowest node speed range (log-uniform)"""
    nodes: tuple[int, int] = (2, 100)
    """cluster size range (log-uniform)"""
    recipe_share: float = 0.25
    """share of problems from WfCommons recipes (the training ones)"""
    classic_share: float = 0.5
    """share of problems planned in classic mode"""
    eval_every: int = 50
    """iterations between validations"""
    eval_problems: int = 24
    """validation problems (drawn once from the training distribution, at most 300 tasks)"""
    eval_samples: int = 16
    """K of the validation's sampled plans"""
    out_dir: str = "runs/priority"
    """TensorBoard logs and checkpoints go under <out_dir>/<name>/"""
    name: str = "drl-v3"
    """run name, and the model's version"""
    model_out: str = ""
    """path stem to write the selected model to (.safetensors + .json); empty: only the run folder"""
    expert_generations: int = 3
    """expert: teacher-then-student generations (the teacher of each generation after the first samples around the
    scores the previous generation trained)"""
    expert_problems: int = 64
    """expert: training problems, drawn once from the curriculum's largest stage (min_tasks to the last of stages)"""
    teacher_samples: int = 1024
    """expert: the teacher's Gumbel samples per problem and generation"""
    teacher_rounds: int = 8
    """expert: the teacher's cross-entropy rounds (its samples in equal rounds, each re-centred on the best orders
    of the one before)"""
    teacher_elite: float = 0.1
    """expert: the share of a teacher round's orders its next round is re-centred on"""
    teacher_keep: int = 4
    """expert: the best distinct orders kept as a problem's labels (over every generation's teacher)"""
    epochs: int = 20
    """expert: passes over the labelled problems per generation (in batches of `batch`)"""
    label_cache: str = ""
    """expert: folder of the teacher's labels (one safetensors file per problem, teacher settings and centre, so
    a run resumes without labelling again); empty: <out_dir>/labels"""

    def __post_init__(self) -> None:
        positive = (
            "iterations",
            "batch",
            "samples",
            "hidden",
            "layers",
            "eval_every",
            "eval_problems",
            "min_tasks",
            "expert_generations",
            "expert_problems",
            "teacher_samples",
            "teacher_rounds",
            "teacher_keep",
            "epochs",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.method == "pomo" and self.samples < 2:
            raise ValueError("pomo needs samples >= 2 (the baseline is their mean)")
        if not 0 < self.teacher_elite <= 1:
            raise ValueError(f"teacher_elite must be in (0, 1], got {self.teacher_elite}")
        if not self.stages or any(s < self.min_tasks for s in self.stages):
            raise ValueError(f"stages must be >= min_tasks ({self.min_tasks}), got {self.stages}")
        for name in ("ccr", "heterogeneity", "nodes"):
            lo, hi = getattr(self, name)
            if not 0 < lo <= hi:
                raise ValueError(f"{name} must be LO,HI with 0 < LO <= HI, got {getattr(self, name)}")

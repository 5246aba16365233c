"""Fine-tuning a serving model on logged problems, and judging it against the model it started from.

`FinetuneConfig` is the one description of a fine-tune (`dagsched finetune`'s options are generated from it):
what to read, how to train, when the result is good enough to ship. The training itself is the priority policy's
own trainer (`rl.priority_train.finetune`: a few passes of its POMO updates over the problems); `evaluate` plans
every held-out problem with old and new in the one simulator, as the service plans; `verdict` says whether new
won by the margin. Reading the logs, building the problems and shipping are the
service's (`dagsched.service.finetune`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from dagsched.model.compiled import CompiledProblem


@dataclass(frozen=True)
class FinetuneConfig:
    """Fine-tune the serving model on logged plans (requested or executed runtimes); ship it if it wins held out.

    Exit 0 whether or not it ships; 2 on bad input (options, store, plans, a faulty event log); 1 if upload fails.
    """

    store: str = ""
    """decision store URL (sqlite:///file.sqlite or postgresql://...); required"""
    env: str = "prod"
    """only plans stored with this environment label are read (others never enter)"""
    since: str = "24h"
    """window of plans read: 30m, 24h, 7d (units s, m, h, d, w)"""
    runtimes: Literal["requested", "executed"] = "requested"
    """train on the runtimes requests declared, or on the executed ones (each problem calibrated by the factors
    its environment's executed runs give; the event log must pass the audit)"""
    allow_faults: bool = False
    """with --runtimes executed: train without the faulty runs instead of refusing the log"""
    outlier_bound: float = 10.0
    """an executed task past this many times (or under 1/this) its declared runtime is an outlier"""
    model: str | None = None
    """priority policy stem to start from (default: the service's default, the shipped drl-v3)"""
    service: str | None = None
    """service URL to upload a winner to (token: DAGSCHED_API_TOKEN); without it the winner goes to --out"""
    out: str = "dagsched-finetune"
    """folder for a winner's files (without --service, or when its upload fails)"""
    holdout: float = 0.25
    """share of plans held out to judge on (by hash of the plan id)"""
    max_problems: int = 200
    """newest plans read at most (keeps the fine-tune brief)"""
    rounds: int = 2
    """training rounds (the priority policy: rounds x epochs passes over the training problems)"""
    epochs: int = 2
    """passes over the training problems per round"""
    lr: float = 1e-4
    """Adam learning rate (small: stay near the serving policy)"""
    margin: float = 0.01
    """ship only when the mean new/old makespan on the held-out plans is under 1 - margin"""
    seed: int = 0
    """seed of the sampled orders"""

    @property
    def since_s(self) -> float:
        from dagsched.console import parse_duration

        return parse_duration(self.since)

    def check(self) -> None:
        """InputError naming the option of the first bad value."""
        from dagsched.model.errors import InputError

        if not self.store.strip():
            raise InputError(
                "--store", "required: the decision store's URL (sqlite:///file.sqlite or postgresql://...)"
            )
        if self.runtimes not in ("requested", "executed"):
            raise InputError("--runtimes", f"expected requested or executed, got {self.runtimes!r}")
        if not self.env.strip():
            raise InputError("--env", "give an environment label, e.g. prod")
        self.since_s  # noqa: B018  (parses, or names --since)
        if not 0.0 < self.holdout < 1.0:
            raise InputError("--holdout", f"must be between 0 and 1 (exclusive), got {self.holdout:g}")
        if not -1.0 < self.margin < 1.0:
            raise InputError("--margin", f"must be between -1 and 1, got {self.margin:g}")
        for flag, value in (
            ("--rounds", self.rounds),
            ("--epochs", self.epochs),
            ("--max-problems", self.max_problems),
        ):
            if value < 1:
                raise InputError(flag, f"must be at least 1, got {value}")
        if not self.lr >= 0.0:
            raise InputError("--lr", f"must be >= 0, got {self.lr:g}")
        if not self.outlier_bound > 1.0:
            raise InputError("--outlier-bound", f"must be over 1, got {self.outlier_bound:g}")


@dataclass
class LoggedProblem:
    """One logged request, compiled as the planner compiled it (calibrated when trained on executed runtimes)."""

    plan_id: str
    workflow: str
    created_at: float
    cp: CompiledProblem


@dataclass
class HeldOutResult:
    """Old and new makespans of one held-out problem."""

    plan_id: str
    workflow: str
    n_tasks: int
    n_nodes: int
    old_makespan: float
    new_makespan: float

    @property
    def ratio(self) -> float:
        return self.new_makespan / max(self.old_makespan, 1e-12)


# ---- the fine-tune's lineage ------------------------------------------------------------------------------


def algorithm(cfg: FinetuneConfig) -> str:
    """What the training did, in words, for the fine-tuned model's lineage."""
    return (
        f"POMO on the logged problems (the priority trainer's updates, K = 16, anchor 0.01), "
        f"{cfg.rounds} rounds x {cfg.epochs} passes, lr {cfg.lr:g}"
    )


# ---- judging old against new ------------------------------------------------------------------------------


def evaluate(old: Any, new: Any, problems: list[LoggedProblem]) -> list[HeldOutResult]:
    """Each model's makespan on each problem in the one simulator, planned as the service plans with it
    (the registry's `drl` with the model handed to it and its service options)."""
    from dagsched.schedulers import make_scheduler, simulate

    def makespan(model: Any, cp: CompiledProblem) -> float:
        result = simulate(cp, make_scheduler("drl", service=True, policy=model), validate=True)
        return result.metrics.makespan if result.valid else math.inf

    return [
        HeldOutResult(p.plan_id, p.workflow, p.cp.n_tasks, p.cp.n_nodes, makespan(old, p.cp), makespan(new, p.cp))
        for p in problems
    ]


def verdict(results: list[HeldOutResult], margin: float) -> tuple[float, bool]:
    """(mean new/old makespan, whether it is under 1 - margin); an empty or non-finite mean never wins."""
    if not results:
        return math.nan, False
    mean = sum(r.ratio for r in results) / len(results)
    return mean, math.isfinite(mean) and mean < 1.0 - margin

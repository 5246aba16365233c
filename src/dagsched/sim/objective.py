"""The one objective: weighted terms for makespan, cost, SLA, fragmentation, load imbalance and completion time.

The same numbers serve the reward (`dagsched.rl.reward` splits them into per-step pieces that sum to
these), the service's plan score, and the benchmark rows. Each term is >= 0 (0 ideal) and normalised by a
per-instance `Baseline`, so problems of very different sizes give terms of one scale:

- `makespan`: makespan / baseline makespan;
- `cost`: billed cost / baseline cost;
- `sla`: the share of workflows missing their deadline;
- `fragmentation`: the idle-capacity integral (mean over nodes of (free cpu / cpu)^2, over time) / baseline
  makespan;
- `load`: the integral over time of the std over nodes of cpu utilisation / baseline makespan;
- `completion`: the mean over workflows of (finish - submission) / the baseline's mean completion time: a shared
  cluster's objective (Decima's), where the makespan is the arrivals' span; weight 0 by default, so that every
  objective value from before it was added stays as it was.

The baseline is the lower bound here (`lower_bound_baseline`: no scheduler can do better); the reward's
default baseline is HEFT's plan on predicted runtimes (`dagsched.rl.reward.compute_baseline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from dagsched.model.compiled import CompiledProblem
from dagsched.model.graph import critical_path_fastest_s
from dagsched.sim.config import SimConfig
from dagsched.sim.metrics import Metrics, compute_metrics, lower_bound_s, workflow_outcomes
from dagsched.sim.trace import Trace

TERMS = ("makespan", "cost", "sla", "fragmentation", "load", "completion")


class ObjectiveWeights(BaseModel):
    """Weight of each objective term."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)  # `true` is not a weight

    makespan: float = Field(0.4, ge=0, description="weight of makespan / baseline makespan")
    cost: float = Field(0.3, ge=0, description="weight of billed cost / baseline cost")
    sla: float = Field(0.2, ge=0, description="weight of the share of workflows missing their deadline")
    fragmentation: float = Field(0.1, ge=0, description="weight of the idle-capacity integral")
    load: float = Field(0.05, ge=0, description="weight of the load-imbalance integral")
    completion: float = Field(0.0, ge=0, description="weight of the mean completion time / baseline's (streams)")

    def combine(self, terms: dict[str, float]) -> float:
        """Σ weight x term over the terms given (the objective's value, or the reward of signed pieces)."""
        return float(sum(getattr(self, name) * terms[name] for name in TERMS))


@dataclass(frozen=True)
class Baseline:
    """What the objective is measured against on one problem."""

    kind: str
    makespan_s: float
    cost: float
    completion_s: float
    """mean over workflows of finish - submission"""

    def as_dict(self) -> dict[str, float | str]:
        return {"kind": self.kind, "makespan_s": self.makespan_s, "cost": self.cost, "completion_s": self.completion_s}

    @classmethod
    def of(cls, kind: str, makespan_s: float, cost: float, completion_s: float) -> Baseline:
        """A baseline, with zero (free nodes, zero runtimes) replaced by 1 so that the terms stay finite."""
        makespan_s, cost, completion_s = (x if x > 0 else 1.0 for x in (makespan_s, cost, completion_s))
        return cls(kind, makespan_s, cost, completion_s)


def lower_bound_baseline(cp: CompiledProblem, config: SimConfig) -> Baseline:
    """The lower bounds: `lower_bound_s` for the makespan, for the cost each task on its cheapest node for its
    cpu share of that node (placement rules honoured), for the completion time each workflow's critical path on
    the fastest hosts (`critical_path_fastest_s`: alone on an ideal cluster)."""

    exec_s = cp.exec_s if cp.allowed is None else np.where(cp.allowed, cp.exec_s, np.inf)
    share = np.ones_like(exec_s) if config.classic else cp.req[:, :1] / cp.cap[None, :, 0]
    cost = float((exec_s * cp.price_per_hour[None, :] * share).min(axis=1).sum() / 3600.0)
    completion = float(critical_path_fastest_s(cp).mean())
    return Baseline.of("lower_bound", lower_bound_s(cp, config.classic), cost, completion)


def load_std_integral_s(cp: CompiledProblem, trace: Trace) -> float:
    """∫ (std over nodes of used cpu / cpu capacity) dt over the run, from the trace's attempts alone."""
    attempts = trace.attempts
    if not attempts:
        return 0.0
    m = cp.n_nodes
    cpu_cap = np.ones(m) if trace.classic else cp.cap[:, 0]
    task = np.array([a.task for a in attempts], dtype=np.int64)
    node = np.array([a.node for a in attempts], dtype=np.int64)
    cpu = np.ones(len(attempts)) if trace.classic else cp.req[task, 0]
    times = np.concatenate([[a.start for a in attempts], [a.end for a in attempts]])
    grid = np.unique(times)
    change = np.zeros((len(grid), m))
    np.add.at(change, (np.searchsorted(grid, times), np.concatenate([node, node])), np.concatenate([cpu, -cpu]))
    util = np.cumsum(change, axis=0) / cpu_cap  # constant over [grid[i], grid[i + 1])
    return float((util[:-1].std(axis=1) * np.diff(grid)).sum())


def objective_terms(
    cp: CompiledProblem, trace: Trace, config: SimConfig, baseline: Baseline, metrics: Metrics | None = None
) -> dict[str, float]:
    """The objective's terms of a run, from its trace (each >= 0); `metrics`, the trace's under `config`, if
    the caller has them already (`RunResult.metrics`)."""
    if metrics is None:
        metrics = compute_metrics(cp, trace, config)
    return {
        "makespan": metrics.makespan / baseline.makespan_s,
        "cost": metrics.cost / baseline.cost,
        "sla": 1.0 - metrics.sla_hit_rate,
        "fragmentation": metrics.fragmentation * metrics.makespan / baseline.makespan_s,
        "load": load_std_integral_s(cp, trace) / baseline.makespan_s,
        "completion": float(workflow_outcomes(cp, trace).completion_s.mean()) / baseline.completion_s,
    }


def plan_objective(cp: CompiledProblem, trace: Trace, metrics: Metrics, weights: ObjectiveWeights) -> dict[str, Any]:
    """A plan's objective in cloud mode on predictions, against the lower bounds: its weights, its terms, their
    weighted sum, and the makespan's lower bound (what the service returns with each plan)."""
    baseline = lower_bound_baseline(cp, SimConfig())
    terms = objective_terms(cp, trace, SimConfig(), baseline, metrics)
    return {
        "weights": weights.model_dump(),
        "terms": terms,
        "value": weights.combine(terms),
        "lower_bound_s": baseline.makespan_s,
    }

"""Reward: weighted per-step terms whose episode sums are the episode objective (`dagsched.sim.objective`).

Five terms, each normalised by a per-instance baseline (HEFT's plan on predicted runtimes,
or the lower bound) so that problems of very different sizes give rewards of one scale:

- `makespan`: per step -(time elapsed since the last step) / baseline makespan;
  sums to -makespan / baseline makespan.
- `cost`: per step -(billed cost accrued since the last step) / baseline cost;
  sums to -billed cost / baseline cost.
- `sla`: -1 / n_workflows at each workflow that ends past its deadline;
  sums to -(1 - SLA hit rate).
- `fragmentation`: per step -∫ mean over nodes of (free cpu / cpu)² dt / baseline makespan;
  sums to -fragmentation × makespan / baseline makespan (`Metrics.fragmentation` is that
  integral divided by the makespan).
- `load`: per step -∫ std over nodes of (used cpu / cpu) dt / baseline makespan;
  sums to minus the same integral computed from the trace.
- `completion`: per step -(workflow-seconds spent in the system since the last step) / (workflows x baseline
  mean completion); sums to -mean completion time / baseline's (each workflow counts from its submission to
  its last task's end: Decima's reward, the number of jobs in the system integrated over time).

Time runs from the first submission (as in `compute_metrics`). Billed cost accrues as a
potential: each node's bill so far (first start to now while it runs, to its last end
otherwise, rounded up to the billing granularity, at least the minimum), so the increments
sum to `billed_cost` exactly. The load term is the time integral of the instantaneous spread
of utilisation, not `Metrics.load_std` (the spread of time-averaged utilisation), because only
an integral splits into per-step terms; `objective_terms` computes it from the trace alone.
The total reward is `-Σ weight × term`; default weights 0.4 / 0.3 / 0.2 / 0.1 / 0.05 / 0 (completion: set it
to train for a shared cluster).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.model.graph import default_deadlines_s
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator
from dagsched.sim.metrics import workflow_outcomes
from dagsched.sim.objective import (
    TERMS,
    Baseline,
    ObjectiveWeights,
    load_std_integral_s,
    lower_bound_baseline,
    objective_terms,
)

BaselineKind = Literal["heft", "lower_bound"]

RewardWeights = ObjectiveWeights
"""The reward's weights are the objective's (`dagsched.sim.objective.ObjectiveWeights`)."""

__all__ = [
    "TERMS",
    "Baseline",
    "BaselineKind",
    "RewardTracker",
    "RewardWeights",
    "compute_baseline",
    "load_std_integral_s",
    "objective_terms",
]


def compute_baseline(cp: CompiledProblem, config: SimConfig, kind: BaselineKind = "heft") -> Baseline:
    """HEFT's makespan, cost and mean completion time on predicted runtimes (no noise, failures or stragglers),
    or the lower bounds.

    The lower-bound cost is each task on its cheapest node for its cpu share of that node.
    A baseline of zero (free nodes, zero runtimes) is replaced by 1 so the terms stay finite.
    """
    if kind == "heft":
        from dagsched.schedulers import simulate

        exact = SimConfig(
            classic=config.classic,
            boot_delay=config.boot_delay,
            billing_granularity_s=config.billing_granularity_s,
            billing_minimum_s=config.billing_minimum_s,
        )
        result = simulate(cp, "heft", exact, seed=0, validate=False)
        completion = float(workflow_outcomes(cp, result.trace).completion_s.mean())
        return Baseline.of(kind, result.metrics.makespan, result.metrics.cost, completion)
    if kind == "lower_bound":
        return lower_bound_baseline(cp, config)
    raise ValueError(f"unknown baseline '{kind}'; choose 'heft' or 'lower_bound'")


class RewardTracker:
    """Accrues the objective terms of one run as the environment drives the simulator.

    The environment calls `started` after each `sim.start`, `before_step` / `after_step` around
    each `sim.step`, and `collect` once per environment step; whatever accrued before the first
    decision (boot delays, late arrivals) goes into the first step's reward.
    """

    def __init__(self, cp: CompiledProblem, sim: Simulator, config: SimConfig, baseline: Baseline) -> None:
        self.cp = cp
        self.config = config
        self.baseline = baseline
        m = cp.n_nodes
        self.t0_s = float(cp.wf_submit_s.min())
        self.cpu_cap = sim.cap[:, 0].copy()
        self.deadline_s = default_deadlines_s(cp)
        self.wf_left = np.bincount(cp.task_wf, minlength=cp.n_workflows)
        self.wf_end = np.full(cp.n_workflows, -np.inf)
        self.first_start = np.full(m, np.inf)
        self.last_end = np.full(m, -np.inf)
        self._seen = 0
        self._clock = max(sim.now, self.t0_s)
        self._bill = 0.0
        self._sla = 0.0
        self._frag = 0.0
        self._load = 0.0
        self._in_system = 0.0
        self._state: tuple[float, float, float] | None = None
        self.totals = dict.fromkeys(TERMS, 0.0)

    def started(self, sim: Simulator, nd: int) -> None:
        """A task started on node nd now: its bill opens if this is its first."""
        self.first_start[nd] = min(self.first_start[nd], sim.now)

    def before_step(self, sim: Simulator) -> None:
        """Remember the state that holds until the next event."""
        free = sim.free[:, 0] / self.cpu_cap
        self._state = (sim.now, float(np.mean(free * free)), float(np.std(1.0 - free)))

    def after_step(self, sim: Simulator) -> None:
        """Integrate the remembered state up to now; note attempts that ended."""
        assert self._state is not None, "before_step must precede after_step"
        at, frag, load = self._state
        dt = max(sim.now, self.t0_s) - max(at, self.t0_s)
        self._frag += frag * dt
        self._load += load * dt
        self._state = None
        attempts = sim.trace.attempts
        task_wf = self.cp.task_wf
        n_wf = self.cp.n_workflows
        for a in attempts[self._seen :]:
            self.last_end[a.node] = max(self.last_end[a.node], a.end)
            if a.outcome == "done":
                w = int(task_wf[a.task])
                self.wf_left[w] -= 1
                self.wf_end[w] = max(self.wf_end[w], a.end)
                if self.wf_left[w] == 0 and self.wf_end[w] > self.deadline_s[w] + 1e-9:
                    self._sla += 1.0 / n_wf
        self._seen = len(attempts)

    def billed_so_far(self, sim: Simulator) -> float:
        """Each opened node's bill up to now (running) or to its last end (idle), rounded as billed."""
        gran, minimum = self.config.billing_granularity_s, self.config.billing_minimum_s
        opened = np.isfinite(self.first_start)
        if not opened.any():
            return 0.0
        running = np.zeros(self.cp.n_nodes, dtype=bool)
        running[sim.node_of[np.fromiter(sim.running, dtype=np.int64, count=len(sim.running))]] = True
        end = np.where(running, np.maximum(sim.now, self.last_end), self.last_end)
        span = end[opened] - self.first_start[opened]
        billed = np.maximum(np.ceil(span / gran - 1e-9) * gran, minimum)
        return float((billed * self.cp.price_per_hour[opened]).sum() / 3600.0)

    def in_system_so_far(self, now: float) -> float:
        """Workflow-seconds in the system up to `now`: each submitted workflow from its submission to its end,
        or to now while it runs (a potential, like the bill: its increments sum to Σ completion times)."""
        end = np.where(self.wf_left == 0, self.wf_end, now)
        return float(np.maximum(end - self.cp.wf_submit_s, 0.0).sum())

    def collect(self, sim: Simulator) -> dict[str, float]:
        """The signed terms (each <= 0) accrued since the last call."""
        clock = max(sim.now, self.t0_s)
        bill = self.billed_so_far(sim)
        in_system = self.in_system_so_far(sim.now)
        ms = self.baseline.makespan_s
        terms = {
            "makespan": -(clock - self._clock) / ms,
            "cost": -(bill - self._bill) / self.baseline.cost,
            "sla": -self._sla,
            "fragmentation": -self._frag / ms,
            "load": -self._load / ms,
            "completion": -(in_system - self._in_system) / (self.cp.n_workflows * self.baseline.completion_s),
        }
        self._clock, self._bill, self._in_system = clock, bill, in_system
        self._sla = self._frag = self._load = 0.0
        for name, value in terms.items():
            self.totals[name] += value
        return terms

"""Plans for `/v1/schedule`: the chosen scheduler run in the one simulator on predicted runtimes.

How a request becomes a plan:

1. The workflow is read by `workflow_from_dict` (native or WfFormat) and made a problem by
   `service.problem.build_problem`: the nodes' free capacity as the cluster, and the config's
   filter rules as the compiled problem's `allowed` matrix, which the simulator's one legality
   check honours (no scheduler can start a forbidden pair, and no planner plans one).
2. A task that no node admits makes the request impossible: 422 naming it.
3. The scheduler runs in `Simulator` with `SimConfig()` defaults (no noise, failures or
   stragglers: cloud mode on predictions), validated by the independent validator.
4. The learned policy (`drl`) runs behind a breaker and a per-decision deadline; if it is
   missing, fails, is too slow or its plan is invalid, HEFT plans instead and the response
   says `fallback: true` with the reason (also counted in `dagsched_fallbacks_total`).
5. The load-skew monitor: when the std of the nodes' cpu utilisation (from the request) is
   over the threshold, the next N task placements go round-robin among feasible nodes.
6. Evidence per assignment (`dagsched.explain.evidence`): the top alternatives with their
   estimated finish on each node in the final plan's context (HEFT's own criterion), the
   constraints that rejected nodes, and the terms of the placement; the plan's score is the
   one objective (`dagsched.sim.objective`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from dagsched.explain.evidence import evidence
from dagsched.io import workflow_from_dict
from dagsched.model import CompiledProblem
from dagsched.model.errors import InputError
from dagsched.schedulers import make_scheduler, registered_names, simulate
from dagsched.schedulers.base import Scheduler
from dagsched.service.config import RuntimeConfig
from dagsched.service.problem import build_problem, canonical_json
from dagsched.service.schemas import NodeState, ScheduleRequest
from dagsched.service.store import EncodedJSON
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import Decision, DecisionPoint
from dagsched.sim.objective import ObjectiveWeights, lower_bound_baseline, objective_terms
from dagsched.sim.run import RunResult

log = logging.getLogger("dagsched.service")


class DeadlineExceeded(RuntimeError):
    """One decision of the learned policy took longer than the configured deadline."""


class Guarded(Scheduler):
    """Wraps a scheduler to enforce a per-decision deadline (the learned policy's)."""

    def __init__(self, inner: Scheduler, deadline_s: float | None) -> None:
        super().__init__()
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.deadline_s = deadline_s
        self.decide_s: list[float] = []

    def reset(self, cp: CompiledProblem, view: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, view, seed)
        self.inner.reset(cp, view, seed)

    def decide(self, dp: DecisionPoint) -> Decision:
        t0 = time.perf_counter()
        d = self.inner.decide(dp)
        took = time.perf_counter() - t0
        self.decide_s.append(took)
        if self.deadline_s is not None and took > self.deadline_s:
            raise DeadlineExceeded(
                f"a decision took {took * 1e3:.1f} ms, over the {self.deadline_s * 1e3:g} ms deadline"
            )
        return d


class FeasibleRoundRobin(Scheduler):
    """The load-skew monitor's mode: ready tasks in index order, each to the next node in a cycle that can start it."""

    name = "round_robin"

    def __init__(self) -> None:
        super().__init__()
        self.next_node = 0

    def decide(self, dp: DecisionPoint) -> Decision:
        free = dp.free.copy()
        m = dp.cp.n_nodes
        out: list[tuple[int, int]] = []
        for t in dp.ready_tasks():
            for k in range(m):
                nd = (self.next_node + k) % m
                if dp.can_start(t, nd, free):
                    out.append((t, nd))
                    free[nd] -= dp.request(t)
                    self.next_node = (nd + 1) % m
                    break
        wake = None
        if not out and not dp.running:
            pending = [float(dp.data_ready_all_s(t).min()) for t in dp.ready_tasks()]
            wake = min((p for p in pending if p > dp.now), default=None)
        return Decision(out, wake)


class Breaker:
    """Opens after `failures` consecutive failures of the learned policy; HEFT serves until `cooldown_s` passes."""

    def __init__(self) -> None:
        self.consecutive = 0
        self.open_until = 0.0
        self._lock = threading.Lock()

    def is_open(self) -> bool:
        return time.monotonic() < self.open_until

    def success(self) -> None:
        with self._lock:
            self.consecutive = 0

    def failure(self, failures: int, cooldown_s: float) -> bool:
        """Count a failure; True when this one opened the breaker."""
        with self._lock:
            self.consecutive += 1
            if self.consecutive >= failures:
                self.consecutive = 0
                self.open_until = time.monotonic() + cooldown_s
                return True
            return False


class SkewMonitor:
    """Std of node cpu utilisation over a threshold -> the next N placements go round-robin."""

    def __init__(self) -> None:
        self.remaining = 0
        self.last_std = 0.0
        self._lock = threading.Lock()

    def observe(self, nodes: list[NodeState], threshold: float, decisions: int) -> bool:
        """Record the nodes' skew; True when round-robin mode is (now or still) on."""
        util = [1.0 - (n.free.cpu if n.free else n.cpu) / n.cpu for n in nodes]
        std = float(np.std(util)) if len(util) > 1 else 0.0
        with self._lock:
            self.last_std = std
            if std > threshold and decisions > 0 and self.remaining == 0:
                self.remaining = decisions
                log.warning("load skew %.3f over %.3f: next %d placements go round-robin", std, threshold, decisions)
            return self.remaining > 0

    def consume(self, n: int) -> None:
        with self._lock:
            self.remaining = max(0, self.remaining - n)


@dataclass
class Planned:
    """A plan ready to return and store."""

    response: dict[str, Any]
    plan_row: dict[str, Any]
    decision_rows: list[dict[str, Any]]
    cp: CompiledProblem
    allowed: np.ndarray
    decision_latency_s: list[float]
    inference_s: list[float]


def objective(cp: CompiledProblem, result: RunResult, weights: ObjectiveWeights) -> dict[str, Any]:
    """The plan's objective (`dagsched.sim.objective`, against the lower bounds): its terms, their weighted sum."""
    baseline = lower_bound_baseline(cp, SimConfig())
    terms = objective_terms(cp, result.trace, SimConfig(), baseline, result.metrics)
    return {
        "weights": weights.model_dump(),
        "terms": terms,
        "value": weights.combine(terms),
        "lower_bound_s": baseline.makespan_s,
    }


class Planner:
    """Turns a ScheduleRequest into a Planned; holds the breaker and the skew monitor of this process."""

    def __init__(self, models: Any, metrics: Any, environment: str, max_tasks: int) -> None:
        self.models = models
        self.metrics = metrics
        self.environment = environment
        self.max_tasks = max_tasks
        self.breaker = Breaker()
        self.skew = SkewMonitor()

    def _run(self, cp: CompiledProblem, sched: Scheduler) -> RunResult:
        result = simulate(cp, sched, validate=True)
        if not result.valid:
            raise RuntimeError("invalid plan: " + "; ".join(result.violations[:3]))
        if not math.isfinite(result.metrics.makespan):
            raise RuntimeError("the plan does not finish")
        return result

    def plan(self, req: ScheduleRequest, config: RuntimeConfig) -> Planned:
        """Plan a /v1/schedule request."""
        try:
            wf = workflow_from_dict(req.workflow)
        except InputError as err:
            raise InputError(f"workflow.{err.field}".rstrip("."), err.fault) from None
        return self.plan_workflow(wf, req, config)

    def plan_workflow(
        self,
        wf: Any,
        req: ScheduleRequest,
        config: RuntimeConfig,
        root_id: str | None = None,
        pins: dict[str, str] | None = None,
        avoid: dict[str, str] | None = None,
        offset_s: float = 0.0,
    ) -> Planned:
        """Plan `wf` on `req.nodes`; a re-plan passes its chain's root, pinned and avoided nodes, and its start."""
        t_start = time.perf_counter()
        requested = req.scheduler or config.default_scheduler
        if requested != "drl" and requested not in registered_names():
            raise InputError("scheduler", f"unknown scheduler '{requested}'; known: {', '.join(registered_names())}")
        cp, allowed, why, rejected_nodes = build_problem(
            wf, req.nodes, config.compiled_rules, self.max_tasks, pins, avoid
        )
        weights = req.weights or config.reward_weights
        notes: list[str] = []
        fallback_reason: str | None = None
        model_version: str | None = None
        inference_s: list[float] = []

        round_robin = self.skew.observe(req.nodes, config.skew.threshold, config.skew.decisions)
        result: RunResult | None = None
        used = requested
        if round_robin:
            notes.append(
                f"load skew {self.skew.last_std:.3f} over {config.skew.threshold:g}: placements go round-robin "
                f"among feasible nodes ({self.skew.remaining} left)"
            )
            used = "round_robin"
            result = self._run(cp, FeasibleRoundRobin())
            self.skew.consume(cp.n_tasks)
            self.metrics.skew_round_robin.inc(cp.n_tasks)
        elif requested == "drl":
            current = self.models.current
            if current is None:
                fallback_reason = self.models.error or "no learned policy loaded"
            elif self.breaker.is_open():
                fallback_reason = "the learned policy's breaker is open (recent failures); HEFT serves until it closes"
            else:
                model_version = current.version
                guarded = Guarded(self.models.scheduler(config.temperature), config.decision_deadline_ms / 1e3)
                try:
                    result = self._run(cp, guarded)
                    inference_s = guarded.decide_s
                    self.breaker.success()
                except Exception as err:  # noqa: BLE001  (any failure of the policy means HEFT plans)
                    fallback_reason = f"learned policy failed: {type(err).__name__}: {err}"
                    if self.breaker.failure(config.breaker.failures, config.breaker.cooldown_s):
                        notes.append("the learned policy's breaker opened")
            if fallback_reason is not None:
                result = None
        else:
            try:
                result = self._run(cp, make_scheduler(requested))
            except Exception as err:  # noqa: BLE001
                if requested == "heft":
                    raise
                fallback_reason = f"{requested} failed: {type(err).__name__}: {err}"
        if result is None:
            used = "heft"
            label = fallback_reason.split(":")[0][:60] if fallback_reason else "unknown"
            self.metrics.fallbacks.labels(reason=label).inc()
            log.warning("falling back to HEFT: %s", fallback_reason)
            result = self._run(cp, make_scheduler("heft"))
            model_version = None if requested == "drl" else model_version
        self.metrics.breaker_open.set(1.0 if self.breaker.is_open() else 0.0)

        score_kind = "estimated finish time on the node in this plan's context, seconds (lower wins; HEFT's EFT)"
        ev = evidence(cp, result, allowed, why, score_kind)
        plan_id = uuid.uuid4().hex
        assignments = []
        if offset_s:
            for e in ev.values():
                for alt in e["alternatives"]:
                    alt["start"] += offset_s
                    alt["finish"] += offset_s
                    alt["score"] += offset_s
        for a in sorted((a for a in result.trace.attempts if a.outcome == "done"), key=lambda a: (a.start, a.task)):
            assignments.append(
                {
                    "task": cp.task_ids[a.task],
                    "node": cp.node_ids[a.node],
                    "start": a.start + offset_s,
                    "finish": a.end + offset_s,
                    "evidence": ev[a.task],
                }
            )
        latency_s = time.perf_counter() - t_start
        self.metrics.plan_latency.labels(scheduler=used).observe(latency_s)
        decision_latency = self.metrics.decision_latency.labels(scheduler=used)  # once, not per decision
        for d in result.trace.decision_latency_s:
            decision_latency.observe(d)
        for d in inference_s:
            self.metrics.inference.observe(d)
        self.metrics.recent.note_plan(latency_s, result.trace.decision_latency_s, fallback_reason is not None)
        response = {
            "plan_id": plan_id,
            "scheduler": used,
            "fallback": fallback_reason is not None,
            "makespan": result.metrics.makespan + offset_s,
            "cost": result.metrics.cost,
            "assignments": assignments,
            "fallback_reason": fallback_reason,
            "requested_scheduler": requested,
            "workflow": wf.name,
            "model_version": model_version,
            "objective": objective(cp, result, weights),
            "rejected_nodes": rejected_nodes,
            "notes": notes,
            "root_id": root_id or plan_id,
        }
        request_text = canonical_json(req.model_dump(mode="json"))  # digested and stored as it is: encoded once
        in_digest = hashlib.sha256(request_text.encode()).hexdigest()
        per_decision_ms = 1e3 * sum(result.trace.decision_latency_s) / max(len(assignments), 1)
        plan_row = {
            "id": plan_id,
            "root_id": root_id or plan_id,
            "workflow": wf.name,
            "scheduler": used,
            "fallback": fallback_reason is not None,
            "fallback_reason": fallback_reason,
            "makespan": result.metrics.makespan + offset_s,
            "cost": result.metrics.cost,
            "model_version": model_version,
            "environment": self.environment,
            "input_digest": in_digest,
            "request": EncodedJSON(request_text),
            "response": response,
        }
        rows = [
            {
                "plan_id": plan_id,
                "workflow": wf.name,
                "task": x["task"],
                "node": x["node"],
                "start": x["start"],
                "finish": x["finish"],
                "scores": x["evidence"]["alternatives"],
                "input_digest": in_digest,
                "scheduler": used,
                "latency_ms": per_decision_ms,
                "model_version": model_version,
                "environment": self.environment,
            }
            for x in assignments
        ]
        return Planned(response, plan_row, rows, cp, allowed, result.trace.decision_latency_s, inference_s)

    def shadow(self, planned: Planned, shadow_name: str) -> dict[str, Any] | None:
        """The shadow scheduler's plan of the same problem: its predicted makespan and cost beside the live ones."""
        live = planned.response
        if shadow_name == live["scheduler"]:
            return None
        if shadow_name == "drl":
            if self.models.current is None:
                return None
            sched: Scheduler = self.models.scheduler(0.0)
        else:
            sched = make_scheduler(shadow_name)
        try:
            result = self._run(planned.cp, sched)
        except Exception as err:  # noqa: BLE001  (a failing shadow never affects the live answer)
            log.warning("shadow %s failed: %s", shadow_name, err)
            return None
        return {
            "plan_id": live["plan_id"],
            "live": live["scheduler"],
            "shadow": shadow_name,
            "live_makespan": live["makespan"],
            "live_cost": live["cost"],
            "shadow_makespan": result.metrics.makespan,
            "shadow_cost": result.metrics.cost,
            "environment": self.environment,
        }

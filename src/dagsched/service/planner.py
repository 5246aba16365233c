"""Plans for `/v1/schedule`: the chosen scheduler run in the one simulator on predicted runtimes, HEFT when it
cannot, with the evidence of each assignment (docs/service.md, "Planning semantics").
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dagsched.explain.evidence import evidence
from dagsched.io import workflow_from_dict
from dagsched.model import CompiledProblem
from dagsched.model.errors import InputError
from dagsched.schedulers import make_scheduler, scheduler_class, simulate
from dagsched.schedulers.base import Scheduler
from dagsched.service.calibration import Applied, Calibrator, Factors, calibrate
from dagsched.service.config import FALLBACK_SCHEDULER, SKEW_SCHEDULER, RuntimeConfig, needs_policy
from dagsched.service.guards import Breaker, SkewMonitor, Timed
from dagsched.service.problem import build_problem, canonical_json
from dagsched.service.schemas import NodeState, ScheduleRequest
from dagsched.service.store import EncodedJSON
from dagsched.sim.objective import plan_objective
from dagsched.sim.run import RunResult

log = logging.getLogger("dagsched.service")


@dataclass
class Chosen:
    """What step 1 of a plan made: the run, which scheduler made it, and why another did not."""

    result: RunResult
    used: str
    fallback_reason: str | None
    model_version: str | None
    task_latency_s: np.ndarray  # per task index: the latency of the decision that started it
    inference_s: list[float]
    notes: list[str]


@dataclass
class Route:
    """Where a canary sends one workflow: its arm, and who plans it there."""

    arm: str  # `default` or `candidate`
    scheduler: str
    canary_id: str
    models: Any = None  # the policy of a model-version candidate (a ModelManager); None: the serving one
    breaker: Breaker | None = None


@dataclass
class Planned:
    """A plan ready to return and store."""

    response: dict[str, Any]
    plan_row: dict[str, Any]
    decision_rows: list[dict[str, Any]]
    cp: CompiledProblem
    route: Route | None = None


_PLAN_COLUMNS = ("root_id", "workflow", "scheduler", "fallback", "fallback_reason", "makespan", "cost", "model_version")
"""What a plan's row keeps of its response."""
SCORE_KIND = "estimated finish time on the node in this plan's context, seconds (lower wins; HEFT's EFT)"


@dataclass(eq=False)
class Planner:
    """Turns a ScheduleRequest into a Planned, with this process's breaker, skew monitor and calibration."""

    models: Any
    metrics: Any
    environment: str
    max_tasks: int
    calibrator: Calibrator | None = None
    breaker: Breaker = field(default_factory=Breaker)
    skew: SkewMonitor = field(default_factory=SkewMonitor)
    router: Callable[[str, RuntimeConfig, str | None], Route | None] | None = None
    """The canary's `route(workflow name, config, arm of the chain or None)`, when the service has one."""

    def _run(self, cp: CompiledProblem, sched: Scheduler) -> RunResult:
        result = simulate(cp, sched, validate=True)
        if not result.valid:
            raise RuntimeError("invalid plan: " + "; ".join(result.violations[:3]))
        if not math.isfinite(result.metrics.makespan):
            raise RuntimeError("the plan does not finish")
        return result

    def factors(self, config: RuntimeConfig) -> Factors:
        """The calibration factors this process plans with now (inactive when switched off or too few runs)."""
        if self.calibrator is None:
            return Factors(enabled=False)
        factors = self.calibrator.factors(config.calibration)
        self.metrics.calibration_active.set(1.0 if factors.active else 0.0)
        self.metrics.calibration_factors.labels(kind="task").set(len(factors.task) + len(factors.name))
        self.metrics.calibration_factors.labels(kind="node").set(len(factors.node))
        return factors

    def plan(self, req: ScheduleRequest, config: RuntimeConfig) -> Planned:
        """Plan a /v1/schedule request."""
        try:
            wf = workflow_from_dict(req.workflow)
        except InputError as err:
            raise InputError(f"workflow.{err.field}".rstrip("."), err.fault) from None
        wf, nodes, applied = calibrate(wf, req.nodes, self.factors(config))
        return self.plan_workflow(wf, req, config, nodes, applied)

    def plan_workflow(
        self,
        wf: Any,
        req: ScheduleRequest,
        config: RuntimeConfig,
        nodes: list[NodeState],
        applied: Applied,
        root_id: str | None = None,
        pins: dict[str, str] | None = None,
        avoid: dict[str, str] | None = None,
        offset_s: float = 0.0,
        arm: str | None = None,
    ) -> Planned:
        """Plan `wf` on the calibrated `nodes`; a re-plan passes its chain's root, pins, start and arm."""
        t_start = time.perf_counter()
        route = self.router(wf.name, config, arm) if req.scheduler is None and self.router is not None else None
        requested = route.scheduler if route is not None else (req.scheduler or config.default_scheduler)
        scheduler_class(requested)  # an unknown name is refused, naming the field and the known ones
        cp, allowed, why, rejected_nodes = build_problem(wf, nodes, config.compiled_rules, self.max_tasks, pins, avoid)
        chosen = self.choose_and_run(cp, requested, config, req.nodes, route)
        assignments = self.gather_evidence(cp, chosen.result, allowed, why, offset_s, applied)
        self._observe(chosen, time.perf_counter() - t_start, route)
        # the response, the plan's row and one row per decision (each with its own decision's latency)
        result, plan_id = chosen.result, uuid.uuid4().hex
        response = {
            "plan_id": plan_id,
            "scheduler": chosen.used,
            "fallback": chosen.fallback_reason is not None,
            "makespan": result.metrics.makespan + offset_s,
            "cost": result.metrics.cost,
            "assignments": assignments,
            "fallback_reason": chosen.fallback_reason,
            "requested_scheduler": requested,
            "workflow": wf.name,
            "model_version": chosen.model_version,
            "objective": plan_objective(cp, result.trace, result.metrics, req.weights or config.reward_weights),
            "rejected_nodes": rejected_nodes,
            "notes": chosen.notes,
            "root_id": root_id or plan_id,
            "calibration": applied.summary(),
        }
        request_text = canonical_json(req.model_dump(mode="json"))  # digested and stored as it is: encoded once
        kept = {"environment": self.environment, "input_digest": hashlib.sha256(request_text.encode()).hexdigest()}
        plan_row = {"id": plan_id, **{k: response[k] for k in _PLAN_COLUMNS}, **kept}
        plan_row |= {"request": EncodedJSON(request_text), "response": response}
        index = {tid: i for i, tid in enumerate(cp.task_ids)}
        rows = [
            {
                "plan_id": plan_id,
                "workflow": wf.name,
                **{k: x[k] for k in ("task", "node", "start", "finish")},
                "scores": x["evidence"]["alternatives"],
                "scheduler": chosen.used,
                "latency_ms": 1e3 * float(chosen.task_latency_s[index[x["task"]]]),
                "model_version": chosen.model_version,
                **kept,
            }
            for x in assignments
        ]
        if route is not None:
            response |= {"arm": route.arm, "canary": route.canary_id}
        return Planned(response, plan_row, rows, cp, route)

    def choose_and_run(
        self,
        cp: CompiledProblem,
        requested: str,
        config: RuntimeConfig,
        node_states: list[NodeState],
        route: Route | None = None,
    ) -> Chosen:
        """Run `requested` (round-robin while the skew monitor is on); HEFT plans when it cannot, saying why."""
        notes: list[str] = []
        fallback_reason: str | None = None
        policy: Any = None  # the learned policy's LoadedModel, when `requested` plans with one
        breaker: Breaker | None = None
        used = requested
        if self.skew.observe(node_states, config.skew.threshold, config.skew.decisions):
            notes.append(
                f"load skew {self.skew.last_std:.3f} over {config.skew.threshold:g}: placements go round-robin "
                f"among feasible nodes ({self.skew.remaining} left)"
            )
            used, timed = SKEW_SCHEDULER, Timed(make_scheduler(SKEW_SCHEDULER))
        elif needs_policy(requested):
            models = route.models if route is not None and route.models is not None else self.models
            breaker = route.breaker if route is not None and route.breaker is not None else self.breaker
            policy = models.current
            if policy is None:
                fallback_reason = models.error or "no learned policy loaded"
            elif breaker.is_open():
                fallback_reason = "the learned policy's breaker is open (recent failures); HEFT serves until it closes"
            else:
                sched = make_scheduler(requested, service=True, policy=policy.policy)
                timed = Timed(sched, config.decision_deadline_ms / 1e3)
        else:
            timed = Timed(make_scheduler(requested, service=True))
        result: RunResult | None = None
        if fallback_reason is None:
            try:
                result = self._run(cp, timed)
            except Exception as err:  # noqa: BLE001  (any failure of the chosen scheduler means HEFT plans)
                if used in (SKEW_SCHEDULER, FALLBACK_SCHEDULER):
                    raise
                failed = "learned policy" if breaker is not None else requested
                fallback_reason = f"{failed} failed: {type(err).__name__}: {err}"
                if breaker is not None and breaker.failure(config.breaker.failures, config.breaker.cooldown_s):
                    notes.append("the learned policy's breaker opened")
            else:
                if breaker is not None:
                    breaker.success()
                if used == SKEW_SCHEDULER:
                    self.skew.consume(cp.n_tasks)
                    self.metrics.skew_round_robin.inc(cp.n_tasks)
        if result is None:
            used, policy = FALLBACK_SCHEDULER, None
            label = fallback_reason.split(":")[0][:60] if fallback_reason else "unknown"
            self.metrics.fallbacks.labels(reason=label).inc()
            log.warning("falling back to %s: %s", FALLBACK_SCHEDULER, fallback_reason)
            timed = Timed(make_scheduler(FALLBACK_SCHEDULER))
            result = self._run(cp, timed)
        self.metrics.breaker_open.set(1.0 if self.breaker.is_open() else 0.0)
        inference_s = timed.decide_s if policy is not None else []
        version = policy.version if policy is not None else None
        return Chosen(result, used, fallback_reason, version, timed.task_latency_s, inference_s, notes)

    def gather_evidence(
        self,
        cp: CompiledProblem,
        result: RunResult,
        allowed: np.ndarray,
        why: dict[tuple[int, int], str],
        offset_s: float,
        applied: Applied,
    ) -> list[dict[str, Any]]:
        """The assignments in start order with their evidence, `offset_s` after the chain's start."""
        ev = evidence(cp, result, allowed, why, SCORE_KIND)
        if offset_s:
            for e in ev.values():
                for alt in e["alternatives"]:
                    for key in ("start", "finish", "score"):  # a score here is a finish time
                        alt[key] += offset_s
        assignments = []
        for a in sorted((a for a in result.trace.attempts if a.outcome == "done"), key=lambda a: (a.start, a.task)):
            task, node = cp.task_ids[a.task], cp.node_ids[a.node]
            e = ev[a.task]
            if cal := applied.evidence(task, node, float(cp.exec_s[a.task, a.node])):
                e["calibration"] = cal
            assignments.append(
                {"task": task, "node": node, "start": a.start + offset_s, "finish": a.end + offset_s, "evidence": e}
            )
        return assignments

    def _observe(self, chosen: Chosen, latency_s: float, route: Route | None) -> None:
        """The plan's metrics: latency by scheduler (and by canary arm), each decision's latency, inference."""
        m = self.metrics
        m.plan_latency.labels(scheduler=chosen.used).observe(latency_s)
        decision_latency = m.decision_latency.labels(scheduler=chosen.used)  # once, not per decision
        for d in chosen.result.trace.decision_latency_s:
            decision_latency.observe(d)
        for d in chosen.inference_s:
            m.inference.observe(d)
        m.recent.note_plan(latency_s, chosen.result.trace.decision_latency_s, chosen.fallback_reason is not None)
        if route is not None:
            m.arm_plans.labels(arm=route.arm, scheduler=chosen.used).inc()
            m.arm_plan_latency.labels(arm=route.arm).observe(latency_s)
            if chosen.fallback_reason is not None:
                m.arm_fallbacks.labels(arm=route.arm).inc()

    def plan_alone(self, cp: CompiledProblem, name: str, models: Any = None) -> RunResult | None:
        """Another scheduler's plan of a built problem (a shadow's, a canary arm's); None when it cannot plan it."""
        current = (models or self.models).current  # handed to `name` only when it plans with a policy
        if current is None and needs_policy(name):
            return None
        sched = make_scheduler(name, service=True, policy=current.policy if current else None)
        try:
            return self._run(cp, sched)
        except Exception as err:  # noqa: BLE001  (a failing shadow never affects the live answer)
            log.warning("shadow plan by %s failed: %s", name, err)
            return None

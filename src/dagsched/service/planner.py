"""Plans for `/v1/schedule`: the chosen scheduler run in the one simulator on predicted runtimes.

How a request becomes a plan:

1. The workflow is read by `workflow_from_dict` (native or WfFormat); the request's nodes
   become the cluster, **with each node's `free` capacity as its capacity** (what is in use
   now is not ours to plan on). Nodes with no free cpu are left out, named in `rejected_nodes`.
2. The config's filter rules are evaluated for every (node, task) pair. The pairs that pass
   form the compiled problem's `allowed` matrix, which the simulator's one legality check
   honours (no scheduler can start a forbidden pair, and no planner plans one). A task that
   no node admits makes the request impossible: 422 naming it.
3. The scheduler runs in `Simulator` with `SimConfig()` defaults (no noise, failures or
   stragglers: cloud mode on predictions), validated by the independent validator.
4. The learned policy (`drl`) runs behind a breaker and a per-decision deadline; if it is
   missing, fails, is too slow or its plan is invalid, HEFT plans instead and the response
   says `fallback: true` with the reason (also counted in `dagsched_fallbacks_total`).
5. The load-skew monitor: when the std of the nodes' cpu utilisation (from the request) is
   over the threshold, the next N task placements go round-robin among feasible nodes.
6. Evidence per assignment: the top alternatives with their estimated finish on each node in
   the final plan's context (HEFT's own criterion), the constraints that rejected nodes, and
   the terms of the objective (execution, data wait, queue wait, cost).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from dagsched.io import workflow_from_dict
from dagsched.model import EPS as _EPS
from dagsched.model import Cluster, CompiledProblem, Node, Problem, compile_problem
from dagsched.model.errors import InputError, parse
from dagsched.rl.reward import RewardWeights
from dagsched.schedulers import make_scheduler, registered_names, simulate
from dagsched.schedulers.base import Scheduler
from dagsched.service.config import RuntimeConfig
from dagsched.service.rules import Rule, failing_rule
from dagsched.service.schemas import NodeState, ScheduleRequest
from dagsched.service.store import EncodedJSON
from dagsched.sim.decision import Decision, DecisionPoint
from dagsched.sim.run import RunResult
from dagsched.sim.slots import NodeTimeline

log = logging.getLogger("dagsched.service")

EVIDENCE_TOP = 3


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


def node_view(n: NodeState) -> dict[str, Any]:
    """What a rule sees as `node`."""
    free = n.free
    return {
        "id": n.id,
        "cpu": n.cpu,
        "mem": n.mem,
        "gpu": n.gpu,
        "cpu_free": free.cpu if free else n.cpu,
        "mem_free": free.mem if free else n.mem,
        "gpu_free": free.gpu if free else n.gpu,
        "speed": n.speed,
        "price_per_hour": n.price_per_hour,
        "labels": n.labels,
    }


def task_view(task: Any) -> dict[str, Any]:
    """What a rule sees as `task`."""
    return {
        "id": task.id,
        "runtime": task.runtime,
        "cpu": task.cpu,
        "mem": task.mem,
        "gpu": task.gpu,
        "priority": task.priority,
        "critical": task.critical,
        "labels": task.labels,
    }


def canonical_json(data: Any) -> str:
    """JSON with sorted keys and no spaces: equal data, equal text (what input digests are taken of)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def build_problem(
    workflow: Any,
    nodes: list[NodeState],
    rules: list[Rule],
    max_tasks: int,
    pins: dict[str, str] | None = None,
    avoid: dict[str, str] | None = None,
) -> tuple[CompiledProblem, np.ndarray, dict[tuple[int, int], str], list[dict[str, str]]]:
    """The compiled problem on the nodes' free capacity, the allowed (task, node) matrix, why pairs are not.

    `pins` keeps a task on one node (a running task, in a re-plan); `avoid` keeps a migrated task
    off the node it overran on, unless no other node admits it.
    """
    pins, avoid = pins or {}, avoid or {}
    if len(workflow.tasks) > max_tasks:
        raise InputError("workflow.tasks", f"{len(workflow.tasks)} tasks is over this service's limit of {max_tasks}")
    seen: set[str] = set()
    for i, n in enumerate(nodes):
        if n.id in seen:
            raise InputError(f"nodes[{i}].id", f"duplicate node id '{n.id}'")
        seen.add(n.id)
        if n.free and (n.free.cpu > n.cpu + _EPS or n.free.mem > n.mem + _EPS or n.free.gpu > n.gpu):
            raise InputError(f"nodes[{i}].free", f"node '{n.id}' has more free than its total capacity")
    usable = [n for n in nodes if (n.free.cpu if n.free else n.cpu) > 0]
    rejected_nodes = [{"node": n.id, "constraint": "no free cpu"} for n in nodes if n not in usable]
    if not usable:
        raise InputError("nodes", "no node has any free cpu: nothing can be planned")
    cluster = Cluster(
        nodes=[
            Node(
                id=n.id,
                cpu=n.free.cpu if n.free else n.cpu,
                mem=n.free.mem if n.free else n.mem,
                gpu=n.free.gpu if n.free else n.gpu,
                speed=n.speed,
                price_per_hour=n.price_per_hour,
                bandwidth=n.bandwidth,
                labels=n.labels,
            )
            for n in usable
        ]
    )
    wf = workflow.model_copy(update={"submit_time": 0.0})
    try:
        problem: Problem = parse(Problem, {"name": wf.name, "workflows": [wf], "cluster": cluster})
    except InputError as err:
        field = err.field.replace("workflows[0].", "workflow.").replace("workflows[0]", "workflow")
        raise InputError(field, err.fault + " (on the nodes' free capacity)") from None
    cp = compile_problem(problem)
    fits = np.all(cp.req[:, None, :] <= cp.cap[None, :, :] + _EPS, axis=2)  # (tasks, nodes)
    allowed = fits.copy()
    why: dict[tuple[int, int], str] = {}
    views = [node_view(n) for n in usable] if rules else []
    for t, task in enumerate(wf.tasks):
        for nd in np.flatnonzero(~fits[t]):
            nd = int(nd)
            short = [
                f"{r} {cp.req[t, k]:g} > free {cp.cap[nd, k]:g}"
                for k, r in enumerate(("cpu", "mem", "gpu"))
                if cp.req[t, k] > cp.cap[nd, k] + _EPS
            ]
            why[(t, nd)] = "capacity: " + ", ".join(short)
        if rules:
            tv = task_view(task)
            for nd in np.flatnonzero(fits[t]):
                rule = failing_rule(rules, views[nd], tv)
                if rule is not None:
                    allowed[t, nd] = False
                    why[(t, int(nd))] = f"rule {rule.name}: {rule.expr}"
        if task.id in pins:
            keep = cp.node_ids.index(pins[task.id])
            for nd in range(cp.n_nodes):
                if nd != keep and allowed[t, nd]:
                    allowed[t, nd] = False
                    why[(t, nd)] = f"running on {pins[task.id]}"
        if task.id in avoid and avoid[task.id] in cp.node_ids:
            nd = cp.node_ids.index(avoid[task.id])
            if allowed[t].sum() > 1 and allowed[t, nd]:
                allowed[t, nd] = False
                why[(t, nd)] = "migrated off it: ran past 200 % of its prediction there"
        if not allowed[t].any():
            reasons = "; ".join(f"{cp.node_ids[nd]}: {why[(t, nd)]}" for nd in range(min(cp.n_nodes, 5)))
            raise InputError(f"workflow.tasks[{t}]", f"task '{task.id}' is rejected by every node ({reasons})")
    if not allowed.all():
        cp = cp.with_allowed(allowed)
    return cp, allowed, why, rejected_nodes


def evidence(cp: CompiledProblem, result: RunResult, allowed: np.ndarray, why: dict, score_kind: str) -> dict:
    """Per task: alternatives scored by estimated finish in the final plan's context, rejections, terms."""
    done = {a.task: a for a in result.trace.attempts if a.outcome == "done"}
    lines = [NodeTimeline((float(c[0]), float(c[1]), float(c[2]))) for c in cp.cap]
    for a in done.values():
        r = cp.req[a.task]
        lines[a.node].reserve(a.start, a.end, (float(r[0]), float(r[1]), float(r[2])))
    cheap = cp.n_tasks * cp.n_nodes > 200_000  # large plans: contention-free estimates (one pass)
    out: dict[int, dict] = {}
    node_of = np.full(cp.n_tasks, -1, dtype=np.int64)
    end_of = np.zeros(cp.n_tasks)
    for a in done.values():
        node_of[a.task], end_of[a.task] = a.node, a.end
    for t, a in done.items():
        parents = cp.preds(t)
        arrival = cp.input_arrival_s(t, node_of, end_of, 0.0)
        latest_parent = float(end_of[parents].max(initial=0.0))
        req = (float(cp.req[t, 0]), float(cp.req[t, 1]), float(cp.req[t, 2]))
        alts = []
        for nd in np.flatnonzero(allowed[t]):
            nd = int(nd)
            if nd == a.node:
                start, finish = a.start, a.end
            else:
                ex = float(cp.exec_s[t, nd])
                start = float(arrival[nd]) if cheap else lines[nd].earliest_start(float(arrival[nd]), ex, req)
                finish = start + ex
            alts.append((finish, nd != a.node, nd, start))
        alts.sort()
        top = alts[:EVIDENCE_TOP]
        if not any(not other for _, other, _, _ in top):
            top = top[: EVIDENCE_TOP - 1] + [x for x in alts if not x[1]]
        exec_s = a.end - a.start
        out[t] = {
            "score": score_kind,
            "alternatives": [
                {"node": cp.node_ids[nd], "score": f, "start": s, "finish": f, "chosen": not other}
                for f, other, nd, s in top
            ],
            "rejected": [{"node": cp.node_ids[nd], "constraint": why[(t, nd)]} for nd in np.flatnonzero(~allowed[t])],
            "terms": {
                "exec_s": exec_s,
                "data_wait_s": max(0.0, float(arrival[a.node]) - latest_parent),
                "queue_wait_s": max(0.0, a.start - float(arrival[a.node])),
                "cost": exec_s * float(cp.price_per_hour[a.node]) / 3600.0,
            },
        }
    return out


def objective(result: RunResult, weights: RewardWeights) -> dict[str, Any]:
    """The plan's objective terms (each normalised so 0 is ideal) and their weighted sum."""
    m = result.metrics
    terms = {
        "makespan": m.makespan / m.lower_bound - 1.0 if m.lower_bound > 0 else 0.0,
        "cost": m.cost,
        "sla": 1.0 - m.sla_hit_rate,
        "fragmentation": m.fragmentation,
        "load": m.load_std,
    }
    return {
        "weights": weights.model_dump(),
        "terms": terms,
        "value": float(sum(getattr(weights, k) * v for k, v in terms.items())),
        "lower_bound_s": m.lower_bound,
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
            "objective": objective(result, weights),
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

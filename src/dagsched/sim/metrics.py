"""Metrics of a run, computed from its trace alone (plus the static problem)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.model.graph import default_deadlines_s, longest_path_s
from dagsched.sim.config import SimConfig
from dagsched.sim.trace import Trace


@dataclass(frozen=True)
class Metrics:
    """Per-run figures. Times in seconds, cost in the nodes' price unit."""

    makespan: float
    cost: float
    sla_hit_rate: float
    utilisation: float
    fragmentation: float
    load_std: float
    lower_bound: float
    slr: float
    attempts: int
    failed_attempts: int
    decisions: int
    decision_latency_mean_ms: float
    decision_latency_p99_ms: float
    workflow_makespans: list[float]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def lower_bound_s(cp: CompiledProblem, classic: bool) -> float:
    """max(critical path on the fastest node with free transfers, total work / total capacity)."""
    fastest = cp.exec_s.min(axis=1)
    # makespan counts from the first submission, so the bound does too
    path = float(np.max(cp.wf_submit_s - cp.wf_submit_s.min() + longest_path_s(cp, fastest)))
    has_costs = any(t.costs for wf in cp.problem.workflows for t in wf.tasks)
    cpu_req = np.ones(cp.n_tasks) if classic else cp.req[:, 0]
    cpu_cap = np.ones(cp.n_nodes) if classic else cp.cap[:, 0]
    if has_costs:
        # unrelated machines: every task holds some node for at least its cheapest share
        share = cp.exec_s * (cpu_req[:, None] / cpu_cap[None, :])
        work = float(share.min(axis=1).sum()) / cp.n_nodes
    else:
        work = float((cp.runtime_s * cpu_req).sum() / (cp.speed * cpu_cap).sum())
    return max(path, work)


def billed_cost(cp: CompiledProblem, trace: Trace, config: SimConfig) -> float:
    """Per node: price x (first start to last end), rounded up to the granularity, at least the minimum."""
    first = np.full(cp.n_nodes, np.inf)
    last = np.full(cp.n_nodes, -np.inf)
    for a in trace.attempts:
        first[a.node] = min(first[a.node], a.start)
        last[a.node] = max(last[a.node], a.end)
    cost = 0.0
    gran = config.billing_granularity_s
    for nd in np.flatnonzero(np.isfinite(first)):
        span = last[nd] - first[nd]
        billed = max(math.ceil(span / gran - 1e-9) * gran, config.billing_minimum_s)
        cost += billed * float(cp.price_per_hour[nd]) / 3600.0
    return cost


def compute_metrics(cp: CompiledProblem, trace: Trace, config: SimConfig) -> Metrics:
    done = [a for a in trace.attempts if a.outcome == "done"]
    finish = np.zeros(cp.n_tasks)
    for a in done:
        finish[a.task] = a.end
    wf_end = np.zeros(cp.n_workflows)
    np.maximum.at(wf_end, cp.task_wf, finish)
    wf_makespans = wf_end - cp.wf_submit_s
    makespan = float(wf_end.max() - cp.wf_submit_s.min())
    deadlines = default_deadlines_s(cp)
    sla = float(np.mean(wf_end <= deadlines + 1e-9))

    cpu_cap = np.ones(cp.n_nodes) if trace.classic else cp.cap[:, 0]
    busy = np.zeros(cp.n_nodes)  # cpu-seconds used per node
    for a in trace.attempts:
        cpu = 1.0 if trace.classic else float(cp.req[a.task, 0])
        busy[a.node] += cpu * (a.end - a.start)
    horizon = max(makespan, 1e-12)
    node_util = busy / (cpu_cap * horizon)
    utilisation = float(busy.sum() / (cpu_cap.sum() * horizon))
    # time-average of (free/total)^2 per node, then mean over nodes: 1 = all idle, 0 = all full
    fragmentation = float(np.mean(_mean_square_free(cp, trace, cpu_cap, horizon)))
    lb = lower_bound_s(cp, trace.classic)
    lat = np.array(trace.decision_latency_s) * 1e3 if trace.decision_latency_s else np.zeros(1)
    return Metrics(
        makespan=makespan,
        cost=billed_cost(cp, trace, config),
        sla_hit_rate=sla,
        utilisation=utilisation,
        fragmentation=fragmentation,
        load_std=float(node_util.std()),
        lower_bound=lb,
        slr=makespan / lb if lb > 0 else 1.0,
        attempts=len(trace.attempts),
        failed_attempts=len(trace.attempts) - len(done),
        decisions=len(trace.decision_latency_s),
        decision_latency_mean_ms=float(lat.mean()),
        decision_latency_p99_ms=float(np.percentile(lat, 99)),
        workflow_makespans=[float(x) for x in wf_makespans],
    )


def _mean_square_free(cp: CompiledProblem, trace: Trace, cpu_cap: np.ndarray, horizon: float) -> np.ndarray:
    t0 = float(cp.wf_submit_s.min())
    changes: list[list[tuple[float, float]]] = [[] for _ in range(cp.n_nodes)]
    for a in trace.attempts:
        cpu = 1.0 if trace.classic else float(cp.req[a.task, 0])
        changes[a.node].append((a.start, cpu))
        changes[a.node].append((a.end, -cpu))
    out = np.ones(cp.n_nodes)
    for nd, ch in enumerate(changes):
        if not ch:
            continue
        ch.sort()
        used, prev, acc = 0.0, t0, 0.0
        for at, delta in ch:
            acc += (at - prev) * (1.0 - used / cpu_cap[nd]) ** 2
            used += delta
            prev = at
        acc += (t0 + horizon - prev) * (1.0 - used / cpu_cap[nd]) ** 2
        out[nd] = acc / horizon
    return out

"""Metrics of a run, computed from its trace alone (plus the static problem)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

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
    """Mean wall-clock time of a decision after the first (of the first when it is the only one)."""
    decision_latency_p99_ms: float
    """99th percentile of the same decisions as the mean."""
    decision_latency_first_ms: float
    """The first decision's time, apart: it pays one-time work (numba's compile of a kernel, a model's load)."""
    workflow_makespans: list[float]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def lower_bound_s(cp: CompiledProblem, classic: bool) -> float:
    """max(critical path on the fastest node with free transfers, total work / total capacity)."""
    exec_s = cp.exec_s if cp.allowed is None else np.where(cp.allowed, cp.exec_s, np.inf)  # placement rules
    fastest = exec_s.min(axis=1)
    # makespan counts from the first submission, so the bound does too
    path = float(np.max(cp.wf_submit_s - cp.wf_submit_s.min() + longest_path_s(cp, fastest)))
    has_costs = any(t.costs for wf in cp.problem.workflows for t in wf.tasks)
    cpu_req = np.ones(cp.n_tasks) if classic else cp.req[:, 0]
    cpu_cap = np.ones(cp.n_nodes) if classic else cp.cap[:, 0]
    if has_costs:
        # unrelated machines: every task holds some node for at least its cheapest share
        share = exec_s * (cpu_req[:, None] / cpu_cap[None, :])
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
    all_ms = np.array(trace.decision_latency_s) * 1e3 if trace.decision_latency_s else np.zeros(1)
    lat = all_ms[1:] if len(all_ms) > 1 else all_ms  # the first decision's one-time work is reported apart
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
        decision_latency_first_ms=float(all_ms[0]),
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


# -- a shared cluster under a stream of workflows ------------------------------------------------------

WARMUP_FRACTION = 0.1
"""Share of a stream's workflows, the first submitted, left out of its steady-state figures (the cluster fills)."""
DRAIN_FRACTION = 0.1
"""Share of a stream's workflows, the last submitted, left out of its steady-state figures (arrivals stop and the
cluster empties, so the last ones see less contention than the steady state)."""


@dataclass(frozen=True)
class WorkflowOutcomes:
    """Per workflow of a run, in the problem's workflow order (times in seconds from the start of the run)."""

    submit_s: np.ndarray
    first_start_s: np.ndarray
    finish_s: np.ndarray
    critical_path_s: np.ndarray
    """critical path with every task on its fastest host (`critical_path_fastest_s`)"""
    deadline_s: np.ndarray
    tenant: list[str]
    klass: list[str]

    @property
    def completion_s(self) -> np.ndarray:
        """finish - submission"""
        return np.asarray(self.finish_s - self.submit_s)

    @property
    def slowdown(self) -> np.ndarray:
        """completion time / critical path on the fastest nodes (1 = as fast as alone on an ideal cluster)"""
        return np.where(self.critical_path_s > 0, self.completion_s / np.maximum(self.critical_path_s, 1e-300), 1.0)

    @property
    def queue_s(self) -> np.ndarray:
        """first start of any of its tasks - submission"""
        return np.asarray(self.first_start_s - self.submit_s)

    @property
    def hit(self) -> np.ndarray:
        return np.asarray(self.finish_s <= self.deadline_s + 1e-9)


def workflow_outcomes(cp: CompiledProblem, trace: Trace) -> WorkflowOutcomes:
    """Submission, first start, finish, critical path, deadline, tenant and class of every workflow."""
    from dagsched.model.graph import critical_path_fastest_s

    finish = np.zeros(cp.n_tasks)
    first = np.full(cp.n_tasks, np.inf)
    for a in trace.attempts:
        first[a.task] = min(first[a.task], a.start)
        if a.outcome == "done":
            finish[a.task] = a.end
    wf_finish = np.zeros(cp.n_workflows)
    np.maximum.at(wf_finish, cp.task_wf, finish)
    wf_first = np.full(cp.n_workflows, np.inf)
    np.minimum.at(wf_first, cp.task_wf, first)
    labels = [wf.labels for wf in cp.problem.workflows]
    return WorkflowOutcomes(
        submit_s=cp.wf_submit_s.copy(),
        first_start_s=wf_first,
        finish_s=wf_finish,
        critical_path_s=critical_path_fastest_s(cp),
        deadline_s=default_deadlines_s(cp),
        tenant=[lab.get("tenant", "-") for lab in labels],
        klass=[lab.get("class", "-") for lab in labels],
    )


@dataclass(frozen=True)
class StreamMetrics:
    """Steady-state figures of a stream on a shared cluster.

    Steady state: the workflows are ordered by submission and the first `WARMUP_FRACTION` and the
    last `DRAIN_FRACTION` of them are left out; the window is from the first counted submission to
    the last. Per-workflow figures (completion, slowdown, queueing, SLA, fairness) are over the
    counted workflows; throughput and utilisation are over the window. Percentiles interpolate
    linearly (numpy's default).
    """

    workflows: int
    window_s: tuple[float, float]
    completion_mean: float
    completion_p50: float
    completion_p95: float
    completion_p99: float
    slowdown_mean: float
    slowdown_p50: float
    slowdown_p95: float
    slowdown_p99: float
    queue_mean: float
    queue_p50: float
    queue_p95: float
    queue_p99: float
    throughput_per_h: float
    """workflows finishing inside the window, per hour of the window"""
    sla_hit_rate: float
    sla_by_class: dict[str, float]
    cost: float
    """billed cost of the whole run (every node is billed from its first start to its last end)"""
    utilisation: dict[str, float]
    """per resource: share of the speed-weighted capacity held over the window (work delivered / capacity);
    nan for a resource the cluster has none of"""
    fairness: float
    """Jain's index of the tenants' mean slowdowns: 1 when every tenant is slowed down alike, 1/k at worst"""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def steady_state(submit_s: np.ndarray, warmup: float = WARMUP_FRACTION, drain: float = DRAIN_FRACTION) -> np.ndarray:
    """Indices of the workflows counted in the steady state: by submission, minus the first and last shares."""
    order = np.argsort(submit_s, kind="stable")
    n = len(order)
    lo, hi = int(math.floor(n * warmup)), n - int(math.floor(n * drain))
    return order[lo:hi] if hi > lo else order


def jain_index(values: np.ndarray) -> float:
    """(sum x)^2 / (n sum x^2): 1 for equal values, 1/n when one takes everything (Jain, Chiu and Hawe, 1984)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0 or not np.any(x):
        return 1.0
    return float(x.sum() ** 2 / (x.size * np.square(x).sum()))


def stream_metrics(
    cp: CompiledProblem,
    trace: Trace,
    config: SimConfig,
    warmup: float = WARMUP_FRACTION,
    drain: float = DRAIN_FRACTION,
) -> StreamMetrics:
    """The shared-cluster figures of a run (any run: a single workflow is a stream of one)."""
    out = workflow_outcomes(cp, trace)
    counted = steady_state(out.submit_s, warmup, drain)
    lo, hi = float(out.submit_s[counted].min()), float(out.submit_s[counted].max())
    if hi <= lo:  # one workflow, or all submitted at once: the window is their run
        hi = max(float(out.finish_s[counted].max()), lo + 1e-9)
    completion, slowdown, queue = out.completion_s[counted], out.slowdown[counted], out.queue_s[counted]
    hit = out.hit[counted]
    classes = [out.klass[i] for i in counted]
    tenants = [out.tenant[i] for i in counted]
    by_class = {
        k: float(np.mean([h for h, c in zip(hit, classes, strict=True) if c == k])) for k in sorted(set(classes))
    }
    tenant_slowdown = [np.mean([s for s, t in zip(slowdown, tenants, strict=True) if t == k]) for k in set(tenants)]
    finished_inside = np.count_nonzero((out.finish_s >= lo) & (out.finish_s <= hi))

    def quantiles(x: np.ndarray) -> tuple[float, float, float, float]:
        p50, p95, p99 = np.percentile(x, [50, 95, 99])
        return float(np.mean(x)), float(p50), float(p95), float(p99)

    c, s, q = quantiles(completion), quantiles(slowdown), quantiles(queue)
    return StreamMetrics(
        workflows=len(counted),
        window_s=(lo, hi),
        completion_mean=c[0],
        completion_p50=c[1],
        completion_p95=c[2],
        completion_p99=c[3],
        slowdown_mean=s[0],
        slowdown_p50=s[1],
        slowdown_p95=s[2],
        slowdown_p99=s[3],
        queue_mean=q[0],
        queue_p50=q[1],
        queue_p95=q[2],
        queue_p99=q[3],
        throughput_per_h=finished_inside * 3600.0 / (hi - lo),
        sla_hit_rate=float(np.mean(hit)),
        sla_by_class=by_class,
        cost=billed_cost(cp, trace, config),
        utilisation=window_utilisation(cp, trace, lo, hi),
        fairness=jain_index(np.asarray(tenant_slowdown)),
    )


def window_utilisation(cp: CompiledProblem, trace: Trace, lo: float, hi: float) -> dict[str, float]:
    """Per resource, the speed-weighted capacity held by attempts inside [lo, hi], as a share of it.

    An attempt on a node of speed s holding r of a resource for d seconds counts r x d x s: the work it
    did at speed 1.0 (more during a straggler episode, when the node holds it longer). Classic mode
    counts one slot per task and per node.
    """
    from dagsched.model.entities import RESOURCES

    if not trace.attempts or hi <= lo:
        return dict.fromkeys(RESOURCES, math.nan)
    tasks = np.array([a.task for a in trace.attempts])
    nodes = np.array([a.node for a in trace.attempts])
    start = np.array([a.start for a in trace.attempts])
    end = np.array([a.end for a in trace.attempts])
    held_s = np.clip(np.minimum(end, hi) - np.maximum(start, lo), 0.0, None)
    if trace.classic:
        req = np.zeros((len(tasks), 3))
        req[:, 0] = 1.0
        cap = np.zeros((cp.n_nodes, 3))
        cap[:, 0] = 1.0
    else:
        req, cap = cp.req[tasks], cp.cap
    used = (req * (held_s * cp.speed[nodes])[:, None]).sum(axis=0)
    total = (cap * cp.speed[:, None]).sum(axis=0) * (hi - lo)
    return {r: float(u / t) if t > 0 else math.nan for r, u, t in zip(RESOURCES, used, total, strict=True)}


def summary_metrics(
    cp: CompiledProblem, trace: Trace, config: SimConfig, always_stream: bool = False
) -> dict[str, Any]:
    """The figures `dagsched simulate` prints for a run: `compute_metrics`, and for a stream of several workflows
    (or with `always_stream`) its steady-state figures (`completion_mean`, ...) too."""
    out: dict[str, Any] = dict(compute_metrics(cp, trace, config).as_dict())
    if cp.n_workflows > 1 or always_stream:
        sm = stream_metrics(cp, trace, config)
        out |= {k: getattr(sm, k) for k in ("completion_mean", "completion_p95", "slowdown_mean", "queue_mean")}
        out |= {"throughput_per_h": sm.throughput_per_h, "sla_steady": sm.sla_hit_rate, "fairness": sm.fairness}
        out |= {f"util_{r}": v for r, v in sm.utilisation.items()}
    return out

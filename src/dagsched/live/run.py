"""One real run, start to end: decide live on Ray (any registered scheduler) or let Ray's own scheduler place the
whole DAG (`ray`, the baseline); the trace on the run's measured times, validated; the metrics of `simulate`; and
the simulator's prediction of the same problem, scheduler and seed beside them.

Times are the problem's seconds (wall seconds / the time scale), so a run's figures read like a simulation's and
`sim_real_gap` = achieved / predicted - 1 compares like with like.
"""

from __future__ import annotations

import graphlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dagsched.live.cluster import MEM_RESOURCE, OBJECT_STORE_MIB, RayCluster
from dagsched.live.engine import LiveClock, LiveEngine, WorkflowFailure
from dagsched.live.executor import (
    Overhead,
    RayExecutor,
    parents_in_order,
    payload_bytes,
    probe_overhead,
    problem_tasks,
    task_spec,
    warm_up,
)
from dagsched.model.compiled import CompiledProblem
from dagsched.model.errors import InputError
from dagsched.sim.config import SimConfig
from dagsched.sim.disruptions import Disruptions
from dagsched.sim.metrics import summary_metrics
from dagsched.sim.trace import Outcome, Trace, new_attempt
from dagsched.sim.validate import validate_trace

RAY_BASELINE = "ray"
"""`-s ray`: Ray's own scheduler (every task submitted with its dependencies and resources, no placement)."""


def live_config(noise_cv: float = 0.0, task_overhead_s: float = 0.0) -> SimConfig:
    """The simulator settings a real run and its prediction share: hidden noise only (Ray brings the rest); the
    prediction adds the cluster's per-task overhead (`task_overhead_s`, problem seconds)."""
    return SimConfig(noise_cv=noise_cv, mttr_s=None, boot_delay=False, task_overhead_s=task_overhead_s)


@dataclass
class LiveResult:
    """What a real run did: its trace, figures, validity, failed workflows, and the overheads it measured."""

    trace: Trace
    metrics: dict[str, Any]
    valid: bool
    violations: list[str]
    failures: list[WorkflowFailure] = field(default_factory=list)
    launch_latency_s: list[float] = field(default_factory=list)
    dispatch_latency_s: list[float] = field(default_factory=list)
    """per task, from the instant of the event the decision answered to the task's start on its node"""
    report_latency_s: list[float] = field(default_factory=list)
    """per task, from its end on its node to the engine's knowing it"""
    wall_s: float = 0.0
    outputs: dict[str, Any] = field(default_factory=dict)
    """what each exit task that ran returned (a function's value, a command's stdout, an emulated payload)"""
    predicted: dict[str, Any] | None = None
    """the simulator's figures for the same problem, scheduler and seed, each task longer by the cluster's
    per-task overhead (None for Ray's own scheduler)"""
    predicted_no_overhead: dict[str, Any] | None = None
    """the same without the overhead (None where the overhead is 0)"""
    task_overhead_s: float = 0.0
    """the per-task overhead the prediction added, wall seconds (measured by a probe before the run, or given)"""
    overhead_probe: Overhead | None = None
    """the probe's measurements (None where the overhead was given)"""


def check_payloads(cp: CompiledProblem, data_scale: float, store_mib: int = OBJECT_STORE_MIB) -> None:
    """Refuse a data scale whose largest emulated payload would not fit a quarter of a node's object store."""
    largest = max(payload_bytes(cp, data_scale), default=0)
    limit = store_mib * 1024 * 1024 // 4
    if largest > limit:
        raise InputError(
            "--data-scale",
            f"the largest edge ({largest / data_scale:.3g} bytes) x {data_scale:g} is a {largest / 2**20:.1f} MiB "
            f"payload; at most {limit / 2**20:.0f} MiB fits the object stores: use a smaller --data-scale",
        )


def _validated(cp: CompiledProblem, trace: Trace, dropped: set[str]) -> tuple[bool, list[str]]:
    """The validator's verdict, less the tasks of workflows that failed (never completed, by design)."""
    violations = [
        v for v in validate_trace(cp, trace).violations if not (v.startswith("[lost]") and v.split("'")[1] in dropped)
    ]
    return not violations, violations


ATTEMPT_OUTCOMES = ("done", "failed", "overrun", "error")
"""The kinds of an attempt feed's events that are an attempt's end (the others: "started", "node_down")."""


class AttemptFeed:
    """Hands what happened since the last call to listeners, as `(kind, row)`: each node lost ("node_down", row
    `{"node", "at_s"}`), each task start (once per attempt; "started") and each attempt that ended (its outcome),
    rows `{"workflow", "task", "node", "start_s", "end_s"}`; a done attempt's row carries its output as the journal
    keeps it (`output`: `(encoding, body)` or None)."""

    def __init__(
        self,
        cp: CompiledProblem,
        listeners: list[Callable[[list[tuple[str, dict[str, Any]]]], None]],
        outputs: dict[int, tuple[str, str]] | None = None,
    ):
        self.cp, self.listeners = cp, listeners
        self.outputs = outputs if outputs is not None else {}  # the executor's finished outputs, taken when told
        self.seen_attempts = 0
        self.seen_outages = 0
        self.started: set[tuple[int, float]] = set()  # (task, start) of the running attempts told

    def skip_existing(self, trace: Trace) -> None:
        self.seen_attempts, self.seen_outages = len(trace.attempts), len(trace.outages)

    def _row(self, t: int, nd: int, start: float, end: float | None) -> dict[str, Any]:
        cp = self.cp
        row = {"workflow": cp.wf_names[int(cp.task_wf[t])], "task": cp.task_ids[t], "node": cp.node_ids[nd]}
        return row | {"start_s": start, "end_s": end}

    def __call__(self, engine: LiveEngine) -> None:
        if not self.listeners:
            return
        events: list[tuple[str, dict[str, Any]]] = []
        for outage in engine.trace.outages[self.seen_outages :]:
            events.append(("node_down", {"node": self.cp.node_ids[outage.node], "at_s": outage.start}))
        self.seen_outages = len(engine.trace.outages)
        new = engine.trace.attempts[self.seen_attempts :]
        self.seen_attempts += len(new)
        for a in new:  # ended since the last call: its start first, if it was not told yet
            if (a.task, a.start) not in self.started:
                events.append(("started", self._row(a.task, a.node, a.start, None)))
            self.started.discard((a.task, a.start))
            row = self._row(a.task, a.node, a.start, a.end)
            if a.outcome == "done":
                row["output"] = self.outputs.pop(a.task, None)
            events.append((a.outcome, row))
        for t, run in engine.running.items():
            if (t, run.start) not in self.started:
                self.started.add((t, run.start))
                events.append(("started", self._row(t, run.node, run.start, None)))
        if events:
            for listen in self.listeners:
                listen(events)


@dataclass
class Resumed:
    """What an earlier run finished, in this problem's indices: task -> node, and task -> its kept output."""

    done: dict[int, int]
    outputs: dict[int, tuple[str, str]]


def resumed_tasks(
    cp: CompiledProblem,
    done: dict[tuple[str, str], str],
    outputs: dict[tuple[str, str], tuple[str, str]] | None = None,
) -> Resumed:
    """An earlier run's done tasks ((workflow, task) -> node id) and kept outputs ((workflow, task) -> (encoding,
    body)) in this problem's indices. A done task counts as done where its children can have its output (an
    emulated payload is made again; a command's or function's must have been kept) or none of them is left to run;
    otherwise it runs again, and so, in turn, may its own parents."""
    outputs = outputs or {}
    nodes = {n: i for i, n in enumerate(cp.node_ids)}
    tasks = problem_tasks(cp)
    finished, kept = {}, {}
    for t in range(cp.n_tasks):
        key = (cp.wf_names[int(cp.task_wf[t])], cp.task_ids[t])
        if key in done and done[key] in nodes:
            finished[t] = nodes[done[key]]
            if key in outputs:
                kept[t] = outputs[key]
    changed = True
    while changed:  # a task run again needs its parents' outputs: those kept nowhere run again too
        changed = False
        for t in list(finished):
            lost = tasks[t].run is not None and t not in kept
            if lost and any(int(c) not in finished for c in cp.succs(t)):
                del finished[t]
                kept.pop(t, None)
                changed = True
    return Resumed(finished, kept)


def run_live(
    cp: CompiledProblem,
    scheduler: str,
    cluster: RayCluster,
    *,
    seed: int = 1,
    time_scale: float = 1.0,
    data_scale: float = 1e-4,
    noise_cv: float = 0.0,
    on_step: Callable[[LiveEngine], None] | None = None,
    listeners: list[Callable[[list[tuple[str, dict[str, Any]]]], None]] | None = None,
    done_before: Resumed | None = None,
    journal_outputs: bool = False,
    task_overhead_s: float | None = None,
) -> LiveResult:
    """Run every task of `cp` for real on `cluster`, `scheduler` deciding live.

    `listeners` are told each task start and each attempt's end as they happen (the journal, the service), a done
    attempt with its output where `journal_outputs`; `done_before` are the tasks an earlier run finished: they
    are not run again, and their children get the outputs it kept.

    The prediction adds `task_overhead_s` (wall seconds) to every task, or, where None, what a probe of the
    cluster measures before the run (`executor.probe_overhead`): the run's own times are never read for it."""
    from dagsched.schedulers import make_scheduler

    config = live_config(noise_cv)
    executor = RayExecutor(cp, cluster, time_scale, data_scale, journal_outputs)
    executor.warm_up()
    probe = probe_overhead(cluster) if task_overhead_s is None else None
    overhead_s = probe.per_task_s if probe is not None else float(task_overhead_s or 0.0)
    # the simulator's run of the same problem first: its figures are the prediction, and it loads and compiles
    # whatever the scheduler needs on first use, so the live run's first decision is not a cold one
    guess = predicted(cp, scheduler, seed, noise_cv, overhead_s / time_scale)
    bare = predicted(cp, scheduler, seed, noise_cv) if overhead_s > 0 else None
    sched = make_scheduler(scheduler)
    feed = AttemptFeed(cp, listeners or [], executor.finished_outputs)

    def stepped(engine: LiveEngine) -> None:
        feed(engine)
        if on_step is not None:
            on_step(engine)

    engine = LiveEngine(cp, config, seed, executor, LiveClock(time_scale), stepped)
    engine.trace.scheduler = scheduler
    if done_before is not None and done_before.done:
        executor.restore_outputs(done_before.done, done_before.outputs)
        engine.resume_done(done_before.done)
        feed.skip_existing(engine.trace)
    sched.reset(cp, engine.decision_point(), seed)
    engine.clock = LiveClock(time_scale)  # the run starts now, after the scheduler is ready
    engine.step_wall = engine.clock.start_wall
    try:
        trace = engine.run(sched)
    except BaseException:
        executor.cancel_all()
        raise
    finally:
        feed(engine)
    wall_s = time.time() - engine.clock.start_wall
    outputs = {cp.task_name(t): value for t, value in executor.results().items()}
    dropped = {cp.task_name(t) for w in engine.failed_workflows for t in range(*_span(cp, w))}
    valid, violations = _validated(cp, trace, dropped)
    metrics = summary_metrics(cp, trace, config, always_stream=True)
    return LiveResult(
        trace,
        metrics,
        valid,
        violations,
        engine.failures,
        executor.launch_latency_s,
        executor.dispatch_latency_s,
        executor.report_latency_s,
        wall_s,
        outputs,
        guess,
        bare,
        overhead_s,
        probe,
    )


def _span(cp: CompiledProblem, w: int) -> tuple[int, int]:
    return int(cp.wf_task_ptr[w]), int(cp.wf_task_ptr[w + 1])


def predicted(
    cp: CompiledProblem, scheduler: str, seed: int, noise_cv: float = 0.0, task_overhead_s: float = 0.0
) -> dict[str, Any]:
    """The simulator's run of the same problem, scheduler and seed, under the real run's settings, every task
    longer by `task_overhead_s` problem seconds (hidden from the scheduler, as the real overhead is)."""
    from dagsched.schedulers import simulate

    config = live_config(noise_cv, task_overhead_s)
    result = simulate(cp, scheduler, config, seed)
    return summary_metrics(cp, result.trace, config, always_stream=True)


def run_ray_baseline(
    cp: CompiledProblem,
    cluster: RayCluster,
    *,
    seed: int = 1,
    time_scale: float = 1.0,
    data_scale: float = 1e-4,
    noise_cv: float = 0.0,
    on_progress: Callable[[int, int], None] | None = None,
) -> LiveResult:
    """Ray's own scheduler: each workflow, at its submission, submitted whole as Ray tasks with their
    dependencies (object references) and resources and no placement; where a task ran is read from the task.

    An emulated task sleeps its time on the node Ray chose (the same hidden noise as a live run of the same seed),
    after waiting out the modelled transfers from its parents on other nodes, so the trace obeys the same rules.
    """
    import ray

    from dagsched.live.worker import execute

    config = live_config(noise_cv)
    noise = Disruptions.draw(seed, config, cp.n_tasks, cp.n_nodes).first_noise
    tasks, parents = problem_tasks(cp), parents_in_order(cp)
    payloads = payload_bytes(cp, data_scale)
    node_map = {rid: nd for nd, rid in enumerate(cluster.ray_nodes)}
    any_mem = any(cluster.has_mem)
    remote = ray.remote(num_returns=2, max_retries=0)(execute)
    warm_up(cp, cluster)
    m = cp.n_nodes
    bw = np.asarray(cp.bandwidth, dtype=np.float64)
    order = sorted(range(cp.n_workflows), key=lambda w: (float(cp.wf_submit_s[w]), w))
    outputs: dict[int, Any] = {}
    status_refs: dict[Any, int] = {}
    statuses: dict[int, dict[str, Any]] = {}
    start_wall = time.time()

    def collect(timeout_s: float) -> None:
        if not status_refs:
            time.sleep(timeout_s)
            return
        ready, _ = ray.wait(list(status_refs), num_returns=1, timeout=timeout_s)
        if ready:
            ready, _ = ray.wait(list(status_refs), num_returns=len(status_refs), timeout=0)
        for ref in ready:
            t = status_refs.pop(ref)
            try:
                statuses[t] = ray.get(ref)
            except ray.exceptions.RayError as err:
                statuses[t] = {"ok": False, "reason": type(err).__name__, "node": -1}
        if on_progress is not None:
            on_progress(len(statuses), len(status_refs))

    try:
        for w in order:
            due = start_wall + float(cp.wf_submit_s[w]) * time_scale
            while time.time() < due:
                collect(max(due - time.time(), 0.0))
            lo, hi = _span(cp, w)
            sorter: graphlib.TopologicalSorter[int] = graphlib.TopologicalSorter()
            for t in range(lo, hi):
                sorter.add(t, *parents[t])
            for t in sorter.static_order():
                req = cp.req[t]
                spec = task_spec(tasks[t], 0.0, payloads[t])
                data = {
                    p: d
                    for p, d in zip(
                        cp.pred_idx[cp.pred_ptr[t] : cp.pred_ptr[t + 1]].tolist(),
                        cp.pred_data[cp.pred_ptr[t] : cp.pred_ptr[t + 1]].tolist(),
                        strict=True,
                    )
                }
                comm = []
                for p in parents[t]:
                    seconds = data.get(p, 0.0) / bw + cp.latency_s if data.get(p, 0.0) else np.zeros((m, m))
                    np.fill_diagonal(seconds, 0.0)
                    comm.append((seconds * time_scale).tolist())
                spec.update(
                    placed=False,
                    comm=comm,
                    nodes=node_map,
                    exec_s=(cp.exec_s[t] * noise[t] * time_scale).tolist(),
                )
                options: dict[str, Any] = {"num_cpus": float(req[0]), "num_gpus": float(req[2])}
                if req[1] > 0 and any_mem:
                    options["resources"] = {MEM_RESOURCE: float(req[1])}
                status_ref, outputs[t] = remote.options(**options).remote(spec, *[outputs[p] for p in parents[t]])
                status_refs[status_ref] = t
        while status_refs:
            collect(0.5)
    except BaseException:
        for ref in status_refs:
            ray.cancel(ref, force=True)
        raise
    wall_s = time.time() - start_wall
    trace = Trace(scheduler=RAY_BASELINE, seed=seed, classic=False, noise_cv=noise_cv, boot_delay=False)
    trace.measured = True
    failures = []
    for t in sorted(statuses, key=lambda t: statuses[t].get("started", 0.0)):
        s = statuses[t]
        if "started" not in s:
            failures.append(WorkflowFailure(cp.wf_names[int(cp.task_wf[t])], cp.task_ids[t], "?", s["reason"]))
            continue
        start, end = (s["started"] - start_wall) / time_scale, (s["ended"] - start_wall) / time_scale
        outcome: Outcome = "done" if s["ok"] else "error"
        trace.attempts.append(new_attempt((t, int(s["node"]), start, end, outcome, max(end - start, 0.0))))
        if not s["ok"]:
            failures.append(
                WorkflowFailure(cp.wf_names[int(cp.task_wf[t])], cp.task_ids[t], cp.node_ids[s["node"]], s["reason"])
            )
    valid, violations = _validated(cp, trace, set())
    metrics = summary_metrics(cp, trace, config, always_stream=True)
    return LiveResult(trace, metrics, valid, violations, failures, wall_s=wall_s)

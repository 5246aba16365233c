"""What really ran: executed workflows rebuilt from the stored plans and their events, audited as they are read
(what would mislead an estimate is a `Fault`, kept out; the store is never changed).
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from dagsched.service.calibration import Factors, Observation, declared_runtime, estimate, node_class, task_name
from dagsched.service.chain import WhatRan, fold

FAULT_KINDS = ("duplicate", "out_of_order", "non_positive_duration", "outlier", "other_environment", "unreadable")
RUN_FAULTS = frozenset({"duplicate", "out_of_order", "other_environment", "unreadable"})
"""Faults that keep a whole run out of estimates (the others drop one observation)."""


@dataclass(frozen=True)
class TaskRun(Observation):
    """One task that finished, in one run."""

    root_id: str
    workflow: str
    task: str
    planned_s: float | None  # what the run's first plan predicted for it on that node (None: it ran elsewhere)


@dataclass(frozen=True)
class Fault:
    """Something wrong in a stored event log."""

    kind: str
    root_id: str
    task: str | None
    detail: str


@dataclass
class Run:
    """One executed workflow: a first plan and what its events say happened."""

    root_id: str
    workflow: str
    environment: str
    scheduler: str
    created_at: float
    planned_makespan: float
    response: dict[str, Any]
    tasks: list[TaskRun] = field(default_factory=list)
    transfers: list[tuple[float, float]] = field(default_factory=list)
    """(planned, seen) seconds from a parent's finish to its child's start on another node, edges with data"""
    ran: WhatRan = field(default_factory=WhatRan)  # its events folded: attempts started, failed, overran
    achieved_makespan: float | None = None
    faults: list[Fault] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not any(f.kind in RUN_FAULTS for f in self.faults)


@dataclass
class RunLog:
    """The executed runs read from a store, their faults, and what was left out."""

    runs: list[Run]
    since: float
    environment: str | None
    other_environments: dict[str, int] = field(default_factory=dict)

    @property
    def faults(self) -> list[Fault]:
        return [f for r in self.runs for f in r.faults]

    def observations(self) -> list[TaskRun]:
        """Every clean observation: from runs without a run-level fault."""
        return [t for r in self.runs if r.clean for t in r.tasks]

    def factors(self, settings: Any, now: float) -> Factors:
        """The calibration factors the clean observations give under `settings` (a config's `calibration`)."""
        return estimate(self.observations(), sum(1 for r in self.runs if r.clean and r.tasks), settings, now)

    def fault_counts(self) -> dict[str, int]:
        counts = Counter(f.kind for f in self.faults)
        return {kind: counts[kind] for kind in FAULT_KINDS}


@dataclass(frozen=True)
class _Skeleton:
    """What a run's request says, parsed once per root."""

    tasks: dict[str, Any]
    names: dict[str, str]
    nodes: dict[str, Any]
    classes: dict[str, str]
    edges: list[tuple[str, str, float]]


_SKELETONS: OrderedDict[str, _Skeleton] = OrderedDict()
_SKELETON_CACHE = 20_000


def _skeleton(root_id: str, request: dict[str, Any]) -> _Skeleton:
    hit = _SKELETONS.get(root_id)
    if hit is not None:
        _SKELETONS.move_to_end(root_id)
        return hit
    from dagsched.io import workflow_from_dict
    from dagsched.service.schemas import NodeState

    wf = workflow_from_dict(request["workflow"])
    nodes = {n["id"]: NodeState.model_validate(n) for n in request["nodes"]}
    sk = _Skeleton(
        tasks={t.id: t for t in wf.tasks},
        names={t.id: task_name(t) for t in wf.tasks},
        nodes=nodes,
        classes={nid: node_class(n) for nid, n in nodes.items()},
        edges=[(e.src, e.dst, e.data) for e in wf.edges],
    )
    _SKELETONS[root_id] = sk
    if len(_SKELETONS) > _SKELETON_CACHE:
        _SKELETONS.popitem(last=False)
    return sk


def rebuild(row: dict[str, Any], events: list[dict[str, Any]], outlier_bound: float) -> Run:
    """One run from its root plan row and its events in stored order."""
    response = row["response"] or {}
    assignments = {a["task"]: a for a in response.get("assignments", [])}
    run = Run(
        root_id=row["id"],
        workflow=row["workflow"],
        environment=row["environment"],
        scheduler=row["scheduler"],
        created_at=float(row["created_at"]),
        planned_makespan=float(row["makespan"]),
        response=response,
    )
    try:
        sk = _skeleton(row["id"], row["request"])
    except Exception as err:  # noqa: BLE001  (an old or odd record is reported, not fatal)
        run.faults.append(Fault("unreadable", run.root_id, None, f"the plan's request does not parse: {err}"))
        return run
    seen: set[tuple[Any, ...]] = set()
    repeats: set[int] = set()
    latest = -math.inf
    for e in events:
        key = (e["kind"], e["task"], e["node"], e["at"])
        if key in seen:
            repeats.add(e["id"])
            what = f"'{e['task']}'" if e["task"] else f"node '{e['node']}'"
            run.faults.append(Fault("duplicate", run.root_id, e["task"], f"{e['kind']} of {what} at {e['at']:g} s"))
            continue  # a repeat is not also out of order
        seen.add(key)
        if e["at"] < latest - 1e-9:
            run.faults.append(
                Fault("out_of_order", run.root_id, e["task"], f"{e['kind']} at {e['at']:g} s stored after {latest:g} s")
            )
        latest = max(latest, e["at"])

    ordered = sorted((e for e in events if e["id"] not in repeats), key=lambda e: (e["at"], e["id"]))
    ran = run.ran = fold(ordered, assignments)
    for task, at in ran.unstarted_finishes:
        run.faults.append(Fault("out_of_order", run.root_id, task, f"task_finished at {at:g} s without a start"))
    finished = ran.finished
    for task, (node, start, end) in finished.items():
        if task not in sk.tasks or node not in sk.nodes:
            continue
        actual = end - start
        if actual <= 0:
            detail = f"finished at {end:g} s, not after its start at {start:g} s"
            run.faults.append(Fault("non_positive_duration", run.root_id, task, detail))
            continue
        predicted = declared_runtime(sk.tasks[task], node, sk.nodes[node].speed)
        if predicted <= 0:
            continue
        ratio = actual / predicted
        if not 1.0 / outlier_bound <= ratio <= outlier_bound:
            detail = (
                f"ran {actual:g} s against {predicted:g} s declared on {node} ({ratio:.3g} x, bound {outlier_bound:g})"
            )
            run.faults.append(Fault("outlier", run.root_id, task, detail))
            continue
        a = assignments.get(task)
        planned = float(a["finish"] - a["start"]) if a is not None and a["node"] == node else None
        run.tasks.append(
            TaskRun(
                name=sk.names[task],
                node=node,
                node_class=sk.classes[node],
                predicted_s=predicted,
                actual_s=actual,
                finished_at=run.created_at + end,
                root_id=run.root_id,
                workflow=run.workflow,
                task=task,
                planned_s=planned,
            )
        )
    for src, dst, data in sk.edges:
        if data <= 0 or src not in finished or dst not in finished:
            continue
        (a_node, _, a_end), (b_node, b_start, _) = finished[src], finished[dst]
        if a_node == b_node or a_node not in sk.nodes or b_node not in sk.nodes:
            continue
        bandwidth = min(sk.nodes[a_node].bandwidth, sk.nodes[b_node].bandwidth)
        run.transfers.append((data / bandwidth, max(0.0, b_start - a_end)))
    if assignments and all(t in finished for t in assignments):
        run.achieved_makespan = max(finished[t][2] for t in assignments)
    return run


def rebuild_all(store: Any, rows: list[dict[str, Any]], outlier_bound: float, environment: str | None) -> list[Run]:
    """The runs of root plan `rows`; with `environment`, each with a re-plan labelled otherwise gets that fault."""
    events = store.events.of_chains([r["id"] for r in rows])
    runs = [rebuild(r, events[r["id"]], outlier_bound) for r in rows]
    by_root = {r.root_id: r for r in runs}
    foreign = store.events.foreign_replans(list(by_root), environment) if environment is not None else []
    for root, plan, label in foreign:  # re-plans of these chains only
        run = by_root[root]
        detail = f"re-plan {plan[:12]} was stored with the label '{label}', not '{run.environment}'"
        run.faults.append(Fault("other_environment", root, None, detail))
    return runs


def read_runs(
    store: Any, since: float, environment: str | None = None, limit: int = 2_000, outlier_bound: float = 10.0
) -> RunLog:
    """The newest `limit` executed runs planned since `since` in `environment` (None: every label), audited."""
    runs = rebuild_all(store, store.events.executed_roots(since, environment, limit), outlier_bound, environment)
    runs.sort(key=lambda r: (r.created_at, r.root_id))
    log = RunLog(runs, since, environment)
    if environment is not None:
        executed = store.plans.per_environment(since, executed=True)
        log.other_environments = {k: v for k, v in executed.items() if k != environment}
    return log


class RunCache:
    """One environment's runs, kept between reads: a read rebuilds only the runs with new events."""

    def __init__(self, store: Any, environment: str) -> None:
        self.store = store
        self.environment = environment
        self.runs: dict[str, Run] = {}
        self.last_event = 0
        self.outlier_bound: float | None = None
        self._lock = threading.Lock()

    def read(self, since: float, limit: int, outlier_bound: float) -> list[Run]:
        """The newest `limit` runs planned at or after `since`, oldest first."""
        with self._lock:
            if outlier_bound != self.outlier_bound:  # the audit changed: rebuild everything
                self.runs, self.last_event, self.outlier_bound = {}, 0, outlier_bound
            fresh = self.store.events.after(self.last_event, since)
            if fresh:
                self.last_event = fresh[-1][0]
                roots = sorted({root for _, root in fresh})
                rows = [
                    r
                    for r in self.store.plans.by_ids(roots)
                    if r["id"] == r["root_id"] and r["environment"] == self.environment
                ]
                rebuilt = rebuild_all(self.store, rows, outlier_bound, self.environment)
                self.runs.update((r.root_id, r) for r in rebuilt)
            for root in [k for k, r in self.runs.items() if r.created_at < since]:
                del self.runs[root]
            return sorted(self.runs.values(), key=lambda r: (r.created_at, r.root_id))[-limit:]

    def observations(self, settings: Any, now: float) -> tuple[list[Observation], int]:
        """A `Calibrator`'s `read(settings, now)`: clean observations in the window and their run count."""
        runs = [r for r in self.read(now - settings.window_s, settings.max_runs, settings.outlier_bound) if r.clean]
        return [t for r in runs for t in r.tasks], sum(1 for r in runs if r.tasks)

"""Calibrated predictions: what the service saw executed corrects the runtimes it is told (`log r[task name, node
class] + log s[node]`, an L1-penalised robust fit shrunk towards 1; docs/service.md, "Calibrated predictions").
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

log = logging.getLogger("dagsched.service")

CLASS_LABELS = ("dagsched.io/class", "node.kubernetes.io/instance-type")
NAME_LABELS = ("dagsched.io/name", "program")


def _label(obj: Any, keys: tuple[str, ...]) -> str | None:
    labels = getattr(obj, "labels", None) or {}
    return next((str(labels[key]) for key in keys if labels.get(key)), None)


def node_class(node: Any) -> str:
    """The class a node's runtimes are pooled under: a class label, else its shape."""
    return _label(node, CLASS_LABELS) or f"{node.cpu:g}cpu-{node.mem:g}GiB-{node.gpu}gpu-x{node.speed:g}"


def task_name(task: Any) -> str:
    """The name a task's runtimes are pooled under across workflows: a name label, else its id."""
    return _label(task, NAME_LABELS) or str(task.id)


def declared_runtime(task: Any, node: str, speed: float) -> float:
    """The request's own runtime of `task` on node `node` of declared `speed`: its cost there, else runtime / speed."""
    return float(task.costs[node] if task.costs and node in task.costs else task.runtime / speed)


@dataclass(frozen=True)
class Observation:
    """One executed task: its pooling keys, the declared and the actual runtime, when it finished (epoch s)."""

    name: str
    node: str
    node_class: str
    predicted_s: float
    actual_s: float
    finished_at: float


@dataclass(frozen=True)
class Factor:
    """A multiplier of predicted runtimes and what it rests on."""

    value: float  # applied to predictions (after shrinkage)
    raw: float  # the fitted multiplier before shrinkage
    count: int  # observations
    weight: float  # their decayed weight


@dataclass
class Factors:
    """The live calibration: task factors by (name, node class), node factors by node id."""

    task: dict[tuple[str, str], Factor] = field(default_factory=dict)
    name: dict[str, Factor] = field(default_factory=dict)
    """a task name's factor over every class: what a class it was never seen on gets"""
    node: dict[str, Factor] = field(default_factory=dict)
    runs: int = 0
    observations: int = 0
    active: bool = False
    enabled: bool = True
    min_runs: int = 0
    computed_at: float = 0.0

    def task_factor(self, name: str, cls: str) -> float:
        f = (self.task.get((name, cls)) or self.name.get(name)) if self.active else None
        return f.value if f is not None else 1.0

    def node_factor(self, node: str) -> float:
        f = self.node.get(node) if self.active else None
        return f.value if f is not None else 1.0

    def to_json(self) -> dict[str, Any]:
        def one(f: Factor) -> dict[str, Any]:
            return {"factor": f.value, "raw": f.raw, "count": f.count, "weight": f.weight}

        return {
            "enabled": self.enabled,
            "active": self.active,
            "runs": self.runs,
            "min_runs": self.min_runs,
            "observations": self.observations,
            "computed_at": self.computed_at,
            "task": [{"task": name, "node_class": cls, **one(f)} for (name, cls), f in sorted(self.task.items())],
            "task_name": [{"task": name, **one(f)} for name, f in sorted(self.name.items())],
            "node": [{"node": node, **one(f)} for node, f in sorted(self.node.items())],
        }


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The smallest value at which the cumulative weight reaches half the total (the lower weighted median)."""
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    i = int(np.searchsorted(cum, 0.5 * cum[-1]))
    lo = float(values[order[min(i, len(order) - 1)]])
    if i + 1 < len(order) and math.isclose(float(cum[i]), 0.5 * float(cum[-1]), rel_tol=1e-12):
        return 0.5 * (lo + float(values[order[i + 1]]))  # exactly half: the midpoint, as the plain median
    return lo


def estimate(observations: Sequence[Observation], runs: int, settings: Any, now: float | None = None) -> Factors:
    """Fit the factors to `observations` of `runs` executed workflows under the config's `calibration`."""
    now = time.time() if now is None else now
    out = Factors(
        runs=runs,
        observations=len(observations),
        enabled=bool(settings.enabled),
        min_runs=int(settings.min_runs),
        computed_at=now,
    )
    out.active = out.enabled and runs >= settings.min_runs and len(observations) > 0
    if not observations:
        return out
    y = np.array([math.log(o.actual_s / o.predicted_s) for o in observations])
    age = np.maximum(0.0, now - np.array([o.finished_at for o in observations]))
    w = np.power(0.5, age / settings.half_life_s)
    names = [o.name for o in observations]
    nodes = [o.node for o in observations]
    classes = {o.node: o.node_class for o in observations}
    by_name, by_node = _groups(names), _groups(nodes)
    by_cell = _groups([(o.name, o.node_class) for o in observations])
    log_s, log_g, dev = fit_l1(y, w, names, nodes, classes)

    def shrink(log_f: float, idx: np.ndarray) -> tuple[float, float] | None:
        """(shrunk log factor, weight), or None below the observation floor."""
        weight = float(w[idx].sum())
        if len(idx) < settings.min_observations or weight + settings.shrinkage <= 0:
            return None
        return log_f * weight / (weight + settings.shrinkage), weight

    for factors, groups, logs in ((out.node, by_node, log_s), (out.name, by_name, log_g)):
        for k, i in groups.items():
            if (sh := shrink(logs[k], i)) is not None:
                factors[k] = Factor(math.exp(sh[0]), math.exp(logs[k]), len(i), sh[1])
    for (name, cls), i in by_cell.items():
        base = out.name.get(name)
        if base is None or (sh := shrink(dev[(name, cls)], i)) is None:
            continue
        out.task[(name, cls)] = Factor(
            base.value * math.exp(sh[0]), math.exp(log_g[name] + dev[(name, cls)]), len(i), sh[1]
        )
    return out


PENALTY = {"node": 0.6, "name": 0.5, "cell": 1.0}
"""L1 penalty per unit of log factor: of explanations that fit alike, the one with the fewest, smallest factors."""


def fit_l1(
    y: np.ndarray, w: np.ndarray, names: Sequence[str], nodes: Sequence[str], classes: dict[str, str]
) -> tuple[dict[str, float], dict[str, float], dict[tuple[str, str], float]]:
    """log s per node, log g per name, d per (name, class): one LP (HiGHS) over the cells' weighted medians."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, hstack, identity

    cells = _groups(list(zip(names, nodes, strict=True)))
    keys = list(cells)
    m = np.array([weighted_median(y[i], w[i]) for i in cells.values()])
    weight = np.array([float(w[i].sum()) for i in cells.values()])
    node_ix = {n: j for j, n in enumerate(sorted({n for _, n in keys}))}
    name_ix = {n: j for j, n in enumerate(sorted({n for n, _ in keys}))}
    dev_ix = {c: j for j, c in enumerate(sorted({(n, classes[nd]) for n, nd in keys}))}
    n_s, n_g, n_d, n_c = len(node_ix), len(name_ix), len(dev_ix), len(keys)
    rows, cols = [], []
    for r, (name, node) in enumerate(keys):
        rows += [r, r, r]
        cols += [node_ix[node], n_s + name_ix[name], n_s + n_g + dev_ix[(name, classes[node])]]
    design = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_c, n_s + n_g + n_d))
    eye = identity(n_c)
    a_eq = hstack([design, -design, eye, -eye]).tocsr()  # design (t+ - t-) + r+ - r- = m
    penalty = np.concatenate(
        [np.full(n_s, PENALTY["node"]), np.full(n_g, PENALTY["name"]), np.full(n_d, PENALTY["cell"])]
    )
    cost = np.concatenate([penalty, penalty, weight, weight])
    # HiGHS's interior point (with its crossover to a vertex): 1.6 s on 10,000 cells where its simplex took 6.7 s
    found = linprog(cost, A_eq=a_eq, b_eq=m, bounds=(0, None), method="highs-ipm")
    if not found.success:
        raise RuntimeError(f"the calibration fit failed: {found.message}")
    theta = found.x[: n_s + n_g + n_d] - found.x[n_s + n_g + n_d : 2 * (n_s + n_g + n_d)]
    log_s = {n: float(theta[j]) for n, j in node_ix.items()}
    log_g = {n: float(theta[n_s + j]) for n, j in name_ix.items()}
    dev = {c: float(theta[n_s + n_g + j]) for c, j in dev_ix.items()}
    return log_s, log_g, dev


def _groups(keys: Sequence[Any]) -> dict[Any, np.ndarray]:
    groups: dict[Any, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    return {k: np.array(v, dtype=np.int64) for k, v in groups.items()}


@dataclass
class Applied:
    """What calibration changed in one plan's input, for its evidence."""

    factors: Factors
    declared_s: dict[tuple[str, str], float] = field(default_factory=dict)
    """(task id, node id) -> the request's own runtime there"""
    task_factor: dict[tuple[str, str], float] = field(default_factory=dict)
    node_factor: dict[str, float] = field(default_factory=dict)

    def evidence(self, task: str, node: str, calibrated_s: float) -> dict[str, Any] | None:
        """The calibration of one assignment (None when calibration did not act)."""
        if not self.factors.active:
            return None
        return {
            "declared_s": self.declared_s.get((task, node), calibrated_s),
            "calibrated_s": calibrated_s,
            "task_factor": self.task_factor.get((task, node), 1.0),
            "node_factor": self.node_factor.get(node, 1.0),
        }

    def summary(self) -> dict[str, Any]:
        f = self.factors
        return {
            "enabled": f.enabled,
            "active": f.active,
            "runs": f.runs,
            "min_runs": f.min_runs,
            "task_factors": len(f.task),
            "node_factors": len(f.node),
            "adjusted_nodes": sorted(n for n, v in self.node_factor.items() if v != 1.0),
            "adjusted_tasks": sorted({t for (t, _), v in self.task_factor.items() if v != 1.0}),
        }


def calibrate(workflow: Any, nodes: Sequence[Any], factors: Factors) -> tuple[Any, list[Any], Applied]:
    """The workflow and nodes with calibrated runtimes (as they are when the factors are not active)."""
    applied = Applied(factors)
    if not factors.active:
        return workflow, list(nodes), applied
    classes = {n.id: node_class(n) for n in nodes}
    node_f = {n.id: factors.node_factor(n.id) for n in nodes}
    applied.node_factor = node_f
    new_nodes = [n if node_f[n.id] == 1.0 else n.model_copy(update={"speed": n.speed / node_f[n.id]}) for n in nodes]
    tasks = []
    for t in workflow.tasks:
        name = task_name(t)
        per_class = {c: factors.task_factor(name, c) for c in set(classes.values())}
        for n in nodes:
            applied.declared_s[(t.id, n.id)] = declared_runtime(t, n.id, n.speed)
            applied.task_factor[(t.id, n.id)] = per_class[classes[n.id]]
        values = set(per_class.values())
        if values == {1.0} and (not t.costs or all(v == 1.0 for v in node_f.values())):
            tasks.append(t)
        elif t.costs or len(values) > 1:
            costs = {n.id: applied.declared_s[(t.id, n.id)] * per_class[classes[n.id]] * node_f[n.id] for n in nodes}
            tasks.append(t.model_copy(update={"costs": costs}))
        else:
            tasks.append(t.model_copy(update={"runtime": t.runtime * values.pop()}))
    changed = any(new is not old for new, old in zip(tasks, workflow.tasks, strict=True))
    wf = workflow.model_copy(update={"tasks": tasks}) if changed else workflow
    return wf, new_nodes, applied


class Calibrator:
    """The factors of one process, re-fitted in a background thread when older than `refresh_s`: no plan waits."""

    def __init__(self, read: Callable[[Any, float], tuple[list[Observation], int]]) -> None:
        """`read(settings, now)` -> (clean observations in the window, executed runs): `service.reality`."""
        self._read = read
        self._lock = threading.Lock()
        self._factors: Factors | None = None
        self._refreshing: threading.Thread | None = None

    def factors(self, settings: Any, now: float | None = None) -> Factors:
        now = time.time() if now is None else now
        if not settings.enabled:
            return Factors(enabled=False, min_runs=settings.min_runs, computed_at=now)
        cached = self._factors
        if cached is None or settings.refresh_s == 0:
            return self.refresh(settings, now)
        if now - cached.computed_at >= settings.refresh_s and (
            self._refreshing is None or not self._refreshing.is_alive()
        ):
            self._refreshing = threading.Thread(
                target=self.refresh, args=(settings,), name="dagsched-calibration", daemon=True
            )
            self._refreshing.start()
        return cached

    def refresh(self, settings: Any, now: float | None = None) -> Factors:
        """Estimate the factors now (one estimate at a time)."""
        now = time.time() if now is None else now
        with self._lock:
            try:
                observations, runs = self._read(settings, now)
                self._factors = estimate(observations, runs, settings, now)
            except Exception as err:  # noqa: BLE001  (the store may be away: plan uncalibrated, say why)
                log.warning("calibration unavailable: %s: %s", type(err).__name__, err)
                return self._factors or Factors(min_runs=settings.min_runs, computed_at=now)
            return self._factors

"""Structural facts about a compiled DAG: levels, width, critical path, total work."""

from __future__ import annotations

from typing import Any

import numpy as np

from dagsched.model.compiled import EPS, CompiledProblem, FloatArray, IntArray
from dagsched.model.ranks import njit


def levels(cp: CompiledProblem) -> IntArray:
    """Level of each task: 1 for entry tasks, 1 + max level of its parents otherwise."""
    level = np.ones(cp.n_tasks, dtype=np.int64)
    for t in cp.topo:
        preds = cp.preds(int(t))
        if len(preds):
            level[t] = 1 + int(level[preds].max())
    return level


def longest_path_s(cp: CompiledProblem, task_time_s: FloatArray) -> FloatArray:
    """Per workflow, the longest path of `task_time_s` (free transfers)."""
    finish = _finish_times(cp.topo, cp.pred_ptr, cp.pred_idx, np.asarray(task_time_s, dtype=np.float64))
    out = np.zeros(cp.n_workflows, dtype=np.float64)
    np.maximum.at(out, cp.task_wf, finish)
    return out


@njit(cache=True)
def _finish_times(topo: Any, pred_ptr: Any, pred_idx: Any, task_time_s: Any) -> Any:
    """Each task's earliest finish when every task starts as soon as its parents finished (compiled: a plan's
    bounds and deadlines ask for it several times per request)."""
    finish = np.zeros(len(task_time_s), dtype=np.float64)
    for t in topo:
        start = 0.0
        for k in range(pred_ptr[t], pred_ptr[t + 1]):
            start = max(start, finish[pred_idx[k]])
        finish[t] = start + task_time_s[t]
    return finish


def critical_path_s(cp: CompiledProblem) -> FloatArray:
    """Per workflow, the critical-path length at speed 1.0 with free transfers."""
    return longest_path_s(cp, cp.runtime_s)


def width(cp: CompiledProblem) -> int:
    """Largest number of tasks on one level (a cheap measure of parallelism)."""
    lv = levels(cp)
    return int(np.bincount(lv).max()) if len(lv) else 0


def total_work_s(cp: CompiledProblem) -> float:
    """Sum of predicted runtimes at speed 1.0."""
    return float(cp.runtime_s.sum())


def default_deadlines_s(cp: CompiledProblem) -> FloatArray:
    """Absolute deadline per workflow: its own, else submission + 2 x critical path."""
    rel = np.where(np.isnan(cp.wf_deadline_s), 2.0 * critical_path_s(cp), cp.wf_deadline_s)
    return cp.wf_submit_s + rel


def fastest_exec_s(cp: CompiledProblem) -> FloatArray:
    """Each task's predicted time on the fastest node that can host its request and a placement rule allows
    (any node if none can)."""
    hosts = np.all(cp.req[:, None, :] <= cp.cap[None, :, :] + EPS, axis=2)
    if cp.allowed is not None:
        hosts &= cp.allowed
    best = np.where(hosts, cp.exec_s, np.inf).min(axis=1)
    return np.asarray(np.where(np.isfinite(best), best, cp.exec_s.min(axis=1)), dtype=np.float64)


def critical_path_fastest_s(cp: CompiledProblem) -> FloatArray:
    """Per workflow, the critical path with every task on its fastest host and free transfers.

    What a workflow would take alone on an idle cluster with unlimited nodes of the best kind:
    the denominator of its slowdown and the unit of its stream deadline.
    """
    return longest_path_s(cp, fastest_exec_s(cp))

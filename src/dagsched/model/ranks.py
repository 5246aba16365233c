"""Priorities of tasks as pure functions of the compiled problem: what heuristics and the policy both read.

Mean costs follow HEFT (Topcuoglu et al. 2002): w̄(t) is t's execution time averaged
over nodes, c̄(p, t) its transfer time averaged over distinct node pairs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dagsched.model.compiled import CompiledProblem, FloatArray

try:
    from numba import njit as njit  # re-exported: model.graph compiles through it

    _COMPILED = True
except ImportError:  # pragma: no cover  (numba is a locked dependency; this keeps a bare install working)
    _COMPILED = False

    def njit(*args: Any, **kwargs: Any) -> Any:  # type: ignore[no-redef]
        return lambda f: f


def mean_exec_s(cp: CompiledProblem) -> FloatArray:
    """w̄: each task's execution time averaged over the nodes."""
    return np.asarray(cp.exec_s.mean(axis=1), dtype=np.float64)


def _mean_inverse_bandwidth(cp: CompiledProblem) -> float:
    m = cp.n_nodes
    if m < 2:
        return 0.0
    off = ~np.eye(m, dtype=bool)
    return float(np.mean(1.0 / cp.bandwidth[off]))


def mean_comm_succ_s(cp: CompiledProblem) -> FloatArray:
    """c̄ for every edge in successor-CSR order (0 with a single node)."""
    if cp.n_nodes < 2:
        return np.zeros(len(cp.succ_idx))
    return np.asarray(cp.succ_data * _mean_inverse_bandwidth(cp) + cp.latency_s, dtype=np.float64)


def mean_comm_pred_s(cp: CompiledProblem) -> FloatArray:
    """c̄ for every edge in predecessor-CSR order."""
    if cp.n_nodes < 2:
        return np.zeros(len(cp.pred_idx))
    return np.asarray(cp.pred_data * _mean_inverse_bandwidth(cp) + cp.latency_s, dtype=np.float64)


def upward_rank(cp: CompiledProblem) -> FloatArray:
    """rank_u(t) = w̄(t) + max over children s of (c̄(t, s) + rank_u(s))."""
    w = mean_exec_s(cp).tolist()  # plain floats: the same double arithmetic, without numpy's per-call cost
    c = mean_comm_succ_s(cp).tolist()
    ptr, idx = cp.succ_ptr.tolist(), cp.succ_idx.tolist()
    rank = [0.0] * cp.n_tasks
    for t in cp.topo[::-1].tolist():
        lo, hi = ptr[t], ptr[t + 1]
        tail = max([c[k] + rank[idx[k]] for k in range(lo, hi)]) if hi > lo else 0.0
        rank[t] = w[t] + tail
    return np.asarray(rank, dtype=np.float64)


def downward_rank(cp: CompiledProblem) -> FloatArray:
    """rank_d(t) = max over parents p of (rank_d(p) + w̄(p) + c̄(p, t)); 0 for entry tasks."""
    w = mean_exec_s(cp).tolist()
    c = mean_comm_pred_s(cp).tolist()
    ptr, idx = cp.pred_ptr.tolist(), cp.pred_idx.tolist()
    rank = [0.0] * cp.n_tasks
    for t in cp.topo.tolist():
        lo, hi = ptr[t], ptr[t + 1]
        if hi > lo:
            rank[t] = max([rank[idx[k]] + w[idx[k]] + c[k] for k in range(lo, hi)])
    return np.asarray(rank, dtype=np.float64)


def optimistic_cost_table(cp: CompiledProblem, compiled: bool = _COMPILED) -> FloatArray:
    """PEFT's OCT(t, n): the shortest remaining path from t's end if t ran on n (Arabnejad & Barbosa 2014).

    OCT(t, n) = max over children s of min over nodes q of OCT(s, q) + w(s, q) + (c̄(t, s) if q != n else 0).
    Compiled where numba is installed (the same floats: only additions, minima and maxima), else numpy.
    """
    c = mean_comm_succ_s(cp)
    if compiled:
        out: FloatArray = _oct_kernel(cp.topo, cp.succ_ptr, cp.succ_idx, cp.exec_s, c)
        return out
    m = cp.n_nodes
    oct_ = np.zeros((cp.n_tasks, m))
    for t in cp.topo[::-1]:
        lo, hi = cp.succ_ptr[t], cp.succ_ptr[t + 1]
        if hi == lo:
            continue
        best = np.zeros(m)
        for k in range(lo, hi):
            s = cp.succ_idx[k]
            via = oct_[s] + cp.exec_s[s]  # finishing s on q, per q
            # on node n: min(via[n], min_q via[q] + c̄)
            cand = np.minimum(via, via.min() + c[k])
            np.maximum(best, cand, out=best)
        oct_[t] = best
    return oct_


@njit(cache=True)
def _oct_kernel(topo: Any, succ_ptr: Any, succ_idx: Any, exec_s: Any, comm: Any) -> Any:
    n, m = exec_s.shape
    oct_ = np.zeros((n, m))
    via = np.empty(m)
    for i in range(n - 1, -1, -1):
        t = topo[i]
        for k in range(succ_ptr[t], succ_ptr[t + 1]):
            s = succ_idx[k]
            low = np.inf
            for q in range(m):
                via[q] = oct_[s, q] + exec_s[s, q]
                if via[q] < low:
                    low = via[q]
            cut = low + comm[k]
            for q in range(m):
                cand = via[q] if via[q] < cut else cut
                if cand > oct_[t, q]:
                    oct_[t, q] = cand
    return oct_


def rank_order(rank: FloatArray, cp: CompiledProblem) -> list[int]:
    """Tasks by decreasing rank; ties by topological position (so parents come first)."""
    pos = np.empty(cp.n_tasks, dtype=np.int64)
    pos[cp.topo] = np.arange(cp.n_tasks)
    return [int(t) for t in np.lexsort((pos, -rank))]


def longest_to_exit_s(cp: CompiledProblem, time_s: FloatArray) -> FloatArray:
    """Longest path of `time_s` from each task's start to an exit task of its workflow, transfers free.

    With each task's fastest execution time this is what is left of a workflow's critical path once
    the task starts (the policy's `remaining_cp` feature, SJF-CP's priority).
    """
    ptr, idx = cp.succ_ptr.tolist(), cp.succ_idx.tolist()
    w = time_s.tolist()
    out = [0.0] * cp.n_tasks
    for t in cp.topo[::-1].tolist():
        tail = 0.0
        for s in idx[ptr[t] : ptr[t + 1]]:
            if out[s] > tail:
                tail = out[s]
        out[t] = w[t] + tail
    return np.asarray(out, dtype=np.float64)

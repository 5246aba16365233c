"""What the learned priority policy reads of a problem: one row per task, the cluster summarised in every row.

The task features include everything HEFT, CPOP and PEFT rank by (upward and downward rank, their sum,
the optimistic cost table's mean and minimum, mean and best execution time, data in and out), so each of
their orders is one the network can express; the cluster summary (node count, speed spread, bandwidth,
the communication-to-computation ratio) lets one network serve clusters of 2 to 100 nodes. Times are
divided by the problem's scale (the largest upward rank: the critical path at mean costs), so a problem
and the same problem in other time units give the same rows. Features are computed once per problem
(`task_features`), in a few milliseconds for 1,000 tasks on 100 nodes (benchmarks/bench_priority.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import CompiledProblem
from dagsched.model.ranks import (
    downward_rank,
    mean_comm_pred_s,
    mean_comm_succ_s,
    mean_exec_s,
    optimistic_cost_table,
    upward_rank,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

FEATURE_VERSION = 1

TASK_FEATURES = (
    "rank_u",  # HEFT's upward rank / scale
    "rank_d",  # downward rank / scale
    "rank_cpop",  # rank_u + rank_d (CPOP's priority) / scale
    "rank_oct",  # PEFT's rank: the mean of the task's optimistic cost table row / scale
    "oct_min",  # the least entry of that row / scale
    "exec_mean",  # w̄: mean execution time over the nodes / scale
    "exec_best",  # execution time on its fastest node / scale
    "exec_spread",  # (slowest - fastest) / mean execution time
    "data_in",  # mean transfer time of its inputs, summed / scale
    "data_out",  # mean transfer time of its outputs, summed / scale
    "comm_in_max",  # its largest input's mean transfer time / scale
    "comm_out_max",  # its largest output's mean transfer time / scale
    "in_degree",  # log(1 + parents)
    "out_degree",  # log(1 + children)
    "level",  # its depth in the DAG / the DAG's depth
    "entry",  # 1 for a task without parents
    "exit",  # 1 for a task without children
    "slack",  # 1 - rank_cpop: how far off the critical path
    "cpu_share",  # its cpu request / the largest node's cpu (0 in classic mode)
    "mem_share",  # its memory request / the largest node's memory (0 in classic mode)
)
GLOBAL_FEATURES = (
    "log_tasks",  # log(tasks) / log(1000)
    "log_nodes",  # log(nodes) / log(100)
    "speed_cv",  # std / mean of the node speeds (from the execution-time table)
    "speed_ratio",  # log of the fastest over the slowest node
    "log_ccr",  # log10 of the mean transfer over the mean execution time (0: no data)
    "width",  # tasks / depth / nodes: parallelism offered per node
    "classic",  # 1 in classic mode (one task at a time per node)
    "cores",  # log2 of the mean node cpu / mean task cpu (0 in classic mode)
)
PRIOR_FEATURES = ("rank_u", "rank_cpop", "rank_oct")
"""The features the network's linear prior reads (its start: the upward rank alone, HEFT's order)."""


@dataclass(frozen=True)
class PriorityInputs:
    """One problem as the network reads it: task rows (tasks, TASK + GLOBAL features), the DAG's edges
    (2, e) parent -> child, and the classic ranks the sampler also decodes (seconds, not scaled)."""

    x: npt.NDArray[np.float32]
    edge_index: IntArray
    rank_u: FloatArray
    rank_d: FloatArray
    rank_oct: FloatArray
    oct: FloatArray
    scale_s: float


def _levels(cp: CompiledProblem) -> IntArray:
    level = [0] * cp.n_tasks
    ptr, idx = cp.pred_ptr.tolist(), cp.pred_idx.tolist()
    for t in cp.topo.tolist():
        lo, hi = ptr[t], ptr[t + 1]
        if hi > lo:
            level[t] = 1 + max(level[p] for p in idx[lo:hi])
    return np.asarray(level, dtype=np.int64)


def _segment_sum_max(values: FloatArray, ptr: IntArray, n: int) -> tuple[FloatArray, FloatArray]:
    """Per task, the sum and max of `values` over its CSR range (0 where empty)."""
    counts = np.diff(ptr)
    rows = np.repeat(np.arange(n), counts)
    total = np.bincount(rows, weights=values, minlength=n)
    most = np.zeros(n)
    if len(values):
        np.maximum.at(most, rows, values)
    return total, most


def task_features(cp: CompiledProblem, classic: bool) -> PriorityInputs:
    """The network's input rows for `cp` planned in classic mode or not (O(e m + v m))."""
    n, m = cp.n_tasks, cp.n_nodes
    rank_u, rank_d = upward_rank(cp), downward_rank(cp)
    oct_ = optimistic_cost_table(cp)
    rank_oct = oct_.mean(axis=1)
    w = mean_exec_s(cp)
    scale = float(rank_u.max(initial=0.0))
    if not scale > 0:
        scale = 1.0
    inv = 1.0 / scale
    exec_best = cp.exec_s.min(axis=1)
    exec_worst = cp.exec_s.max(axis=1)
    c_in_sum, c_in_max = _segment_sum_max(mean_comm_pred_s(cp), cp.pred_ptr, n)
    c_out_sum, c_out_max = _segment_sum_max(mean_comm_succ_s(cp), cp.succ_ptr, n)
    level = _levels(cp)
    depth = int(level.max(initial=0)) + 1
    n_pred, n_succ = np.diff(cp.pred_ptr), np.diff(cp.succ_ptr)
    if classic:
        cpu_share = mem_share = np.zeros(n)
    else:
        cpu_share = cp.req[:, 0] / max(float(cp.cap[:, 0].max()), 1e-9)
        mem_share = cp.req[:, 1] / max(float(cp.cap[:, 1].max()), 1e-9)
    rank_cpop = (rank_u + rank_d) * inv
    task = np.column_stack(
        [
            rank_u * inv,
            rank_d * inv,
            rank_cpop,
            rank_oct * inv,
            oct_.min(axis=1) * inv if m else np.zeros(n),
            w * inv,
            exec_best * inv,
            (exec_worst - exec_best) / np.maximum(w, 1e-12),
            c_in_sum * inv,
            c_out_sum * inv,
            c_in_max * inv,
            c_out_max * inv,
            np.log1p(n_pred),
            np.log1p(n_succ),
            level / max(depth - 1, 1),
            (n_pred == 0).astype(np.float64),
            (n_succ == 0).astype(np.float64),
            1.0 - rank_cpop,
            cpu_share,
            mem_share,
        ]
    )
    glob = cluster_summary(cp, classic, depth)
    x = np.concatenate([task, np.broadcast_to(glob, (n, len(glob)))], axis=1).astype(np.float32)
    edge_index = np.stack([np.repeat(np.arange(n), n_succ), cp.succ_idx]).astype(np.int64)
    return PriorityInputs(x, edge_index, rank_u, rank_d, rank_oct, oct_, scale)


def cluster_summary(cp: CompiledProblem, classic: bool, depth: int) -> FloatArray:
    """The GLOBAL_FEATURES row: the cluster and the problem in a few numbers."""
    n, m = cp.n_tasks, cp.n_nodes
    # each node's speed as the execution-time table says (classic costs need not follow one speed per node)
    rel = np.median(cp.exec_s.mean(axis=1, keepdims=True) / np.maximum(cp.exec_s, 1e-12), axis=0)
    speed_cv = float(rel.std() / max(rel.mean(), 1e-12))
    speed_ratio = float(np.log(max(rel.max(), 1e-12) / max(rel.min(), 1e-12)))
    w = mean_exec_s(cp)
    comm = mean_comm_succ_s(cp)
    mean_w = float(w.mean()) if n else 0.0
    mean_c = float(comm.mean()) if len(comm) else 0.0
    log_ccr = float(np.log10(mean_c / mean_w)) if mean_c > 0 and mean_w > 0 else 0.0
    if classic:
        cores = 0.0
    else:
        per_task = float(np.mean(np.maximum(cp.req[:, 0], 1e-3))) if n else 1.0
        cores = float(np.log2(max(float(cp.cap[:, 0].mean()) / per_task, 1e-3)))
    return np.array(
        [
            np.log(max(n, 1)) / np.log(1000.0),
            np.log(max(m, 1)) / np.log(100.0),
            speed_cv,
            speed_ratio,
            np.clip(log_ccr, -3.0, 3.0),
            n / max(depth, 1) / max(m, 1),
            1.0 if classic else 0.0,
            cores,
        ],
        dtype=np.float64,
    )


def n_features() -> int:
    return len(TASK_FEATURES) + len(GLOBAL_FEATURES)


def prior_columns() -> list[int]:
    return [TASK_FEATURES.index(f) for f in PRIOR_FEATURES]

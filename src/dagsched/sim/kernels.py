"""The decision point's rules, each once: legal pairs, the offered window, when room frees on a node, work left.

Each rule is a plain numpy function (the reference) and, where numba is installed, a compiled kernel of
the same arithmetic in the same order behind the same call (`legality`, `window`, `room_times`, `work_left_of`), so
that the two give equal results to the bit (tests/sim/test_kernels.py compares them on whole runs).

Why compile them: a decision point is asked for at every start and event, on arrays of tens of tasks and
nodes, so call overhead, not arithmetic, is the cost. No
fastmath: fused multiply-adds would change the last bit. Compiled code is cached on disk beside this
file (numba's `cache=True`), so only the first process after an install pays the compile.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import EPS

try:
    from numba import njit as njit  # re-exported: the other kernel modules compile through it

    AVAILABLE = True
except ImportError:  # pragma: no cover  (numba is a locked dependency; this keeps a bare install working)
    AVAILABLE = False

    def njit(*args: Any, **kwargs: Any) -> Any:  # type: ignore[no-redef]
        return lambda f: f


FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

NO_ALLOWED = np.ones((1, 1), dtype=np.bool_)
"""What the kernels take for `allowed` when every pair is allowed (numba wants an array, not None)."""


# ---- legal pairs ------------------------------------------------------------------------------------


def fits_numpy(
    now: float,
    req: FloatArray,
    node_up: BoolArray,
    node_available_s: FloatArray,
    free: FloatArray,
    allowed: BoolArray | None,
) -> BoolArray:
    """(r, m): the node is up and booted, its `free` room holds the request (each resource within EPS), and a
    placement rule allows the pair (`allowed`, r rows; None allows all)."""
    node_ok = node_up & ~(node_available_s > now)
    fits = node_ok[None, :] & (free[None, :, 0] + EPS >= req[:, None, 0])
    fits &= free[None, :, 1] + EPS >= req[:, None, 1]
    fits &= free[None, :, 2] + EPS >= req[:, None, 2]
    if allowed is not None:
        fits &= allowed
    return np.asarray(fits, dtype=bool)


def legality_numpy(
    now: float,
    arrival: FloatArray,
    req: FloatArray,
    ever_fits: BoolArray,
    node_up: BoolArray,
    node_available_s: FloatArray,
    free: FloatArray,
    allowed: BoolArray | None,
) -> tuple[BoolArray, float]:
    """(legal (r, m), wake) of r ready tasks given their input arrival rows, requests and `ever_fits` rows.

    A pair is legal when the task's inputs are on the node (within EPS) and it `fits_numpy`.
    `wake` is the earliest future arrival of a task's inputs on a node that is up and could ever hold
    it: the instant at which waiting may start something (inf: none).
    """
    legal = (arrival <= now + EPS) & fits_numpy(now, req, node_up, node_available_s, free, allowed)
    future = arrival > now + EPS
    if future.any():
        future &= ever_fits & node_up[None, :]
    return legal, float(arrival[future].min()) if future.any() else np.inf


@njit(cache=True)
def legality_kernel(
    now: float,
    arrival: Any,
    req: Any,
    ever_fits: Any,
    node_up: Any,
    node_available_s: Any,
    free: Any,
    allowed: Any,
    has_allowed: bool,
) -> Any:
    """`legality_numpy`, compiled."""
    r, m = arrival.shape
    legal = np.zeros((r, m), dtype=np.bool_)
    node_ok = np.empty(m, dtype=np.bool_)
    for j in range(m):
        node_ok[j] = node_up[j] and not (node_available_s[j] > now)
    horizon = now + EPS
    wake = np.inf
    for i in range(r):
        for j in range(m):
            a = arrival[i, j]
            if a <= horizon:
                room = free[j, 0] + EPS >= req[i, 0] and free[j, 1] + EPS >= req[i, 1] and free[j, 2] + EPS >= req[i, 2]
                legal[i, j] = node_ok[j] and room and (not has_allowed or allowed[i, j])
            elif ever_fits[i, j] and node_up[j] and a < wake:
                wake = a
    return legal, wake


def legality(
    now: float,
    arrival: FloatArray,
    req: FloatArray,
    ever_fits: BoolArray,
    node_up: BoolArray,
    node_available_s: FloatArray,
    free: FloatArray,
    allowed: BoolArray | None,
    compiled: bool = AVAILABLE,
) -> tuple[BoolArray, float]:
    """`legality_numpy`, by the kernel where numba is installed (and `compiled`)."""
    if not (compiled and AVAILABLE):
        return legality_numpy(now, arrival, req, ever_fits, node_up, node_available_s, free, allowed)
    has = allowed is not None
    legal, wake = legality_kernel(
        now, arrival, req, ever_fits, node_up, node_available_s, free, allowed if has else NO_ALLOWED, has
    )
    return legal, float(wake)


# ---- the offered window ---------------------------------------------------------------------------------


def window_numpy(ready: IntArray, legal: BoolArray, priority: FloatArray, topo_pos: IntArray, k: int) -> IntArray:
    """Rows of the at most k ready tasks a bounded policy is offered: those that can start somewhere now first,
    then by decreasing `priority`, then by topological position (all keys distinct, so the order is total)."""
    startable = legal.any(axis=1)
    return np.lexsort((topo_pos[ready], -priority[ready], ~startable))[:k].astype(np.int64)


@njit(cache=True)
def window_kernel(ready: Any, legal: Any, priority: Any, topo_pos: Any, k_max: int) -> Any:
    """`window_numpy`, compiled: an insertion into a sorted top-k."""
    r, m = legal.shape
    startable = np.zeros(r, dtype=np.bool_)
    for i in range(r):
        for j in range(m):
            if legal[i, j]:
                startable[i] = True
                break
    k = min(k_max, r)
    order = np.empty(k, dtype=np.int64)
    filled = 0
    for i in range(r):  # keys (not startable, -priority, topo_pos), all distinct
        t = ready[i]
        pos = filled
        while pos > 0:
            p = order[pos - 1]
            q = ready[p]
            if startable[i] != startable[p]:
                before = startable[i]
            elif priority[t] != priority[q]:
                before = priority[t] > priority[q]
            else:
                before = topo_pos[t] < topo_pos[q]
            if not before:
                break
            pos -= 1
        if pos >= k:
            continue
        last = min(filled, k - 1)
        for s in range(last, pos, -1):
            order[s] = order[s - 1]
        order[pos] = i
        if filled < k:
            filled += 1
    return order


def window(
    ready: IntArray, legal: BoolArray, priority: FloatArray, topo_pos: IntArray, k: int, compiled: bool = AVAILABLE
) -> IntArray:
    """`window_numpy`, by the kernel where numba is installed (and `compiled`)."""
    if compiled and AVAILABLE:
        return np.asarray(window_kernel(ready, legal, priority, topo_pos, k), dtype=np.int64)
    return window_numpy(ready, legal, priority, topo_pos, k)


# ---- when room frees on a node ----------------------------------------------------------------------------


def room_times_numpy(
    now: float, req: FloatArray, free: FloatArray, run_node: IntArray, run_end: FloatArray, run_req: FloatArray
) -> FloatArray:
    """When each node first has each request (k, 3) free, shape (k, m), as running tasks end when predicted.

    `run_node`, `run_end`, `run_req` describe the running tasks (any order). Running tasks only release
    room as time goes on, so the first instant with room lasts.
    """
    room = np.where(np.all(free[None, :, :] + EPS >= req[:, None, :], axis=2), now, np.inf)
    if not len(run_node):
        return room
    order = np.lexsort((run_end, run_node))
    nodes, ends = run_node[order], run_end[order]
    cum = np.cumsum(run_req[order], axis=0)
    first_row = np.searchsorted(nodes, nodes, side="left")
    before = np.where(first_row[:, None] > 0, cum[np.maximum(first_row - 1, 0)], 0.0)
    after = free[nodes] + (cum - before)  # room on the row's node once it and the earlier rows ended
    sat = np.all(after[None, :, :] + EPS >= req[:, None, :], axis=2)
    t_sat = np.where(sat, ends[None, :], np.inf)
    starts = np.flatnonzero(np.r_[True, nodes[1:] != nodes[:-1]])
    busy = nodes[starts]
    room[:, busy] = np.minimum(room[:, busy], np.minimum.reduceat(t_sat, starts, axis=1))
    return room


@njit(cache=True)
def room_times_kernel(now: float, req_c: Any, free: Any, run_node: Any, run_end: Any, run_req: Any) -> Any:
    """`room_times_numpy`, compiled."""
    k, m = req_c.shape[0], free.shape[0]
    room = np.empty((k, m))
    for i in range(k):
        for j in range(m):
            fits = free[j, 0] + EPS >= req_c[i, 0] and free[j, 1] + EPS >= req_c[i, 1]
            room[i, j] = now if fits and free[j, 2] + EPS >= req_c[i, 2] else np.inf
    nr = len(run_node)
    if nr == 0:
        return room
    by_end = np.argsort(run_end, kind="mergesort")  # np.lexsort((run_end, run_node)): two stable sorts
    order = by_end[np.argsort(run_node[by_end], kind="mergesort")]
    cum = np.empty((nr, 3))
    acc = np.zeros(3)
    for s in range(nr):  # numpy's cumsum over all rows, then the difference from the node's first row
        for c in range(3):
            acc[c] += run_req[order[s], c]
            cum[s, c] = acc[c]
    first = 0
    for s in range(nr):
        nd = run_node[order[s]]
        if s > 0 and nd != run_node[order[s - 1]]:
            first = s
        for i in range(k):
            ok = True
            for c in range(3):
                before = cum[first - 1, c] if first > 0 else 0.0
                if not (free[nd, c] + (cum[s, c] - before) + EPS >= req_c[i, c]):
                    ok = False
                    break
            if ok and run_end[order[s]] < room[i, nd]:
                room[i, nd] = run_end[order[s]]
    return room


def room_times(
    now: float,
    req: FloatArray,
    free: FloatArray,
    run_node: IntArray,
    run_end: FloatArray,
    run_req: FloatArray,
    compiled: bool = AVAILABLE,
) -> FloatArray:
    """`room_times_numpy`, by the kernel where numba is installed (and `compiled`)."""
    if compiled and AVAILABLE:
        return np.asarray(room_times_kernel(now, req, free, run_node, run_end, run_req))
    return room_times_numpy(now, req, free, run_node, run_end, run_req)


def work_left_of_numpy(work: FloatArray, status: Any, done: int, task_wf: IntArray, workflows: IntArray) -> FloatArray:
    """Per workflow of `workflows`, `work` summed over its tasks whose `status` is not `done`, every workflow's tasks
    in index order from 0 (as `np.bincount` adds its weights, a done task adding 0). O(n)."""
    left = np.bincount(task_wf, np.where(status == done, 0.0, work), minlength=int(task_wf.max(initial=-1)) + 1)
    return np.asarray(left[workflows], dtype=np.float64)


@njit(cache=True)
def work_left_of_kernel(work: Any, status: Any, done: int, wf_task_ptr: Any, workflows: Any) -> Any:
    """`work_left_of_numpy` over the named workflows' tasks only (a workflow's tasks are consecutive: `wf_task_ptr`),
    added in the same order. O(their tasks)."""
    out = np.empty(len(workflows))
    for i in range(len(workflows)):
        w = workflows[i]
        acc = 0.0
        for t in range(wf_task_ptr[w], wf_task_ptr[w + 1]):
            acc += 0.0 if status[t] == done else work[t]
        out[i] = acc
    return out


def work_left_of(
    work: FloatArray,
    status: Any,
    done: int,
    task_wf: IntArray,
    wf_task_ptr: IntArray,
    workflows: IntArray,
    compiled: bool = AVAILABLE,
) -> FloatArray:
    """`work_left_of_numpy`, by the kernel where numba is installed (and `compiled`)."""
    if compiled and AVAILABLE:
        return np.asarray(work_left_of_kernel(work, status, done, wf_task_ptr, workflows))
    return work_left_of_numpy(work, status, done, task_wf, workflows)

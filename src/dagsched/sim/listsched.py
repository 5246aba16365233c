"""The list-scheduling decoder, compiled: HEFT's planning loop over arrays, for any task priority.

One decode places the tasks to plan one at a time: among the ready ones (every parent placed, or started
before the plan) the one of highest priority (ties: lower topological position) goes next, to the node
where it finishes earliest, inserted into the first idle slot long enough. That is exactly the loop of
`schedulers.static` (`ready_first`, `earliest_finish`, `StaticPlanner.assign`) over `sim.slots`'
timelines, with the same floating-point expressions in the same order, so a decode gives the Python
planners' plan to the bit (tests/sim/test_listsched.py compares them on whole runs in every mode):

- data arrival: a parent's output is on its own node when it ends and on another `data / bandwidth +
  latency` later (`CompiledProblem.input_arrival_s`), never before the task's workflow is submitted;
- slots: `NodeTimeline.earliest_start` (resource-aware segments; capacity 1 and requests of 1 in classic
  mode), zero-length uses kept as points a slot may not crowd out, and `NodeTimeline.reserve`;
- a node is a host when its capacity could hold the task, a placement rule allows the pair and it is up;
  a migrated task avoids the node it was migrated off when another can take it.

Two optional node rules make CPOP and PEFT the same loop: `node_bias` (PEFT adds its optimistic cost
table to the finish times before the argmin) and `pinned` (CPOP's critical-path processor, unless it
cannot take the task). `decode_many` runs one decode per row of a priority matrix (a sampler's
Gumbel-perturbed scores) from the same starting timelines and keeps the plan of least makespan.

The timelines are `sim.slot_kernels`' arrays (`TimelineArrays`). A node's finish is at least its ready time
plus the task's run there, so the slot search runs only on nodes whose bound can still win, and gives up as
soon as its slot would lose: the argmin is the Python one's, found with about half the searches (a
1,000-task decode on 100 nodes in about 2 ms in cloud mode and 4 ms in classic mode on this CPU,
benchmarks/bench_decoder.py). No fastmath: every comparison is the Python planners' own. Compiled once and
cached on disk (numba's `cache=True`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import CompiledProblem
from dagsched.sim import kernels, slot_kernels
from dagsched.sim.kernels import AVAILABLE
from dagsched.sim.slot_kernels import TimelineArrays, timeline_arrays
from dagsched.sim.slots import NodeTimeline

njit = kernels.njit  # numba's, or a no-op where numba is missing

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

__all__ = ["AVAILABLE", "DecodeInputs", "TimelineArrays", "decode", "decode_many", "timeline_arrays"]

_INF = np.inf
_NO_BIAS = np.zeros((0, 0))


@dataclass
class DecodeInputs:
    """What a decode reads besides the priorities: the problem's arrays and the plan's starting state.

    `in_plan` marks the tasks to place (unstarted, parents placed before the plan or in the plan); `node0` and
    `finish0` say where and when every other task ran or runs (PlanState's `node` and `finish`); `not_before`
    is each task's earliest start (its workflow's submission, and now). `hosts` is `ever_fits` of every task,
    `avoid` the node each task was migrated off (-1: none), `req` each task's request.
    """

    in_plan: BoolArray
    topo_pos: IntArray
    pred_ptr: IntArray
    pred_idx: IntArray
    pred_data: FloatArray
    succ_ptr: IntArray
    succ_idx: IntArray
    exec_s: FloatArray
    bandwidth: FloatArray
    latency_s: float
    hosts: BoolArray
    avoid: IntArray
    req: FloatArray
    node0: IntArray
    finish0: FloatArray
    not_before: FloatArray
    lines: TimelineArrays

    @classmethod
    def of(
        cls,
        cp: CompiledProblem,
        tasks: Sequence[int],
        lines: Sequence[NodeTimeline],
        node: IntArray,
        finish: FloatArray,
        now: float,
        hosts: BoolArray,
        avoid: IntArray,
        req: FloatArray,
    ) -> DecodeInputs:
        """The inputs of a plan of `tasks` over `lines` from PlanState's `node` and `finish` at `now`."""
        in_plan = np.zeros(cp.n_tasks, dtype=np.bool_)
        in_plan[np.asarray(tasks, dtype=np.int64)] = True
        pos = np.empty(cp.n_tasks, dtype=np.int64)
        pos[cp.topo] = np.arange(cp.n_tasks)
        not_before = np.maximum(cp.wf_submit_s[cp.task_wf], now)
        return cls(
            in_plan,
            pos,
            cp.pred_ptr,
            cp.pred_idx,
            cp.pred_data,
            cp.succ_ptr,
            cp.succ_idx,
            cp.exec_s,
            cp.bandwidth,
            float(cp.latency_s),
            np.ascontiguousarray(hosts, dtype=np.bool_),
            np.asarray(avoid, dtype=np.int64),
            np.ascontiguousarray(req, dtype=np.float64),
            np.asarray(node, dtype=np.int64),
            np.asarray(finish, dtype=np.float64),
            not_before,
            timeline_arrays(lines, len(tasks)),
        )

    def args(self) -> tuple[Any, ...]:
        ln = self.lines
        return (
            self.in_plan,
            self.topo_pos,
            self.pred_ptr,
            self.pred_idx,
            self.pred_data,
            self.succ_ptr,
            self.succ_idx,
            self.exec_s,
            self.bandwidth,
            self.latency_s,
            self.hosts,
            self.avoid,
            self.req,
            self.node0,
            self.finish0,
            self.not_before,
            ln.cap,
            ln.avail,
            ln.seg_t,
            ln.seg_u,
            ln.nseg,
            ln.pt_t,
            ln.pt_r,
            ln.npt,
        )


# ---- the ready queue: a binary heap on (-priority, topological position) -----------------------------------


@njit(cache=True)
def _before(ka: float, pa: int, kb: float, pb: int) -> bool:
    return ka < kb or (ka == kb and pa < pb)


@njit(cache=True)
def _push(hk: Any, hp: Any, ht: Any, size: int, key: float, pos: int, t: int) -> int:
    i = size
    hk[i], hp[i], ht[i] = key, pos, t
    while i > 0:
        parent = (i - 1) // 2
        if not _before(hk[i], hp[i], hk[parent], hp[parent]):
            break
        hk[i], hk[parent] = hk[parent], hk[i]
        hp[i], hp[parent] = hp[parent], hp[i]
        ht[i], ht[parent] = ht[parent], ht[i]
        i = parent
    return size + 1


@njit(cache=True)
def _pop(hk: Any, hp: Any, ht: Any, size: int) -> int:
    """Remove the root; the caller read it first. Returns the new size."""
    size -= 1
    hk[0], hp[0], ht[0] = hk[size], hp[size], ht[size]
    i = 0
    while True:
        a, b, best = 2 * i + 1, 2 * i + 2, i
        if a < size and _before(hk[a], hp[a], hk[best], hp[best]):
            best = a
        if b < size and _before(hk[b], hp[b], hk[best], hp[best]):
            best = b
        if best == i:
            return size
        hk[i], hk[best] = hk[best], hk[i]
        hp[i], hp[best] = hp[best], hp[i]
        ht[i], ht[best] = ht[best], ht[i]
        i = best


# ---- one decode -------------------------------------------------------------------------------------------


@njit(cache=True)
def _decode(
    priority: Any,
    in_plan: Any,
    topo_pos: Any,
    pred_ptr: Any,
    pred_idx: Any,
    pred_data: Any,
    succ_ptr: Any,
    succ_idx: Any,
    exec_s: Any,
    bandwidth: Any,
    latency_s: float,
    hosts: Any,
    avoid: Any,
    req: Any,
    node: Any,
    finish: Any,
    not_before: Any,
    cap: Any,
    avail: Any,
    seg_t: Any,
    seg_u: Any,
    nseg: Any,
    pt_t: Any,
    pt_r: Any,
    npt: Any,
    node_bias: Any,
    pinned: Any,
    start_out: Any,
    order_out: Any,
    ready_step: Any,
) -> float:
    """Place every task of `in_plan`, writing `node`, `finish` (in place), `start_out`, the order placed and the
    step at which each became ready; the timelines are updated in place. Returns the latest planned finish."""
    n, m = exec_s.shape
    left = np.zeros(n, dtype=np.int64)
    hk = np.empty(n)
    hp = np.empty(n, dtype=np.int64)
    ht = np.empty(n, dtype=np.int64)
    size = 0
    for t in range(n):
        if not in_plan[t]:
            continue
        c = 0
        for k in range(pred_ptr[t], pred_ptr[t + 1]):
            if in_plan[pred_idx[k]]:
                c += 1
        left[t] = c
        if c == 0:
            size = _push(hk, hp, ht, size, -priority[t], topo_pos[t], t)
            ready_step[t] = 0
    last_use = np.empty(m)
    for nd in range(m):
        last_use[nd] = seg_t[nd, nseg[nd] - 1]
    arrival = np.empty(m)
    start = np.empty(m)
    has_bias = node_bias.shape[0] > 0
    worst = -_INF
    step = 0
    while size > 0:
        t = ht[0]
        size = _pop(hk, hp, ht, size)
        order_out[step] = t
        # when t's inputs are on each node (input_arrival_s)
        nb = not_before[t]
        for nd in range(m):
            arrival[nd] = nb
        for k in range(pred_ptr[t], pred_ptr[t + 1]):
            p = pred_idx[k]
            src = node[p]
            end = finish[p]
            data = pred_data[k]
            for nd in range(m):
                v = end if nd == src else (end + data / bandwidth[src, nd]) + latency_s
                if v > arrival[nd]:
                    arrival[nd] = v
        # the node of earliest finish (earliest_finish, then np.argmin: the first minimum), with PEFT's bias or
        # CPOP's pinned node when it can take t. A node's finish is at least its lower bound `ready + exec` (the
        # slot search never starts before `ready`), so only nodes whose bound can still win are searched.
        r0, r1, r2 = req[t, 0], req[t, 1], req[t, 2]
        av = avoid[t]
        elsewhere = False
        for nd in range(m):
            a = avail[nd]
            host = hosts[t, nd] and a < _INF
            if host and nd != av:
                elsewhere = True
            if not host:
                start[nd] = _INF  # here: the node's ready time (inf: cannot take t)
            else:
                start[nd] = arrival[nd] if arrival[nd] >= a else a
        if av >= 0 and elsewhere:
            start[av] = _INF  # migrated off it: elsewhere if anywhere else can take it
        best = -1
        best_start = _INF
        pin = pinned[t]
        if pin >= 0 and start[pin] < _INF:
            best_start = slot_kernels.slot(
                t,
                pin,
                start[pin],
                arrival,
                exec_s,
                r0,
                r1,
                r2,
                last_use,
                cap,
                avail,
                seg_t,
                seg_u,
                nseg,
                pt_t,
                pt_r,
                npt,
            )
            best = pin
        else:
            # searched first: the node with the least upper bound (after its last planned use a node is empty, so
            # t can always start at max(ready, last use) there)
            first = 0
            first_bound = _INF
            for nd in range(m):
                lu = last_use[nd]
                bound = (start[nd] if start[nd] >= lu else lu) + exec_s[t, nd]
                if has_bias:
                    bound = bound + node_bias[t, nd]
                if bound < first_bound:
                    first_bound, first = bound, nd
            best = first
            best_v = _INF
            if start[first] < _INF:
                best_start = slot_kernels.slot(
                    t,
                    first,
                    start[first],
                    arrival,
                    exec_s,
                    r0,
                    r1,
                    r2,
                    last_use,
                    cap,
                    avail,
                    seg_t,
                    seg_u,
                    nseg,
                    pt_t,
                    pt_r,
                    npt,
                )
                best_v = best_start + exec_s[t, first]
                if has_bias:
                    best_v = best_v + node_bias[t, first]
            for nd in range(m):
                if nd == first or start[nd] == _INF:
                    continue
                bound = start[nd] + exec_s[t, nd]
                if has_bias:
                    bound = bound + node_bias[t, nd]
                if bound > best_v or (bound == best_v and nd > best):
                    continue
                if start[nd] >= last_use[nd]:
                    st = start[nd]
                elif npt[nd] == 0:  # no zero-length use to crowd out: the search may give up early
                    st = slot_kernels.segment_start_below(
                        nd,
                        arrival[nd],
                        exec_s[t, nd],
                        r0,
                        r1,
                        r2,
                        cap,
                        avail,
                        seg_t,
                        seg_u,
                        nseg,
                        node_bias[t, nd] if has_bias else 0.0,
                        best_v,
                        nd > best,
                    )
                    if st == _INF:
                        continue
                else:
                    st = slot_kernels.earliest_start(
                        nd, arrival[nd], exec_s[t, nd], r0, r1, r2, cap, avail, seg_t, seg_u, nseg, pt_t, pt_r, npt
                    )
                v = st + exec_s[t, nd]
                if has_bias:
                    v = v + node_bias[t, nd]
                if v < best_v or (v == best_v and nd < best):
                    best_v, best, best_start = v, nd, st
        s = best_start
        f = s + exec_s[t, best]
        slot_kernels.reserve(best, s, f, r0, r1, r2, seg_t, seg_u, nseg, pt_t, pt_r, npt)
        last_use[best] = seg_t[best, nseg[best] - 1]
        node[t] = best
        finish[t] = f
        start_out[t] = s
        if f > worst:
            worst = f
        step += 1
        for k in range(succ_ptr[t], succ_ptr[t + 1]):
            c = succ_idx[k]
            if in_plan[c]:
                left[c] -= 1
                if left[c] == 0:
                    size = _push(hk, hp, ht, size, -priority[c], topo_pos[c], c)
                    ready_step[c] = step
    return worst


@njit(cache=True)
def _decode_many(
    priorities: Any,
    in_plan: Any,
    topo_pos: Any,
    pred_ptr: Any,
    pred_idx: Any,
    pred_data: Any,
    succ_ptr: Any,
    succ_idx: Any,
    exec_s: Any,
    bandwidth: Any,
    latency_s: float,
    hosts: Any,
    avoid: Any,
    req: Any,
    node0: Any,
    finish0: Any,
    not_before: Any,
    cap: Any,
    avail: Any,
    seg_t0: Any,
    seg_u0: Any,
    nseg0: Any,
    pt_t0: Any,
    pt_r0: Any,
    npt0: Any,
    node_bias: Any,
    pinned: Any,
    n_plan: int,
) -> Any:
    """One decode per row of `priorities`, each from the same starting timelines; the makespan of each, its order
    and ready steps, and the node, start and finish of every task in the first plan of least makespan."""
    k_rows, n = priorities.shape
    m = exec_s.shape[1]
    spans = np.empty(k_rows)
    orders = np.empty((k_rows, n_plan), dtype=np.int64)
    steps = np.full((k_rows, n), -1, dtype=np.int64)
    # working timelines: allocated once (room for the whole decode, untouched until used) and set back to the
    # starting ones before each row, node by node, only as far as each holds anything
    seg_t, seg_u, nseg = np.empty_like(seg_t0), np.empty_like(seg_u0), nseg0.copy()
    pt_t, pt_r, npt = np.empty_like(pt_t0), np.empty_like(pt_r0), npt0.copy()
    node, finish, start = node0.copy(), finish0.copy(), np.full(n, _INF)
    best_node, best_start, best_finish = node0.copy(), np.full(n, _INF), finish0.copy()
    best_span = _INF
    best_row = -1
    for row in range(k_rows):
        for nd in range(m):
            for i in range(nseg0[nd]):
                seg_t[nd, i] = seg_t0[nd, i]
                seg_u[nd, i, 0] = seg_u0[nd, i, 0]
                seg_u[nd, i, 1] = seg_u0[nd, i, 1]
                seg_u[nd, i, 2] = seg_u0[nd, i, 2]
            nseg[nd] = nseg0[nd]
            for i in range(npt0[nd]):
                pt_t[nd, i] = pt_t0[nd, i]
                pt_r[nd, i, 0] = pt_r0[nd, i, 0]
                pt_r[nd, i, 1] = pt_r0[nd, i, 1]
                pt_r[nd, i, 2] = pt_r0[nd, i, 2]
            npt[nd] = npt0[nd]
        node[:] = node0
        finish[:] = finish0
        span = _decode(
            priorities[row],
            in_plan,
            topo_pos,
            pred_ptr,
            pred_idx,
            pred_data,
            succ_ptr,
            succ_idx,
            exec_s,
            bandwidth,
            latency_s,
            hosts,
            avoid,
            req,
            node,
            finish,
            not_before,
            cap,
            avail,
            seg_t,
            seg_u,
            nseg,
            pt_t,
            pt_r,
            npt,
            node_bias,
            pinned,
            start,
            orders[row],
            steps[row],
        )
        spans[row] = span
        if span < best_span or best_row < 0:
            best_span, best_row = span, row
            best_node[:] = node
            best_start[:] = start
            best_finish[:] = finish
    return spans, orders, steps, best_row, best_node, best_start, best_finish


@dataclass
class Decoded:
    """The decodes of a priority matrix: each row's makespan (latest planned finish), placing order and the step
    each task became ready at (-1: not planned); the best row and its plan (node, start and finish per task)."""

    spans: FloatArray
    orders: IntArray
    ready_steps: IntArray
    best: int
    node: IntArray
    start: FloatArray
    finish: FloatArray


def decode_many(
    inputs: DecodeInputs,
    priorities: FloatArray,
    node_bias: FloatArray | None = None,
    pinned: IntArray | None = None,
) -> Decoded:
    """One decode per row of `priorities` (k, n_tasks) from the inputs' timelines, which are left as they were."""
    prio = np.ascontiguousarray(np.atleast_2d(priorities), dtype=np.float64)
    n = len(inputs.in_plan)
    bias = _NO_BIAS if node_bias is None else np.ascontiguousarray(node_bias, dtype=np.float64)
    pin = np.full(n, -1, dtype=np.int64) if pinned is None else np.asarray(pinned, dtype=np.int64)
    kernel: Any = _decode_many
    out = kernel(prio, *inputs.args(), bias, pin, int(inputs.in_plan.sum()))
    spans, orders, steps, best, node, start, finish = out
    return Decoded(spans, orders, steps, int(best), node, start, finish)


def decode(
    inputs: DecodeInputs,
    priority: FloatArray,
    node_bias: FloatArray | None = None,
    pinned: IntArray | None = None,
) -> Decoded:
    """One decode of `priority` (n_tasks,)."""
    return decode_many(inputs, np.asarray(priority, dtype=np.float64)[None, :], node_bias, pinned)


def ready_pairs(orders: IntArray, ready_steps: IntArray) -> tuple[IntArray, IntArray]:
    """For K decodes (orders (K, L), ready steps (K, n)), every (group, task) pair of a task in a ready set:
    group k * L + i is the ready set of step i of decode k; a task is in it from the step it became ready up to
    the step it was placed."""
    k_rows, length = orders.shape
    rows = np.arange(k_rows)[:, None]
    first = ready_steps[rows, orders]  # (K, L) per placed task, in placing order
    last = np.broadcast_to(np.arange(length), (k_rows, length))
    counts = (last - first + 1).ravel()
    task = np.repeat(orders.ravel(), counts)
    offset = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    step = np.repeat(first.ravel(), counts) + offset
    group = np.repeat(np.repeat(np.arange(k_rows), length), counts) * length + step
    return np.asarray(group, dtype=np.int64), np.asarray(task, dtype=np.int64)

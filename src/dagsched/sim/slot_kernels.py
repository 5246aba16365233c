"""`sim.slots`' node timelines as arrays, and their search and reservation as numba kernels.

What the compiled list-scheduling decoder (`sim.listsched`) places tasks on: per node, segment start times
`seg_t[nd, :nseg[nd]]` and the planned use in each (`seg_u`, cpu/mem/gpu), and the zero-length uses
(`pt_t`, `pt_r`, `npt`), with room allocated up front for everything a decode can add. Each kernel is a
method of `NodeTimeline` with the same floating-point expressions in the same order (`earliest_start`,
`reserve`), so a search here gives the Python timeline's answer to the bit. No fastmath.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dagsched.sim import kernels
from dagsched.sim.slots import NodeTimeline, Timelines

njit = kernels.njit  # numba's, or a no-op where numba is missing


FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_EPS = 1e-9  # NodeTimeline's own literal (equal to model.compiled.EPS)
_INF = np.inf


@dataclass
class TimelineArrays:
    """Every node's planned use as arrays, with room for `extra_segments` more segments and `extra_points` more
    zero-length uses per node (what a decode of that many tasks can add)."""

    cap: FloatArray  # (m, 3)
    avail: FloatArray  # (m,) available_from; inf: down
    seg_t: FloatArray  # (m, S)
    seg_u: FloatArray  # (m, S, 3)
    nseg: IntArray  # (m,)
    pt_t: FloatArray  # (m, P)
    pt_r: FloatArray  # (m, P, 3)
    npt: IntArray  # (m,)


def timeline_arrays(lines: Sequence[NodeTimeline], n_tasks: int) -> TimelineArrays:
    """`lines` as arrays with room for a decode of `n_tasks` tasks (each adds at most 2 segments or 1 point)."""
    m = len(lines)
    nseg = np.array([len(line.times) for line in lines], dtype=np.int64)
    npt = np.array([len(line.points) for line in lines], dtype=np.int64)
    width = int(nseg.max(initial=1)) + 2 * n_tasks + 1
    pwidth = int(npt.max(initial=0)) + n_tasks + 1
    seg_t = np.empty((m, width))
    seg_u = np.empty((m, width, 3))
    pt_t = np.empty((m, pwidth))
    pt_r = np.empty((m, pwidth, 3))
    for nd, line in enumerate(lines):
        k = len(line.times)
        if k == 1 and not line.points:  # an empty line (most of them when a plan starts)
            seg_t[nd, 0] = line.times[0]
            seg_u[nd, 0] = line.used[0]
            continue
        seg_t[nd, :k] = line.times
        seg_u[nd, :k] = line.used
        if line.points:
            pt_t[nd, : len(line.points)] = line.points
            pt_r[nd, : len(line.points)] = line.point_reqs
    if isinstance(lines, Timelines):
        avail = lines.available_from.copy()
    else:
        avail = np.array([line.available_from for line in lines], dtype=np.float64)
    cap = np.array([line.cap for line in lines], dtype=np.float64).reshape(m, 3)
    return TimelineArrays(cap, avail, seg_t, seg_u, nseg, pt_t, pt_r, npt)


# ---- the timeline, as arrays (NodeTimeline's methods, same expressions) -----------------------------------


@njit(cache=True, inline="always")
def bisect_right(a: Any, row: int, n: int, x: float) -> int:
    """bisect.bisect_right(a[row, :n], x), without making a view of the row (a view per call was most of the
    slot search's time)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[row, mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always")
def segment_start(
    nd: int,
    ready_s: float,
    duration_s: float,
    r0: float,
    r1: float,
    r2: float,
    cap: Any,
    avail: Any,
    seg_t: Any,
    seg_u: Any,
    nseg: Any,
) -> float:
    """`NodeTimeline._segment_start`."""
    a = avail[nd]
    ready = ready_s if ready_s >= a else a
    n = nseg[nd]
    if ready >= seg_t[nd, n - 1]:
        return ready
    i = n - 1  # the segment holding `ready` (bisect_right - 1), walked to from the end: plans grow at the end, so
    while seg_t[nd, i] > ready:  # this is a step or two where a bisection took six unpredictable ones
        i -= 1
    have = False
    start = 0.0
    eps = 1e-9  # NodeTimeline's literal (a local: a global float was slower to read in the loop)
    c0, c1, c2 = cap[nd, 0] + eps, cap[nd, 1] + eps, cap[nd, 2] + eps
    while i < n:
        if seg_u[nd, i, 0] + r0 <= c0 and seg_u[nd, i, 1] + r1 <= c1 and seg_u[nd, i, 2] + r2 <= c2:
            if not have:
                t = seg_t[nd, i]
                start = ready if ready >= t else t
                have = True
            seg_end = seg_t[nd, i + 1] if i + 1 < n else _INF
            if seg_end >= start + duration_s - 1e-12:
                return start
        else:
            have = False
        i += 1
    return _INF  # unreachable: the last segment is always empty


@njit(cache=True, inline="always")
def segment_start_below(
    nd: int,
    ready_s: float,
    duration_s: float,
    r0: float,
    r1: float,
    r2: float,
    cap: Any,
    avail: Any,
    seg_t: Any,
    seg_u: Any,
    nseg: Any,
    bias: float,
    best_v: float,
    lose_tie: bool,
) -> float:
    """`_segment_start`, given up (inf) as soon as the slot's finish `start + duration_s + bias` would lose to
    `best_v` (ties lose when `lose_tie`): later slots only start later."""
    a = avail[nd]
    ready = ready_s if ready_s >= a else a
    n = nseg[nd]
    if ready >= seg_t[nd, n - 1]:
        return ready  # the caller's lower bound already said whether this can win
    i = n - 1  # the segment holding `ready` (bisect_right - 1), walked to from the end: plans grow at the end, so
    while seg_t[nd, i] > ready:  # this is a step or two where a bisection took six unpredictable ones
        i -= 1
    have = False
    start = 0.0
    eps = 1e-9  # NodeTimeline's literal (a local: a global float was slower to read in the loop)
    c0, c1, c2 = cap[nd, 0] + eps, cap[nd, 1] + eps, cap[nd, 2] + eps
    while i < n:
        if seg_u[nd, i, 0] + r0 <= c0 and seg_u[nd, i, 1] + r1 <= c1 and seg_u[nd, i, 2] + r2 <= c2:
            if not have:
                t = seg_t[nd, i]
                start = ready if ready >= t else t
                have = True
                v = start + duration_s + bias
                if v > best_v or (v == best_v and lose_tie):
                    return _INF
            seg_end = seg_t[nd, i + 1] if i + 1 < n else _INF
            if seg_end >= start + duration_s - 1e-12:
                return start
        else:
            have = False
        i += 1
    return _INF  # unreachable: the last segment is always empty


@njit(cache=True)
def crowded_point(
    nd: int,
    start_s: float,
    duration_s: float,
    r0: float,
    r1: float,
    r2: float,
    cap: Any,
    seg_t: Any,
    seg_u: Any,
    nseg: Any,
    pt_t: Any,
    pt_r: Any,
    npt: Any,
) -> float:
    """`NodeTimeline._crowded_point` (nan: none)."""
    end = start_s + duration_s
    eps = 1e-9  # NodeTimeline's literal (a local: a global float was slower to read in the loop)
    c0, c1, c2 = cap[nd, 0] + eps, cap[nd, 1] + eps, cap[nd, 2] + eps
    k = bisect_right(pt_t, nd, npt[nd], start_s)
    while k < npt[nd] and pt_t[nd, k] < end:
        p = pt_t[nd, k]
        i = bisect_right(seg_t, nd, nseg[nd], p) - 1
        if not (
            seg_u[nd, i, 0] + r0 + pt_r[nd, k, 0] <= c0
            and seg_u[nd, i, 1] + r1 + pt_r[nd, k, 1] <= c1
            and seg_u[nd, i, 2] + r2 + pt_r[nd, k, 2] <= c2
        ):
            return float(p)
        k += 1
    return np.nan


@njit(cache=True, inline="always")
def earliest_start(
    nd: int,
    ready_s: float,
    duration_s: float,
    r0: float,
    r1: float,
    r2: float,
    cap: Any,
    avail: Any,
    seg_t: Any,
    seg_u: Any,
    nseg: Any,
    pt_t: Any,
    pt_r: Any,
    npt: Any,
) -> float:
    """`NodeTimeline.earliest_start`."""
    start = segment_start(nd, ready_s, duration_s, r0, r1, r2, cap, avail, seg_t, seg_u, nseg)
    if npt[nd] > 0:
        while True:
            blocked = crowded_point(nd, start, duration_s, r0, r1, r2, cap, seg_t, seg_u, nseg, pt_t, pt_r, npt)
            if np.isnan(blocked):
                break
            start = segment_start(nd, blocked, duration_s, r0, r1, r2, cap, avail, seg_t, seg_u, nseg)
    return start


@njit(cache=True)
def split(nd: int, t: float, seg_t: Any, seg_u: Any, nseg: Any) -> int:
    """`NodeTimeline._split`."""
    n = nseg[nd]
    i = bisect_right(seg_t, nd, n, t) - 1
    if seg_t[nd, i] == t:
        return i
    for k in range(n, i + 1, -1):
        seg_t[nd, k] = seg_t[nd, k - 1]
        seg_u[nd, k, 0] = seg_u[nd, k - 1, 0]
        seg_u[nd, k, 1] = seg_u[nd, k - 1, 1]
        seg_u[nd, k, 2] = seg_u[nd, k - 1, 2]
    seg_t[nd, i + 1] = t
    seg_u[nd, i + 1, 0] = seg_u[nd, i, 0]
    seg_u[nd, i + 1, 1] = seg_u[nd, i, 1]
    seg_u[nd, i + 1, 2] = seg_u[nd, i, 2]
    nseg[nd] = n + 1
    return i + 1


@njit(cache=True)
def reserve(
    nd: int,
    start_s: float,
    end_s: float,
    r0: float,
    r1: float,
    r2: float,
    seg_t: Any,
    seg_u: Any,
    nseg: Any,
    pt_t: Any,
    pt_r: Any,
    npt: Any,
) -> None:
    """`NodeTimeline.reserve`."""
    if end_s <= start_s:
        if start_s < _INF and not (r0 == 0.0 and r1 == 0.0 and r2 == 0.0):
            n = npt[nd]
            k = bisect_right(pt_t, nd, n, start_s)
            for j in range(n, k, -1):
                pt_t[nd, j] = pt_t[nd, j - 1]
                pt_r[nd, j, 0] = pt_r[nd, j - 1, 0]
                pt_r[nd, j, 1] = pt_r[nd, j - 1, 1]
                pt_r[nd, j, 2] = pt_r[nd, j - 1, 2]
            pt_t[nd, k] = start_s
            pt_r[nd, k, 0] = r0
            pt_r[nd, k, 1] = r1
            pt_r[nd, k, 2] = r2
            npt[nd] = n + 1
            split(nd, start_s, seg_t, seg_u, nseg)
        return
    i = split(nd, start_s, seg_t, seg_u, nseg)
    j = split(nd, end_s, seg_t, seg_u, nseg)
    for k in range(i, j):
        seg_u[nd, k, 0] = seg_u[nd, k, 0] + r0
        seg_u[nd, k, 1] = seg_u[nd, k, 1] + r1
        seg_u[nd, k, 2] = seg_u[nd, k, 2] + r2


@njit(cache=True, inline="always")
def slot(
    t: int,
    nd: int,
    ready: float,
    arrival: Any,
    exec_s: Any,
    r0: float,
    r1: float,
    r2: float,
    last_use: Any,
    cap: Any,
    avail: Any,
    seg_t: Any,
    seg_u: Any,
    nseg: Any,
    pt_t: Any,
    pt_r: Any,
    npt: Any,
) -> float:
    """t's earliest start on nd (a host whose ready time is `ready`): the slot search only where the node's planned
    use reaches past `ready` (earliest_finish)."""
    if ready < last_use[nd]:
        return earliest_start(
            nd, arrival[nd], exec_s[t, nd], r0, r1, r2, cap, avail, seg_t, seg_u, nseg, pt_t, pt_r, npt
        )
    return ready

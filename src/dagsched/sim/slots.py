"""Earliest-start slot search on a node's planned resource use (insertion policy).

One implementation serves every planner: HEFT/CPOP/PEFT's insertion-based earliest
finish time, the dynamic heuristics' resource-aware earliest start, and re-planning
from a live simulator state. Classic mode is the same search with capacity 1 and a
request of 1 per task.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
import numpy.typing as npt

Vec = tuple[float, float, float]
inf = float("inf")

_FEW_QUERIES = 64
"""`earliest_starts` loops in Python below this many queries, uses numpy from here (measured crossover 40-100)."""


class NodeTimeline:
    """Planned use of one node over time as a step function of (cpu, mem, gpu).

    `times[i]` starts segment i, which lasts until `times[i + 1]` (the last segment
    lasts forever and is always empty). `used[i]` is the planned use in segment i.

    A zero-length use (a task of no duration) holds no segment but is not nothing: the
    simulator starts it at its instant only if its request fits beside what runs then, so
    a longer use planned across that instant where it would not fit is a plan the run
    cannot follow. Such uses are kept as `points` (instants, sorted) with their requests,
    and a search never returns a slot that strictly contains one it would crowd out; a
    slot may start at the instant itself (the dispatchers run the zero-length use first).
    """

    __slots__ = ("cap", "available_from", "times", "used", "points", "point_reqs", "_last_use", "_row")

    def __init__(self, cap: Vec, available_from: float = 0.0) -> None:
        self.cap = cap
        self.available_from = available_from
        self.times: list[float] = [0.0]
        self.used: list[Vec] = [(0.0, 0.0, 0.0)]
        self.points: list[float] = []
        self.point_reqs: list[Vec] = []
        self._last_use: npt.NDArray[np.float64] | None = None  # a Timelines' array this line keeps current
        self._row = 0

    def can_host(self, req: Vec) -> bool:
        """Whether the node could ever run `req` (it is up and its capacity holds it, within 1e-9)."""
        c, eps = self.cap, 1e-9
        return req[0] <= c[0] + eps and req[1] <= c[1] + eps and req[2] <= c[2] + eps and self.available_from < inf

    def _fits(self, i: int, req: Vec) -> bool:
        u, c = self.used[i], self.cap
        eps = 1e-9
        return u[0] + req[0] <= c[0] + eps and u[1] + req[1] <= c[1] + eps and u[2] + req[2] <= c[2] + eps

    def copy(self) -> NodeTimeline:
        """An independent copy (not attached to any `Timelines`' arrays)."""
        twin = NodeTimeline(self.cap, self.available_from)
        twin.times, twin.used = self.times.copy(), self.used.copy()
        twin.points, twin.point_reqs = self.points.copy(), self.point_reqs.copy()
        return twin

    def earliest_start(self, ready_s: float, duration_s: float, req: Vec) -> float:
        """Earliest s >= ready_s (and >= available_from) with req free over [s, s + duration_s), crowding out
        no zero-length use planned strictly inside."""
        start = self._segment_start(ready_s, duration_s, req)
        if self.points:
            while (blocked := self._crowded_point(start, duration_s, req)) is not None:
                start = self._segment_start(blocked, duration_s, req)
        return start

    def _crowded_point(self, start_s: float, duration_s: float, req: Vec) -> float | None:
        """The first zero-length use strictly inside (start_s, start_s + duration_s) that req would leave no
        room for at its instant, or None."""
        points, end, eps = self.points, start_s + duration_s, 1e-9
        c = self.cap
        k = bisect_right(points, start_s)
        while k < len(points) and points[k] < end:
            u, z = self.used_at(points[k]), self.point_reqs[k]
            if not (
                u[0] + req[0] + z[0] <= c[0] + eps
                and u[1] + req[1] + z[1] <= c[1] + eps
                and u[2] + req[2] + z[2] <= c[2] + eps
            ):
                return points[k]
            k += 1
        return None

    def _segment_start(self, ready_s: float, duration_s: float, req: Vec) -> float:
        """Earliest s >= ready_s (and >= available_from) with req free over [s, s + duration_s) in the segments."""
        ready_s = max(ready_s, self.available_from)
        times = self.times
        if ready_s >= times[-1]:
            return ready_s  # past every planned use: the node is empty from here on
        i = bisect_right(times, ready_s) - 1
        start: float | None = None
        n = len(times)
        used, (c0, c1, c2), (r0, r1, r2) = self.used, self.cap, req
        eps = 1e-9
        while i < n:  # `_fits` inlined, the same float expressions: this loop is the planners' hot spot
            u = used[i]
            if u[0] + r0 <= c0 + eps and u[1] + r1 <= c1 + eps and u[2] + r2 <= c2 + eps:
                if start is None:
                    start = max(ready_s, times[i])
                seg_end = times[i + 1] if i + 1 < n else inf
                if seg_end >= start + duration_s - 1e-12:
                    return start
            else:
                start = None
            i += 1
        raise AssertionError("unreachable: the last segment is always empty")

    def earliest_starts(
        self, ready_s: npt.ArrayLike, duration_s: npt.ArrayLike, req: npt.ArrayLike
    ) -> npt.NDArray[np.float64]:
        """`earliest_start` of many queries at once, equal bit for bit; `req` is one (3,) or one per query (k, 3).

        Batch planners re-ask this for many tasks after each reservation. Both ways below
        use the loop's answer in another form: a query's slot starts in the first free
        run (maximal stretch of segments where its request fits) that ends after its
        ready time and, entered at max(ready, run start), lasts its duration. Few queries:
        a Python loop (`_earliest_starts_by_runs`); many: every (query, segment) pair
        tested at once in numpy. Each request must fit the node's capacity (`can_host`),
        as `earliest_start` assumes.
        """
        reqs = np.asarray(req, dtype=np.float64).reshape(-1, 3)
        if np.size(ready_s) == 0:
            return np.zeros(0)
        if self.points:  # the searches below see segments only; redo a slot that holds a zero-length use
            starts = self._segment_starts(ready_s, duration_s, reqs)
            duration = np.broadcast_to(np.asarray(duration_s, dtype=np.float64), starts.shape)
            points = np.asarray(self.points)
            first = np.searchsorted(points, starts, side="right")
            holds = (first < len(points)) & (points[np.minimum(first, len(points) - 1)] < starts + duration)
            ready = np.broadcast_to(np.asarray(ready_s, dtype=np.float64), starts.shape)
            for i in np.flatnonzero(holds).tolist():
                r = reqs[i if len(reqs) > 1 else 0]
                starts[i] = self.earliest_start(float(ready[i]), float(duration[i]), (r[0], r[1], r[2]))
            return starts
        return self._segment_starts(ready_s, duration_s, reqs)

    def _segment_starts(
        self, ready_s: npt.ArrayLike, duration_s: npt.ArrayLike, reqs: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """`_segment_start` of many queries at once (see `earliest_starts`)."""
        if np.size(ready_s) < _FEW_QUERIES:  # below this, numpy's fixed cost exceeds the plain loop's
            return self._earliest_starts_by_runs(ready_s, duration_s, reqs)
        ready = np.maximum(np.asarray(ready_s, dtype=np.float64), self.available_from)
        duration = np.asarray(duration_s, dtype=np.float64)
        times = np.asarray(self.times)
        first = np.searchsorted(times, ready, side="right") - 1  # segment holding each ready_s
        lo = int(first.min())  # segments before every query's first one never matter
        seg_t = times[lo:]
        n = len(seg_t)
        used = np.asarray(self.used[lo:]).reshape(1, n, 3)
        fits = np.all(used + reqs[:, None, :] <= np.asarray(self.cap) + 1e-9, axis=2)
        seg = np.arange(n)
        # each segment's free run: from after the last segment where req does not fit to the next such one
        last_full = np.maximum.accumulate(np.where(fits, -1, seg), axis=1)
        next_full = np.minimum.accumulate(np.where(fits, n, seg)[:, ::-1], axis=1)[:, ::-1]
        bounds = np.append(seg_t, inf)  # a run clipped at lo starts at times[lo] <= ready_s: same start
        start = np.maximum(ready[:, None], bounds[last_full + 1])
        ok = fits & (seg >= (first - lo)[:, None]) & (bounds[next_full] >= start + duration[:, None] - 1e-12)
        found = start[np.arange(len(ready)), ok.argmax(axis=1)]
        return np.where(ready >= times[-1], ready, found)  # the loop's shortcut past every planned use

    def _earliest_starts_by_runs(
        self, ready_s: npt.ArrayLike, duration_s: npt.ArrayLike, reqs: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """`earliest_starts` as a Python loop: with one shared request, find its free runs once and jump
        to them by bisection; with one request per query, `earliest_start` each (it stops early, a
        run list would not)."""
        ready = np.asarray(ready_s, dtype=np.float64).tolist()
        duration = np.asarray(duration_s, dtype=np.float64).tolist()
        per_query: list[Vec] = [(r[0], r[1], r[2]) for r in reqs.tolist()]
        if len(per_query) > 1:
            return np.array([self._segment_start(*q) for q in zip(ready, duration, per_query, strict=True)])
        starts, ends = self._free_runs(per_query[0])
        past, available_from = self.times[-1], self.available_from  # past every planned use the node is empty
        out = []
        for at, dur in zip(ready, duration, strict=True):
            at = max(at, available_from)
            if at >= past:
                out.append(at)
                continue
            j = bisect_right(ends, at)  # the first run still free after `at`
            start = max(at, starts[j])
            while ends[j] < start + dur - 1e-12:
                j += 1
                start = starts[j]
            out.append(start)
        return np.array(out, dtype=np.float64)

    def _free_runs(self, req: Vec) -> tuple[list[float], list[float]]:
        """Start and end times of the maximal runs of segments where req fits (the last run never ends)."""
        starts: list[float] = []
        ends: list[float] = []
        inside = False
        for i, t in enumerate(self.times):
            if self._fits(i, req) != inside:
                inside = not inside
                (starts if inside else ends).append(t)
        if inside:
            ends.append(inf)
        return starts, ends

    def _split(self, t: float) -> int:
        """Index of the segment starting exactly at t, splitting one if needed."""
        i = bisect_right(self.times, t) - 1
        if self.times[i] == t:
            return i
        self.times.insert(i + 1, t)
        self.used.insert(i + 1, self.used[i])
        return i + 1

    def reserve(self, start_s: float, end_s: float, req: Vec) -> None:
        """Add a planned use of req over [start_s, end_s); one of no length is kept as a point (see the class)."""
        if end_s <= start_s:
            if start_s < inf and req != (0.0, 0.0, 0.0):
                k = bisect_right(self.points, start_s)
                self.points.insert(k, start_s)
                self.point_reqs.insert(k, req)
                self._split(start_s)  # the last planned use now ends no earlier than the point
                if self._last_use is not None:
                    self._last_use[self._row] = self.times[-1]
            return
        i = self._split(start_s)
        j = self._split(end_s)
        for k in range(i, j):
            u = self.used[k]
            self.used[k] = (u[0] + req[0], u[1] + req[1], u[2] + req[2])
        if self._last_use is not None:
            self._last_use[self._row] = self.times[-1]

    def used_at(self, t: float) -> Vec:
        """Planned use at instant t."""
        return self.used[bisect_right(self.times, t) - 1]

    def last_use_end(self) -> float:
        """When the last planned use ends (0.0 when nothing is planned)."""
        return self.times[-1] if len(self.times) > 1 else 0.0


class Timelines(list[NodeTimeline]):
    """Every node's planned use, with each node's availability and the end of its planned use as arrays.

    What an earliest-finish search over all nodes reads first: a node whose planned use ends before a task
    could start there starts it at once, without a slot search. The lines keep `last_use` current as they
    are reserved.
    """

    def __init__(self, lines: list[NodeTimeline]) -> None:
        super().__init__(lines)
        self.available_from = np.array([line.available_from for line in lines], dtype=np.float64)
        self.last_use = np.array([line.times[-1] for line in lines], dtype=np.float64)
        for row, line in enumerate(lines):
            line._last_use, line._row = self.last_use, row

    def copy(self) -> Timelines:
        """An independent copy (a planner trying a choice on it leaves this one as it was)."""
        return Timelines([line.copy() for line in self])

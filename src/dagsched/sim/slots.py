"""Earliest-start slot search on a node's planned resource use (insertion policy).

One implementation serves every planner: HEFT/CPOP/PEFT's insertion-based earliest
finish time, the dynamic heuristics' resource-aware earliest start, and re-planning
from a live simulator state. Classic mode is the same search with capacity 1 and a
request of 1 per task.
"""

from __future__ import annotations

from bisect import bisect_right

Vec = tuple[float, float, float]
inf = float("inf")


class NodeTimeline:
    """Planned use of one node over time as a step function of (cpu, mem, gpu).

    `times[i]` starts segment i, which lasts until `times[i + 1]` (the last segment
    lasts forever and is always empty). `used[i]` is the planned use in segment i.
    """

    __slots__ = ("cap", "available_from", "times", "used")

    def __init__(self, cap: Vec, available_from: float = 0.0) -> None:
        self.cap = cap
        self.available_from = available_from
        self.times: list[float] = [0.0]
        self.used: list[Vec] = [(0.0, 0.0, 0.0)]

    def can_host(self, req: Vec) -> bool:
        """Whether the node could ever run `req` (it is up and its capacity holds it, within 1e-9)."""
        c, eps = self.cap, 1e-9
        return req[0] <= c[0] + eps and req[1] <= c[1] + eps and req[2] <= c[2] + eps and self.available_from < inf

    def _fits(self, i: int, req: Vec) -> bool:
        u, c = self.used[i], self.cap
        eps = 1e-9
        return u[0] + req[0] <= c[0] + eps and u[1] + req[1] <= c[1] + eps and u[2] + req[2] <= c[2] + eps

    def earliest_start(self, ready_s: float, duration_s: float, req: Vec) -> float:
        """Earliest s >= ready_s (and >= available_from) with req free over [s, s + duration_s)."""
        ready_s = max(ready_s, self.available_from)
        times = self.times
        if ready_s >= times[-1]:
            return ready_s  # past every planned use: the node is empty from here on
        i = bisect_right(times, ready_s) - 1
        start: float | None = None
        n = len(times)
        while i < n:
            if self._fits(i, req):
                if start is None:
                    start = max(ready_s, times[i])
                seg_end = times[i + 1] if i + 1 < n else float("inf")
                if seg_end >= start + duration_s - 1e-12:
                    return start
            else:
                start = None
            i += 1
        raise AssertionError("unreachable: the last segment is always empty")

    def _split(self, t: float) -> int:
        """Index of the segment starting exactly at t, splitting one if needed."""
        i = bisect_right(self.times, t) - 1
        if self.times[i] == t:
            return i
        self.times.insert(i + 1, t)
        self.used.insert(i + 1, self.used[i])
        return i + 1

    def reserve(self, start_s: float, end_s: float, req: Vec) -> None:
        """Add a planned use of req over [start_s, end_s)."""
        if end_s <= start_s:
            return
        i = self._split(start_s)
        j = self._split(end_s)
        for k in range(i, j):
            u = self.used[k]
            self.used[k] = (u[0] + req[0], u[1] + req[1], u[2] + req[2])

    def used_at(self, t: float) -> Vec:
        """Planned use at instant t."""
        return self.used[bisect_right(self.times, t) - 1]

    def last_use_end(self) -> float:
        """When the last planned use ends (0.0 when nothing is planned)."""
        return self.times[-1] if len(self.times) > 1 else 0.0

"""Shared machinery of the dynamic heuristics: list dispatch and earliest-finish batch mapping.

A heuristic file subclasses one of these and holds only its priority and selection
rule (SAGA's habit); the earliest-start search and data-arrival times come from the
simulator (`sim.data_ready_s`, `sim.node_timelines`).
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from dagsched.schedulers.base import Scheduler
from dagsched.sim.engine import Decision, Simulator
from dagsched.sim.slots import NodeTimeline

_EPS = 1e-9


class ListScheduler(Scheduler):
    """Immediate mode: serve ready tasks in `order`; `choose_node` picks among the nodes that can start each now."""

    @abstractmethod
    def order(self, ready: list[int]) -> list[int]:
        """Ready tasks in the order they are served."""

    @abstractmethod
    def choose_node(self, t: int, startable: list[int]) -> int:
        """One of `startable` (non-empty, ascending node index) for task t."""

    def decide(self, sim: Simulator) -> Decision:
        free = sim.free.copy()
        up = sim.node_up & (sim.node_available_s <= sim.now + _EPS)
        assignments: list[tuple[int, int]] = []
        wake = np.inf
        ready = sim.ready_tasks()
        smallest = np.min([sim.request(t) for t in ready], axis=0) if ready else np.zeros(3)
        for t in self.order(ready):
            if not np.any(up & np.all(free + _EPS >= smallest, axis=1)):
                break  # no room left for any ready task: the next finish brings the next decision
            req = np.asarray(sim.request(t))
            fits = up & np.all(free + _EPS >= req, axis=1)
            avoid = sim.avoid_node[t]
            if avoid >= 0 and (np.all(sim.cap + _EPS >= req, axis=1) & sim.node_up).sum() > 1:
                fits[avoid] = False  # migrate off the node it overran on
            if not fits.any():
                continue
            arrival = sim.data_ready_all_s(t)
            now_ok = fits & (arrival <= sim.now + _EPS)
            if not now_ok.any():
                wake = min(wake, float(arrival[fits].min()))
                continue
            startable = [int(n) for n in np.flatnonzero(now_ok)]
            nd = self.choose_node(t, startable)
            free[nd] -= req
            assignments.append((t, nd))
        return Decision(assignments, wake if np.isfinite(wake) else None)


class BatchMapper(Scheduler):
    """Batch mode (Min-Min family): map all ready tasks by earliest completion time on resource-aware slots.

    Each round computes every unmapped task's earliest completion time on every node
    (insertion into the nodes' planned use), lets `pick` choose one task, reserves
    its best slot, and repeats. Tasks whose slot starts now are started; the others
    are reconsidered at the next decision point, woken at their planned start.
    """

    @abstractmethod
    def pick(self, best_ect: np.ndarray, candidates: list[int]) -> int:
        """Position in `candidates` of the task to map next, given each one's best completion time."""

    def decide(self, sim: Simulator) -> Decision:
        ready = sim.ready_tasks()
        m = sim.cp.n_nodes
        lines = sim.node_timelines()
        arrival = {t: sim.data_ready_all_s(t) for t in ready}
        # a migrated task avoids the node it overran on, unless no other node can ever take it
        self._avoid: dict[int, int] = {}
        for t in ready:
            avoid = int(sim.avoid_node[t])
            if avoid >= 0 and any(n != avoid and self._can_host(sim, lines, t, n) for n in range(m)):
                self._avoid[t] = avoid
        est = sim.earliest_starts(ready)
        for i, t in enumerate(ready):
            if t in self._avoid:
                est[i, self._avoid[t]] = np.inf
        ect = est + sim.cp.exec_s[ready]
        free = sim.free.copy()
        assignments: list[tuple[int, int]] = []
        wake = np.inf
        remaining = list(range(len(ready)))
        while remaining:
            best = ect[remaining].min(axis=1)
            i = remaining.pop(self.pick(best, [ready[r] for r in remaining]))
            t = ready[i]
            nd = int(np.argmin(ect[i]))
            start, end = self._slot(sim, lines, t, nd, arrival[t])
            if not np.isfinite(end):
                continue
            req = sim.request(t)
            lines[nd].reserve(start, end, req)
            if start <= sim.now + _EPS:
                # the timelines miss what they cannot see (a zero-length task just mapped, a task
                # running past its prediction): start only what really fits now; the rest waits
                # for the finish event that frees the room
                if np.all(free[nd] + _EPS >= req):
                    free[nd] -= req
                    assignments.append((t, nd))
            else:
                wake = min(wake, start)
            if remaining and not self._room_now(sim, lines, [ready[r] for r in remaining]):
                break  # nothing left can start now; running tasks' ends bring the next decision
            for r in remaining:
                # an insertion slot clear of the new reservation stays free and stays the earliest
                if est[r, nd] < end and ect[r, nd] > start:
                    est[r, nd], ect[r, nd] = self._slot(sim, lines, ready[r], nd, arrival[ready[r]])
        return Decision(assignments, wake if np.isfinite(wake) else None)

    @staticmethod
    def _room_now(sim: Simulator, lines: list[NodeTimeline], tasks: list[int]) -> bool:
        """Whether some node has room now for the smallest of these requests (a cheap necessary test)."""
        smallest = np.min([sim.request(t) for t in tasks], axis=0)
        now = sim.now
        for line in lines:
            if line.available_from > now + _EPS:
                continue
            used = line.used_at(now)
            if all(used[r] + smallest[r] <= line.cap[r] + _EPS for r in range(3)):
                return True
        return False

    @staticmethod
    def _can_host(sim: Simulator, lines: list[NodeTimeline], t: int, nd: int) -> bool:
        return lines[nd].can_host(sim.request(t))

    def _slot(
        self, sim: Simulator, lines: list[NodeTimeline], t: int, nd: int, arrival: np.ndarray
    ) -> tuple[float, float]:
        """Earliest (start, finish) of t on nd; (inf, inf) where it can never fit or should avoid nd."""
        if not self._can_host(sim, lines, t, nd) or self._avoid.get(t) == nd:
            return np.inf, np.inf
        req = sim.request(t)
        dur = float(sim.cp.exec_s[t, nd])
        start = lines[nd].earliest_start(max(float(arrival[nd]), sim.now), dur, req)
        return start, start + dur

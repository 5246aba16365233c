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
    """Immediate mode: take ready tasks in `order`, start each on a node `choose_node` picks among those that can start it now."""

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
        for t in self.order(sim.ready_tasks()):
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
        ready = [t for t in sim.ready_tasks() if sim.avoid_node[t] < 0 or sim.cp.n_nodes > 1]
        lines = sim.node_timelines()
        arrival = {t: sim.data_ready_all_s(t) for t in ready}
        ect = np.array([[self._slot(sim, lines, t, n, arrival[t])[1] for n in range(sim.cp.n_nodes)] for t in ready])
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
            lines[nd].reserve(start, end, sim.request(t))
            if start <= sim.now + _EPS:
                assignments.append((t, nd))
            else:
                wake = min(wake, start)
            for r in remaining:
                ect[r, nd] = self._slot(sim, lines, ready[r], nd, arrival[ready[r]])[1]
        return Decision(assignments, wake if np.isfinite(wake) else None)

    @staticmethod
    def _slot(sim: Simulator, lines: list[NodeTimeline], t: int, nd: int, arrival: np.ndarray) -> tuple[float, float]:
        """Earliest (start, finish) of t on nd; (inf, inf) where it can never fit or should avoid nd."""
        req = sim.request(t)
        cap = lines[nd].cap
        if req[0] > cap[0] or req[1] > cap[1] or req[2] > cap[2] or not np.isfinite(lines[nd].available_from):
            return np.inf, np.inf
        if sim.avoid_node[t] == nd:
            return np.inf, np.inf
        dur = float(sim.cp.exec_s[t, nd])
        start = lines[nd].earliest_start(max(float(arrival[nd]), sim.now), dur, req)
        return start, start + dur

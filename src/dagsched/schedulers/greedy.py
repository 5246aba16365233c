"""Shared machinery of the dynamic heuristics: list dispatch and earliest-finish batch mapping.

A heuristic file subclasses one of these and holds only its priority and selection
rule (SAGA's habit); legality, the earliest-start search and data-arrival times come from
the decision point (`dp.fitting`, `dp.data_ready_all_s`, `dp.node_timelines`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from typing import cast

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import EPS as _EPS
from dagsched.sim.decision import Decision, DecisionPoint, Scheduler
from dagsched.sim.slots import NodeTimeline

BATCH_TASKS = 16
"""Batch mappers map at least this many ready tasks at once (whole workflows, oldest first): see `BatchMapper`."""


class ListScheduler(Scheduler):
    """Immediate mode: serve ready tasks in `order`; `choose_node` picks among the nodes that can start each now.

    `order` may be a generator that reads what `assigned` recorded: the online baselines that share
    the cluster between workflows (fair) pick the next task after seeing where the last one went.
    """

    @abstractmethod
    def order(self, ready: list[int]) -> Iterable[int]:
        """Ready tasks in the order they are served."""

    def choose_node(self, t: int, startable: list[int]) -> int | None:
        """One of `startable` (non-empty, ascending node index) for task t: by default the one that finishes
        it first (all start now), ties to the lowest index. None holds t back at this decision and serves the
        tasks behind it (a rule that is not work-conserving, `srpt_hold`; it asks for its own wake)."""
        return min(startable, key=lambda n: (float(self.cp.exec_s[t, n]), n))

    def assigned(self, t: int, nd: int) -> None:
        """Called after t was given node nd in this decision (before `order` yields the next task)."""

    def decide(self, dp: DecisionPoint) -> Decision:
        ready = dp.ready_tasks()
        if not ready:
            return Decision([], None)
        tasks = np.asarray(ready, dtype=np.int64)
        row = {t: i for i, t in enumerate(ready)}
        req = dp.requests(tasks)
        free = dp.free.copy()
        up = dp.node_up & (dp.node_available_s <= dp.now + _EPS)
        fits = dp.fitting(tasks, free)  # kept current: free only changes on the node just given a task
        any_fit = cast(list[bool], fits.any(axis=1).tolist())
        smallest = req.min(axis=0)
        assignments: list[tuple[int, int]] = []
        wake = np.inf
        room = bool(np.any(up & np.all(free + _EPS >= smallest, axis=1)))  # changes only when a task is placed
        for t in self.order(ready):
            if not room:
                break  # no room left for any ready task: the next finish brings the next decision
            i = row[t]
            if not any_fit[i]:
                continue
            arrival = dp.data_ready_all_s(t)
            now_ok = fits[i] & (arrival <= dp.now + _EPS)
            if not now_ok.any():
                wake = min(wake, float(arrival[fits[i]].min()))
                continue
            startable = [int(n) for n in np.flatnonzero(now_ok)]
            nd = self.choose_node(t, startable)
            if nd is None:
                continue
            free[nd] -= req[i]
            fits[:, nd] &= np.all(free[nd] + _EPS >= req, axis=1)
            any_fit = cast(list[bool], fits.any(axis=1).tolist())
            room = bool(np.any(up & np.all(free + _EPS >= smallest, axis=1)))
            assignments.append((t, nd))
            self.assigned(t, nd)
        return Decision(assignments, wake if np.isfinite(wake) else None)


class BatchMapper(Scheduler):
    """Batch mode (Min-Min family): map all ready tasks by earliest completion time on resource-aware slots.

    Each round computes every unmapped task's earliest completion time on every node
    (insertion into the nodes' planned use), lets `pick` choose one task, reserves
    its best slot, and repeats. Tasks whose slot starts now are started; the others
    are reconsidered at the next decision point, woken at their planned start.

    Cost: a reservation can only delay the tasks whose cached slot on that node
    overlaps it, so only those are searched again, all in one call
    (`NodeTimeline.earliest_starts`); the others keep their slot, still free and the earliest.

    On a shared cluster the batch is a window over the queue (`batch`): `BATCH_TASKS` ready tasks,
    those that fit some node's free room now first (so that tasks waiting for room do not block
    the ones that could start: a window of the oldest tasks alone left the cluster idle behind
    them and fell behind the arrivals), then the workflows submitted first. A mapping event costs
    O(r^2 p) for r tasks in the batch, and a loaded cluster can have hundreds ready: on a
    200-workflow stream on hetero-16 at load 0.95 Min-Min took 180 s with the whole queue as the
    batch; platforms bound their scheduling queue the same way. A single workflow is mapped
    whole, as the papers' batch mode maps the whole meta-task.
    """

    @abstractmethod
    def pick(self, best_ect: np.ndarray, candidates: list[int]) -> int:
        """Position in `candidates` of the task to map next, given each one's best completion time."""

    def batch(self, dp: DecisionPoint) -> list[int]:
        """The ready tasks mapped now: with several workflows, BATCH_TASKS of them, those whose request fits
        some node's free room first, then by workflow submission (then workflow and task position); a single
        workflow's ready tasks all."""
        ready = dp.ready_tasks()
        cp = dp.cp
        if len(ready) <= BATCH_TASKS or cp.n_workflows == 1:
            return ready
        fits_now = cast(list[bool], dp.fitting(np.asarray(ready, dtype=np.int64), dp.free).any(axis=1).tolist())
        key = {t: (not f, float(cp.wf_submit_s[cp.task_wf[t]]), t) for t, f in zip(ready, fits_now, strict=True)}
        return sorted(sorted(ready, key=key.__getitem__)[:BATCH_TASKS])

    def decide(self, dp: DecisionPoint) -> Decision:
        ready = self.batch(dp)
        if not ready:
            return Decision([], None)
        now = dp.now
        lines = dp.node_timelines()
        tasks = np.asarray(ready, dtype=np.int64)
        arrival = np.array([dp.data_ready_all_s(t) for t in ready])  # (k, m): inputs on each node
        exec_s = dp.cp.exec_s[tasks]  # (k, m)
        req = dp.requests(tasks)  # (k, 3)
        uniform = bool(np.all(req == req[0]))  # classic mode: every task takes one slot
        allowed = self._allowed(dp, tasks)  # where a slot may be searched
        est = dp.earliest_starts(ready)
        est[~allowed] = np.inf  # already inf where a node can never host a task: this adds the avoided nodes
        ect = est + exec_s
        best = ect.min(axis=1)
        room = _RoomNow(lines, now, req, uniform)
        free = dp.free.copy()
        assignments: list[tuple[int, int]] = []
        wake = np.inf
        unmapped = np.ones(len(ready), dtype=bool)
        for left in range(len(ready) - 1, -1, -1):
            rows = np.flatnonzero(unmapped)
            i = int(rows[self.pick(best[rows], tasks[rows].tolist())])
            unmapped[i] = False
            t = ready[i]
            nd = int(ect[i].argmin())
            if not allowed[i, nd]:
                continue
            line = lines[nd]
            dur = float(exec_s[i, nd])
            start = line.earliest_start(max(float(arrival[i, nd]), now), dur, dp.request(t))
            end = start + dur
            if not np.isfinite(end):
                continue
            line.reserve(start, end, dp.request(t))
            if start <= now + _EPS:
                # the timelines miss what they cannot see (a zero-length task just mapped, a task
                # running past its prediction): start only what really fits now; the rest waits
                # for the finish event that frees the room
                if np.all(free[nd] + _EPS >= req[i]):
                    free[nd] -= req[i]
                    assignments.append((t, nd))
            else:
                wake = min(wake, start)
            if not left:
                break
            if not room.left(unmapped):
                break  # nothing left can start now; running tasks' ends bring the next decision
            # a slot clear of the new reservation stays free and stays the earliest: search the others again
            # (a task not allowed on nd has est inf there, so it is never hit)
            hit = np.flatnonzero(unmapped & (est[:, nd] < end) & (ect[:, nd] > start))
            if hit.size:
                dur_hit = exec_s[hit, nd]
                req_hit = req[i] if uniform else req[hit]
                est[hit, nd] = line.earliest_starts(np.maximum(arrival[hit, nd], now), dur_hit, req_hit)
                ect[hit, nd] = est[hit, nd] + dur_hit
                best[hit] = ect[hit].min(axis=1)
        return Decision(assignments, wake if np.isfinite(wake) else None)

    @staticmethod
    def _allowed(dp: DecisionPoint, tasks: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """(k, m): the node is up and can ever host the task (placement rules included), and it is not the
        node a migrated task must avoid, unless no other node can ever take it."""
        allowed: npt.NDArray[np.bool_] = dp.ever_fits(tasks) & dp.node_up[None, :]
        avoid = dp.avoid_node[tasks]
        for i in np.flatnonzero(avoid >= 0):
            others = allowed[i].copy()
            others[avoid[i]] = False
            if others.any():
                allowed[i, avoid[i]] = False
        return allowed


class _RoomNow:
    """Whether some node has room now for the smallest unmapped request (a cheap necessary test).

    Room now only shrinks while a decision maps tasks (reservations add use, and the
    smallest request over fewer tasks can only rise), so a node once found full stays
    full: one pointer walks the nodes once per decision instead of rescanning them each round.
    """

    def __init__(self, lines: list[NodeTimeline], now: float, req: npt.NDArray[np.float64], uniform: bool) -> None:
        self.lines, self.now, self.req, self.uniform = lines, now, req, uniform
        self.smallest = tuple(req.min(axis=0).tolist())
        self.nd = 0  # every node before this one is full

    def left(self, unmapped: npt.NDArray[np.bool_]) -> bool:
        """Whether some node has room now for the smallest request of the `unmapped` tasks."""
        if not self.uniform:
            self.smallest = tuple(self.req[unmapped].min(axis=0).tolist())
        while self.nd < len(self.lines) and not self._fits(self.lines[self.nd]):
            self.nd += 1
        return self.nd < len(self.lines)

    def _fits(self, line: NodeTimeline) -> bool:
        if line.available_from > self.now + _EPS:
            return False
        used, cap, smallest = line.used_at(self.now), line.cap, self.smallest
        return all(used[r] + smallest[r] <= cap[r] + _EPS for r in range(3))

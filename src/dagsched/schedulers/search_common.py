"""Machinery shared by the search planners (MCTS, tabu): legal actions, advancing forks, plan completion.

Search runs on `Simulator.fork()` copies, which roll forward on predicted runtimes only, so
nothing here reads hidden truth or touches the live simulation. A search state is a fork
parked at an instant where some (ready task, node) pair can start, as in the Gymnasium
environment: `advance` moves a fork there, waiting by itself where nothing can start.
"""

from __future__ import annotations

import math

import numpy as np

from dagsched.schedulers.base import Scheduler
from dagsched.schedulers.static import PlanState, earliest_finish
from dagsched.sim.engine import READY, RUNNING, WAITING, Decision, Simulator
from dagsched.sim.slots import NodeTimeline

_EPS = 1e-9

Pair = tuple[int, int]
WAIT: Pair = (-1, -1)
"""The wait action: start nothing now, be woken at the next event or data arrival."""


class _Hand(Scheduler):
    """Hands a prepared decision to `Simulator.decide` (so a fork schedules its own wake-up)."""

    name = "search-hand"

    def __init__(self, decision: Decision) -> None:
        super().__init__()
        self.decision = decision

    def decide(self, sim: Simulator) -> Decision:
        return self.decision


def legal_pairs(sim: Simulator) -> list[Pair]:
    """Every (ready task, node) pair that `sim.can_start` accepts now, sorted."""
    now = sim.now + _EPS
    up = [int(n) for n in np.flatnonzero(sim.node_up & (sim.node_available_s <= now))]
    out: list[Pair] = []
    if not up:
        return out
    for t in sim.ready_tasks():
        arrival = sim.data_ready_all_s(t)
        req = sim.request(t)
        for nd in up:
            f = sim.free[nd]
            if arrival[nd] <= now and f[0] + _EPS >= req[0] and f[1] + _EPS >= req[1] and f[2] + _EPS >= req[2]:
                out.append((t, nd))
    return out


def data_wake_s(sim: Simulator) -> float:
    """Earliest future instant a ready task's inputs reach an up node that could ever hold it (inf: none)."""
    wake = math.inf
    now = sim.now + _EPS
    for t in sim.ready_tasks():
        req = sim.request(t)
        arrival = sim.data_ready_all_s(t)
        for nd in np.flatnonzero(arrival > now):
            cap = sim.cap[nd]
            if sim.node_up[nd] and cap[0] + _EPS >= req[0] and cap[1] + _EPS >= req[1] and cap[2] + _EPS >= req[2]:
                wake = min(wake, float(arrival[nd]))
    return wake


def advance(sim: Simulator, must_step: bool) -> bool:
    """Move a fork to the next instant with a legal pair (stay if there is one and not `must_step`).

    Where ready tasks exist but none can start, the fork waits by itself, woken at the next
    data arrival (the environment's rule). False when the fork is done or can make no progress.
    """
    if must_step and sim.ready:
        _wake_at_next_arrival(sim)
    stepped = False
    while not sim.done:
        if stepped or not must_step:
            if legal_pairs(sim):
                return True
            if sim.ready:
                _wake_at_next_arrival(sim)
        if not sim.can_advance or not sim.step():
            return False
        stepped = True
    return False


def _wake_at_next_arrival(sim: Simulator) -> None:
    wake = data_wake_s(sim)
    sim.decide(_Hand(Decision([], wake if math.isfinite(wake) else None)))


def makespan_of(sim: Simulator) -> float:
    """Makespan of a finished fork (from the first submission)."""
    cp = sim.cp
    return float(np.nanmax(sim.finish_s)) - float(cp.wf_submit_s.min())


def plan_completion(sim: Simulator, order: list[int]) -> tuple[float, list[Pair]]:
    """HEFT's plan of every unstarted task from this state: (its makespan, the pairs it starts now).

    Tasks are placed in `order` (decreasing upward rank) on their earliest-finish node with
    insertion, over timelines that hold running tasks until their predicted ends (the static
    planners' machinery). This is the heuristic rollout of the searches: a HEFT completion on
    predicted runtimes, computed on timelines instead of by stepping events. The pairs planned
    to start now (and startable now) come in planning order; the first is the rollout policy's
    choice. The makespan is inf where some task fits only nodes that are down.
    """
    cp = sim.cp
    lines = sim.node_timelines()
    state = PlanState(sim)
    status = sim.status
    now = sim.now
    first: list[Pair] = []
    worst = -math.inf
    for t in order:
        s = status[t]
        if s != WAITING and s != READY:
            continue
        start, finish = earliest_finish(sim, lines, t, state.arrival_s(t))
        nd = int(np.argmin(finish))
        end = float(finish[nd])
        if not math.isfinite(end):
            return math.inf, first
        lines[nd].reserve(float(start[nd]), end, sim.request(t))
        state.place(t, nd, end)
        worst = max(worst, end)
        if s == READY and start[nd] <= now + _EPS and sim.can_start(t, nd):
            first.append((t, nd))
    busy = state.finish[(status != WAITING) & (status != READY)]
    if busy.size:
        worst = max(worst, float(np.nanmax(busy)))
    return worst - float(cp.wf_submit_s.min()), first


def wait_helps(sim: Simulator, pairs: list[Pair], rank: np.ndarray, top_k: int = 16) -> bool:
    """The environment's wait rule: time can advance and some top-ranked startable task would finish
    earlier on a node that is busy or still receiving its inputs than on any node it can start on now."""
    if not can_wait(sim):
        return False
    if not pairs:
        return True
    legal: dict[int, list[int]] = {}
    for t, nd in pairs:
        legal.setdefault(t, []).append(nd)
    tasks = sorted(legal, key=lambda t: (-float(rank[t]), t))[:top_k]
    lines: list[NodeTimeline] | None = None
    for t in tasks:
        ex = sim.cp.exec_s[t]
        best_now = sim.now + float(min(ex[nd] for nd in legal[t]))
        arrival = sim.data_ready_all_s(t)
        req = sim.request(t)
        for nd in range(sim.cp.n_nodes):
            if nd in legal[t] or not sim.node_up[nd] or sim.now + float(ex[nd]) >= best_now - _EPS:
                continue
            if lines is None:
                lines = sim.node_timelines()
            cap = lines[nd].cap
            if req[0] > cap[0] + _EPS or req[1] > cap[1] + _EPS or req[2] > cap[2] + _EPS:
                continue
            start = lines[nd].earliest_start(max(float(arrival[nd]), sim.now), float(ex[nd]), req)
            if start + float(ex[nd]) < best_now - _EPS:
                return True
    return False


def can_wait(sim: Simulator) -> bool:
    """Time can move on without a start: something runs, an event is pending, or inputs are on their way."""
    return not sim.done and (sim.can_advance or math.isfinite(data_wake_s(sim)))


def state_key(sim: Simulator) -> tuple[float, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes]:
    """What identifies a decision state for subtree reuse: everything `Simulator.fork()` carries that
    can change a legal action or a rollout (time, task states, places, starts and ends, free room,
    nodes up and when they are booted, submitted workflows, nodes to avoid).

    A node's boot time counts only while it is in the future (`max(available, now)`, inf when down):
    a fork never sees failures, so a node that failed and was repaired in the live run matches a
    planned state where it stayed up only once it has booted again.
    """
    now = sim.now
    running = sim.status == RUNNING
    return (
        round(now, 9),
        sim.status.tobytes(),
        sim.node_of.tobytes(),
        np.round(np.where(running, sim.start_s, -1.0), 9).tobytes(),
        np.round(np.nan_to_num(sim.finish_s, nan=-1.0), 9).tobytes(),
        np.round(sim.free, 9).tobytes(),
        sim.node_up.tobytes(),
        np.round(np.where(sim.node_up, np.maximum(sim.node_available_s, now), np.inf), 9).tobytes(),
        sim.submitted.tobytes(),
        sim.avoid_node.tobytes(),
    )


def n_unstarted(sim: Simulator) -> int:
    return int(np.count_nonzero(sim.status < RUNNING))

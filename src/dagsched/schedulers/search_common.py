"""Machinery shared by the search planners (MCTS, tabu): legal actions, advancing forks, plan completion.

Search runs on forks (`DecisionPoint.fork()`), simulators of their own that roll forward on
predicted runtimes only, so nothing here reads hidden truth or touches the live simulation. A
search state is a fork parked at an instant where some (ready task, node) pair can start, as in
the Gymnasium environment: `advance` moves a fork there through the simulator's own loop. Legal
pairs and the wait rule are the decision point's, the same the environment's mask uses.
"""

from __future__ import annotations

import math

import numpy as np

from dagsched.model.compiled import EPS as _EPS
from dagsched.schedulers.static import PlanState, earliest_finish
from dagsched.sim.decision import READY, RUNNING, WAITING, DecisionPoint
from dagsched.sim.engine import Simulator

Pair = tuple[int, int]
WAIT: Pair = (-1, -1)
"""The wait action: start nothing now, be woken at the next event or data arrival."""


def view(state: Simulator | DecisionPoint) -> DecisionPoint:
    """The decision point of a fork (or the live one itself)."""
    return state if isinstance(state, DecisionPoint) else state.decision_point()


def legal_pairs(state: Simulator | DecisionPoint) -> list[Pair]:
    """Every (ready task, node) pair that can start now, sorted (`DecisionPoint.pairs`)."""
    return view(state).pairs()


def advance(sim: Simulator, must_step: bool) -> bool:
    """Move a fork to the next instant with a legal pair (stay if there is one and not `must_step`).

    The simulator's own loop (`next_decision(legal_only=True)`, as the environment's): where ready
    tasks exist but none can start, the fork waits by itself, woken at the next data arrival.
    False when the fork is done or can make no progress.
    """
    return sim.next_decision(legal_only=True, must_step=must_step) is not None


def makespan_of(sim: Simulator | DecisionPoint) -> float:
    """Makespan of a finished fork (from the first submission)."""
    cp = sim.cp
    return float(np.nanmax(sim.finish_s)) - float(cp.wf_submit_s.min())


def plan_completion(state: Simulator | DecisionPoint, order: list[int]) -> tuple[float, list[Pair]]:
    """HEFT's plan of every unstarted task from this state: (its makespan, the pairs it starts now).

    Tasks are placed in `order` (decreasing upward rank) on their earliest-finish node with
    insertion, over timelines that hold running tasks until their predicted ends (the static
    planners' machinery). This is the heuristic rollout of the searches: a HEFT completion on
    predicted runtimes, computed on timelines instead of by stepping events. The pairs planned
    to start now (and startable now) come in planning order; the first is the rollout policy's
    choice. The makespan is inf where some task fits only nodes that are down.
    """
    dp = view(state)
    cp = dp.cp
    lines = dp.node_timelines()
    plan = PlanState(dp)
    status = dp.status
    now = dp.now
    first: list[Pair] = []
    worst = -math.inf
    for t in order:
        s = status[t]
        if s != WAITING and s != READY:
            continue
        start, finish = earliest_finish(dp, lines, t, plan.arrival_s(t))
        nd = int(np.argmin(finish))
        end = float(finish[nd])
        if not math.isfinite(end):
            return math.inf, first
        lines[nd].reserve(float(start[nd]), end, dp.request(t))
        plan.place(t, nd, end)
        worst = max(worst, end)
        if s == READY and start[nd] <= now + _EPS and dp.can_start(t, nd):
            first.append((t, nd))
    busy = plan.finish[(status != WAITING) & (status != READY)]
    if busy.size:
        worst = max(worst, float(np.nanmax(busy)))
    return worst - float(cp.wf_submit_s.min()), first


def wait_helps(state: Simulator | DecisionPoint, rank: np.ndarray, topo_pos: np.ndarray, top_k: int = 16) -> bool:
    """The environment's test of whether waiting can help (`DecisionPoint.wait_helps`) on the top_k ready tasks it
    would offer: nothing offered can start now, or some offered task would finish earlier on a node it cannot
    start on now."""
    dp = view(state)
    rows = dp.window(rank, topo_pos, top_k)
    tasks = dp.ready[rows]
    est_finish = dp.earliest_starts(tasks.tolist()) + dp.cp.exec_s[tasks]
    return dp.wait_helps(dp.legal[rows], est_finish)


def state_key(
    sim: Simulator | DecisionPoint,
) -> tuple[float, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes]:
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


def n_unstarted(sim: Simulator | DecisionPoint) -> int:
    return int(np.count_nonzero(sim.status < RUNNING))

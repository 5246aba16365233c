"""Static list planners (HEFT, CPOP, PEFT): plan ahead, dispatch the plan, re-plan when reality deviates.

A subclass holds only its priority and node-selection rule in `plan_tasks`. This
base owns the rest, once: estimating when a task's inputs reach each node from
the live state and the plan so far, dispatching each node's tasks in planned order
as soon as they can start, and re-planning the unstarted tasks when a workflow
arrives, a planned node goes down, a task is migrated, or a task ends late by more
than `replan_slack` of its planned time (at most `max_replans` times per run).
"""

from __future__ import annotations

import heapq
from abc import abstractmethod
from collections.abc import Callable, Iterator
from typing import ClassVar

import numpy as np

from dagsched.model.compiled import EPS as _EPS
from dagsched.model.compiled import CompiledProblem
from dagsched.sim import listsched
from dagsched.sim.decision import DONE, READY, RUNNING, WAITING, Decision, DecisionPoint, Scheduler
from dagsched.sim.listsched import Decoded, DecodeInputs
from dagsched.sim.slots import NodeTimeline, Timelines


class PlanState:
    """Where and when every task runs or is planned to end, for data-arrival estimates."""

    def __init__(self, dp: DecisionPoint) -> None:
        self.dp = dp
        self.cp = dp.cp
        self.node = dp.node_of.copy()
        self.finish = dp.finish_s.copy()
        for t in dp.running:
            self.finish[t] = dp.predicted_end_s(t)

    def arrival_s(self, t: int) -> np.ndarray:
        """Estimated time t's inputs are on each node (parents done, running or planned)."""
        cp = self.cp
        return cp.input_arrival_s(t, self.node, self.finish, max(float(cp.wf_submit_s[cp.task_wf[t]]), self.dp.now))

    def copy(self) -> PlanState:
        """An independent copy (for trying a placement and completing the plan from it)."""
        twin = PlanState.__new__(PlanState)
        twin.dp, twin.cp, twin.node, twin.finish = self.dp, self.cp, self.node.copy(), self.finish.copy()
        return twin

    def end_s(self, default: float) -> float:
        """The latest end of what has run, runs or is placed so far (`default` when nothing has)."""
        ends = self.finish[np.isfinite(self.finish)]
        return float(ends.max()) if len(ends) else default

    def place(self, t: int, nd: int, finish_s: float) -> None:
        self.node[t] = nd
        self.finish[t] = finish_s


def earliest_finish(
    dp: DecisionPoint, lines: list[NodeTimeline], t: int, arrival: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Insertion-based (start, finish) of t on every node; inf where it cannot run or should not.

    A node whose planned use ends before t's inputs arrive there starts t at that arrival (or when it is
    available), as `NodeTimeline.earliest_start` would say; only the others are searched slot by slot.
    """
    exec_s = dp.cp.exec_s[t]
    if isinstance(lines, Timelines):
        avail, last_use = lines.available_from, lines.last_use
    else:
        avail = np.array([line.available_from for line in lines], dtype=np.float64)
        last_use = np.array([line.times[-1] for line in lines], dtype=np.float64)
    ready = np.maximum(arrival, avail)
    hosts = dp.ever_fits(np.array([t]))[0] & (avail < np.inf)  # capacity and placement rules, node up
    start = np.where(hosts, ready, np.inf)
    busy = np.flatnonzero(hosts & (ready < last_use))
    if len(busy):
        req = dp.request(t)
        for nd in busy.tolist():
            start[nd] = lines[nd].earliest_start(float(arrival[nd]), float(exec_s[nd]), req)
    avoid = int(dp.avoid_node[t])
    if avoid >= 0 and np.isfinite(np.delete(start, avoid)).any():
        start[avoid] = np.inf  # migrated off it: elsewhere if anywhere else can take it
    return start, start + dp.cp.exec_s[t]


def decode_inputs(dp: DecisionPoint, tasks: list[int], lines: list[NodeTimeline], state: PlanState) -> DecodeInputs:
    """What the compiled decoder (`sim.listsched`) needs to place `tasks` over `lines` from `state`: the problem's
    arrays, each task's hosts, avoided node and request at this decision point."""
    every = np.arange(dp.cp.n_tasks)
    return DecodeInputs.of(
        dp.cp, tasks, lines, state.node, state.finish, dp.now, dp.ever_fits(every), dp.avoid_node, dp.requests(every)
    )


def ready_first(cp: CompiledProblem, tasks: list[int], priority: np.ndarray) -> Iterator[int]:
    """`tasks` one at a time from a ready queue, highest `priority` first (CPOP's and PEFT's planning order).

    A task is ready once every parent in `tasks` has been yielded (the caller places
    each task before asking for the next); parents outside `tasks` have started
    already. Ties by topological position, so the order is deterministic.
    """
    pos = np.empty(cp.n_tasks, dtype=np.int64)
    pos[cp.topo] = np.arange(cp.n_tasks)
    todo = set(tasks)
    waiting = {t: sum(1 for p in cp.preds(t) if int(p) in todo) for t in tasks}
    queue = [(-float(priority[t]), int(pos[t]), t) for t in tasks if waiting[t] == 0]
    heapq.heapify(queue)
    while queue:
        t = heapq.heappop(queue)[2]
        yield t
        for c in cp.succs(t):
            c = int(c)
            if c in todo:
                waiting[c] -= 1
                if waiting[c] == 0:
                    heapq.heappush(queue, (-float(priority[c]), int(pos[c]), c))


class StaticPlanner(Scheduler):
    """Plan at reset, dispatch per node in planned order, re-plan the rest when needed.

    On a shared cluster workflows keep arriving; `replan_on_arrival` says what an arrival does.
    True (`heft`, `cpop`, `peft`): every unstarted task of every submitted workflow is planned
    again, the new workflow's with them, in the planner's priority order. False (the `*_keep`
    variants): only the new workflow is planned, into the room the cluster has committed, that is
    the running tasks and the planned slots of the earlier workflows' unstarted tasks, which keep
    their nodes and their order (a slot whose start has slipped past now is held from now on, for
    its planned length). With one workflow the two are the same. Node failures, migrations and late
    finishes re-plan every unstarted task in both.
    """

    replan_slack: float = 0.5
    max_replans: int = 20
    replan_on_arrival: ClassVar[bool] = True
    compiled: bool = listsched.AVAILABLE
    """plan through the compiled decoder (`sim.listsched`, the same plans to the bit); False: the Python loop each
    planner keeps as the reference"""

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.node = np.full(cp.n_tasks, -1, dtype=np.int64)
        self.planned_start = np.full(cp.n_tasks, np.inf)
        self.planned_finish = np.full(cp.n_tasks, np.inf)
        self.queues: list[list[int]] = [[] for _ in range(cp.n_nodes)]
        self.planned_wf = np.zeros(cp.n_workflows, dtype=bool)
        self.watch: set[int] = set()
        self.replans = 0
        self.unplaced = False
        self.planned_up = np.ones(cp.n_nodes, dtype=bool)
        self.prepare(cp)

    def prepare(self, cp: CompiledProblem) -> None:
        """Per-problem precomputation (ranks); called once at reset."""

    @abstractmethod
    def plan_tasks(self, dp: DecisionPoint, tasks: list[int], lines: list[NodeTimeline], state: PlanState) -> None:
        """Place every task of `tasks` (unstarted, parents placed or in `tasks`) with `self.assign`."""

    def assign(self, lines: list[NodeTimeline], state: PlanState, t: int, nd: int, start: float) -> None:
        """Record t on nd from `start`, reserving its slot (an infinite `start`: no node can take t now)."""
        finish = start + float(self.cp.exec_s[t, nd])
        lines[nd].reserve(start, finish, self._dp.request(t))
        state.place(t, nd, finish)
        self.node[t] = nd
        self.planned_start[t] = start
        self.planned_finish[t] = finish

    def decode_inputs(
        self, dp: DecisionPoint, tasks: list[int], lines: list[NodeTimeline], state: PlanState
    ) -> DecodeInputs:
        """What the compiled decoder needs to place `tasks` over `lines` from `state` (`decode_inputs`)."""
        return decode_inputs(dp, tasks, lines, state)

    def assign_decoded(self, lines: list[NodeTimeline], state: PlanState, decoded: Decoded) -> None:
        """Record the decoder's best plan, task by task in the order it placed them (`assign`)."""
        node, start = decoded.node.tolist(), decoded.start.tolist()
        for t in decoded.orders[decoded.best].tolist():
            self.assign(lines, state, t, node[t], start[t])

    def plan_by_priority(
        self,
        dp: DecisionPoint,
        tasks: list[int],
        lines: list[NodeTimeline],
        state: PlanState,
        priority: np.ndarray,
        node_bias: np.ndarray | None = None,
        pinned: np.ndarray | None = None,
    ) -> None:
        """`tasks` from a ready queue by decreasing `priority` (ties: topological position), each on its earliest-finish
        node with insertion (`node_bias` added to the finish times, a `pinned` node taken when it can host the task),
        through the compiled decoder: `ready_first` and `earliest_finish` in one compiled loop."""
        inputs = self.decode_inputs(dp, tasks, lines, state)
        self.assign_decoded(lines, state, listsched.decode(inputs, priority, node_bias, pinned))

    def _replan(self, dp: DecisionPoint) -> None:
        self._dp = dp
        self.planned_wf = dp.submitted.copy()
        unstarted = (dp.status == WAITING) | (dp.status == READY)
        tasks = [int(t) for t in np.flatnonzero(unstarted & dp.submitted[dp.cp.task_wf])]
        self.node[tasks] = -1
        self.plan_tasks(dp, tasks, dp.node_timelines(), PlanState(dp))
        self.queues = [[] for _ in range(dp.cp.n_nodes)]
        # tasks no node can take now (the only nodes that fit are down) wait, unqueued, for a node to change
        placed = [t for t in tasks if np.isfinite(self.planned_start[t])]
        self.unplaced = len(placed) < len(tasks)
        self.planned_up = dp.node_up.copy()
        for t in sorted(placed, key=self._queue_key(dp.cp)):
            self.queues[int(self.node[t])].append(t)

    def _plan_arrivals(self, dp: DecisionPoint) -> None:
        """Plan the newly submitted workflows only, around what the earlier ones have committed."""
        self._dp = dp
        new_wf = dp.submitted & ~self.planned_wf
        self.planned_wf = dp.submitted.copy()
        unstarted = (dp.status == WAITING) | (dp.status == READY)
        tasks = [int(t) for t in np.flatnonzero(unstarted & new_wf[dp.cp.task_wf])]
        lines = dp.node_timelines()
        for nd, queue in enumerate(self.queues):
            for t in queue:
                if dp.status[t] in (RUNNING, DONE):
                    continue
                start = max(float(self.planned_start[t]), dp.now)
                lines[nd].reserve(start, start + float(self.planned_finish[t] - self.planned_start[t]), dp.request(t))
        self.node[tasks] = -1
        self.plan_tasks(dp, tasks, lines, PlanState(dp))
        placed = [t for t in tasks if np.isfinite(self.planned_start[t])]
        self.unplaced = self.unplaced or len(placed) < len(tasks)
        self.planned_up = dp.node_up.copy()  # what unplaced tasks wait on changing (a down node coming back)
        key = self._queue_key(dp.cp)
        for nd in {int(self.node[t]) for t in placed}:
            queue = self.queues[nd] + [t for t in placed if self.node[t] == nd]
            self.queues[nd] = sorted(queue, key=key)

    def _queue_key(self, cp: CompiledProblem) -> Callable[[int], tuple[float, bool, int]]:
        """A node's dispatch order: planned start; at one instant zero-length tasks first (a slot may start
        at a zero-length task's instant, `NodeTimeline`), then topological position (a zero-length parent
        planned at its child's start goes first)."""
        pos = np.empty(cp.n_tasks, dtype=np.int64)
        pos[cp.topo] = np.arange(cp.n_tasks)
        start, finish = self.planned_start, self.planned_finish
        return lambda t: (float(start[t]), bool(finish[t] > start[t]), int(pos[t]))

    def _needs_replan(self, dp: DecisionPoint) -> bool:
        """Whether every unstarted task must be planned again (an arrival alone, in keep mode, need not)."""
        if not np.array_equal(dp.submitted, self.planned_wf) and (self.replan_on_arrival or not self.planned_wf.any()):
            return True
        late = False
        for t in list(self.watch):
            if dp.status[t] == DONE:
                self.watch.discard(t)
                planned = self.planned_finish[t] - self.planned_start[t]
                late = late or dp.finish_s[t] - self.planned_finish[t] > self.replan_slack * planned + 1e-6
            elif dp.status[t] == READY:
                self.watch.discard(t)
                return True  # its node failed under it, or it was migrated: back to ready, in no queue
        for nd, queue in enumerate(self.queues):
            if queue and not dp.node_up[nd]:
                return True
        if self.unplaced and not np.array_equal(dp.node_up, self.planned_up):
            return True
        return late and self.replans < self.max_replans

    def decide(self, dp: DecisionPoint) -> Decision:
        if self._needs_replan(dp):
            if self.planned_wf.any():
                self.replans += 1
            self._replan(dp)
        elif not np.array_equal(dp.submitted, self.planned_wf):
            self._plan_arrivals(dp)
        free = dp.free.copy()
        assignments: list[tuple[int, int]] = []
        wake = np.inf
        for nd, queue in enumerate(self.queues):
            while queue:
                t = queue[0]
                if dp.status[t] in (RUNNING, DONE):
                    queue.pop(0)
                    continue
                if dp.status[t] != READY:
                    break
                if not dp.can_start(t, nd, free):
                    arrival = dp.data_ready_s(t, nd)
                    if arrival > dp.now + _EPS:
                        wake = min(wake, arrival)
                    elif not (dp.node_up[nd] and dp.node_available_s[nd] <= dp.now + _EPS):
                        wake = min(wake, float(dp.node_available_s[nd]))  # a down node's stale time may mask others
                    break
                req = dp.request(t)
                free[nd] -= req
                assignments.append((t, nd))
                queue.pop(0)
                self.watch.add(t)
        return Decision(assignments, wake if np.isfinite(wake) else None)

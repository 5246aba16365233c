"""Shortest remaining work first on earliest-finish nodes, holding a task back for a clearly faster busy node.

On a shared cluster the workflow with the least work left goes first (running tasks counted whole; `fair` at
alpha = -2 is close to it), its ready task with the longest tail first, each on the node that finishes it first
among those that can start it now, as the list heuristics do. The difference is one rule that is not
work-conserving: when a node that cannot start the task now (busy, or its inputs still on their way) would
finish it earlier than every node that can, by more than `margin` of its run time there, the task is held back
and the tasks behind it are served; it is offered again at the next decision point. A heterogeneous cluster
under load keeps its fast nodes busy, and the rules that never leave a task waiting while some node is free
put it on a slow one: on held-out streams (hetero-16, load 0.85, seeds 111-120) the hold shortened the mean
completion time of the same order without it on 9 of 10 Poisson and 8 of 10 bursty streams, by 2.4 and 4.8 %
on average, and on the `shared` suite's hetero-16 streams it is shorter than `fair` on 71 of 80 (docs/shared-cluster.md,
"Online baselines"). `HOLD_MARGIN` was chosen on streams 101-110 among 0.1, 0.2 and 0.3 (at 0.5 nothing
is held there: hetero-16's speeds differ by at most 2 x).
Source: shortest remaining processing time (Schrage 1968) at the workflow level, the order Decima's tuned fair
baseline approaches; the hold is the earliest-finish rule over every node, busy ones at their earliest start
(HEFT's node choice, taken online).
Complexity: O(r log r) per decision for the order of r ready tasks, O(n) for the work left
(`DecisionPoint.work_left`), and O(p) per task served for its earliest starts on p nodes (only the tasks the
decision reaches before the room runs out, and only where a node that cannot start the task now could be worth
waiting for: `could_wait`). Ties: equal work left by the longer tail, then the task
index; equal finish times by the lowest node index.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import EPS, CompiledProblem, task_work
from dagsched.schedulers.base import register
from dagsched.schedulers.greedy import ListScheduler
from dagsched.schedulers.progress import tail_path_s
from dagsched.sim.decision import Decision, DecisionPoint

HOLD_MARGIN = 0.2
"""A task waits for a node that cannot start it now only if that node finishes it earlier by more than this share
of its run time on the best node that can (the finish there is a prediction; a busy node's tasks may overrun)."""


def node_worth_waiting_for(
    start_s: npt.NDArray[np.float64],
    exec_s: npt.NDArray[np.float64],
    startable: npt.NDArray[np.bool_],
    now: float,
    margin: float,
) -> int | None:
    """The node a task that could start now should wait for instead, or None: among the nodes that cannot start it
    now, the one that finishes it first from its earliest start `start_s`, when that start is still ahead (a node
    that should already have room, e.g. behind a task past its predicted end, is not worth it) and the finish beats
    every startable node's by more than `margin` of the run time there. The hold of `srpt_hold` and of
    `drl_stream`."""
    run_s = float(exec_s[startable].min())
    later = np.where(startable, np.inf, start_s)
    nd = int(np.argmin(later + exec_s))
    if later[nd] > now + EPS and later[nd] + exec_s[nd] < now + (1.0 - margin) * run_s:
        return nd
    return None


def could_wait(exec_s: list[float], startable: list[int], now: float, margin: float) -> bool:
    """Whether `node_worth_waiting_for` could find a node, from the task's run times alone (`exec_s`, one per node):
    a node that cannot start it now starts it at `now` at the earliest, so it finishes no sooner than `now` plus its
    run time (rounding is monotone: the same holds of the floats), and when that is not sooner than the bound for
    every such node, none is worth it. O(p) in Python floats, without the earliest starts."""
    run_s = min(exec_s[n] for n in startable)
    now_ok = set(startable)
    other_s = min((e for n, e in enumerate(exec_s) if n not in now_ok), default=math.inf)
    return now + other_s < now + (1.0 - margin) * run_s


@register
class SRPTHold(ListScheduler):
    name = "srpt_hold"
    best_for = "heterogeneous shared clusters under load among the hand rules; drl_stream's teacher"
    uses_seed = False

    def __init__(self, margin: float | None = HOLD_MARGIN) -> None:
        super().__init__()
        if margin is not None and not 0.0 <= margin < 1.0:
            raise ValueError(f"margin must be in [0, 1) or None, got {margin!r}")
        self.margin = margin
        """None: never hold (the same order on earliest-finish startable nodes, work-conserving)"""

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.work, self.tail_s = task_work(cp), tail_path_s(cp)
        self.left = np.zeros(cp.n_workflows)

    def decide(self, dp: DecisionPoint) -> Decision:
        self.left = self.work_left(dp)
        self.dp = dp  # what the holds and the node rules of subclasses read
        if self.margin is not None:  # what the holds read, kept current as this decision places tasks
            self.start_rows: dict[int, npt.NDArray[np.float64]] = {}
            self.first_end_s = np.full(self.cp.n_nodes, -np.inf)
            self.reserved_s = np.full(self.cp.n_nodes, -np.inf)
            self.wake_s = np.inf
        decision = super().decide(dp)
        if self.margin is None or not np.isfinite(self.wake_s):
            return decision
        wake = self.wake_s if decision.wake_at is None else min(decision.wake_at, self.wake_s)
        return Decision(decision.assignments, wake)

    def work_left(self, dp: DecisionPoint) -> npt.NDArray[np.float64]:
        """Each workflow's work left, what the order reads (`DecisionPoint.work_left`)."""
        return dp.work_left(self.work)

    def assigned(self, t: int, nd: int) -> None:
        if self.margin is not None:
            end = self.dp.now + float(self.cp.exec_s[t, nd])
            self.first_end_s[nd] = end if self.first_end_s[nd] < 0 else min(self.first_end_s[nd], end)

    def choose_node(self, t: int, startable: list[int]) -> int | None:
        """The earliest-finish startable node, or None when t waits for a node that cannot start it now
        (`holds`)."""
        if self.margin is not None and self.holds(t, startable):
            return None
        return super().choose_node(t, startable)

    def holds(self, t: int, startable: list[int]) -> bool:
        """Whether t waits for a node that cannot start it now (`node_worth_waiting_for`); the decision then asks to
        be woken when that node could start it, so a hold never stalls the run. A held task speaks for its node
        until it would end there, so the tasks behind it do not all wait for the same node while the others stand
        idle. A node given a task in this decision is taken to have room again when the first of those ends. The
        earliest starts are computed only when some node that cannot start t now would finish it soon enough
        were it to start now (`could_wait`): on equal speeds, or with the fastest nodes startable, never."""
        assert self.margin is not None
        exec_s = self.cp.exec_s[t]
        if not could_wait(exec_s.tolist(), startable, self.dp.now, self.margin):
            return False
        now_ok = np.zeros(self.cp.n_nodes, dtype=bool)
        now_ok[startable] = True
        start = np.maximum(np.maximum(self.earliest_starts(t), self.first_end_s), self.reserved_s)
        nd = node_worth_waiting_for(start, exec_s, now_ok, self.dp.now, self.margin)
        if nd is None:
            return False
        self.wake_s = min(self.wake_s, float(start[nd]))
        self.reserved_s[nd] = float(start[nd] + exec_s[nd])  # the node is spoken for: the next task sees it later
        return True

    def earliest_starts(self, t: int) -> npt.NDArray[np.float64]:
        """t's earliest start on each node as the decision point sees it (`DecisionPoint.earliest_starts`), computed
        when t first reaches a node choice in this decision: with hundreds of tasks ready, a decision reaches
        only the few served before the room runs out."""
        row = self.start_rows.get(t)
        if row is None:
            row = self.start_rows[t] = self.dp.earliest_starts([t])[0]
        return row

    def order(self, ready: list[int]) -> Iterator[int]:
        wf, left, tail = self.cp.task_wf, self.left, self.tail_s
        yield from sorted(ready, key=lambda t: (float(left[wf[t]]), -float(tail[t]), t))

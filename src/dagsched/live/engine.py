"""The simulator's engine on the wall clock: one loop, two clocks.

`LiveEngine` is the simulator (`dagsched.sim.engine.Simulator`): the same state, the same handlers, the same
`DecisionPoint` and the same loop around each decision (`next_decision`). Two things differ, as SimPy's
`RealtimeEnvironment` differs from its `Environment` only in `step`:

- **where events come from.** `step` waits on the wall clock: for the executor to report a task's end, a failure
  or a lost node, or for the next event on the heap (a workflow's arrival, a wake-up a scheduler asked for) to be
  due. The engine's clock reads the problem's seconds: wall seconds since the start / the time scale.
- **what a start does.** A decided start launches a real task on its node (`executor.RayExecutor`) instead of
  putting its end on the heap; its end is when the executor says it ended.

A scheduler cannot tell the difference: a running task's remaining time is its predicted runtime less its elapsed
time (`SimState.predicted_end_s`), never anything hidden, and a planner's `fork()` is a plain simulator rolling
forward on predictions from the live state. A task whose run fails goes back to ready (an attempt with outcome
"error") until its `retries` are spent, then its workflow fails, named with the task, node and reason, and the
other workflows go on. A lost node is the simulator's failure: its running tasks fail and return to ready, and the
node stays down.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dagsched.live.executor import NodeLost, RayExecutor, TaskEnded
from dagsched.model.compiled import CompiledProblem
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import Scheduler
from dagsched.sim.engine import FAIL, FINISH, WAKE, Simulator
from dagsched.sim.state import DONE, INF, WAITING, shared
from dagsched.sim.trace import Trace, new_attempt


class LiveClock:
    """The problem's seconds on the wall clock: `now() = (monotonic - start) / time_scale`."""

    def __init__(self, time_scale: float) -> None:
        self.time_scale = time_scale
        self.start_mono = time.monotonic()
        self.start_wall = time.time()

    def now(self) -> float:
        return (time.monotonic() - self.start_mono) / self.time_scale

    def wall_of(self, at: float) -> float:
        """The epoch time (`time.time()`) of problem instant `at`."""
        return self.start_wall + at * self.time_scale

    def wall_s_until(self, at: float) -> float:
        """Wall seconds from now until problem instant `at` (0 if past; inf for inf)."""
        if at == INF:
            return INF
        return max(at * self.time_scale - (time.monotonic() - self.start_mono), 0.0)


@dataclass(frozen=True)
class WorkflowFailure:
    """A workflow given up: which task failed its last retry, where, and why."""

    workflow: str
    task: str
    node: str
    reason: str


@dataclass(slots=True, eq=False, repr=False, init=False)
class LiveEngine(Simulator):
    """The simulator whose events come from tasks really running on Ray. Build it, then `run(scheduler)`."""

    executor: RayExecutor = shared()
    clock: LiveClock = shared()
    retries: list[int] = shared()
    errors: dict[int, int] = shared()
    """failed runs per task so far"""
    failures: list[WorkflowFailure] = shared()
    failed_workflows: set[int] = shared()
    on_step: Callable[[LiveEngine], None] | None = shared()
    step_wall: float = shared()
    """the epoch time of the instant being handled (what dispatch latency counts from)"""

    def __init__(
        self,
        cp: CompiledProblem,
        config: SimConfig,
        seed: int,
        executor: RayExecutor,
        clock: LiveClock,
        on_step: Callable[[LiveEngine], None] | None = None,
    ) -> None:
        if config.mtbf_s or config.straggler_rate_per_h or config.overrun_factor or config.network_contention:
            raise ValueError("a real run has its own failures and slowdowns: mtbf, stragglers, overrun and contention")
        if config.task_overhead_s:
            raise ValueError("a real run has its own per-task overhead (task_overhead_s models it in a prediction)")
        if config.classic:
            raise ValueError("a real run runs tasks side by side: classic mode is the simulator's textbook model")
        Simulator.__init__(self, cp, config, seed)
        self.executor, self.clock, self.on_step = executor, clock, on_step
        self.retries = [task.retries for task in executor.tasks]
        self.errors, self.failures, self.failed_workflows = {}, [], set()
        self.step_wall = clock.start_wall
        self.trace.measured = True

    def resume_done(self, done: dict[int, int]) -> None:
        """Tasks an earlier run finished (task -> node): done at time 0 of this run, as zero-length attempts on
        their nodes (so the trace still holds every task once), their children counting them as finished (the
        executor holds the outputs they made then: `RayExecutor.restore_outputs`)."""
        succs = self._st.succs
        for t, nd in sorted(done.items()):
            self.status[t] = DONE
            self.node_of[t] = nd
            self.start_s[t] = self.finish_s[t] = 0.0
            self.n_done += 1
            self._preds_left[t] = -1  # never made ready again, not even by its workflow's arrival
            self.trace.attempts.append(new_attempt((t, nd, 0.0, 0.0, "done", 0.0)))
            for c in succs[t]:
                self._preds_left[c] -= 1
            self.executor.task_done(t)

    # ---- what a start does: launch the task on its node --------------------------------------------------------

    def _begin(self, t: int) -> None:
        run = self.running[t]
        self.start_s[t] = self.now
        run.start = run.last_update = self.now
        self.executor.launch(t, run.node, run.version, run.work_left, self.step_wall)

    # ---- where events come from: the executor and the wall clock -----------------------------------------------

    def step(self) -> bool:
        """Wait for the next event (a task's end, a lost node, a due arrival or wake-up) and handle every event
        of that instant; False when nothing runs and nothing is due."""
        heap = self._heap
        if not heap and not self.running:
            return False
        next_at = heap[0][0] if heap else INF
        events = self.executor.poll(self.clock.wall_s_until(next_at))
        now = max(self.clock.now(), self.now)
        self.now = now
        self.step_wall = time.time()
        self.epoch += 1
        if self.deferred:
            self.deferred.clear()
        for event in events:
            if isinstance(event, NodeLost):
                self._node_lost(event.node)
            else:
                self._task_ended(event)
        while heap and heap[0][0] <= now:
            _, kind, _, payload, version = heapq.heappop(heap)
            if kind == WAKE:  # due when the wall clock has reached it, not at an exact instant
                self._progress_pending -= 1
                if self._wake_pending is not None and self._wake_pending <= now:
                    self._wake_pending = None
                    self._changed = True
            elif kind != FINISH:  # no task end is ever put on the heap here
                self._handle(kind, payload, version)
        if self.on_step is not None:
            self.on_step(self)
        return True

    def _measured(self, t: int) -> None:
        """A running attempt ends now: what it did is the time it really took."""
        run = self.running[t]
        run.nominal_s = max(self.now - run.start, 0.0)

    def _task_ended(self, event: TaskEnded) -> None:
        t = event.task
        run = self.running.get(t)
        if run is None or run.version != event.version:
            return  # stopped already: its node was lost, or its workflow failed
        self._measured(t)
        if event.ok:
            self._stop(t, "done")
            self.executor.task_done(t)
            return
        if event.status.get("lost"):  # its inputs were lost with a node before it began: no attempt, no error
            self._stop(t, "failed")
            self.trace.attempts.pop()  # `_stop` recorded one; a task that never began has none (as in the simulator)
            return
        nd = run.node
        self._stop(t, "error")
        self.errors[t] = self.errors.get(t, 0) + 1
        if self.errors[t] > self.retries[t]:
            self._fail_workflow(int(self.cp.task_wf[t]), t, nd, event.reason)

    def _node_lost(self, nd: int) -> None:
        """Ray lost node nd: the simulator's failure (its running tasks fail, return to ready; it stays down)."""
        if not self.node_up[nd]:
            return
        for t in self.running_on[nd]:
            self._measured(t)
        self._handle(FAIL, nd, 0)

    def _fail_workflow(self, w: int, t: int, nd: int, reason: str) -> None:
        """Give up workflow w: its running tasks are cancelled, the rest never start; the others go on."""
        cp = self.cp
        self.failures.append(WorkflowFailure(cp.wf_names[w], cp.task_ids[t], cp.node_ids[nd], reason))
        self.failed_workflows.add(w)
        for u in range(int(cp.wf_task_ptr[w]), int(cp.wf_task_ptr[w + 1])):
            if self.status[u] == DONE:
                continue
            if u in self.running:
                self.executor.cancel(u)
                self._measured(u)
                self._stop(u, "error")
            if u in self.ready:
                self.ready.discard(u)
                if u in self._ready_in:
                    self._ready_in.discard(u)
                else:
                    self._ready_out.add(u)
            self.status[u] = WAITING
            self.n_dropped += 1
        self._changed = True

    # ---- the loop ----------------------------------------------------------------------------------------------

    def run(self, scheduler: Scheduler, max_time_s: float = INF) -> Trace:
        """Decide live until every task is done or dropped: `Simulator.run`'s loop on this clock."""
        return Simulator.run(self, scheduler, max_time_s)

    def stats(self) -> dict[str, Any]:
        """Counts for a progress display."""
        return {
            "done": self.n_done,
            "running": len(self.running),
            "ready": len(self.ready),
            "workflows_done": int(sum(1 for w in range(self.cp.n_workflows) if self._workflow_done(w))),
        }

    def _workflow_done(self, w: int) -> bool:
        lo, hi = int(self.cp.wf_task_ptr[w]), int(self.cp.wf_task_ptr[w + 1])
        return bool((self.status[lo:hi] == DONE).all())

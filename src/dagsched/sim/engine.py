"""The one discrete-event simulator of a cloud cluster: the event heap and the handlers that change the state.

A flat, deterministic event loop (one heap ordered by time, named priority and a
sequence number, as in SimPy). The simulator owns the loop around each decision:
`next_decision` advances time to the next decision point and returns a read-only
`DecisionPoint` (`dagsched.sim.decision`); `apply` carries out the scheduler's answer,
refusing anything illegal; `run` is that loop. The simulator never decides anything
itself. Its state, and the queries a decision point forwards, are `dagsched.sim.state`;
the hidden randomness (noise, failures, stragglers) is `dagsched.sim.disruptions`, which
no decision point exposes; `fork()` gives planners a copy of the state that rolls forward
on predicted runtimes only.
"""

from __future__ import annotations

import heapq
import math
import time as wallclock
from dataclasses import dataclass
from typing import NoReturn, Protocol

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import CompiledProblem
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import Decision, DecisionPoint, Scheduler, run_class
from dagsched.sim.network import Flow
from dagsched.sim.state import (
    CLASSIC_REQUEST,
    DONE,
    INF,
    READY,
    RUNNING,
    WAITING,
    Running,
    SimState,
    fresh,
)
from dagsched.sim.trace import Outage, Slowdown, Trace, Transfer, new_attempt

__all__ = ["DONE", "READY", "RUNNING", "WAITING", "Decision", "DecisionPoint", "SchedulingError", "Simulator"]

# Event kinds, in the order they are handled at the same instant.
FINISH, FAIL, REPAIR, BOOTED, SLOW_END, SLOW_START, ARRIVAL, OVERRUN, WAKE, NET = range(10)
_PROGRESS = (FINISH, REPAIR, BOOTED, ARRIVAL, WAKE, NET)
_IS_PROGRESS = tuple(kind in _PROGRESS for kind in range(10))  # indexed by kind: cheaper than `in` per event


class SchedulingError(RuntimeError):
    """A scheduler asked for something the cluster cannot do, or never finished."""


class StepObserver(Protocol):
    """Told before and after each instant the simulator steps through (the environment integrates its reward)."""

    def before_step(self, sim: Simulator) -> None: ...

    def after_step(self, sim: Simulator) -> None: ...


@dataclass(slots=True, eq=False, repr=False, init=False)
class Simulator(SimState):
    """State and event loop of one run. Build it, then `run(scheduler)`."""

    _heap: list[tuple[float, int, int, int, int]] = fresh(list)
    _seq: int = fresh(int)
    _version: int = fresh(int)
    _changed: bool = fresh(lambda: True)  # something changed since the last decision point
    _asked: bool = fresh(bool)  # a decision point was handed out and the stall check after it is still due
    _wake_pending: float | None = fresh(lambda: None)
    _net_version: int = fresh(int)
    _next_arrival: int = fresh(int)  # the next workflow arrival to push, in `_st.arrivals` order
    _open_outage: dict[int, float] = fresh(dict)
    _open_slowdown: dict[int, tuple[float, float]] = fresh(dict)
    n_decisions: int = fresh(int)

    def __init__(self, cp: CompiledProblem, config: SimConfig | None = None, seed: int = 0) -> None:
        SimState.__init__(self, cp, config, seed)
        self._push_next_arrival()
        for nd in range(cp.n_nodes):
            if self.node_available_s[nd] > 0:
                self._push(float(self.node_available_s[nd]), BOOTED, nd)
            self._schedule_failure(nd)
            self._schedule_straggler(nd)

    def _schedule_failure(self, nd: int) -> None:
        at = self.disruptions.next_failure_s(nd, self.now)
        if at is not None:
            self._push(at, FAIL, nd)

    def _schedule_straggler(self, nd: int) -> None:
        at = self.disruptions.next_straggler_s(nd, self.now)
        if at is not None:
            self._push(at, SLOW_START, nd)

    # ---- the event heap ----------------------------------------------------------

    def _push(self, at: float, kind: int, payload: int, version: int = 0) -> None:
        self._seq += 1
        if _IS_PROGRESS[kind]:
            self._progress_pending += 1
        heapq.heappush(self._heap, (float(at), kind, self._seq, payload, version))

    def _push_next_arrival(self) -> None:
        """Put the next workflow arrival on the heap: arrivals are pushed one at a time, in (instant, workflow)
        order, so a long stream's thousands of future arrivals do not deepen the heap every event goes through.
        Arrivals at one instant pop in workflow order, as if all had been pushed; while any is still to come, the
        one on the heap keeps the run's progress pending."""
        arrivals, i = self._st.arrivals, self._next_arrival
        if i < len(arrivals):
            at, w = arrivals[i]
            self._next_arrival = i + 1
            self._push(at, ARRIVAL, w)

    # ---- applying decisions ----------------------------------------------------------

    def start(self, t: int, nd: int) -> None:
        """Start ready task t on node nd now; refuses anything illegal (`_refuse` says what)."""
        if not (0 <= t < self._n_tasks and 0 <= nd < self._n_nodes and self.can_start(t, nd)):
            self._refuse(t, nd)
        now = self.now
        req = CLASSIC_REQUEST if self.classic else self._st.req[t]
        room, row = self.free[nd], self._free_rows[nd]  # the live room's row (a view) and its Python mirror
        self.epoch += 1
        for k in (0, 1, 2):  # in place, skipping the requests of 0 (x - 0.0 is x): fewer numpy stores
            if req[k]:
                row[k] = room[k] = row[k] - req[k]
        self.ready.discard(t)
        if t in self._ready_in:
            self._ready_in.discard(t)
        else:
            self._ready_out.add(t)
        if self.deferred:
            self.deferred.discard(t)
        self.status[t] = RUNNING
        self.node_of[t] = nd
        attempts = self.attempts
        tried = attempts.item(t)
        hidden = self.disruptions
        # no noise (or a fork: predicted runtimes); else a first attempt's draw, or a retry's fresh one
        noise = 1.0 if hidden.sigma2 == 0.0 else hidden.retry_noise() if tried else hidden.first_noise[t]
        # not a list of lists: n x m Python floats swamp long streams
        nominal = self.cp.exec_s.item(t, nd) * noise + hidden.task_overhead_s
        attempts[t] = tried + 1
        self._version += 1
        run = Running(nd, now, nominal, now, self._version, nominal)
        self.running[t] = run
        self.running_on[nd].add(t)
        self._changed = True
        if self._net is not None:
            self.start_s[t] = now  # placement; execution's start once the inputs are in (`_begin`)
            if self._send_inputs(t, nd):
                return  # it begins when its inputs are on nd (`_net_sync`)
        self._begin(t)

    def _refuse(self, t: int, nd: int) -> NoReturn:
        """Why (t, nd) cannot start now, as the error `start` raises."""
        if not (0 <= t < self._n_tasks and 0 <= nd < self._n_nodes):
            raise SchedulingError(f"assignment ({t}, {nd}) out of range")
        name, node = self.cp.task_name(t), self.cp.node_ids[nd]
        if self.status[t] != READY:
            state = ("waiting", "ready", "running", "done")[self.status[t]]
            raise SchedulingError(f"task '{name}' is {state}, not ready, at t={self.now:g}")
        if not self.allows(t, nd):
            raise SchedulingError(f"task '{name}' may not run on node '{node}' (a placement rule forbids it)")
        if not self.fits_now(t, nd):
            raise SchedulingError(f"task '{name}' does not fit node '{node}' at t={self.now:g}")
        arrival = self.data_ready_s(t, nd)
        raise SchedulingError(f"task '{name}' inputs reach node '{node}' only at t={arrival:g}")

    def _begin(self, t: int) -> None:
        """Placed task t's inputs are on its node: it starts executing now."""
        run = self.running[t]
        nd = run.node
        now = self.now
        self.start_s[t] = now
        run.start = run.last_update = now
        self._seq += 1  # `_push` of a FINISH (a progress event), inline: once per task
        self._progress_pending += 1
        heapq.heappush(self._heap, (now + run.work_left * self.slow_factor.item(nd), FINISH, self._seq, t, run.version))
        overrun = self.config.overrun_factor
        if overrun and not self.classic and self.migrations[t] < self.config.max_migrations:
            self._push(now + overrun * float(self.cp.exec_s[t, nd]), OVERRUN, t, run.version)

    # ---- the contended network ---------------------------------------------------------

    def _send_inputs(self, t: int, nd: int) -> bool:
        """Start the transfers of t's inputs from other nodes to nd; False when there are none."""
        net = self._net
        assert net is not None
        preds = zip(self._st.preds[t], self._st.pred_data[t], strict=True)
        senders = [(p, d) for p, d in preds if self.node_of[p] != nd]
        if not senders:
            return False
        net.advance(self.now)
        for p, d in senders:
            net.add(p, t, int(self.node_of[p]), nd, d, self.now)
        self._inputs_left[t] = len(senders)
        self._net_sync()
        return True

    def _net_sync(self) -> None:
        """Bring the network to now: hand over the transfers that are through, reshare, plan the next change."""
        net = self._net
        assert net is not None
        net.advance(self.now)
        for f in net.arrived(self.now):
            self._record_transfer(f, True)
            left = self._inputs_left[f.child] - 1
            if left:
                self._inputs_left[f.child] = left
            else:
                del self._inputs_left[f.child]
                self._begin(f.child)
                self._changed = True
        net.reshare(self.now)
        self._net_version += 1
        at = net.next_change_s()
        if math.isfinite(at):
            self._push(max(at, self.now), NET, 0, self._net_version)

    def _record_transfer(self, f: Flow, arrived: bool) -> None:
        self.trace.transfers.append(
            Transfer(f.parent, f.child, f.src, f.dst, f.data_bytes, f.start_s, self.now, arrived)
        )

    def _cancel_inputs(self, t: int) -> None:
        """Placed task t leaves its node before its inputs arrived: its transfers stop."""
        net = self._net
        assert net is not None
        del self._inputs_left[t]
        net.advance(self.now)
        for f in net.flows_to(t):
            net.remove(f)
            self._record_transfer(f, False)
        self._net_sync()

    def _stop(self, t: int, outcome: str) -> None:
        run = self.running.pop(t)
        nd = run.node
        self.running_on[nd].discard(t)
        req = CLASSIC_REQUEST if self.classic else self._st.req[t]
        room, row = self.free[nd], self._free_rows[nd]
        for k in (0, 1, 2):  # as in `start`
            if req[k]:
                row[k] = room[k] = row[k] + req[k]
        if self._inputs_left and t in self._inputs_left:  # it never began: no attempt, its transfers stop
            self._cancel_inputs(t)
        else:
            self.trace.attempts.append(new_attempt((t, nd, run.start, self.now, outcome, run.nominal_s)))  # type: ignore[arg-type]
        self._changed = True
        if outcome == "done":
            self.status[t] = DONE
            self.finish_s[t] = self.now
            self.n_done += 1
            self._arrival.pop(t, None)
            left, task_wf, submitted, status = self._preds_left, self._st.task_wf, self.submitted, self.status
            ready, ready_in, ready_out = self.ready, self._ready_in, self._ready_out
            for c in self._st.succs[t]:
                left[c] -= 1
                if left[c] == 0 and submitted[task_wf[c]]:
                    status[c] = READY
                    ready.add(c)  # `_mark_ready`, inline: a finish readies most tasks
                    if c in ready_out:
                        ready_out.discard(c)
                    else:
                        ready_in.add(c)
        else:
            self.status[t] = READY
            self.node_of[t] = -1
            self.start_s[t] = np.nan
            self._mark_ready(t)

    def _mark_ready(self, t: int) -> None:
        self.ready.add(t)
        if t in self._ready_out:
            self._ready_out.discard(t)
        else:
            self._ready_in.add(t)

    def _rescale(self, nd: int, factor: float) -> None:
        """Change node nd's slowdown factor, moving the finish events of its running tasks."""
        for t in self.running_on[nd]:
            if t in self._inputs_left:  # not executing yet
                continue
            run = self.running[t]
            run.work_left -= (self.now - run.last_update) / self.slow_factor[nd]
            run.last_update = self.now
            self._version += 1
            run.version = self._version
            self._push(self.now + max(run.work_left, 0.0) * factor, FINISH, t, run.version)
        self.slow_factor[nd] = factor

    # ---- the event loop ----------------------------------------------------------------

    def _handle(self, kind: int, payload: int, version: int) -> None:
        """Any event but a task's end, which `step` handles itself (most events are ends)."""
        if _IS_PROGRESS[kind]:
            self._progress_pending -= 1
        if kind == ARRIVAL:
            self._push_next_arrival()
            self.submitted[payload] = True
            lo, hi = self.cp.wf_task_ptr[payload], self.cp.wf_task_ptr[payload + 1]
            for t in range(lo, hi):
                if self._preds_left[t] == 0:
                    self.status[t] = READY
                    self._mark_ready(t)
            self._changed = True
        elif kind == FAIL:
            nd = payload
            for t in sorted(self.running_on[nd]):
                self._stop(t, "failed")
            self.node_up[nd] = False
            self._node_open_s[nd] = INF
            self._open_outage[nd] = self.now
            repaired = self.disruptions.repair_s(nd, self.now)
            if repaired is not None:
                self._push(repaired, REPAIR, nd)
        elif kind == REPAIR:
            nd = payload
            self.node_up[nd] = True
            self.trace.outages.append(Outage(nd, self._open_outage.pop(nd), self.now))
            boot = float(self.cp.boot_delay_s[nd]) if self.config.effective_boot_delay else 0.0
            self.node_available_s[nd] = self._node_open_s[nd] = self.now + boot
            if boot > 0:
                self._push(self.now + boot, BOOTED, nd)
            self._schedule_failure(nd)
            self._changed = True
        elif kind == BOOTED:
            self._changed = True
        elif kind == SLOW_START:
            nd = payload
            ends = self.disruptions.straggler_end_s(nd, self.now)
            self._open_slowdown[nd] = (self.now, self.config.straggler_factor)
            self._rescale(nd, self.config.straggler_factor)
            self._push(ends, SLOW_END, nd)
        elif kind == SLOW_END:
            nd = payload
            start, factor = self._open_slowdown.pop(nd)
            self.trace.slowdowns.append(Slowdown(nd, start, self.now, factor))
            self._rescale(nd, 1.0)
            self._schedule_straggler(nd)
        elif kind == OVERRUN:
            run = self.running.get(payload)
            if run is not None and run.version == version:
                self.migrations[payload] += 1
                self.avoid_node[payload] = run.node
                self._stop(payload, "overrun")
        elif kind == WAKE and self._wake_pending == self.now:
            self._wake_pending = None
            self._changed = True
        elif kind == NET and version == self._net_version:
            self._net_sync()

    def step(self) -> bool:
        """Handle every event of the next instant; False when nothing is left to do."""
        if not self._heap:
            return False
        heap = self._heap
        at = heap[0][0]
        self.now = at
        self.epoch += 1
        if self.deferred:
            self.deferred.clear()  # a deferral holds for one instant
        handle, pop, running = self._handle, heapq.heappop, self.running
        while heap and heap[0][0] == at:
            _, kind, _, payload, version = pop(heap)
            if kind == FINISH:  # a task's end (a progress event), here, not in `_handle`: most events are ends
                self._progress_pending -= 1
                run = running.get(payload)
                if run is not None and run.version == version:
                    self._stop(payload, "done")
            else:
                handle(kind, payload, version)
        return True

    # ---- the decision point ------------------------------------------------------------------
    def decision_point(self) -> DecisionPoint:
        """The read-only view of now, with the shared decision rules (nothing advances); tasks deferred at this
        instant are left out of its ready set (its wake instant still counts them)."""
        # made as `DecisionPoint(self)` makes one, less the Python-level `__new__` call (its class pick is done)
        dp: DecisionPoint = object.__new__(self._dp_class or run_class(self))
        DecisionPoint.__init__(dp, self)
        if self.deferred:
            dp = dp.without(np.array(sorted(self.deferred), dtype=np.int64))
        return dp

    def defer(self, tasks: npt.NDArray[np.int64]) -> None:
        """Put ready tasks aside until time moves: a policy waited on them and is offered the ones behind."""
        self.deferred.update(int(t) for t in tasks)

    def next_decision(
        self,
        max_time_s: float = INF,
        *,
        legal_only: bool = False,
        must_step: bool = False,
        observer: StepObserver | None = None,
    ) -> DecisionPoint | None:
        """Advance time to the next decision point and return it; None when the run is over.

        The scheduler's loop (`run`): a decision point is an instant at which something changed
        (an event, a start, a wake-up) while tasks are ready. A scheduler that saw one and started
        nothing while nothing runs or is pending has stalled: SchedulingError.

        `legal_only` (the environment's and the search planners' loop): a decision point is an
        instant at which some ready task can start; where tasks are ready but none can start, the
        simulator waits by itself, woken when their inputs arrive. With `must_step` it first leaves
        the current instant (a wait). None when every task is done or nothing can move any more.
        `observer` is told before and after each instant stepped through.
        """
        if legal_only:
            return self._next_legal(must_step, observer)
        if self._asked:
            self._asked = False
            if not self.running and self._progress_pending == 0:  # `_check_stall`'s cheap test first
                self._check_stall()
        step, n_tasks = self.step, self._n_tasks
        while self.n_done + self.n_dropped != n_tasks and self.now <= max_time_s:
            if observer is not None:
                observer.before_step(self)
            if not step():
                raise SchedulingError(f"scheduler '{self.trace.scheduler}' left tasks unscheduled with nothing pending")
            if observer is not None:
                observer.after_step(self)
            if self.ready and self._changed:
                self._changed = False
                self._asked = True
                return self.decision_point()
            if not self.running and self._progress_pending == 0:
                self._check_stall()
        return None

    def _check_stall(self) -> None:
        if not self.running and not self.done and self._progress_pending == 0:
            raise SchedulingError(
                f"scheduler '{self.trace.scheduler}' stalled at t={self.now:g}: {len(self.ready)} ready tasks, "
                "nothing running and nothing to wait for"
            )

    def _next_legal(self, must_step: bool, observer: StepObserver | None) -> DecisionPoint | None:
        if must_step and self.ready:
            self._wait_for_inputs(self.decision_point().wake_s)
        stepped = False
        while not self.done:
            if stepped or not must_step:
                dp = self.decision_point()
                if dp.any_legal:
                    return dp
                if len(dp.ready):
                    self._wait_for_inputs(dp.wake_s)
            if not self.can_advance:
                return None
            if observer is not None:
                observer.before_step(self)
            if not self.step():
                return None
            if observer is not None:
                observer.after_step(self)
            stepped = True
        return None

    def _wait_for_inputs(self, wake_s: float) -> None:
        """A wait at a decision point (nothing started): be woken when inputs arrive. As a decision, it counts
        only where something changed since the last one, and it consumes that change."""
        if not self.ready or not self._changed:
            return
        self._changed = False
        self.schedule_wake(wake_s)

    def schedule_wake(self, at: float | None) -> None:
        """Be at a decision point again at `at` (a future instant; the earliest asked for wins)."""
        if (
            at is not None
            and math.isfinite(at)
            and at > self.now
            and (self._wake_pending is None or at < self._wake_pending)
        ):
            self._wake_pending = float(at)
            self._push(self._wake_pending, WAKE, 0)

    def apply(self, decision: Decision) -> None:
        """Start the decision's pairs in order (each must be legal when it starts) and note its wake-up."""
        start = self.start
        for t, nd in decision.assignments:
            start(int(t), int(nd))
        if decision.wake_at is not None:
            self.schedule_wake(decision.wake_at)

    def run(self, scheduler: Scheduler, max_time_s: float = INF) -> Trace:
        """Run to completion (or `max_time_s`): ask the scheduler at every decision point; return the trace."""
        self.trace.scheduler = scheduler.name
        next_decision, decide, start, wake = self.next_decision, scheduler.decide, self.start, self.schedule_wake
        clock, latency = wallclock.perf_counter, self.trace.decision_latency_s
        while (dp := next_decision(max_time_s)) is not None:
            t0 = clock()
            decision = decide(dp)
            latency.append(clock() - t0)
            self.n_decisions += 1
            for t, nd in decision.assignments:  # `apply`, inline: it runs once per decision
                start(int(t), int(nd))
            if decision.wake_at is not None:
                wake(decision.wake_at)
        self._close_open_records()
        return self.trace

    def finish(self) -> Trace:
        """Close the records still open (outages, slowdowns) when a driver other than `run` ends the run."""
        self._close_open_records()
        return self.trace

    def _close_open_records(self) -> None:
        for nd, start in sorted(self._open_outage.items()):
            self.trace.outages.append(Outage(nd, start, INF))
        for nd, (start, factor) in sorted(self._open_slowdown.items()):
            self.trace.slowdowns.append(Slowdown(nd, start, self.now, factor))
        self._open_outage.clear()
        self._open_slowdown.clear()

    # ---- snapshots -----------------------------------------------------------------------
    def fork(self) -> Simulator:
        """A copy of the mutable state that rolls forward on predicted runtimes.

        Shares the compiled problem (never copied); every field is copied by the rule it is declared with
        (`SimState.fork`). Running tasks end at their predicted times; no noise, failures or stragglers happen
        in the fork, and a down node stays down (its repair time is hidden truth).
        A fork starts at its parent's instant, which plain `next_decision()` never offers (it steps first; the
        `legal_only` loop does offer it): decide at `fork.decision_point()`, apply, then loop on
        `next_decision` (as `rollout.complete_from_here` does).
        """
        f = self.copy_as(Simulator)  # a run on the wall clock (`dagsched.live`) forks into this simulator too
        exec_s, now = self.cp.exec_s, self.now
        for t, run in self.running.items():
            f._version += 1
            nominal = float(exec_s[t, run.node])
            if t in self._inputs_left:  # placed, waiting for its inputs: begins in the fork when they arrive
                f.running[t] = Running(run.node, run.start, nominal, now, f._version, nominal)
                continue
            predicted_left = max(nominal - (now - run.start), 0.0)
            f.running[t] = Running(run.node, run.start, predicted_left, now, f._version, nominal)
            f._push(now + predicted_left, FINISH, t, f._version)
        # arrivals happen in `_st.arrivals` order, so the workflows not yet submitted are that list's tail
        f._next_arrival = int(np.count_nonzero(self.submitted))
        f._push_next_arrival()
        for nd in range(self.cp.n_nodes):
            if self.node_up[nd] and self.node_available_s[nd] > now:
                f._push(float(self.node_available_s[nd]), BOOTED, nd)
        if f._net is not None and f._net.flows:
            f._net_sync()
        return f

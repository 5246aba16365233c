"""The one discrete-event simulator of a cloud cluster.

A flat, deterministic event loop (one heap ordered by time, named priority and a
sequence number, as in SimPy). The simulator owns the loop around each decision:
`next_decision` advances time to the next decision point and returns a read-only
`DecisionPoint` (`dagsched.sim.decision`); `apply` carries out the scheduler's answer,
refusing anything illegal; `run` is that loop. The simulator never decides anything
itself. Hidden truth (the noise of each attempt, future failures) stays in attributes
no decision point exposes; `fork()` gives planners a copy of the mutable state that
rolls forward on predicted runtimes only.
"""

from __future__ import annotations

import bisect
import heapq
import math
import time as wallclock
import weakref
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import EPS, CompiledProblem
from dagsched.sim import kernels
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import DONE, READY, RUNNING, WAITING, Decision, DecisionPoint, Scheduler
from dagsched.sim.network import Flow, Network
from dagsched.sim.slots import NodeTimeline, Timelines
from dagsched.sim.trace import Outage, Slowdown, Trace, Transfer, new_attempt

__all__ = ["DONE", "READY", "RUNNING", "WAITING", "Decision", "DecisionPoint", "SchedulingError", "Simulator"]

# Event kinds, in the order they are handled at the same instant.
FINISH, FAIL, REPAIR, BOOTED, SLOW_END, SLOW_START, ARRIVAL, OVERRUN, WAKE, NET = range(10)
_PROGRESS = (FINISH, REPAIR, BOOTED, ARRIVAL, WAKE, NET)
_IS_PROGRESS = tuple(kind in _PROGRESS for kind in range(10))  # indexed by kind: cheaper than `in` per event
_CLASSIC_REQUEST = (1.0, 0.0, 0.0)

_VIEWED = (
    "status",
    "node_of",
    "start_s",
    "finish_s",
    "free",
    "cap",
    "node_up",
    "node_available_s",
    "slow_factor",
    "avoid_node",
    "submitted",
)
"""The state arrays a decision point shows (read-only)."""
_FORWARDED = (
    "request",
    "requests",
    "data_ready_all_s",
    "data_ready_s",
    "predicted_end_s",
    "room_times",
    "fits_now",
    "can_start",
    "ever_fits",
    "fitting",
    "startable",
    "node_timelines",
)
"""The simulator's read calls a decision point hands on as they are (`DecisionPoint` documents each)."""

# How far past a finite horizon failures and stragglers are pre-drawn: they are drawn
# lazily, one at a time per node, so any horizon works.
_INF = float("inf")


class SchedulingError(RuntimeError):
    """A scheduler asked for something the cluster cannot do, or never finished."""


class StepObserver(Protocol):
    """Told before and after each instant the simulator steps through (the environment integrates its reward)."""

    def before_step(self, sim: Simulator) -> None: ...

    def after_step(self, sim: Simulator) -> None: ...


@dataclass(slots=True)
class _Running:
    node: int
    start: float
    work_left: float  # seconds of work at factor 1 still to do
    last_update: float
    version: int
    nominal_s: float


@dataclass(frozen=True, slots=True)
class _Static:
    """Python-list views of the compiled problem for scalar-heavy loops (numpy scalars are slow)."""

    preds: list[list[int]]
    pred_data: list[list[float]]
    succs: list[list[int]]
    task_wf: list[int]
    req: list[tuple[float, float, float]]
    arrivals: list[tuple[float, int]]  # (submission instant, workflow), in the order they happen


_STATIC: weakref.WeakKeyDictionary[CompiledProblem, _Static] = weakref.WeakKeyDictionary()


def _static(cp: CompiledProblem) -> _Static:
    cached = _STATIC.get(cp)
    if cached is None:
        ptr, sptr = cp.pred_ptr.tolist(), cp.succ_ptr.tolist()
        idx, data, sidx = cp.pred_idx.tolist(), cp.pred_data.tolist(), cp.succ_idx.tolist()
        n = cp.n_tasks
        cached = _Static(
            preds=[idx[ptr[t] : ptr[t + 1]] for t in range(n)],
            pred_data=[data[ptr[t] : ptr[t + 1]] for t in range(n)],
            succs=[sidx[sptr[t] : sptr[t + 1]] for t in range(n)],
            task_wf=cp.task_wf.tolist(),
            req=[(r[0], r[1], r[2]) for r in cp.req.tolist()],
            arrivals=sorted(zip(cp.wf_submit_s.tolist(), range(cp.n_workflows), strict=True)),
        )
        _STATIC[cp] = cached
    return cached


class Simulator:
    """State and event loop of one run. Build it, then `run(scheduler)`."""

    def __init__(self, cp: CompiledProblem, config: SimConfig | None = None, seed: int = 0) -> None:
        self.cp = cp
        self.config = config or SimConfig()
        self.seed = seed
        self.classic = self.config.classic
        n, m = cp.n_tasks, cp.n_nodes
        self._n_tasks, self._n_nodes = n, m  # properties of cp, read per event
        self.now = 0.0
        self.status = np.zeros(n, dtype=np.int8)
        self._st = _static(cp)
        self._arrival: dict[int, npt.NDArray[np.float64]] = {}
        self._preds_left = [len(p) for p in self._st.preds]
        self.node_of = np.full(n, -1, dtype=np.int64)
        self.start_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)
        self.attempts = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.avoid_node = np.full(n, -1, dtype=np.int64)  # node a task overran on
        self.cap = np.ones((m, 3)) if self.classic else cp.cap.copy()
        if self.classic:
            self.cap[:, 1:] = np.inf
        self.free = self.cap.copy()
        self._free_rows: list[list[float]] = self.free.tolist()  # `free` as Python floats, written alongside it
        self.node_up = np.ones(m, dtype=bool)
        boot = cp.boot_delay_s if self.config.effective_boot_delay else np.zeros(m)
        self.node_available_s = boot.astype(np.float64).copy()
        self._node_open_s: list[float] = self.node_available_s.tolist()  # when a node takes tasks (inf: down)
        self.slow_factor = np.ones(m)
        self.running: dict[int, _Running] = {}
        self.running_on: list[set[int]] = [set() for _ in range(m)]
        self.ready: set[int] = set()
        # `ready`, sorted, as of the last `ready_array`: a list (for bisect), the same in a numpy buffer (shifted in
        # place as tasks come and go) and the read-only copy handed out; then what changed since
        self._ready_list: list[int] | None = None
        self._ready_buf: npt.NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self._ready_view: npt.NDArray[np.int64] | None = None
        self._ready_in: set[int] = set()  # ready since then
        self._ready_out: set[int] = set()  # no longer ready since then
        self.deferred: set[int] = set()  # ready tasks a wait put aside until time moves (`defer`)
        self.submitted = np.zeros(cp.n_workflows, dtype=bool)
        self.n_done = 0
        self.n_decisions = 0
        self.epoch = 0  # counts the instants stepped and the starts: a decision point is of one epoch
        self.predicted = False  # True in forks: runtimes are the predictions
        # the contended network (`SimConfig.network_contention`): transfers in flight, and the placed tasks
        # still waiting for inputs (task -> transfers left); None and empty on the free network
        self.contention = self.config.network_contention and not self.classic
        self._net: Network | None = Network(cp) if self.contention else None
        self._inputs_left: dict[int, int] = {}
        self._net_version = 0
        self.trace = Trace(
            scheduler="",
            seed=seed,
            classic=self.classic,
            noise_cv=self.config.noise_cv,
            boot_delay=self.config.effective_boot_delay,
            contention=self.contention,
        )
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = 0
        self._version = 0
        self._progress_pending = 0  # events that can unblock a waiting scheduler
        self._changed = True
        self._asked = False  # a decision point was handed out and the stall check after it is still due
        self._wake_pending: float | None = None
        self._open_outage: dict[int, float] = {}
        self._open_slowdown: dict[int, tuple[float, float]] = {}
        self._views: dict[str, Any] | None = None
        self._dp_class: type[DecisionPoint] | None = None
        self._ever_fits: npt.NDArray[np.bool_] | None = None
        self._init_randomness()
        self._next_arrival = 0
        self._push_next_arrival()
        for nd in range(m):
            if self.node_available_s[nd] > 0:
                self._push(float(self.node_available_s[nd]), BOOTED, nd)
            self._schedule_failure(nd)
            self._schedule_straggler(nd)

    # ---- hidden randomness -------------------------------------------------------

    def _init_randomness(self) -> None:
        """Seeded streams that do not depend on the scheduler's choices (common random numbers)."""
        seq = np.random.SeedSequence(self.seed)
        noise_seq, retry_seq, fail_seq, slow_seq = seq.spawn(4)
        cv = self.config.noise_cv
        if cv > 0 and not self.classic:
            sigma2 = np.log1p(cv * cv)
            rng = np.random.default_rng(noise_seq)
            self._noise = rng.lognormal(-sigma2 / 2, np.sqrt(sigma2), size=self.cp.n_tasks)
        else:
            self._noise = np.ones(self.cp.n_tasks)
        self._noise_list: list[float] = self._noise.tolist()
        self._sigma2 = float(np.log1p(cv * cv))
        self._retry_rng = np.random.default_rng(retry_seq) if self._sigma2 > 0 else None
        # per-node failure and straggler streams, made on first use (2 x m generators cost more than a whole
        # small noise-free run); a SeedSequence spawns the same children whenever it first does, and forks
        # share these lists and sequences, so the streams are the same as if made here
        self._node_seqs = (fail_seq, slow_seq)
        self._node_rngs: list[list[np.random.Generator] | None] = [None, None]

    def _node_rng(self, which: int, nd: int) -> np.random.Generator:
        """Node nd's failure (which=0) or straggler (which=1) stream."""
        streams = self._node_rngs[which]
        if streams is None:
            streams = [np.random.default_rng(s) for s in self._node_seqs[which].spawn(self.cp.n_nodes)]
            self._node_rngs[which] = streams
        return streams[nd]

    def _attempt_noise(self, t: int) -> float:
        if self.predicted or self._sigma2 == 0.0:
            return 1.0
        if self.attempts[t] == 0:
            return self._noise_list[t]  # the first attempt's draw, as a Python float (`_init_randomness`)
        s2 = self._sigma2
        return float(self._retry_rng.lognormal(-s2 / 2, np.sqrt(s2)))  # type: ignore[union-attr]

    def _schedule_failure(self, nd: int) -> None:
        mtbf = self.config.mtbf_s
        if mtbf and not self.classic and not self.predicted:
            self._push(self.now + float(self._node_rng(0, nd).exponential(mtbf)), FAIL, nd)

    def _schedule_straggler(self, nd: int) -> None:
        rate = self.config.straggler_rate_per_h
        if rate > 0 and not self.classic and not self.predicted:
            self._push(self.now + float(self._node_rng(1, nd).exponential(3600.0 / rate)), SLOW_START, nd)

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

    # ---- what a scheduler may look at ----------------------------------------------

    @property
    def done(self) -> bool:
        return self.n_done == self._n_tasks

    @property
    def can_advance(self) -> bool:
        """Whether time can move on by itself: something runs, or an event that may unblock is pending."""
        return bool(self.running) or self._progress_pending > 0

    def ready_tasks(self) -> list[int]:
        """Ready tasks (all parents done, workflow submitted), in index order."""
        return sorted(self.ready)

    def data_ready_s(self, t: int, nd: int) -> float:
        """When all inputs of ready task t are on node nd."""
        return float(self.data_ready_all_s(t)[nd])

    def data_ready_all_s(self, t: int) -> npt.NDArray[np.float64]:
        """When all inputs of ready task t are on each node (read-only; cached while t is ready).

        Once a task is ready its parents' places and finish times no longer change,
        so the vector is computed once, vectorised over parents and nodes.

        Under network contention a task's transfers start when it is placed, so a ready task may be placed on
        any node now: this is `now` everywhere (what legality reads); `contended_arrival_s` estimates when its
        inputs would then be there (the decision point's `arrival_s`).
        """
        if self._net is not None:
            at_now = np.full(self.cp.n_nodes, self.now)
            at_now.flags.writeable = False
            return at_now
        cached = self._arrival.get(t)
        if cached is not None:
            return cached
        cp = self.cp
        at = cp.input_arrival_s(t, self.node_of, self.finish_s, float(cp.wf_submit_s[cp.task_wf[t]]))
        at.flags.writeable = False
        if self.status[t] == READY:
            self._arrival[t] = at
        return at

    def contended_arrival_s(self, t: int) -> npt.NDArray[np.float64]:
        """Under network contention, when ready task t's inputs would be on each node were it placed there now:
        each transfer on an equal share of every link it crosses with the transfers on it now
        (`Network.estimate_s`: an estimate, as they may end sooner or others join), never below the free
        network's time."""
        net, st = self._net, self._st
        assert net is not None
        at = np.full(self.cp.n_nodes, float(self.cp.wf_submit_s[st.task_wf[t]]))
        for p, d in zip(st.preds[t], st.pred_data[t], strict=True):
            src = int(self.node_of[p])
            if src < 0:  # a parent not done yet: unknown
                at[:] = _INF
                break
            one = np.array(net.estimate_all_s(src, d, self.now))
            one[src] = self.finish_s[p]
            np.maximum(at, one, out=at)
        at.flags.writeable = False
        return at

    def request(self, t: int) -> tuple[float, float, float]:
        """What task t takes of a node (1 slot in classic mode)."""
        if self.classic:
            return _CLASSIC_REQUEST
        return self._st.req[t]  # made once per problem: numpy scalars cost more than this whole call

    def requests(self, tasks: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """`request` of several tasks at once, shape (k, 3)."""
        if self.classic:
            out = np.zeros((len(tasks), 3))
            out[:, 0] = 1.0
            return out
        return np.asarray(self.cp.req[tasks], dtype=np.float64)

    def room_times(self, req: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """When each node first has each request (k, 3) free, shape (k, m), as running tasks end when predicted.

        Running tasks only release room as time goes on, so the first instant with room
        lasts: this equals `node_timelines()[n].earliest_start` before anything new is
        planned, vectorised over requests and nodes (`kernels.room_times`).
        """
        run = np.fromiter(self.running.keys(), dtype=np.int64, count=len(self.running))
        run_node = self.node_of[run]
        run_end = np.maximum(self.start_s[run] + self.cp.exec_s[run, run_node] * self.slow_factor[run_node], self.now)
        return kernels.room_times(self.now, req, self.free, run_node, run_end, self.requests(run))

    def ever_fits(self, tasks: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """(k, m): each node's capacity could ever hold the task's request and a placement rule allows the pair."""
        if self._ever_fits is None:
            req = self.requests(np.arange(self.cp.n_tasks))
            fits = np.all(self.cap[None, :, :] + EPS >= req[:, None, :], axis=2)
            if self.cp.allowed is not None:
                fits &= self.cp.allowed
            self._ever_fits = fits
        return self._ever_fits[tasks]

    def earliest_starts(self, tasks: list[int]) -> npt.NDArray[np.float64]:
        """Earliest start of each ready task on each node from now, shape (k, m); inf where it cannot run.

        Inputs arrived, node up and booted, and its request free as running tasks end
        when predicted: what a planner sees before it plans anything new.
        """
        idx = np.asarray(tasks, dtype=np.int64)
        req = self.requests(idx)
        avail = np.where(self.node_up, np.maximum(self.node_available_s, self.now), np.inf)
        arrival = np.stack([self.data_ready_all_s(t) for t in tasks]) if tasks else np.zeros((0, self.cp.n_nodes))
        start = np.maximum(np.maximum(arrival, avail[None, :]), self.room_times(req))
        return np.where(self.ever_fits(idx), np.maximum(start, self.now), np.inf)

    def fits_now(self, t: int, nd: int, free: npt.NDArray[np.float64] | None = None) -> bool:
        """Node nd is up, booted and has t's request free now (in `free`, default the live room): the scalar
        form of `kernels.fits_numpy`, for callers placing one task at a time."""
        if self._node_open_s[nd] > self.now:  # down, or booting (`node_up`, `node_available_s` as one list)
            return False
        req = _CLASSIC_REQUEST if self.classic else self._st.req[t]
        f: list[float] = self._free_rows[nd] if free is None else free[nd].tolist()  # numpy scalars are slow
        return f[0] + EPS >= req[0] and f[1] + EPS >= req[1] and f[2] + EPS >= req[2]

    def fitting(self, tasks: npt.NDArray[np.int64], free: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        """(k, m): the node is up and booted and each task's request fits its `free` room.

        A task migrated off a node it overran on avoids that node, unless no other node can ever host it.
        """
        allowed = None if self.cp.allowed is None else self.cp.allowed[tasks]
        fits = kernels.fits_numpy(self.now, self.requests(tasks), self.node_up, self.node_available_s, free, allowed)
        for i in np.flatnonzero(self.avoid_node[tasks] >= 0):
            hosts = self.ever_fits(tasks[i : i + 1])[0] & self.node_up
            if hosts.sum() > 1:
                fits[i, self.avoid_node[tasks[i]]] = False
        return np.asarray(fits, dtype=bool)

    def startable(
        self, tasks: npt.NDArray[np.int64], free: npt.NDArray[np.float64] | None = None
    ) -> tuple[npt.NDArray[np.bool_], float]:
        """(k, m): which ready tasks could start on which nodes now, given `free` room (default the live room).

        A pair is startable when it is `fitting` and the task's inputs are on the node. Also returns the
        earliest instant at which a pair that fits now gets its inputs (inf if none): when waiting can help.
        """
        fits = self.fitting(tasks, self.free if free is None else free)
        if not len(tasks):
            return fits, _INF
        if self._net is not None:  # placing a task starts its transfers: nothing to wait for
            return fits, _INF
        arrival = np.stack([self.data_ready_all_s(int(t)) for t in tasks])
        ok = fits & (arrival <= self.now + 1e-9)
        later = fits & ~ok
        return ok, float(arrival[later].min()) if later.any() else _INF

    def allows(self, t: int, nd: int) -> bool:
        """A placement rule of the problem permits task t on node nd."""
        allowed = self.cp.allowed
        return allowed is None or bool(allowed[t, nd])

    def can_start(self, t: int, nd: int, free: npt.NDArray[np.float64] | None = None) -> bool:
        """t is ready, allowed on nd, nd fits it now (given `free`, default the live room), and its inputs are
        on nd: one entry of the decision point's `legal` grid."""
        allowed = self.cp.allowed  # `allows`, inline: this is called per pair by the greedy schedulers
        if not (self.status.item(t) == READY and (allowed is None or allowed[t, nd]) and self.fits_now(t, nd, free)):
            return False
        if self._net is not None:
            return True
        arrival = self._arrival.get(t)  # `data_ready_all_s`'s cache, read inline
        return (self.data_ready_all_s(t) if arrival is None else arrival).item(nd) <= self.now + EPS

    def predicted_end_s(self, t: int) -> float:
        """When running task t is expected to end, from its prediction (never the hidden truth)."""
        r = self.running[t]
        if t in self._inputs_left:  # placed, its inputs on their way
            assert self._net is not None
            inputs = max((self._net.eta_s(f, self.now) for f in self._net.flows_to(t)), default=self.now)
            return inputs + float(self.cp.exec_s[t, r.node]) * float(self.slow_factor[r.node])
        expected = r.start + float(self.cp.exec_s[t, r.node]) * float(self.slow_factor[r.node])
        return max(expected, self.now)

    def node_timelines(self) -> Timelines:
        """Planning timelines holding the running tasks until their predicted ends."""
        lines = []
        for nd in range(self.cp.n_nodes):
            cap = self.cap[nd]
            avail = float(self.node_available_s[nd]) if self.node_up[nd] else _INF
            line = NodeTimeline((float(cap[0]), float(cap[1]), float(cap[2])), max(avail, self.now))
            for t in self.running_on[nd]:
                line.reserve(self.now, self.predicted_end_s(t), self.request(t))
            lines.append(line)
        return Timelines(lines)

    # ---- applying decisions ----------------------------------------------------------

    def start(self, t: int, nd: int) -> None:
        """Start ready task t on node nd now; refuses anything illegal (`_refuse` says what)."""
        if not (0 <= t < self._n_tasks and 0 <= nd < self._n_nodes and self.can_start(t, nd)):
            self._refuse(t, nd)
        now = self.now
        req = _CLASSIC_REQUEST if self.classic else self._st.req[t]
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
        if tried and not (self.predicted or self._sigma2 == 0.0):
            noise = self._attempt_noise(t)  # a retry's fresh draw
        else:  # `_attempt_noise`, inline: no noise, or the first attempt's draw
            noise = 1.0 if self.predicted or self._sigma2 == 0.0 else self._noise_list[t]
        nominal = self.cp.exec_s.item(t, nd) * noise  # not a list of lists: n x m Python floats swamp long streams
        attempts[t] = tried + 1
        self._version += 1
        run = _Running(nd, now, nominal, now, self._version, nominal)
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
        req = _CLASSIC_REQUEST if self.classic else self._st.req[t]
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
            self._node_open_s[nd] = _INF
            self._open_outage[nd] = self.now
            mttr = self.config.mttr_s
            if mttr is not None:
                self._push(self.now + float(self._node_rng(0, nd).exponential(mttr)), REPAIR, nd)
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
            rng = self._node_rng(1, nd)
            length = float(rng.exponential(self.config.straggler_duration_s))
            self._open_slowdown[nd] = (self.now, self.config.straggler_factor)
            self._rescale(nd, self.config.straggler_factor)
            self._push(self.now + length, SLOW_END, nd)
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

    def read_only_views(self) -> dict[str, Any]:
        """Views of the state arrays that cannot be written, made once (the arrays change in place)."""
        if self._views is None:
            views: dict[str, Any] = {}
            for name in _VIEWED:
                v = getattr(self, name).view()
                v.flags.writeable = False
                views[name] = v
            self._views = views
        return self._views

    def decision_point_class(self) -> type[DecisionPoint]:
        """The DecisionPoint subclass of this run, made once: what every decision point shares as class attributes,
        the read-only views and the simulator's read calls that a decision point forwards unchanged (bound here,
        so a scheduler's call does not pass through a wrapper: these are called thousands of times per decision
        on large problems)."""
        if self._dp_class is None:
            shared = {
                "cp": self.cp,
                "config": self.config,
                "classic": self.classic,
                **self.read_only_views(),
                **{name: getattr(self, name) for name in _FORWARDED},
            }
            shared["__module__"] = DecisionPoint.__module__
            shared["__doc__"] = DecisionPoint.__doc__
            self._dp_class = type("DecisionPoint", (DecisionPoint,), shared)
        return self._dp_class

    def ready_array(self) -> npt.NDArray[np.int64]:
        """Ready tasks, ascending, read-only (the same array until the ready set changes).

        Kept up to date from the tasks that became ready or stopped being ready since the last call: each is
        found by bisection in a sorted list and shifted in or out of a numpy buffer in place (a memmove), so a
        decision costs about a microsecond per change, not a sort of the whole set: long streams keep thousands
        of tasks ready, and re-sorting them at every decision was most of the engine's time there.
        """
        ins, outs, lst = self._ready_in, self._ready_out, self._ready_list
        if self._ready_view is not None and not ins and not outs:
            return self._ready_view
        n = len(self.ready)
        buf = self._ready_buf
        if len(buf) < n:
            buf = self._ready_buf = np.empty(max(2 * n, 64), dtype=np.int64)
            lst = None  # a new buffer is filled whole
        if lst is None or 32 * (len(ins) + len(outs)) > n + 64:  # many changes: one sort beats many shifts
            lst = self._ready_list = sorted(self.ready)
            buf[:n] = lst
        else:
            size = len(lst)
            for t in outs:
                i = bisect.bisect_left(lst, t)
                del lst[i]
                buf[i : size - 1] = buf[i + 1 : size]
                size -= 1
            for t in ins:
                i = bisect.bisect_left(lst, t)
                lst.insert(i, t)
                buf[i + 1 : size + 1] = buf[i:size]
                buf[i] = t
                size += 1
        ins.clear()
        outs.clear()
        view = buf[:n].copy()
        view.flags.writeable = False
        self._ready_view = view
        return view

    def decision_point(self) -> DecisionPoint:
        """The read-only view of now, with the shared decision rules (nothing advances); tasks deferred at this
        instant are left out of its ready set (its wake instant still counts them)."""
        # made as `DecisionPoint(self)` makes one, less the Python-level `__new__` call (its class pick is done)
        dp: DecisionPoint = object.__new__(self._dp_class or self.decision_point_class())
        DecisionPoint.__init__(dp, self)
        if self.deferred:
            dp = dp.without(np.array(sorted(self.deferred), dtype=np.int64))
        return dp

    def defer(self, tasks: npt.NDArray[np.int64]) -> None:
        """Put ready tasks aside until time moves: a policy waited on them and is offered the ones behind."""
        self.deferred.update(int(t) for t in tasks)

    def next_decision(
        self,
        max_time_s: float = _INF,
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
        while self.n_done != n_tasks and self.now <= max_time_s:
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

    def run(self, scheduler: Scheduler, max_time_s: float = _INF) -> Trace:
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
            self.trace.outages.append(Outage(nd, start, _INF))
        for nd, (start, factor) in sorted(self._open_slowdown.items()):
            self.trace.slowdowns.append(Slowdown(nd, start, self.now, factor))
        self._open_outage.clear()
        self._open_slowdown.clear()

    # ---- snapshots -----------------------------------------------------------------------

    def fork(self) -> Simulator:
        """A copy of the mutable state that rolls forward on predicted runtimes.

        Shares the compiled problem (never copied). Running tasks end at their
        predicted times; no noise, failures or stragglers happen in the fork.
        A fork starts at its parent's instant, which plain `next_decision()` never offers (it steps first; the
        `legal_only` loop does offer it): decide at `fork.decision_point()`, apply, then loop on
        `next_decision` (as `rollout.complete_from_here` does).
        """
        f = Simulator.__new__(Simulator)
        f.cp = self.cp
        f.config = self.config
        f.seed = self.seed
        f.classic = self.classic
        f._n_tasks, f._n_nodes = self._n_tasks, self._n_nodes
        f.now = self.now
        for name in (
            "status",
            "node_of",
            "start_s",
            "finish_s",
            "attempts",
            "migrations",
            "avoid_node",
            "free",
            "node_up",
            "node_available_s",
            "submitted",
        ):
            setattr(f, name, getattr(self, name).copy())
        f._free_rows = [row[:] for row in self._free_rows]
        f._node_open_s = list(self._node_open_s)
        f._st = self._st
        f._arrival = dict(self._arrival)
        f._preds_left = list(self._preds_left)
        f.cap = self.cap
        f.slow_factor = np.ones(self.cp.n_nodes)
        f.ready = set(self.ready)
        f._ready_list = None
        f._ready_buf = np.empty(0, dtype=np.int64)
        f._ready_view = None
        f._ready_in = set()
        f._ready_out = set()
        f.running_on = [set(s) for s in self.running_on]
        f.n_done = self.n_done
        f.n_decisions = 0
        f.epoch = 0
        f.predicted = True
        f.trace = Trace(
            scheduler="",
            seed=self.seed,
            classic=self.classic,
            noise_cv=0.0,
            boot_delay=self.trace.boot_delay,
            contention=self.contention,
        )
        f.contention = self.contention
        f._net = None if self._net is None else self._net.copy()
        f._inputs_left = dict(self._inputs_left)
        f._net_version = 0
        f._noise = self._noise  # never read in predicted mode
        f._noise_list = self._noise_list
        f._sigma2 = 0.0
        f._retry_rng = self._retry_rng
        f._node_seqs = self._node_seqs
        f._node_rngs = self._node_rngs
        f._open_outage = {}
        f._open_slowdown = {}
        f._changed = True
        f._asked = False
        f._views = None
        f._dp_class = None
        f._ever_fits = self._ever_fits
        f.deferred = set()  # a deferral is the caller's, at the live instant
        f._wake_pending = None
        f._heap = []
        f._seq = 0
        f._version = 0
        f._progress_pending = 0
        f.running = {}
        for t, run in self.running.items():
            f._version += 1
            if t in self._inputs_left:  # placed, waiting for its inputs: begins in the fork when they arrive
                exec_s = float(self.cp.exec_s[t, run.node])
                f.running[t] = _Running(run.node, run.start, exec_s, self.now, f._version, exec_s)
                continue
            predicted_left = max(float(self.cp.exec_s[t, run.node]) - (self.now - run.start), 0.0)
            f.running[t] = _Running(
                run.node, run.start, predicted_left, self.now, f._version, float(self.cp.exec_s[t, run.node])
            )
            f._push(self.now + predicted_left, FINISH, t, f._version)
        # arrivals happen in `_st.arrivals` order, so the workflows not yet submitted are that list's tail
        f._next_arrival = int(np.count_nonzero(self.submitted))
        f._push_next_arrival()
        for nd in range(self.cp.n_nodes):
            if self.node_up[nd] and self.node_available_s[nd] > self.now:
                f._push(float(self.node_available_s[nd]), BOOTED, nd)
        if f._net is not None and f._net.flows:
            f._net_sync()
        # a down node stays down in the fork: its repair time is hidden truth
        return f

"""The state of one run: what is where and when, the read and legality queries every scheduler shares, and the
copy a fork starts from.

`SimState` holds the state arrays a decision point shows (read-only), the bookkeeping kept beside them for the
hot paths (the ready set sorted on demand, Python mirrors of the free room and of when each node takes tasks),
and the queries the decision rules read: when inputs arrive, what fits where now, when room opens as running
tasks end as predicted, which pairs can start. It changes nothing by itself: the engine
(`dagsched.sim.engine.Simulator`) is a SimState with an event heap and the handlers that change it.

**Copying.** Every field is declared once, below, with what a fork does with it:
- `shared`: the same object, fixed for the run (the compiled problem, the capacities) or an immutable value;
- `copied`: a copy of its own (the state arrays, the ready set, the running tasks per node);
- `fresh`: starts at the same value in a run and in a fork (caches, counters); the constructor sets these
  from the declaration too;
- `forked`: a fork's own value made from the parent's (no hidden randomness, no stragglers, an empty trace).
`SimState.fork` applies the rules to every field; the class has slots, so an attribute set anywhere without a
declared field (and its rule) fails at once: construction and fork cannot drift apart.
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Self, TypeVar

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import EPS, CompiledProblem
from dagsched.sim import kernels
from dagsched.sim.config import SimConfig
from dagsched.sim.disruptions import Disruptions
from dagsched.sim.network import Network
from dagsched.sim.slots import NodeTimeline, Timelines
from dagsched.sim.trace import Trace

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

WAITING, READY, RUNNING, DONE = 0, 1, 2, 3
"""A task's `status`."""

CLASSIC_REQUEST = (1.0, 0.0, 0.0)
"""What any task takes of a node in classic mode: its one slot."""

INF = float("inf")

_S = TypeVar("_S", bound="SimState")


@dataclass(frozen=True, slots=True)
class StateViews:
    """The state arrays a decision point shows, as views that cannot be written (made once per run: the arrays
    change in place)."""

    status: npt.NDArray[np.int8]
    node_of: IntArray
    start_s: FloatArray
    finish_s: FloatArray
    free: FloatArray
    cap: FloatArray
    node_up: BoolArray
    node_available_s: FloatArray
    slow_factor: FloatArray
    avoid_node: IntArray
    submitted: BoolArray


@dataclass(slots=True)
class Running:
    """A placed task: where, since when, and how much work is left (moved by slowdowns)."""

    node: int
    start: float
    work_left: float  # seconds of work at factor 1 still to do
    last_update: float
    version: int  # its FINISH event on the heap carries this; a moved or cancelled end leaves a stale event
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


# ---- how a fork treats each field -------------------------------------------------------------------------

_FORK, _START = "fork", "start"


def _same(value: Any) -> Any:
    return value


def _copy(value: Any) -> Any:
    return value.copy()


def _copy_rows(value: list[Any]) -> list[Any]:
    return [row.copy() for row in value]


def shared() -> Any:
    """The fork holds the same object: fixed for the run, or immutable."""
    return field(metadata={_FORK: _same})


def copied(how: Callable[[Any], Any] = _copy) -> Any:
    """The fork gets its own copy (`how`, default the value's `copy()`)."""
    return field(metadata={_FORK: how})


def fresh(start: Callable[[], Any]) -> Any:
    """Starts as `start()` in a run and in a fork (set from here by the constructor and by `fork`)."""
    return field(metadata={_FORK: lambda _: start(), _START: start})


def forked(rule: Callable[[Any], Any]) -> Any:
    """The fork's own value, made from the parent's by `rule`."""
    return field(metadata={_FORK: rule})


_RULES: dict[type, tuple[tuple[str, Callable[[Any], Any]], ...]] = {}
_STARTS: dict[type, tuple[tuple[str, Callable[[], Any]], ...]] = {}


def _fork_rules(cls: type) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """(field, rule) of every field of a SimState class; a field declared without a rule fails here."""
    rules = _RULES.get(cls)
    if rules is None:
        rules = _RULES[cls] = tuple((f.name, f.metadata[_FORK]) for f in fields(cls))
    return rules


def _starts(cls: type) -> tuple[tuple[str, Callable[[], Any]], ...]:
    """(field, start) of every `fresh` field of a SimState class."""
    starts = _STARTS.get(cls)
    if starts is None:
        _fork_rules(cls)  # every field has a rule
        starts = _STARTS[cls] = tuple((f.name, f.metadata[_START]) for f in fields(cls) if _START in f.metadata)
    return starts


def _predicted_trace(trace: Trace) -> Trace:
    return Trace(
        scheduler="",
        seed=trace.seed,
        classic=trace.classic,
        noise_cv=0.0,
        boot_delay=trace.boot_delay,
        contention=trace.contention,
    )


@dataclass(slots=True, eq=False, repr=False, init=False)
class SimState:
    """The state of a run at its current instant, and the queries that read it (nothing here moves time)."""

    cp: CompiledProblem = shared()
    config: SimConfig = shared()
    seed: int = shared()
    classic: bool = shared()
    _n_tasks: int = shared()  # properties of cp, read per event
    _n_nodes: int = shared()
    _st: _Static = shared()
    cap: FloatArray = shared()
    """each node's capacity (cpu, mem GiB, gpu); one slot and no memory or gpu limit in classic mode"""
    contention: bool = shared()
    """transfers share the nodes' links (`SimConfig.network_contention`, cloud mode)"""
    _ever_fits: BoolArray | None = shared()  # (n, m), made on first use; fixed for the run
    now: float = shared()
    n_done: int = shared()
    n_dropped: int = shared()
    """tasks a real run gave up on (their workflow failed, `dagsched.live`); always 0 in a simulation"""

    status: npt.NDArray[np.int8] = copied()
    """each task's WAITING, READY, RUNNING or DONE"""
    node_of: IntArray = copied()
    """the node a task is placed on (-1: none)"""
    start_s: FloatArray = copied()
    """when a running or done task began executing (nan: not yet)"""
    finish_s: FloatArray = copied()
    attempts: IntArray = copied()
    """starts per task (retries after failures and migrations count)"""
    migrations: IntArray = copied()
    avoid_node: IntArray = copied()
    """the node a task overran on and is migrated away from (-1: none)"""
    free: FloatArray = copied()
    """each node's free room (cpu, mem GiB, gpu) now"""
    _free_rows: list[list[float]] = copied(_copy_rows)  # `free` as Python floats, written alongside it
    node_up: BoolArray = copied()
    node_available_s: FloatArray = copied()
    """when an up node takes tasks (its boot ends)"""
    _node_open_s: list[float] = copied()  # when a node takes tasks (inf: down), as Python floats
    submitted: BoolArray = copied()
    """each workflow has arrived"""
    _arrival: dict[int, FloatArray] = copied()  # `data_ready_all_s` of ready tasks (fixed once ready)
    _preds_left: list[int] = copied()  # parents not done yet, per task
    ready: set[int] = copied()
    """ready tasks: all parents done, workflow submitted"""
    running_on: list[set[int]] = copied(_copy_rows)
    """the tasks placed on each node"""
    _inputs_left: dict[int, int] = copied()  # under contention: placed task -> transfers still on their way
    _net: Network | None = copied(lambda net: None if net is None else net.copy())
    """transfers in flight on the contended network; None on the free network"""

    slow_factor: FloatArray = forked(np.ones_like)
    """each node's slowdown (1.0; the straggler factor during an episode); a fork has no stragglers"""
    trace: Trace = forked(_predicted_trace)
    """what happened so far; a fork records its own, on predicted runtimes"""
    disruptions: Disruptions = forked(lambda _: Disruptions.none())
    """the hidden randomness (noise, failures, stragglers); a fork has none"""

    running: dict[int, Running] = fresh(dict)
    """placed tasks, in the order they were placed (a fork re-adds them, ending as predicted)"""
    # `ready`, sorted, as of the last `ready_array`: a list (for bisect), the same in a numpy buffer (shifted in
    # place as tasks come and go) and the read-only copy handed out; then what changed since
    _ready_list: list[int] | None = fresh(lambda: None)
    _ready_buf: IntArray = fresh(lambda: np.empty(0, dtype=np.int64))
    _ready_view: IntArray | None = fresh(lambda: None)
    _ready_in: set[int] = fresh(set)  # ready since then
    _ready_out: set[int] = fresh(set)  # no longer ready since then
    deferred: set[int] = fresh(set)
    """ready tasks a wait put aside until time moves (`defer`); a deferral is the caller's, at the live instant"""
    epoch: int = fresh(int)
    """counts the instants stepped and the starts: a decision point is of one epoch"""
    _progress_pending: int = fresh(int)  # events on the engine's heap that can unblock a waiting scheduler
    _views: StateViews | None = fresh(lambda: None)
    _dp_class: type | None = fresh(lambda: None)  # the run's DecisionPoint subclass (`sim.decision.run_class`)

    def __init__(self, cp: CompiledProblem, config: SimConfig | None = None, seed: int = 0) -> None:
        for name, start in _starts(type(self)):
            setattr(self, name, start())
        self.cp = cp
        self.config = config = config or SimConfig()
        self.seed = seed
        self.classic = config.classic
        n, m = cp.n_tasks, cp.n_nodes
        self._n_tasks, self._n_nodes = n, m
        self._st = _static(cp)
        self.cap = np.ones((m, 3)) if self.classic else cp.cap.copy()
        if self.classic:
            self.cap[:, 1:] = np.inf
        self.contention = config.network_contention and not self.classic
        self._ever_fits = None
        self.now = 0.0
        self.n_done = 0
        self.n_dropped = 0
        self.status = np.zeros(n, dtype=np.int8)
        self.node_of = np.full(n, -1, dtype=np.int64)
        self.start_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)
        self.attempts = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.avoid_node = np.full(n, -1, dtype=np.int64)
        self.free = self.cap.copy()
        self._free_rows = self.free.tolist()
        self.node_up = np.ones(m, dtype=bool)
        boot = cp.boot_delay_s if config.effective_boot_delay else np.zeros(m)
        self.node_available_s = boot.astype(np.float64).copy()
        self._node_open_s = self.node_available_s.tolist()
        self.submitted = np.zeros(cp.n_workflows, dtype=bool)
        self._arrival = {}
        self._preds_left = [len(p) for p in self._st.preds]
        self.ready = set()
        self.running_on = [set() for _ in range(m)]
        self._inputs_left = {}
        self._net = Network(cp) if self.contention else None
        self.slow_factor = np.ones(m)
        self.trace = Trace(
            scheduler="",
            seed=seed,
            classic=self.classic,
            noise_cv=config.noise_cv,
            boot_delay=config.effective_boot_delay,
            contention=self.contention,
        )
        self.disruptions = Disruptions.draw(seed, config, n, m)

    def fork(self) -> Self:
        """A copy for a fork, every field by its declared rule (the engine then restarts its events on it)."""
        return self.copy_as(type(self))

    def copy_as(self, cls: type[_S]) -> _S:
        """`fork`'s copy as an instance of `cls`, a class this state's class derives from (a real run's state
        forks into a plain simulator), each of its fields by its declared rule."""
        new = object.__new__(cls)
        for name, rule in _fork_rules(cls):
            setattr(new, name, rule(getattr(self, name)))
        return new

    # ---- what a scheduler may look at ----------------------------------------------

    @property
    def done(self) -> bool:
        return self.n_done + self.n_dropped == self._n_tasks

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

    def data_ready_all_s(self, t: int) -> FloatArray:
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

    def contended_arrival_s(self, t: int) -> FloatArray:
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
                at[:] = INF
                break
            one = np.array(net.estimate_all_s(src, d, self.now))
            one[src] = self.finish_s[p]
            np.maximum(at, one, out=at)
        at.flags.writeable = False
        return at

    def request(self, t: int) -> tuple[float, float, float]:
        """What task t takes of a node (1 slot in classic mode)."""
        if self.classic:
            return CLASSIC_REQUEST
        return self._st.req[t]  # made once per problem: numpy scalars cost more than this whole call

    def requests(self, tasks: IntArray) -> FloatArray:
        """`request` of several tasks at once, shape (k, 3)."""
        if self.classic:
            out = np.zeros((len(tasks), 3))
            out[:, 0] = 1.0
            return out
        return np.asarray(self.cp.req[tasks], dtype=np.float64)

    def room_times(self, req: FloatArray) -> FloatArray:
        """When each node first has each request (k, 3) free, shape (k, m), as running tasks end when predicted.

        Running tasks only release room as time goes on, so the first instant with room
        lasts: this equals `node_timelines()[n].earliest_start` before anything new is
        planned, vectorised over requests and nodes (`kernels.room_times`).
        """
        run = np.fromiter(self.running.keys(), dtype=np.int64, count=len(self.running))
        run_node = self.node_of[run]
        run_end = np.maximum(self.start_s[run] + self.cp.exec_s[run, run_node] * self.slow_factor[run_node], self.now)
        return kernels.room_times(self.now, req, self.free, run_node, run_end, self.requests(run))

    def ever_fits(self, tasks: IntArray) -> BoolArray:
        """(k, m): each node's capacity could ever hold the task's request and a placement rule allows the pair."""
        if self._ever_fits is None:
            req = self.requests(np.arange(self.cp.n_tasks))
            fits = np.all(self.cap[None, :, :] + EPS >= req[:, None, :], axis=2)
            if self.cp.allowed is not None:
                fits &= self.cp.allowed
            self._ever_fits = fits
        return self._ever_fits[tasks]

    def earliest_starts(self, tasks: list[int]) -> FloatArray:
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

    def fits_now(self, t: int, nd: int, free: FloatArray | None = None) -> bool:
        """Node nd is up, booted and has t's request free now (in `free`, default the live room): the scalar
        form of `kernels.fits_numpy`, for callers placing one task at a time."""
        if self._node_open_s[nd] > self.now:  # down, or booting (`node_up`, `node_available_s` as one list)
            return False
        req = CLASSIC_REQUEST if self.classic else self._st.req[t]
        f: list[float] = self._free_rows[nd] if free is None else free[nd].tolist()  # numpy scalars are slow
        return f[0] + EPS >= req[0] and f[1] + EPS >= req[1] and f[2] + EPS >= req[2]

    def fitting(self, tasks: IntArray, free: FloatArray) -> BoolArray:
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

    def startable(self, tasks: IntArray, free: FloatArray | None = None) -> tuple[BoolArray, float]:
        """(k, m): which ready tasks could start on which nodes now, given `free` room (default the live room).

        A pair is startable when it is `fitting` and the task's inputs are on the node. Also returns the
        earliest instant at which a pair that fits now gets its inputs (inf if none): when waiting can help.
        """
        fits = self.fitting(tasks, self.free if free is None else free)
        if not len(tasks):
            return fits, INF
        if self._net is not None:  # placing a task starts its transfers: nothing to wait for
            return fits, INF
        arrival = np.stack([self.data_ready_all_s(int(t)) for t in tasks])
        ok = fits & (arrival <= self.now + 1e-9)
        later = fits & ~ok
        return ok, float(arrival[later].min()) if later.any() else INF

    def allows(self, t: int, nd: int) -> bool:
        """A placement rule of the problem permits task t on node nd."""
        allowed = self.cp.allowed
        return allowed is None or bool(allowed[t, nd])

    def can_start(self, t: int, nd: int, free: FloatArray | None = None) -> bool:
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
            avail = float(self.node_available_s[nd]) if self.node_up[nd] else INF
            line = NodeTimeline((float(cap[0]), float(cap[1]), float(cap[2])), max(avail, self.now))
            for t in self.running_on[nd]:
                line.reserve(self.now, self.predicted_end_s(t), self.request(t))
            lines.append(line)
        return Timelines(lines)

    # ---- the ready set, sorted, and the views a decision point shows -----------------------------------

    def read_only_views(self) -> StateViews:
        """The state arrays as views that cannot be written, made once (the arrays change in place)."""
        views = self._views
        if views is None:
            made = {}
            for f in fields(StateViews):
                v = getattr(self, f.name).view()
                v.flags.writeable = False
                made[f.name] = v
            views = self._views = StateViews(**made)
        return views

    def ready_array(self) -> IntArray:
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

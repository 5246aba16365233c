"""The decision point: what a scheduler sees at one instant, what it answers, and the interface it answers through.

The simulator owns the loop around every decision. `Simulator.next_decision` advances time to the
next instant where a scheduler must be asked, and hands out a `DecisionPoint`: a read-only view of the
state (arrays a scheduler cannot write, no hidden truth: actual runtimes, future failures and the
noise of running attempts stay inside the simulator). The scheduler answers with a `Decision`, which
`Simulator.apply` carries out, refusing anything illegal. The rules every caller shares are here once:

- which (ready task, node) pairs are legal now (`legal`, from `sim.kernels.legality`): inputs arrived,
  node up and booted, request free, and the problem's placement rules (`CompiledProblem.allowed`);
- when inputs reach each node (`arrival_s`, `data_ready_all_s`) and when a task could start on each
  node given the running tasks' predicted ends (`earliest_starts`, `room_times`);
- which ready tasks a bounded policy is offered (`window`) and, after it waits on them, the ones behind
  them (`after_wait`);
- when waiting is a legal move (`can_wait`) and when it can help (`wait_helps`).

`Scheduler` is the one interface: `reset` once per run with the view at time 0, `decide` at each
decision point. The registry that finds schedulers by name lives with them, in `dagsched.schedulers`.

A decision point reads the run through its state (`dagsched.sim.state.SimState`: the arrays and the queries);
the engine is built on this module, never the other way round.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from types import MappingProxyType
from typing import Any, ClassVar, cast, overload

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import EPS, CompiledProblem
from dagsched.sim import kernels
from dagsched.sim.config import SimConfig
from dagsched.sim.slots import Timelines
from dagsched.sim.state import DONE, READY, RUNNING, WAITING, BoolArray, FloatArray, IntArray, SimState
from dagsched.sim.trace import Attempt

__all__ = [
    "DONE",
    "READY",
    "RUNNING",
    "WAITING",
    "Attempts",
    "FORWARDED",
    "Decision",
    "DecisionPoint",
    "Scheduler",
    "StaleDecisionPoint",
    "run_class",
]


@dataclass(frozen=True, slots=True)
class Decision:
    """What a scheduler wants now: start these (task, node) pairs; optionally be woken at `wake_at`."""

    assignments: list[tuple[int, int]] = field(default_factory=list)
    wake_at: float | None = None


FORWARDED = (
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
"""The state's read calls a run's decision points hand on as they are (`run_class`); `DecisionPoint` documents each."""


class StaleDecisionPoint(RuntimeError):
    """A decision point's lazily computed view was read after the simulator had moved past its instant."""


class Attempts(Sequence["Attempt"]):
    """The run's attempts so far, read-only (what happened is observable; what will happen is not)."""

    __slots__ = ("_items",)

    def __init__(self, items: list[Attempt]) -> None:
        self._items = items

    @overload
    def __getitem__(self, i: int) -> Attempt: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Attempt]: ...

    def __getitem__(self, i: int | slice) -> Attempt | Sequence[Attempt]:
        return self._items[i]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Attempt]:
        return iter(self._items)


class DecisionPoint:
    """The state of a run at one instant, read-only, with the shared decision rules.

    Arrays are views the scheduler cannot write (numpy raises on assignment); copy one to plan on it.
    `ready` holds the ready tasks a scheduler may start now, ascending (less any deferred by a wait
    at this instant). It and the legality grids (`arrival_s`, `legal`, `wake_s`) are computed on first
    use, so a scheduler that never reads them (HEFT's dispatch of its plan) does not pay for them; read
    after the simulator has moved on (a start, an event), they would describe another instant, and raise
    `StaleDecisionPoint` instead.
    """

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
    """the simulator's state arrays as views that cannot be written (made once per run)"""

    cp: CompiledProblem
    config: SimConfig
    classic: bool
    _arrival: FloatArray | None = None
    _legal: BoolArray | None = None
    _wake: float | None = None

    def __new__(cls, sim: SimState) -> DecisionPoint:
        # what is fixed for the run (problem, config, views, forwarded read calls) lives as class attributes of
        # the run's subclass (`run_class`), so making one sets only what changes
        if cls is DecisionPoint:
            cls = run_class(sim)
        return object.__new__(cls)

    def __init__(self, sim: SimState) -> None:
        self._sim = sim
        self._epoch = sim.epoch
        self.now: float = sim.now
        self.n_done: int = sim.n_done
        self.done: bool = self.n_done + sim.n_dropped == sim._n_tasks

    def _check_fresh(self) -> None:
        if self._sim.epoch != self._epoch:
            raise StaleDecisionPoint(
                f"decision point of t={self.now:g} read after the simulator moved on (t={self._sim.now:g}): "
                "read what a decision needs before applying it"
            )

    @cached_property
    def ready(self) -> IntArray:
        """Ready tasks a scheduler may start now, ascending, read-only."""
        self._check_fresh()
        return self._sim.ready_array()

    # read on first use (most schedulers never ask), as of that moment: before the decision is applied

    @cached_property
    def can_advance(self) -> bool:
        """Whether time can move on by itself: something runs, or an event that may unblock is pending."""
        return self._sim.can_advance

    @cached_property
    def running(self) -> tuple[int, ...]:
        """Running tasks, in the order they started (the order the policy's features read them in)."""
        return tuple(self._sim.running)

    @cached_property
    def attempts(self) -> Attempts:
        return Attempts(self._sim.trace.attempts)

    # ---- the state, through the simulator's own read calls ------------------------------------------
    # Each instance's class carries the state's bound calls under these names (`FORWARDED`, in `run_class`), so
    # a call skips this layer; the definitions below say what each is, for readers and mypy, and are what runs on
    # the base class (tests check both give the same answer).

    def ready_tasks(self) -> list[int]:
        """Ready tasks, ascending (a list of ints)."""
        return self.ready.tolist()  # type: ignore[no-any-return]

    def request(self, t: int) -> tuple[float, float, float]:
        """What task t takes of a node (1 slot in classic mode)."""
        return self._sim.request(t)

    def requests(self, tasks: IntArray) -> FloatArray:
        """`request` of several tasks at once, shape (k, 3)."""
        return self._sim.requests(tasks)

    def data_ready_all_s(self, t: int) -> FloatArray:
        """When all inputs of ready task t are on each node (read-only)."""
        return self._sim.data_ready_all_s(t)

    def data_ready_s(self, t: int, nd: int) -> float:
        return float(self._sim.data_ready_all_s(t)[nd])

    def work_left(self, work: FloatArray) -> FloatArray:
        """Each workflow's `work` (one value per task, e.g. `model.compiled.task_work`) summed over its tasks not
        done yet, running ones whole, (n_workflows,): the size the shortest-remaining-work rules order by."""
        cp = self.cp
        left = np.bincount(cp.task_wf, np.where(self.status == DONE, 0.0, work), minlength=cp.n_workflows)
        return np.asarray(left, dtype=np.float64)

    def work_left_of(self, work: FloatArray, workflows: IntArray) -> FloatArray:
        """`work_left(work)[workflows]` to the bit, adding only those workflows' tasks (`kernels.work_left_of`):
        O(their tasks) where `work_left` is O(n), for a rule that reads only the workflows with a task ready."""
        cp = self.cp
        return kernels.work_left_of(work, self.status, DONE, cp.task_wf, cp.wf_task_ptr, workflows)

    def predicted_end_s(self, t: int) -> float:
        """When running task t is expected to end, from its prediction (never the hidden truth)."""
        return self._sim.predicted_end_s(t)

    def room_times(self, req: FloatArray) -> FloatArray:
        """When each node first has each request (k, 3) free, (k, m), as running tasks end when predicted."""
        return self._sim.room_times(req)

    def earliest_starts(self, tasks: Sequence[int]) -> FloatArray:
        """Earliest start of each ready task on each node from now, (k, m); inf where it cannot run."""
        return self._sim.earliest_starts(list(tasks))

    def node_timelines(self) -> Timelines:
        """Planning timelines holding the running tasks until their predicted ends (fresh, for the caller to fill)."""
        return self._sim.node_timelines()

    def fits_now(self, t: int, nd: int, free: FloatArray | None = None) -> bool:
        """nd is up, booted and has t's request free now (in `free`, default the live room)."""
        return self._sim.fits_now(t, nd, free)

    def can_start(self, t: int, nd: int, free: FloatArray | None = None) -> bool:
        """t is ready, allowed on nd, fits it now (in `free`, default the live room), and its inputs are on nd."""
        return self._sim.can_start(t, nd, free)

    def ever_fits(self, tasks: IntArray) -> BoolArray:
        """(k, m): the node's capacity could ever hold the task's request and a placement rule allows the pair."""
        return self._sim.ever_fits(tasks)

    def fitting(self, tasks: IntArray, free: FloatArray) -> BoolArray:
        """(k, m): node up and booted, request within `free`, allowed; a migrated task avoids its old node."""
        return self._sim.fitting(tasks, free)

    def startable(self, tasks: IntArray, free: FloatArray | None = None) -> tuple[BoolArray, float]:
        """(k, m) pairs that could start now given `free` (default the live room), and the next data arrival."""
        return self._sim.startable(tasks, free)

    def fork(self) -> Any:
        """A simulator of its own (`dagsched.sim.engine.Simulator`) that rolls forward from here on predicted
        runtimes only (for search). Typed loosely: the engine is built on this module, so naming its class here
        would point an import back up; callers annotate it (`fork: Simulator = dp.fork()`)."""
        return self._sim.fork()

    # ---- the legality grids -------------------------------------------------------------------------

    def _grids(self) -> None:
        self._check_fresh()
        sim, ready = self._sim, self.ready
        m = self.cp.n_nodes
        if len(ready) == 0:
            self._arrival, self._legal, self._wake = np.zeros((0, m)), np.zeros((0, m), dtype=bool), math.inf
            return
        arrival = np.stack(
            [sim.contended_arrival_s(int(t)) if sim.contention else sim.data_ready_all_s(int(t)) for t in ready]
        )
        allowed = None if self.cp.allowed is None else self.cp.allowed[ready]
        # under network contention a task's inputs are sent once it is placed: placing it never waits on them
        self._legal, self._wake = kernels.legality(
            self.now,
            np.full_like(arrival, self.now) if sim.contention else arrival,
            sim.requests(ready),
            sim.ever_fits(ready),
            sim.node_up,
            sim.node_available_s,
            sim.free,
            allowed,
        )
        self._arrival = arrival

    @property
    def arrival_s(self) -> FloatArray:
        """(R, m): when each ready task's inputs are on each node; under network contention, the engine's
        estimate of when they would be were the task placed there now (`Simulator.data_ready_all_s`)."""
        if self._arrival is None:
            self._grids()
        assert self._arrival is not None
        return self._arrival

    @property
    def legal(self) -> BoolArray:
        """(R, m): the ready task can start on the node now (exactly `can_start`)."""
        if self._legal is None:
            self._grids()
        assert self._legal is not None
        return self._legal

    @property
    def wake_s(self) -> float:
        """Earliest future instant a ready task's inputs reach a node that is up and could ever hold it (inf: none)."""
        if self._wake is None:
            self._grids()
        assert self._wake is not None
        return self._wake

    @property
    def any_legal(self) -> bool:
        return bool(self.legal.any())

    def pairs(self) -> list[tuple[int, int]]:
        """Every legal (task, node) pair, sorted."""
        rows, cols = np.nonzero(self.legal)
        ready = self.ready
        return [(int(ready[i]), int(nd)) for i, nd in zip(rows.tolist(), cols.tolist(), strict=True)]

    # ---- windows and waits ------------------------------------------------------------------------

    def window(self, priority: FloatArray, topo_pos: IntArray, k: int, compiled: bool = kernels.AVAILABLE) -> IntArray:
        """Rows (into `ready`) of the at most k ready tasks a bounded policy is offered: those that can start
        somewhere now first, then by decreasing `priority`, then by topological position."""
        return kernels.window(self.ready, self.legal, priority, topo_pos, k, compiled)

    def without(self, tasks: IntArray) -> DecisionPoint:
        """This decision point with `tasks` taken out of the ready set (deferred: not offered until time moves);
        the wake instant is kept (waking early is harmless)."""
        keep = ~np.isin(self.ready, tasks)
        legal, arrival, wake = self.legal, self.arrival_s, self.wake_s
        out = object.__new__(type(self))  # a shallow copy (this class's __new__ wants a simulator)
        out.__dict__.update(self.__dict__)
        out.ready, out._arrival, out._legal, out._wake = self.ready[keep], arrival[keep], legal[keep], wake
        return out

    def after_wait(self, offered: IntArray) -> DecisionPoint | None:
        """The decision point to offer after a wait on the `offered` window, at this same instant: the ready tasks
        behind it, when some were not offered and one of them can start now; None when time should move on."""
        if len(offered) >= len(self.ready):
            return None
        rest = self.without(offered)
        return rest if rest.any_legal else None

    @property
    def can_wait(self) -> bool:
        """Whether a wait is a legal move: time can move on without a start, because something runs, an event
        that may unblock a task is pending, or a ready task's inputs are on their way to a node that could take
        it (the simulator wakes itself when they arrive). The one rule, for the policy's mask and the search
        planners alike; what makes a wait worth trying is `wait_helps` (and each searcher's own heuristic)."""
        return not self.done and (self.can_advance or math.isfinite(self.wake_s))

    def wait_helps(self, legal: BoolArray, est_finish: FloatArray) -> bool:
        """Whether waiting can help the offered rows (`legal` and `est_finish`, (k, m)): nothing offered can start
        now, or some offered task's estimated finish on a node it cannot start on now beats its best finish on
        the nodes it can."""
        if not legal.any():
            return True
        best_legal = np.where(legal, est_finish, np.inf).min(axis=1)
        best_later = np.where(~legal, est_finish, np.inf).min(axis=1)
        return bool(np.any(legal.any(axis=1) & (best_later < best_legal - EPS)))

    def wait_legal(self, legal: BoolArray, est_finish: FloatArray) -> bool:
        """The policy's wait action: legal (`can_wait`) and able to help (`wait_helps`)."""
        return self.can_wait and self.wait_helps(legal, est_finish)


def run_class(sim: SimState) -> type[DecisionPoint]:
    """The DecisionPoint subclass of one run, made on first use and kept in the state: what all its decision points
    share, the problem, the config, the state arrays as read-only views and the state's read calls bound
    (`FORWARDED`), as class attributes, so that a read is a class attribute, a call goes straight to the state, and
    making a decision point sets five fields.

    Kept because it is measured to matter: schedulers read the decision point in their inner loops (HEFT's
    dispatch reads `status` about 400 times per decision, `fair` calls `request` about 220 times), and a property
    read costs about 0.13 us more than a class attribute, a call through the base class about 20 ns more than
    the bound call. Without the subclass (the state arrays as properties of the base class, the calls through its
    one-line methods), whole runs on a 2,000-task stream took 1.32x as long with HEFT, 1.15x
    with fair, 1.09x with fcfs and 1.08x with kube_default (srpt_hold 1.00x, tetris 0.96x: noise), medians of 5
    rounds alternated on the shared 2-core machine (`benchmarks/bench_sim.py --sizes '' --whole-runs
    heft,fair,fcfs,srpt_hold,tetris,kube_default --rounds 5 --repeats 3 --streams-only --baseline 3f79be9`, the
    tree without it); in process time instead of wall-clock time, 1.08x with HEFT and 1.07x with fair.
    """
    if sim._dp_class is not None:
        return cast("type[DecisionPoint]", sim._dp_class)
    views = sim.read_only_views()
    shared: dict[str, Any] = {f.name: getattr(views, f.name) for f in fields(views)}
    shared.update({name: getattr(sim, name) for name in FORWARDED})
    shared.update(cp=sim.cp, config=sim.config, classic=sim.classic)
    shared.update(__module__=DecisionPoint.__module__, __doc__=DecisionPoint.__doc__)
    made = type("DecisionPoint", (DecisionPoint,), shared)
    sim._dp_class = made
    return made


class Scheduler(ABC):
    """Base of every policy: `reset` once per run, `decide` at each decision point.

    A scheduler is reset with what it may see (the compiled problem: predictions, requests, DAG,
    cluster; and the view at time 0), then asked at each decision point which ready tasks to start
    on which nodes now. It may ask to be woken at a later time (when a planned slot opens or inputs
    arrive). It never holds the live simulator, so it never sees actual runtimes or future failures.
    """

    name: ClassVar[str] = "base"
    uses_seed: bool = True
    """False only where the run seed cannot change a decision (no rng, no sampling): then, in a mode
    without hidden randomness, one run stands for every seed and the benchmark runs it once."""
    tree_search: ClassVar[bool] = False
    """True for schedulers that grow a search tree of simulator forks at every decision (MCTS): their
    cost grows with tasks x nodes x simulations, so a suite may cap the problem size they run on."""
    needs: ClassVar[frozenset[str]] = frozenset()
    """What the factory hands this scheduler's constructor when the caller has it (`make_scheduler(name,
    **provided)`): `policy` for a learned scheduler, which a service hands its serving policy; without it the
    scheduler loads its shipped one."""
    service_options: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    """Constructor options a service plans with (a learned planner's time budget per request)."""
    best_for: ClassVar[str] = ""
    """Where it is best, or why it stays where it is best nowhere, in one line (`dagsched schedulers` prints it;
    docs/schedulers.md gives the figures)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, cp: CompiledProblem, view: DecisionPoint, seed: int = 0) -> None:
        """Prepare for a run on `cp`; `view` is the state at time 0."""
        self.cp = cp
        self.rng = np.random.default_rng(seed)

    @abstractmethod
    def decide(self, dp: DecisionPoint) -> Decision:
        """Assignments to start now; each must be legal (`dp.can_start`) when it is applied, in order."""

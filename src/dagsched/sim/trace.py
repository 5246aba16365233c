"""What happened in one simulated run: every attempt, outage and slowdown.

The trace is the single record that metrics, plots, exports and the independent
validator read. Times are seconds from the start of the run; tasks and nodes are
indices into the run's `CompiledProblem`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Literal

Outcome = Literal["done", "failed", "overrun"]


@dataclass(frozen=True, slots=True)
class Attempt:
    """One execution of a task on a node.

    `start` is when execution began (all input data had arrived); `end` is when it
    finished (`outcome == "done"`), when its node failed under it ("failed"), or when
    the overrun guard stopped it so it could be migrated ("overrun").
    `nominal_s` is the work it needed: predicted time on this node x hidden noise; at a
    slowdown factor f a second of wall time does 1/f seconds of that work.
    """

    task: int
    node: int
    start: float
    end: float
    outcome: Outcome
    nominal_s: float


def _attempt_maker() -> Callable[[int, int, float, float, Outcome, float], Attempt]:
    """`Attempt(...)` as the engine makes one at every task end, in half the time: a frozen dataclass's __init__
    sets each field through object.__setattr__; this sets the slots directly. The same, still frozen, object."""
    new = object.__new__
    t_, n_, s_, e_, o_, w_ = (Attempt.__dict__[f.name].__set__ for f in fields(Attempt))

    def make(task: int, node: int, start: float, end: float, outcome: Outcome, nominal_s: float) -> Attempt:
        a = new(Attempt)
        t_(a, task)
        n_(a, node)
        s_(a, start)
        e_(a, end)
        o_(a, outcome)
        w_(a, nominal_s)
        return a

    return make


new_attempt = _attempt_maker()


@dataclass(frozen=True, slots=True)
class Outage:
    """A node was down from `start` until `end` (inf: never repaired in this run)."""

    node: int
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class Slowdown:
    """A straggler episode: the node ran `factor` times slower during [start, end)."""

    node: int
    start: float
    end: float
    factor: float


@dataclass(frozen=True, slots=True)
class Transfer:
    """A transfer of the contended network (`SimConfig.network_contention`): the bytes of the edge
    parent -> child, from node `src` to node `dst`, started at `start` (when the child was placed on `dst`,
    its parent having ended) and through at `end`; `arrived` False: cancelled at `end` (its destination
    failed before the child began)."""

    parent: int
    child: int
    src: int
    dst: int
    data_bytes: float
    start: float
    end: float
    arrived: bool = True


@dataclass
class Trace:
    """The full record of a run."""

    scheduler: str
    seed: int
    classic: bool
    noise_cv: float
    boot_delay: bool = True  # whether nodes' boot delays applied (off in classic mode)
    attempts: list[Attempt] = field(default_factory=list)
    outages: list[Outage] = field(default_factory=list)
    slowdowns: list[Slowdown] = field(default_factory=list)
    decision_latency_s: list[float] = field(default_factory=list)
    contention: bool = False  # transfers shared the nodes' links max-min fair (`SimConfig.network_contention`)
    transfers: list[Transfer] = field(default_factory=list)  # each transfer, in end order (contention only)

"""What happened in one simulated run: every attempt, outage and slowdown.

The trace is the single record that metrics, plots, exports and the independent
validator read. Times are seconds from the start of the run; tasks and nodes are
indices into the run's `CompiledProblem`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal, NamedTuple

Outcome = Literal["done", "failed", "overrun", "error"]


class Attempt(NamedTuple):
    """One execution of a task on a node.

    `start` is when execution began (all input data had arrived); `end` is when it
    finished (`outcome == "done"`), when its node failed under it ("failed"), when
    the overrun guard stopped it so it could be migrated ("overrun"), or, in a real run, when the task
    itself failed (its command exited non-zero, its function raised: "error").
    `nominal_s` is the work it needed: predicted time on this node x hidden noise; at a
    slowdown factor f a second of wall time does 1/f seconds of that work.
    A named tuple, not a frozen dataclass: as immutable, and the engine makes one per task end (a million on a
    long stream) with one C call (`new_attempt`), 0.14 us against 0.41 us for the dataclass's fastest maker.
    """

    task: int
    node: int
    start: float
    end: float
    outcome: Outcome
    nominal_s: float


new_attempt: Callable[[tuple[int, int, float, float, Outcome, float]], Attempt] = partial(tuple.__new__, Attempt)
"""`Attempt(*fields)` in one C call (a named tuple's own `__new__` is Python code): made at every task end."""


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
    measured: bool = False  # a real run's: each attempt's nominal_s is the time it really took, not exec_s x noise

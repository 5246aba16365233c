"""What guards a plan of the service: a deadline on each decision (the learned planner makes its whole plan in
one), a breaker around the learned policy, and the load-skew monitor that sends placements round-robin."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import numpy as np

from dagsched.model import CompiledProblem
from dagsched.schedulers.base import Scheduler
from dagsched.service.schemas import NodeState
from dagsched.sim.decision import Decision, DecisionPoint

log = logging.getLogger("dagsched.service")


class DeadlineExceeded(RuntimeError):
    """The learned planner's decision (its whole plan) took longer than the configured deadline."""


class Timed(Scheduler):
    """Times a scheduler's decisions, notes which started each task, and enforces an optional deadline on each."""

    def __init__(self, inner: Scheduler, deadline_s: float | None = None) -> None:
        super().__init__()
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.deadline_s = deadline_s
        self.decide_s: list[float] = []
        self.task_latency_s = np.zeros(0)

    def reset(self, cp: CompiledProblem, view: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, view, seed)
        self.task_latency_s = np.zeros(cp.n_tasks)
        self.inner.reset(cp, view, seed)

    def decide(self, dp: DecisionPoint) -> Decision:
        t0 = time.perf_counter()
        d = self.inner.decide(dp)
        took = time.perf_counter() - t0
        self.decide_s.append(took)
        for t, _ in d.assignments:
            self.task_latency_s[t] = took
        if self.deadline_s is not None and took > self.deadline_s:
            raise DeadlineExceeded(
                f"a decision took {took * 1e3:.1f} ms, over the {self.deadline_s * 1e3:g} ms deadline"
            )
        return d


class Breaker:
    """Opens after `failures` consecutive failures of the learned policy; HEFT serves until `cooldown_s` passes."""

    def __init__(self) -> None:
        self.consecutive = 0
        self.open_until = 0.0
        self._lock = threading.Lock()

    def is_open(self) -> bool:
        return time.monotonic() < self.open_until

    def success(self) -> None:
        with self._lock:
            self.consecutive = 0

    def failure(self, failures: int, cooldown_s: float) -> bool:
        """Count a failure; True when this one opened the breaker."""
        with self._lock:
            self.consecutive += 1
            if self.consecutive >= failures:
                self.consecutive = 0
                self.open_until = time.monotonic() + cooldown_s
                return True
            return False


class SkewMonitor:
    """Std of node cpu utilisation over a threshold -> the next N placements go round-robin."""

    def __init__(self) -> None:
        self.remaining = 0
        self.last_std = 0.0
        self.on_trip: Callable[[float], None] | None = None
        """Called (outside the lock) with the skew each time the monitor trips: online fine-tuning listens."""
        self._lock = threading.Lock()

    def observe(self, nodes: list[NodeState], threshold: float, decisions: int) -> bool:
        """Record the nodes' skew; True when round-robin mode is (now or still) on."""
        util = [1.0 - (n.free.cpu if n.free else n.cpu) / n.cpu for n in nodes]
        std = float(np.std(util)) if len(util) > 1 else 0.0
        tripped = False
        with self._lock:
            self.last_std = std
            if std > threshold and decisions > 0 and self.remaining == 0:
                self.remaining = decisions
                tripped = True
                log.warning("load skew %.3f over %.3f: next %d placements go round-robin", std, threshold, decisions)
            on = self.remaining > 0
        if tripped and self.on_trip is not None:
            self.on_trip(std)
        return on

    def consume(self, n: int) -> None:
        with self._lock:
            self.remaining = max(0, self.remaining - n)

"""Run one scheduler on one problem: the path the CLI, benchmark and service all share."""

from __future__ import annotations

from dataclasses import dataclass

from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers.base import Scheduler, make_scheduler
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator
from dagsched.sim.metrics import Metrics, compute_metrics
from dagsched.sim.trace import Trace


@dataclass(frozen=True)
class RunResult:
    trace: Trace
    metrics: Metrics
    valid: bool
    violations: list[str]


def simulate(
    cp: CompiledProblem,
    scheduler: Scheduler | str,
    config: SimConfig | None = None,
    seed: int = 0,
    validate: bool = True,
) -> RunResult:
    """Simulate `scheduler` on `cp` with hidden randomness drawn from `seed`; validate the trace."""
    config = config or SimConfig()
    sched = make_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
    sim = Simulator(cp, config, seed)
    sched.reset(cp, sim, seed)
    trace = sim.run(sched)
    violations: list[str] = []
    if validate:
        from dagsched.sim.validate import validate_trace

        violations = validate_trace(cp, trace).violations
    return RunResult(trace, compute_metrics(cp, trace, config), not violations, violations)

"""Run one scheduler on one problem: the path the CLI, benchmark and service all share.

By name: `dagsched.schedulers.simulate` resolves a registered scheduler and calls this.
"""

from __future__ import annotations

from dataclasses import dataclass

from dagsched.model.compiled import CompiledProblem
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import Scheduler
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
    scheduler: Scheduler,
    config: SimConfig | None = None,
    seed: int = 0,
    validate: bool = True,
) -> RunResult:
    """Simulate `scheduler` on `cp` with hidden randomness drawn from `seed`; validate the trace."""
    config = config or SimConfig()
    sim = Simulator(cp, config, seed)
    scheduler.reset(cp, sim.decision_point(), seed)
    trace = sim.run(scheduler)
    violations: list[str] = []
    if validate:
        from dagsched.sim.validate import validate_trace

        violations = validate_trace(cp, trace).violations
    return RunResult(trace, compute_metrics(cp, trace, config), not violations, violations)

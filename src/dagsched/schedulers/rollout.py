"""Rollout: at each decision, play every base heuristic to the end on a fork and do what the best one does now.

The rollout algorithm of approximate dynamic programming (Bertsekas, Tsitsiklis and Wu, J. Heuristics
1997), fortified: the best complete plan found so far is kept, and a base heuristic's move is taken
only when its completion from here beats that plan; otherwise the kept plan's next starts are
followed. On predicted runtimes (classic mode, or any mode without noise or failures) the live run
then follows its kept plan exactly, so its makespan is never worse than the best base heuristic's
own run from the start, and it is usually better: each decision is the first step of the best of
several completions. This is a teacher that beats HEFT, and a yardstick for the policy.

Cost: every decision runs every base heuristic to the end on a fork (decisions x bases x one whole
run). Meant for problems of tens to a few hundred tasks; not registered, so no suite runs it on
streams.
Departures: a fork rolls forward on predicted runtimes without failures (it never sees hidden
truth); where the live run departs from the kept plan (noise, a failure), the plan is dropped and
the bases are asked again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dagsched.model.compiled import EPS, CompiledProblem
from dagsched.schedulers.base import make_scheduler
from dagsched.sim.decision import Decision, DecisionPoint, Scheduler
from dagsched.sim.engine import Simulator

Start = tuple[int, int, float]
"""(task, node, start time) of a planned start"""

BASES = ("heft", "peft", "min_min", "sjf_cp")
"""Base heuristics rolled out at each decision: list schedulers with different orders and node rules."""


def complete_from_here(dp: DecisionPoint, base: str | Scheduler, seed: int = 0) -> tuple[float, Decision, list[Start]]:
    """Run `base` (a registered name, or a scheduler instance, reset here) from this decision point to the end
    on a fork: (makespan from the first submission, its decision now, every (task, node, start) it starts from
    now on, in order)."""
    fork: Simulator = dp.fork()
    sched = make_scheduler(base) if isinstance(base, str) else base
    here = fork.decision_point()
    sched.reset(dp.cp, here, seed)
    first = sched.decide(here)
    starts: list[Start] = [(int(t), int(nd), fork.now) for t, nd in first.assignments]
    fork.apply(first)
    fork.trace.scheduler = sched.name
    while (nxt := fork.next_decision()) is not None:
        decision = sched.decide(nxt)
        starts += [(int(t), int(nd), fork.now) for t, nd in decision.assignments]
        fork.apply(decision)
    makespan = float(np.nanmax(fork.finish_s)) - float(dp.cp.wf_submit_s.min())
    return makespan, first, starts


class Rollout(Scheduler):
    """Fortified rollout over `bases`; see the module docstring."""

    name = "rollout"
    uses_seed = False

    def __init__(self, bases: Sequence[str] = BASES) -> None:
        super().__init__()
        self.bases = tuple(bases)
        self.kept: list[Start] = []
        self.kept_makespan = math.inf
        self.base_makespans: dict[str, float] = {}
        """each base's own makespan from the first decision (the yardstick the rollout must not lose to)"""

    def reset(self, cp: CompiledProblem, view: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, view, seed)
        self.kept, self.kept_makespan, self.base_makespans = [], math.inf, {}

    def decide(self, dp: DecisionPoint) -> Decision:
        best: tuple[float, Decision, list[Start]] | None = None
        for base in self.bases:
            run = complete_from_here(dp, base)
            self.base_makespans.setdefault(base, run[0])
            if best is None or run[0] < best[0] - EPS:
                best = run
        assert best is not None
        follow = self._follow(dp)
        if follow is not None and self.kept_makespan <= best[0] + EPS:
            return follow
        self.kept_makespan, self.kept = best[0], best[2]
        return self._follow(dp) or best[1]

    def _follow(self, dp: DecisionPoint) -> Decision | None:
        """The kept plan's starts due now, if all can start (else None: the live run left the plan)."""
        if not self.kept:
            return None
        now = dp.now
        due = [(t, nd) for t, nd, at in self.kept if at <= now + EPS]
        if any(not dp.can_start(t, nd) for t, nd in due):
            self.kept, self.kept_makespan = [], math.inf
            return None
        taken = {t for t, _ in due}
        self.kept = [(t, nd, at) for t, nd, at in self.kept if t not in taken]
        later = min((at for _, _, at in self.kept), default=None)
        return Decision(due, later)

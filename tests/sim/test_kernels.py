"""The decision point's rules as numba kernels give their numpy reference's results to the bit, on whole runs.

Legal pairs and the next data arrival (`legality`), the offered window (`window`) and when room frees on a
node (`room_times`), checked at every decision of runs in both modes, with failures, stragglers, boot
delays, migrations and placement rules; the work left of the workflows with a ready task (`work_left_of`) on a stream.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.model.ranks import upward_rank
from dagsched.schedulers import simulate
from dagsched.sim import kernels
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import Decision, DecisionPoint, Scheduler
from dagsched.sim.state import DONE

pytestmark = pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")


def _bits(a: Any) -> bytes:
    return np.asarray(a).tobytes()


class TwinRules(Scheduler):
    """Plays random legal pairs while checking each rule's kernel against its numpy form."""

    name = "twin-rules"

    def reset(self, cp: Any, view: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, view, seed)
        self.rank = upward_rank(cp)
        self.topo = np.empty(cp.n_tasks, dtype=np.int64)
        self.topo[cp.topo] = np.arange(cp.n_tasks)
        self.checked = 0

    def decide(self, dp: DecisionPoint) -> Decision:
        sim = dp._sim
        ready = dp.ready
        args = (dp.now, dp.arrival_s, sim.requests(ready), sim.ever_fits(ready), dp.node_up, dp.node_available_s)
        allowed = None if dp.cp.allowed is None else dp.cp.allowed[ready]
        a = kernels.legality(*args, dp.free, allowed, compiled=False)
        b = kernels.legality(*args, dp.free, allowed, compiled=True)
        assert _bits(a[0]) == _bits(b[0]) and _bits(a[1]) == _bits(b[1])
        assert _bits(a[0]) == _bits(dp.legal)
        for k in (1, 3, 16):
            w_np = kernels.window(ready, dp.legal, self.rank, self.topo, k, compiled=False)
            w_nb = kernels.window(ready, dp.legal, self.rank, self.topo, k, compiled=True)
            assert _bits(w_np) == _bits(w_nb)
        run = np.array(dp.running, dtype=np.int64)
        run_node = dp.node_of[run]
        run_end = np.maximum(dp.start_s[run] + dp.cp.exec_s[run, run_node] * dp.slow_factor[run_node], dp.now)
        req = sim.requests(ready[:8])
        room = [kernels.room_times(dp.now, req, dp.free, run_node, run_end, sim.requests(run), c) for c in (0, 1)]
        assert _bits(room[0]) == _bits(room[1])
        self.checked += 1
        pairs = np.argwhere(dp.legal)
        if len(pairs) and (self.rng.random() < 0.8 or not dp.can_advance):
            i, nd = pairs[self.rng.integers(len(pairs))]
            return Decision([(int(ready[i]), int(nd))], None)
        return Decision([], dp.wake_s if np.isfinite(dp.wake_s) else None)


@pytest.mark.parametrize(
    ("family", "n_tasks", "preset", "sim", "rules"),
    [
        ("layered", 30, "hetero-16", {}, False),
        ("ml_pipeline", 30, "hetero-16", {"classic": True}, False),
        ("etl_star", 40, "small-3", {"noise_cv": 0.4, "straggler_rate_per_h": 20.0, "mtbf_s": 300.0}, False),
        ("random", 30, "hetero-16", {"overrun_factor": 1.5, "noise_cv": 0.8}, True),
        ("layered", 300, "large-100", {"noise_cv": 0.2}, True),
    ],
)
def test_rule_kernels_equal_numpy_on_every_decision(family, n_tasks, preset, sim, rules) -> None:
    cp = compile_problem(Problem(workflows=[generate_workflow(family, n_tasks, 3)], cluster=cluster_preset(preset)))
    if rules:  # a placement rule: every task off node 0 and odd tasks off node 1
        allowed = np.ones((cp.n_tasks, cp.n_nodes), dtype=bool)
        allowed[:, 0] = False
        allowed[1::2, 1] = False
        cp = cp.with_allowed(allowed)
    twin = TwinRules()
    result = simulate(cp, twin, SimConfig(**sim), seed=3)
    assert result.valid and twin.checked > 10
    if rules:
        assert all(a.node != 0 for a in result.trace.attempts)


class TwinWorkLeft(Scheduler):
    """Serves the ready tasks in index order on the first node that fits, checking at each decision that the work
    left of the workflows with a ready task, kernel and numpy, is `work_left`'s to the bit."""

    name = "twin-work-left"

    def reset(self, cp: Any, view: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, view, seed)
        self.work = np.random.default_rng(seed).lognormal(0.0, 2.0, cp.n_tasks)  # sums that round
        self.checked = 0

    def decide(self, dp: DecisionPoint) -> Decision:
        ready = np.asarray(dp.ready_tasks(), dtype=np.int64)
        wfs = np.unique(dp.cp.task_wf[ready])
        whole = dp.work_left(self.work)[wfs]
        assert _bits(dp.work_left_of(self.work, wfs)) == _bits(whole)
        args = (self.work, dp.status, DONE, dp.cp.task_wf, dp.cp.wf_task_ptr, wfs)
        assert _bits(kernels.work_left_of(*args, compiled=False)) == _bits(kernels.work_left_of(*args))
        self.checked += len(wfs) > 1
        free, out = dp.free.copy(), []
        for t in ready.tolist():
            for nd in range(dp.cp.n_nodes):
                if dp.can_start(t, nd, free):
                    free[nd] -= dp.request(t)
                    out.append((t, nd))
                    break
        return Decision(out, None)


def test_work_left_of_the_ready_workflows_equals_work_left() -> None:
    """`DecisionPoint.work_left_of` (the kernel over the named workflows' tasks) and its numpy form give
    `work_left`'s sums to the bit at every decision of a 20-workflow stream, many with several workflows ready."""
    from dagsched.generate.streams import generate_stream

    cp = compile_problem(generate_stream(cluster_preset("hetero-16"), 20, 0.9, "poisson", seed=3).problem())
    twin = TwinWorkLeft()
    result = simulate(cp, twin, SimConfig(noise_cv=0.3), seed=1)
    assert result.valid and twin.checked > 50

"""Frozen reference: `BatchMapper` as it was before its re-search was batched (commit 1e99943).

Min-Min and Max-Min must make exactly the decisions this slow version makes. The
equivalence tests (test_min_min.py, test_max_min.py) and benchmarks/bench_heuristics.py
load this file by path (tests run with --import-mode=importlib). The classes are not
registered, so the registry is unchanged. The algorithm is a verbatim copy of the old
`BatchMapper`; do not edit it to follow later changes. Below it: the problems the
equivalence tests run on, and the check itself.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
import pytest
from hypothesis import strategies as st

import dagsched.sim.slots
from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Cluster, CompiledProblem, Edge, Node, Problem, Task, Workflow, compile_problem
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.base import Scheduler
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Decision, Simulator
from dagsched.sim.slots import NodeTimeline
from dagsched.sim.trace import Trace

_EPS = 1e-9


class ReferenceBatchMapper(Scheduler):
    """Batch mode (Min-Min family): map all ready tasks by earliest completion time on resource-aware slots."""

    @abstractmethod
    def pick(self, best_ect: np.ndarray, candidates: list[int]) -> int:
        """Position in `candidates` of the task to map next, given each one's best completion time."""

    def decide(self, sim: Simulator) -> Decision:
        ready = sim.ready_tasks()
        m = sim.cp.n_nodes
        lines = sim.node_timelines()
        arrival = {t: sim.data_ready_all_s(t) for t in ready}
        # a migrated task avoids the node it overran on, unless no other node can ever take it
        self._avoid: dict[int, int] = {}
        for t in ready:
            avoid = int(sim.avoid_node[t])
            if avoid >= 0 and any(n != avoid and self._can_host(sim, lines, t, n) for n in range(m)):
                self._avoid[t] = avoid
        est = sim.earliest_starts(ready)
        for i, t in enumerate(ready):
            if t in self._avoid:
                est[i, self._avoid[t]] = np.inf
        ect = est + sim.cp.exec_s[ready]
        free = sim.free.copy()
        assignments: list[tuple[int, int]] = []
        wake = np.inf
        remaining = list(range(len(ready)))
        while remaining:
            best = ect[remaining].min(axis=1)
            i = remaining.pop(self.pick(best, [ready[r] for r in remaining]))
            t = ready[i]
            nd = int(np.argmin(ect[i]))
            start, end = self._slot(sim, lines, t, nd, arrival[t])
            if not np.isfinite(end):
                continue
            req = sim.request(t)
            lines[nd].reserve(start, end, req)
            if start <= sim.now + _EPS:
                # the timelines miss what they cannot see (a zero-length task just mapped, a task
                # running past its prediction): start only what really fits now; the rest waits
                # for the finish event that frees the room
                if np.all(free[nd] + _EPS >= req):
                    free[nd] -= req
                    assignments.append((t, nd))
            else:
                wake = min(wake, start)
            if remaining and not self._room_now(sim, lines, [ready[r] for r in remaining]):
                break  # nothing left can start now; running tasks' ends bring the next decision
            for r in remaining:
                # an insertion slot clear of the new reservation stays free and stays the earliest
                if est[r, nd] < end and ect[r, nd] > start:
                    est[r, nd], ect[r, nd] = self._slot(sim, lines, ready[r], nd, arrival[ready[r]])
        return Decision(assignments, wake if np.isfinite(wake) else None)

    @staticmethod
    def _room_now(sim: Simulator, lines: list[NodeTimeline], tasks: list[int]) -> bool:
        """Whether some node has room now for the smallest of these requests (a cheap necessary test)."""
        smallest = np.min([sim.request(t) for t in tasks], axis=0)
        now = sim.now
        for line in lines:
            if line.available_from > now + _EPS:
                continue
            used = line.used_at(now)
            if all(used[r] + smallest[r] <= line.cap[r] + _EPS for r in range(3)):
                return True
        return False

    @staticmethod
    def _can_host(sim: Simulator, lines: list[NodeTimeline], t: int, nd: int) -> bool:
        return lines[nd].can_host(sim.request(t))

    def _slot(
        self, sim: Simulator, lines: list[NodeTimeline], t: int, nd: int, arrival: np.ndarray
    ) -> tuple[float, float]:
        """Earliest (start, finish) of t on nd; (inf, inf) where it can never fit or should avoid nd."""
        if not self._can_host(sim, lines, t, nd) or self._avoid.get(t) == nd:
            return np.inf, np.inf
        req = sim.request(t)
        dur = float(sim.cp.exec_s[t, nd])
        start = lines[nd].earliest_start(max(float(arrival[nd]), sim.now), dur, req)
        return start, start + dur


class ReferenceMinMin(ReferenceBatchMapper):
    name = "min_min"
    uses_seed = False

    def pick(self, best_ect: np.ndarray, candidates: list[int]) -> int:
        return int(np.argmin(best_ect))


class ReferenceMaxMin(ReferenceBatchMapper):
    name = "max_min"
    uses_seed = False

    def pick(self, best_ect: np.ndarray, candidates: list[int]) -> int:
        return int(np.argmax(best_ect))


REFERENCE: dict[str, type[ReferenceBatchMapper]] = {"min_min": ReferenceMinMin, "max_min": ReferenceMaxMin}
"""The reference scheduler of each registered batch heuristic, by registry name."""


# -- the equivalence check and the problems it runs on ----------------------------------------------

MODES = {
    "classic": SimConfig(classic=True),
    "cloud": SimConfig(noise_cv=0.2),
    "failures": SimConfig(noise_cv=0.2, mtbf_s=300.0, mttr_s=120.0, overrun_factor=2.0),
    "stragglers": SimConfig(noise_cv=0.2, straggler_rate_per_h=6.0, straggler_factor=4.0, overrun_factor=2.0),
}
"""cloud runs several tasks per node; failures take nodes down (their tasks run again); stragglers
slow nodes past the overrun guard, so tasks migrate and must avoid the node they overran on"""

GRID = [
    ("layered", 150, "hetero-16", "classic", 0),
    ("random", 120, "large-100", "classic", 0),
    ("etl_star", 150, "small-3", "classic", 0),  # wide batches on few nodes: the numpy re-search
    ("ml_pipeline", 80, "small-3", "classic", 0),
    ("layered", 150, "hetero-16", "cloud", 1),
    ("etl_star", 120, "homog-8", "cloud", 2),
    ("random", 100, "small-3", "cloud", 3),
    ("layered", 120, "hetero-16", "failures", 4),
    ("ml_pipeline", 80, "small-3", "failures", 5),
    ("layered", 120, "hetero-16", "stragglers", 6),
]
"""(family, tasks, cluster preset, mode, run seed): several families and sizes, classic and cloud"""


def grid_problem(family: str, n_tasks: int, cluster: str) -> CompiledProblem:
    wf = generate_workflow(family, n_tasks, seed=7)
    return compile_problem(Problem(workflows=[wf], cluster=cluster_preset(cluster)))


def assert_same_decisions(cp: CompiledProblem, name: str, config: SimConfig, seed: int) -> Trace:
    """The registered scheduler's trace equals the reference's, attempt for attempt (times exactly).

    Checked twice, with `NodeTimeline.earliest_starts` forced down each of its two paths
    (numpy for every batch, the Python loop for every batch); returns the new trace.
    """
    old = simulate(cp, REFERENCE[name](), config, seed, validate=False).trace
    for few in (0, 10**9):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(dagsched.sim.slots, "_FEW_QUERIES", few)
            new = simulate(cp, make_scheduler(name), config, seed, validate=False).trace
        assert len(new.attempts) == len(old.attempts)
        for a, b in zip(new.attempts, old.attempts, strict=True):
            assert a == b, f"first different attempt: {a} (new) vs {b} (reference)"
    return new


@st.composite
def small_problems(draw: st.DrawFn) -> tuple[CompiledProblem, SimConfig]:
    """Random DAGs of 2 to 30 tasks on 1 to 5 nodes, classic or cloud (noise, failures, stragglers, overruns).

    Runtimes and requests favour round values, so completion times tie and requests fill
    a node exactly: the tie-breaks and the capacity test's tolerance are exercised.
    """
    classic = draw(st.booleans())
    nodes = [
        Node(
            id=f"n{k}",
            cpu=draw(st.sampled_from([1.0, 2.0, 4.0])),
            mem=draw(st.sampled_from([0.0, 4.0, 16.0])),
            gpu=draw(st.integers(0, 2)),
            speed=draw(st.sampled_from([1.0, 2.0, 0.5]) | st.floats(0.5, 3.0)),
            bandwidth=draw(st.sampled_from([1e6, 1e8, 1.25e9])),
            boot_delay=0.0 if classic else draw(st.sampled_from([0.0, 0.0, 3.0])),
            price_per_hour=1.0,
        )
        for k in range(draw(st.integers(1, 5)))
    ]
    n_tasks = draw(st.integers(2, 30))
    split = draw(st.integers(1, n_tasks)) if n_tasks > 2 and draw(st.booleans()) else n_tasks
    workflows = []
    for w, (lo, hi) in enumerate([(0, split), (split, n_tasks)]):
        if hi <= lo:
            continue
        tasks = []
        for i in range(lo, hi):
            host = nodes[draw(st.integers(0, len(nodes) - 1))]  # some node must fit the request
            costs = None
            if classic and draw(st.integers(0, 3)) == 0:
                costs = {n.id: draw(st.sampled_from([0.0, 1.0, 5.0]) | st.floats(0.0, 20.0)) for n in nodes}
            tasks.append(
                Task(
                    id=f"t{i}",
                    runtime=draw(st.sampled_from([0.0, 1.0, 2.0, 5.0, 20.0]) | st.floats(0.1, 20.0)),
                    cpu=draw(st.sampled_from([host.cpu, host.cpu / 2, host.cpu / 4]) | st.floats(0.1, host.cpu)),
                    mem=draw(st.sampled_from([0.0, host.mem]) | st.floats(0.0, host.mem)),
                    gpu=draw(st.integers(0, host.gpu)),
                    costs=costs,
                )
            )
        edges = [
            Edge(src=f"t{a}", dst=f"t{b}", data=draw(st.sampled_from([0.0, 1e6, 1e8, 1e9])))
            for b in range(lo, hi)
            for a in range(lo, b)
            if draw(st.integers(0, 4)) == 0
        ]
        submit = 0.0 if w == 0 else draw(st.sampled_from([0.0, 5.0]) | st.floats(0.0, 50.0))
        workflows.append(Workflow(name=f"w{w}", tasks=tasks, edges=edges, submit_time=submit))
    cluster = Cluster(nodes=nodes, latency=draw(st.sampled_from([0.0, 0.5])))
    cp = compile_problem(Problem(workflows=workflows, cluster=cluster))
    if classic:
        return cp, SimConfig(classic=True)
    failures = draw(st.booleans())
    return cp, SimConfig(
        noise_cv=draw(st.sampled_from([0.0, 0.2, 0.5])),
        mtbf_s=draw(st.floats(30.0, 200.0)) if failures else None,
        mttr_s=draw(st.floats(1.0, 30.0)),
        straggler_rate_per_h=draw(st.sampled_from([0.0, 0.0, 60.0])),
        straggler_duration_s=5.0,
        overrun_factor=draw(st.sampled_from([None, 1.5, 2.0])),
    )

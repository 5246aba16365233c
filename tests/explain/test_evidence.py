"""Decision evidence: each task's top alternatives are those of every allowed node scored in the final plan's
context (the bound that lets `evidence` skip nodes never changes what it lists), the chosen node always among them."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.explain.evidence import EVIDENCE_TOP, capacity_rejections, evidence
from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers import simulate
from dagsched.sim.config import SimConfig
from dagsched.sim.run import RunResult
from dagsched.sim.slots import NodeTimeline


def every_node_scored(cp: CompiledProblem, result: RunResult, allowed: np.ndarray) -> dict[int, list[tuple]]:
    """Per task, (finish, not chosen, node, start) on every allowed node, sorted: the plan's other tasks kept where
    they are, this one moved to the earliest slot the node has."""
    done = {a.task: a for a in result.trace.attempts if a.outcome == "done"}
    lines = [NodeTimeline((float(c[0]), float(c[1]), float(c[2]))) for c in cp.cap]
    node_of = np.full(cp.n_tasks, -1, dtype=np.int64)
    end_of = np.zeros(cp.n_tasks)
    for a in done.values():
        r = cp.req[a.task]
        lines[a.node].reserve(a.start, a.end, (float(r[0]), float(r[1]), float(r[2])))
        node_of[a.task], end_of[a.task] = a.node, a.end
    scored = {}
    for t, a in done.items():
        arrival = cp.input_arrival_s(t, node_of, end_of, 0.0)
        req = (float(cp.req[t, 0]), float(cp.req[t, 1]), float(cp.req[t, 2]))
        alts = []
        for nd in np.flatnonzero(allowed[t]).tolist():
            if nd == a.node:
                alts.append((a.end, False, nd, a.start))
                continue
            ex = float(cp.exec_s[t, nd])
            start = lines[nd].earliest_start(float(arrival[nd]), ex, req)
            alts.append((start + ex, True, nd, start))
        scored[t] = sorted(alts)
    return scored


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    family=st.sampled_from(["layered", "random", "etl_star"]),
    n=st.integers(5, 40),
    seed=st.integers(0, 10_000),
    scheduler=st.sampled_from(["heft", "fcfs", "random", "cpop"]),
    cluster=st.sampled_from(["hetero-16", "homog-8"]),
    keep=st.floats(0.2, 1.0),
)
def test_alternatives_are_the_best_of_every_allowed_node(
    family: str, n: int, seed: int, scheduler: str, cluster: str, keep: float
) -> None:
    cp = compile_problem(Problem(workflows=[generate_workflow(family, n, seed)], cluster=cluster_preset(cluster)))
    result = simulate(cp, scheduler, SimConfig(), seed)
    fits, why = capacity_rejections(cp)
    rng = np.random.default_rng(seed)
    allowed = fits & (rng.random(fits.shape) < keep)  # some nodes ruled out, as a rule or a pin does
    for t, nd in zip(*np.nonzero(fits & ~allowed), strict=True):
        why[(int(t), int(nd))] = "rule: not here"
    allowed[np.arange(cp.n_tasks), [_node(result, t) for t in range(cp.n_tasks)]] = True
    got = evidence(cp, result, allowed, why, "finish")
    for t, alts in every_node_scored(cp, result, allowed).items():
        top = alts[:EVIDENCE_TOP]
        if all(other for _, other, _, _ in top):
            top = top[: EVIDENCE_TOP - 1] + [x for x in alts if not x[1]]
        listed = [
            (x["finish"], not x["chosen"], cp.node_ids.index(x["node"]), x["start"]) for x in got[t]["alternatives"]
        ]
        assert listed == top
        assert sum(x["chosen"] for x in got[t]["alternatives"]) == 1
        assert {r["node"] for r in got[t]["rejected"]} == {cp.node_ids[nd] for nd in np.flatnonzero(~allowed[t])}


def _node(result: RunResult, t: int) -> int:
    return next(a.node for a in result.trace.attempts if a.task == t and a.outcome == "done")

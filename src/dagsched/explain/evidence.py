"""Decision evidence of a finished plan, for every scheduler: the alternatives each task had, why nodes were
rejected, and the terms of its placement.

Per task: its node and the top alternatives by estimated finish in the final plan's context (HEFT's own
criterion: the other tasks kept where they are, this one moved to the earliest slot that node has), the
constraints that rejected nodes (capacity, a rule, a pin), and the terms of the placement (execution,
data wait, queue wait, cost). Moved here from the service's planner so that every explanation lives in
one package; the service returns it with each plan.
"""

from __future__ import annotations

from bisect import insort

import numpy as np

from dagsched.model.compiled import EPS, CompiledProblem
from dagsched.sim.run import RunResult
from dagsched.sim.slots import NodeTimeline

EVIDENCE_TOP = 3
"""Alternatives listed per task (the chosen node always among them)."""


def capacity_rejections(cp: CompiledProblem) -> tuple[np.ndarray, dict[tuple[int, int], str]]:
    """(tasks, nodes) matrix of the pairs whose request fits the node's capacity, and why each other pair does not."""
    fits = np.all(cp.req[:, None, :] <= cp.cap[None, :, :] + EPS, axis=2)
    why: dict[tuple[int, int], str] = {}
    for t, nd in zip(*np.nonzero(~fits), strict=True):
        short = [
            f"{r} {cp.req[t, k]:g} > free {cp.cap[nd, k]:g}"
            for k, r in enumerate(("cpu", "mem", "gpu"))
            if cp.req[t, k] > cp.cap[nd, k] + EPS
        ]
        why[(int(t), int(nd))] = "capacity: " + ", ".join(short)
    return fits, why


def evidence(cp: CompiledProblem, result: RunResult, allowed: np.ndarray, why: dict, score_kind: str) -> dict:
    """Per task: alternatives scored by estimated finish in the final plan's context, rejections, terms."""
    done = {a.task: a for a in result.trace.attempts if a.outcome == "done"}
    lines = [NodeTimeline((float(c[0]), float(c[1]), float(c[2]))) for c in cp.cap]
    for a in done.values():
        r = cp.req[a.task]
        lines[a.node].reserve(a.start, a.end, (float(r[0]), float(r[1]), float(r[2])))
    cheap = cp.n_tasks * cp.n_nodes > 200_000  # large plans: contention-free estimates (one pass)
    out: dict[int, dict] = {}
    node_of = np.full(cp.n_tasks, -1, dtype=np.int64)
    end_of = np.zeros(cp.n_tasks)
    for a in done.values():
        node_of[a.task], end_of[a.task] = a.node, a.end
    everywhere = allowed.all(axis=1).tolist()  # most tasks: no node rejected, no search for one
    blocked = [[] if everywhere[t] else np.flatnonzero(~allowed[t]).tolist() for t in range(cp.n_tasks)]
    for t, a in done.items():
        parents = cp.preds(t)
        arrival = cp.input_arrival_s(t, node_of, end_of, 0.0)
        latest_parent = float(end_of[parents].max(initial=0.0))
        req = (float(cp.req[t, 0]), float(cp.req[t, 1]), float(cp.req[t, 2]))
        # A node's finish is at least its data arrival plus the run there: nodes are tried in the order of that
        # bound (ties by index; nodes not allowed last, skipped), and once it passes the EVIDENCE_TOP-th best
        # finish found no later node can enter the top.
        bound = arrival + cp.exec_s[t]
        row = allowed[t]
        alts = [(a.end, False, a.node, a.start)] if row[a.node] else []
        best = [x[0] for x in alts]  # the EVIDENCE_TOP smallest finishes so far, ascending
        order = np.argsort(np.where(row, bound, np.inf), kind="stable").tolist()
        bounds = bound.tolist()
        for nd in order:
            if nd == a.node or not row[nd]:
                continue
            if len(best) == EVIDENCE_TOP and bounds[nd] > best[-1]:
                break
            ex = float(cp.exec_s[t, nd])
            start = float(arrival[nd]) if cheap else lines[nd].earliest_start(float(arrival[nd]), ex, req)
            alts.append((start + ex, True, nd, start))
            insort(best, start + ex)
            del best[EVIDENCE_TOP:]
        alts.sort()
        top = alts[:EVIDENCE_TOP]
        if not any(not other for _, other, _, _ in top):
            top = top[: EVIDENCE_TOP - 1] + [x for x in alts if not x[1]]
        exec_s = a.end - a.start
        out[t] = {
            "score": score_kind,
            "alternatives": [
                {"node": cp.node_ids[nd], "score": f, "start": s, "finish": f, "chosen": not other}
                for f, other, nd, s in top
            ],
            "rejected": [{"node": cp.node_ids[nd], "constraint": why[(t, nd)]} for nd in blocked[t]],
            "terms": {
                "exec_s": exec_s,
                "data_wait_s": max(0.0, float(arrival[a.node]) - latest_parent),
                "queue_wait_s": max(0.0, a.start - float(arrival[a.node])),
                "cost": exec_s * float(cp.price_per_hour[a.node]) / 3600.0,
            },
        }
    return out

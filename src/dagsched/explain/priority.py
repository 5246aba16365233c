"""Why drl's plan is what it is: the learned scores, each task's choice among its ready set, and for one task
Integrated Gradients (Captum) of its score over the network's inputs.

A plan of `drl` is replayed (the same policy, sampler settings and seed make the same plan: `reproduced` says
whether they did) to recover the order its chosen candidate placed the tasks in. At the step each task was
placed, the ready set and the scores give its Plackett-Luce probability (softmax of the scores over the ready
set, without noise) and the margin over the best other ready task; a sampled plan may place a task the scores
alone did not favour, and a low probability says so.

What is attributed (`TARGET`): the task's score. The baseline input is all features at zero (every task row
and the cluster summary: no rank, no cost, no data); completeness holds, the attributions summing to
score(input) - score(baseline) up to the integral's error (`delta`). `by_feature` gives the task's own row's
features and the cluster summary's (summed over the rows that carry it); `by_task`, how much each task's row
(its features, read through the message passing) moved the score.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from dagsched.model.compiled import CompiledProblem
from dagsched.policy.priority_features import GLOBAL_FEATURES, TASK_FEATURES, task_features
from dagsched.policy.priority_net import PriorityPolicy
from dagsched.schedulers.base import Scheduler
from dagsched.schedulers.priority_sampling import PrioritySampling
from dagsched.sim.run import simulate

IG_STEPS = 64
TOP_ALTERNATIVES = 3
TARGET = "the task's score (its learned priority; higher goes first among ready tasks)"
BASELINE = "zeros: every task's features and the cluster summary at 0"


def replay(
    cp: CompiledProblem, policy: PriorityPolicy, make: Callable[[], Scheduler] | None = None
) -> tuple[PrioritySampling, dict[int, int]]:
    """Plan `cp` again (seed 0, as the service and `dagsched explain` plan); the scheduler (with its `last` choice)
    and each task's node."""
    sched = make() if make is not None else PrioritySampling(policy=policy)
    assert isinstance(sched, PrioritySampling)
    result = simulate(cp, sched, validate=False)
    node_of = {a.task: a.node for a in result.trace.attempts if a.outcome == "done"}
    return sched, node_of


def choices(cp: CompiledProblem, scores: np.ndarray, order: list[int]) -> dict[int, dict[str, Any]]:
    """Per task, its choice at the step it was placed: probability among the ready set, margin, alternatives."""
    left = np.diff(cp.pred_ptr).astype(np.int64)
    ready = {t for t in range(cp.n_tasks) if left[t] == 0}
    out: dict[int, dict[str, Any]] = {}
    for t in order:
        pool = sorted(ready, key=lambda r: -scores[r])
        s = np.array([scores[r] for r in pool])
        p = np.exp(s - s.max())
        p /= p.sum()
        prob = dict(zip(pool, p.tolist(), strict=True))
        others = [scores[r] for r in pool if r != t]
        shown = pool[:TOP_ALTERNATIVES] if t in pool[:TOP_ALTERNATIVES] else [*pool[: TOP_ALTERNATIVES - 1], t]
        out[t] = {
            "probability": prob[t],
            "margin": float(scores[t] - max(others)) if others else None,
            "alternatives": [
                {"task": cp.task_ids[r], "logit": float(scores[r]), "probability": prob[r], "chosen": r == t}
                for r in shown
            ],
        }
        ready.discard(t)
        for c in cp.succs(t).tolist():
            left[c] -= 1
            if left[c] == 0:
                ready.add(c)
    return out


def attribute(
    policy: PriorityPolicy, cp: CompiledProblem, classic: bool, t: int, steps: int = IG_STEPS
) -> dict[str, Any]:
    """Integrated Gradients of task t's score over every input row (zero baseline)."""
    from captum.attr import IntegratedGradients

    inputs = task_features(cp, classic)
    x = torch.from_numpy(inputs.x)
    edges = torch.from_numpy(inputs.edge_index)
    n = x.shape[0]

    def score(batch: torch.Tensor) -> torch.Tensor:  # (b, n, F) -> (b,)
        return torch.stack([policy(row, edges)[t] for row in batch])

    base = torch.zeros_like(x)
    with torch.no_grad():
        out, base_out = float(score(x[None])[0]), float(score(base[None])[0])
    ig = IntegratedGradients(score)
    attrs, delta = ig.attribute(
        x[None], baselines=base[None], n_steps=steps, method="gausslegendre",
        internal_batch_size=max(1, min(steps, 20_000 // max(n, 1))), return_convergence_delta=True,
    )  # fmt: skip
    a = attrs[0].detach().double().numpy()
    k = len(TASK_FEATURES)
    by_feature = [
        {"group": "task", "feature": f, "value": float(v)} for f, v in zip(TASK_FEATURES, a[t, :k], strict=True)
    ]
    by_feature += [
        {"group": "global", "feature": f, "value": float(v)}
        for f, v in zip(GLOBAL_FEATURES, a[:, k:].sum(axis=0), strict=True)
    ]
    per_task = a[:, :k].sum(axis=1)
    return {
        "method": "integrated_gradients",
        "baseline": BASELINE,
        "target": TARGET,
        "steps": steps,
        "output": out,
        "baseline_output": base_out,
        "total": float(a.sum()),
        "delta": float(delta[0]),
        "by_feature": sorted(by_feature, key=lambda r: -abs(r["value"])),
        "by_task": [{"task": cp.task_ids[i], "value": float(v)} for i, v in enumerate(per_task)],
    }


def explain_priority(
    cp: CompiledProblem,
    assignments: list[dict[str, Any]],
    policy: PriorityPolicy,
    task: int | None,
    model_version: str | None,
    make: Callable[[], Scheduler] | None = None,
) -> tuple[dict[str, Any], dict[int, dict[str, Any]], dict[str, Any] | None]:
    """(the plan's policy part, each task's choice, task t's attributions or None) of a drl plan."""
    sched, node_of = replay(cp, policy, make)
    choice = sched.last
    assert choice is not None
    node_index = {nid: j for j, nid in enumerate(cp.node_ids)}
    task_index = {tid: i for i, tid in enumerate(cp.task_ids)}
    planned = {task_index[a["task"]]: node_index[a["node"]] for a in assignments}
    part = {
        "model_version": model_version,
        "decode": f"priority sampling: the plan of {choice.names[choice.chosen]} (of {len(choice.names)} candidates)",
        "reproduced": planned == node_of,
        "decisions": len(choice.order),
        "target": TARGET,
    }
    per_task = choices(cp, sched.score, list(choice.order))
    detail = None if task is None else attribute(policy, cp, sched.classic, task)
    return part, per_task, detail

"""One plan explained: each task's evidence (every scheduler) and, for the learned policy, each decision's
alternatives with their probabilities; for one task asked about, attributions and attention as well.

The same function serves `GET /v1/plans/{id}/explain` and `dagsched explain`; both hand it a compiled problem,
the plan's assignments with their evidence, and (for drl and drl_step plans) the policy to replay: a drl plan is
explained by `explain.priority` (scores, choices among ready sets, attributions of a task's score), a drl_step
plan by `explain.policy` (each decision's alternatives, attributions and attention).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dagsched.explain import policy as policy_explain
from dagsched.model.compiled import CompiledProblem
from dagsched.model.errors import InputError
from dagsched.schedulers.base import Scheduler


def _named(cp: CompiledProblem, pick: policy_explain.Pick) -> dict[str, Any]:
    return {
        "probability": pick.probability,
        "margin": pick.margin if pick.margin != float("inf") else None,
        "alternatives": [
            {
                **alt,
                "task": None if alt["task"] is None else cp.task_ids[alt["task"]],
                "node": None if alt["node"] is None else cp.node_ids[alt["node"]],
            }
            for alt in pick.alternatives
        ],
    }


LEARNED = ("drl", "drl_step")
"""The schedulers whose plans come from a policy that can be replayed: drl (the priority planner; its policy a
`PriorityPolicy`) and drl_step (the per-decision policy)."""


def explain_plan(
    cp: CompiledProblem,
    assignments: list[dict[str, Any]],
    scheduler: str,
    policy: Any = None,
    task: str | None = None,
    model_version: str | None = None,
    why_no_policy: str | None = None,
    replayer: Callable[[], Scheduler] | None = None,
) -> dict[str, Any]:
    """The explanation of a plan of `cp` (`assignments`: task, node, start, finish, evidence, as the service returns
    them). `policy` is replayed when the plan is a learned scheduler's (`replayer` makes the scheduler a drl plan is
    replayed with: the service's settings; default the registry's); `task` adds attributions (and, for drl_step,
    attention) for that task. `why_no_policy` says why a learned plan cannot be replayed (then only evidence)."""
    task_index = {tid: i for i, tid in enumerate(cp.task_ids)}
    node_index = {nid: j for j, nid in enumerate(cp.node_ids)}
    if task is not None and task not in task_index:
        raise InputError("task", f"no task '{task}' in this plan")
    placed = {a["task"]: a for a in assignments}
    if task is not None and task not in placed:
        raise InputError("task", f"task '{task}' has no assignment in this plan")

    from dagsched.policy.priority_net import PriorityPolicy

    if scheduler in LEARNED and isinstance(policy, PriorityPolicy) and why_no_policy is None:
        from dagsched.explain.priority import explain_priority

        t = task_index[task] if task is not None else None
        part, per_task, attributions = explain_priority(cp, assignments, policy, t, model_version, replayer)
        tasks = [{**a, "policy": per_task.get(task_index[a["task"]])} for a in assignments]
        detail: dict[str, Any] | None = None
        if task is not None:
            a = placed[task]
            detail = {**a, "policy": per_task.get(task_index[task]), "attributions": attributions, "attention": []}
        return {
            "scheduler": scheduler,
            "workflow": cp.wf_names[0] if cp.n_workflows == 1 else None,
            "policy": part,
            "tasks": tasks,
            "task": detail,
        }

    replay: policy_explain.PolicyReplay | None = None
    policy_part: dict[str, Any] | None = None
    if scheduler in LEARNED and policy is not None and why_no_policy is None:
        keep = {task_index[task]} if task is not None else set()
        replay = policy_explain.replay(cp, policy, keep)
        planned = {task_index[a["task"]]: node_index[a["node"]] for a in assignments}
        policy_part = {
            "model_version": model_version,
            "decode": replay.decode,
            "reproduced": replay.reproduced(planned),
            "decisions": len(replay.picks),
            "waits": sum(p.task is None for p in replay.picks),
            "target": policy_explain.TARGET,
        }
    elif scheduler in LEARNED:
        policy_part = {"unavailable": why_no_policy or "no learned policy is loaded to replay the plan"}

    tasks = []
    for a in assignments:
        pick = replay.by_task.get(task_index[a["task"]]) if replay is not None else None
        tasks.append({**a, "policy": _named(cp, pick) if pick is not None else None})

    detail = None
    if task is not None:
        a = placed[task]
        t = task_index[task]
        pick = replay.by_task.get(t) if replay is not None else None
        detail = {**a, "policy": _named(cp, pick) if pick is not None else None, "attributions": None, "attention": []}
        rec = replay.recorded.get(t) if replay is not None else None
        if rec is not None:
            detail["attributions"] = policy_explain.attribute(policy, rec, list(cp.task_ids), list(cp.node_ids))
            detail["attention"] = policy_explain.attention(policy, rec.obs, t, list(cp.task_ids))
    return {
        "scheduler": scheduler,
        "workflow": cp.wf_names[0] if cp.n_workflows == 1 else None,
        "policy": policy_part,
        "tasks": tasks,
        "task": detail,
    }

"""One plan explained: each task's evidence (every scheduler) and, for the learned planner (drl), each task's
score and its probability among the tasks ready when it was placed; for one task asked about, the attributions
of its score as well.

The same function serves `GET /v1/plans/{id}/explain` and `dagsched explain`; both hand it a compiled problem,
the plan's assignments with their evidence, and (for a drl plan) the priority policy to replay, which
`explain.priority` explains (scores, choices among ready sets, attributions of a task's score).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dagsched.model.compiled import CompiledProblem
from dagsched.model.errors import InputError
from dagsched.schedulers.base import Scheduler

LEARNED = ("drl",)
"""The schedulers whose plans come from a policy that can be replayed: drl (the priority planner; its policy a
`PriorityPolicy`)."""


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
    them). `policy` is replayed when the plan is drl's (`replayer` makes the scheduler it is replayed with: the
    service's settings; default the registry's); `task` adds the attributions of that task's score. `why_no_policy`
    says why a drl plan cannot be replayed (then only evidence)."""
    task_index = {tid: i for i, tid in enumerate(cp.task_ids)}
    if task is not None and task not in task_index:
        raise InputError("task", f"no task '{task}' in this plan")
    placed = {a["task"]: a for a in assignments}
    if task is not None and task not in placed:
        raise InputError("task", f"task '{task}' has no assignment in this plan")

    from dagsched.policy.priority_net import PriorityPolicy

    policy_part: dict[str, Any] | None = None
    per_task: dict[int, dict[str, Any]] = {}
    attributions: dict[str, Any] | None = None
    if scheduler in LEARNED and isinstance(policy, PriorityPolicy) and why_no_policy is None:
        from dagsched.explain.priority import explain_priority

        t = task_index[task] if task is not None else None
        policy_part, per_task, attributions = explain_priority(cp, assignments, policy, t, model_version, replayer)
    elif scheduler in LEARNED:
        policy_part = {"unavailable": why_no_policy or "no learned policy is loaded to replay the plan"}

    tasks = [{**a, "policy": per_task.get(task_index[a["task"]])} for a in assignments]
    detail: dict[str, Any] | None = None
    if task is not None:
        detail = {**placed[task], "policy": per_task.get(task_index[task]), "attributions": attributions}
    return {
        "scheduler": scheduler,
        "workflow": cp.wf_names[0] if cp.n_workflows == 1 else None,
        "policy": policy_part,
        "tasks": tasks,
        "task": detail,
    }

"""Explain a stored plan: what `GET /v1/plans/{id}/explain` and gRPC `Explain` answer, computed on request only."""

from __future__ import annotations

from typing import Any

from dagsched.io import workflow_from_dict
from dagsched.schedulers import make_scheduler, registered_names
from dagsched.service.config import RuntimeConfig, needs_policy
from dagsched.service.models import ModelManager
from dagsched.service.problem import build_problem
from dagsched.service.schemas import ScheduleRequest
from dagsched.service.store.plans import Plans


def explain(
    plan_id: str, task: str | None, plans: Plans, models: ModelManager, config: RuntimeConfig
) -> dict[str, Any]:
    """The explanation of the stored plan `plan_id` (with `task`: that task's attributions too)."""
    from dagsched.explain.plan import explain_plan

    row = plans.require(plan_id)
    request = row["request"]
    why_not: str | None = None
    if "replan_of" in request:
        why_not = "a re-plan after an event: its decisions depend on the event's state, only its evidence is kept"
    elif row["fallback"]:
        why_not = f"the plan fell back to {row['scheduler']}: {row['fallback_reason']}"
    current = models.current
    learned = row["scheduler"] in registered_names() and needs_policy(row["scheduler"])
    if learned and why_not is None and current is None:
        why_not = models.error or "no learned policy is loaded"
    req = ScheduleRequest.model_validate({k: v for k, v in request.items() if k in ScheduleRequest.model_fields})
    cp, _, _, _ = build_problem(workflow_from_dict(req.workflow), req.nodes, config.compiled_rules, 10**9)
    policy = current.policy if current is not None else None
    out = explain_plan(
        cp,
        row["response"]["assignments"],
        row["scheduler"],
        policy=policy,
        task=task,
        model_version=current.version if current is not None else None,
        why_no_policy=why_not,
        # replayed as the service plans: its sampling settings, the serving policy
        replayer=lambda: make_scheduler(row["scheduler"], service=True, policy=policy),
    )
    return {**out, "plan_id": plan_id, "model_version": row["model_version"]}

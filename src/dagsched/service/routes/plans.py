"""Plans and decisions from the store: one plan, a searchable list, a plan's graph and its explanation, and the
decisions log."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dagsched.io import workflow_from_dict
from dagsched.service import explaining
from dagsched.service.schemas import ExplainResponse, PlanGraph, PlanList
from dagsched.service.state import State

router = APIRouter(tags=["plans"])


@router.get("/v1/plans", response_model=PlanList)
def list_plans(
    state: State,
    q: Annotated[
        str | None, Query(max_length=256, description="part of the workflow's name, or a plan id's start")
    ] = None,
    workflow: Annotated[str | None, Query(max_length=256)] = None,
    scheduler: Annotated[str | None, Query(max_length=64)] = None,
    fallback: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> dict[str, Any]:
    """The newest plans, filtered (without their request and response: `GET /v1/plans/{id}` has those)."""
    rows, total = state.store.plans.list(q, workflow, scheduler, fallback, limit, offset)
    plans = [{**r, "plan_id": r["id"]} for r in rows]  # PlanSummary keeps its own fields of a row, no others
    return {"plans": plans, "count": len(plans), "total": total}


@router.get("/v1/plans/{plan_id}")
def get_plan(plan_id: str, state: State) -> dict[str, Any]:
    """The stored plan (the response /v1/schedule gave), with when and by which model it was made."""
    row = state.store.plans.require(plan_id)
    return {**row["response"], "created_at": row["created_at"], "environment": row["environment"]}


@router.get("/v1/plans/{plan_id}/graph", response_model=PlanGraph)
def plan_graph(plan_id: str, state: State) -> dict[str, Any]:
    """The plan's workflow as a DAG (tasks with their node and times, edges with their data) and its nodes."""
    row = state.store.plans.require(plan_id)
    request = row["request"]
    wf = workflow_from_dict(request["workflow"])
    placed = {a["task"]: a for a in row["response"]["assignments"]}
    tasks = [{"id": t.id, **{k: placed.get(t.id, {}).get(k) for k in ("node", "start", "finish")}} for t in wf.tasks]
    nodes = [
        {"id": n["id"], "cpu": n["cpu"], "speed": n.get("speed", 1.0), "price_per_hour": n.get("price_per_hour", 0.0)}
        for n in request["nodes"]
    ]
    return {
        "plan_id": plan_id,
        "workflow": wf.name,
        "makespan": row["makespan"],
        "tasks": tasks,
        "edges": [{"source": e.src, "target": e.dst, "data": e.data} for e in wf.edges],
        "nodes": nodes,
    }


@router.get("/v1/plans/{plan_id}/explain", response_model=ExplainResponse)
def explain(
    plan_id: str,
    state: State,
    task: Annotated[str | None, Query(max_length=256, description="a task id: the attributions of its score")] = None,
) -> dict[str, Any]:
    """Why the plan is what it is. Every task: its evidence (top nodes by estimated finish, rejected nodes and why,
    the terms of its placement). A plan of the learned planner (drl) is replayed with the serving model: each task's
    score and its probability among the tasks ready when it was placed, and with `?task=` the Integrated Gradients
    attributions of its score per feature and per DAG task (which inputs raised it). Computed on request only
    (seconds on a 1,000-task plan); /v1/schedule never computes it."""
    return explaining.explain(plan_id, task, state.store.plans, state.models, state.config)


@router.get("/v1/decisions")
def list_decisions(
    state: State,
    workflow: Annotated[str | None, Query(max_length=256)] = None,
    plan_id: Annotated[str | None, Query(max_length=64)] = None,
    scheduler: Annotated[str | None, Query(max_length=64)] = None,
    model_version: Annotated[str | None, Query(max_length=128)] = None,
    fallback: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """The newest decisions (task -> node, scores, latency, model version, whether the plan fell back), filtered."""
    rows = state.store.plans.decisions(workflow, plan_id, limit, scheduler, model_version, fallback)
    return {"decisions": rows, "count": len(rows)}

"""GET /v1/plans/{id} and GET /v1/decisions: what was planned and decided, from the store."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from dagsched.service.state import State

router = APIRouter(tags=["plans"])


@router.get("/v1/plans/{plan_id}")
def get_plan(plan_id: str, state: State) -> dict[str, Any]:
    """The stored plan (the response /v1/schedule gave), with when and by which model it was made."""
    row = state.store.get_plan(plan_id)
    if row is None:
        raise HTTPException(404, f"plan_id: no plan '{plan_id}'")
    return {**row["response"], "created_at": row["created_at"], "environment": row["environment"]}


@router.get("/v1/decisions")
def list_decisions(
    state: State,
    workflow: Annotated[str | None, Query(max_length=256)] = None,
    plan_id: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """The newest decisions (task -> node, scores, latency, model version), optionally of one workflow or plan."""
    rows = state.store.decisions(workflow=workflow, plan_id=plan_id, limit=limit)
    return {"decisions": rows, "count": len(rows)}

"""POST /v1/schedule: a workflow and node states in, a plan with evidence out."""

from __future__ import annotations

from fastapi import APIRouter, BackgroundTasks

from dagsched.service.schemas import PlanResponse, ScheduleRequest
from dagsched.service.state import ServiceState, State

router = APIRouter(tags=["schedule"])


def _shadow(state: ServiceState, planned: object, name: str) -> None:
    row = state.planner.shadow(planned, name)  # type: ignore[arg-type]
    if row is None:
        return
    state.store.add_shadow(row)
    m = state.metrics
    live_wins = row["live_makespan"] < row["shadow_makespan"] - 1e-9
    tie = abs(row["live_makespan"] - row["shadow_makespan"]) <= 1e-9
    m.shadow_plans.labels(winner="tie" if tie else ("live" if live_wins else "shadow")).inc()
    if row["shadow_makespan"] > 0:
        m.shadow_makespan_ratio.set(row["live_makespan"] / row["shadow_makespan"])
    if row["shadow_cost"] > 0:
        m.shadow_cost_ratio.set(row["live_cost"] / row["shadow_cost"])


@router.post("/v1/schedule", response_model=PlanResponse, response_model_exclude_none=False)
def schedule(body: ScheduleRequest, state: State, background: BackgroundTasks) -> dict:
    """Plan the workflow on the nodes' free capacity with the chosen scheduler (default: the learned policy).

    The learned policy falls back to HEFT when it is missing, fails, misses its per-decision
    deadline or its breaker is open; the response then says `fallback: true` and why.
    """
    if len(body.nodes) > state.settings.max_nodes:
        from dagsched.model.errors import InputError

        raise InputError("nodes", f"{len(body.nodes)} nodes is over this service's limit of {state.settings.max_nodes}")
    config = state.config
    planned = state.planner.plan(body, config)
    state.store.save_plan(planned.plan_row, planned.decision_rows)
    if config.shadow:
        background.add_task(_shadow, state, planned, config.shadow)
    return planned.response

"""POST /v1/schedule: a workflow and node states in, a plan with evidence out (`service.planning`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, BackgroundTasks, Response
from starlette.concurrency import run_in_threadpool

from dagsched.service.schemas import PlanResponse, ScheduleRequest
from dagsched.service.state import JSONBody, State

router = APIRouter(tags=["schedule"])


@router.post("/v1/schedule", response_model=PlanResponse, response_model_exclude_none=False, dependencies=[JSONBody])
async def schedule(body: ScheduleRequest, state: State, background: BackgroundTasks) -> Any:
    """Plan the workflow on the nodes' free capacity with the chosen scheduler.

    The default is the runtime config's `default_scheduler`: `sampling` (priority sampling around HEFT's
    upward rank, no network) unless changed. The learned planner (`drl`) falls back to HEFT when it is
    missing, fails, misses its deadline (`decision_deadline_ms`: it makes its whole plan in one decision)
    or its breaker is open; the response then says `fallback: true` and why.
    """
    config, later = state.config, background.add_task
    # A small plan is made here, on the event loop: it costs less than a trip to the threadpool and back. A
    # larger one (or any while another plan runs) takes one trip, so the loop keeps answering health checks and
    # the extender meanwhile (a sync route with a sync dependency and a checked response made three).
    small = state.planning.plan_if_small(body, config, later)
    _, content = small or await run_in_threadpool(state.planning.plan, body, config, later)
    return Response(content, media_type="application/json")

"""POST /v1/events: what happened to a plan's tasks and nodes; re-plans what is affected (`service.replanning`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from dagsched.service.schemas import EventRequest, EventResponse
from dagsched.service.state import Authorized, JSONBody, State

router = APIRouter(tags=["events"])


@router.post(
    "/v1/events",
    response_model=EventResponse,
    dependencies=[Authorized, JSONBody],
    responses={404: {"description": "no such plan"}, 409: {"description": "an event out of order"}},
)
def post_event(body: EventRequest, state: State) -> dict[str, Any]:
    """Record an event of a plan; re-plan the affected tasks and return the assignments that changed."""
    return state.replanning.apply(body, state.config)

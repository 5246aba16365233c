"""POST /v1/schedule: a workflow and node states in, a plan with evidence out."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from fastapi import APIRouter, BackgroundTasks, Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from dagsched.model.errors import InputError
from dagsched.service.config import RuntimeConfig
from dagsched.service.planner import Planned
from dagsched.service.schemas import PlanResponse, ScheduleRequest
from dagsched.service.state import JSONBody, ServiceState, State
from dagsched.service.store import EncodedJSON

router = APIRouter(tags=["schedule"])
_PLAN = TypeAdapter(PlanResponse)


def _shadow(state: ServiceState, planned: object, name: str) -> None:
    with state.plan_lock:  # not beside a live plan (see ServiceState.plan_lock)
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


def plan_and_save(state: ServiceState, body: ScheduleRequest, config: RuntimeConfig) -> tuple[Planned, bytes]:
    """Plan, encode the response once (as the schema checks it), store the plan with that same text: what every
    /v1/schedule request does, over HTTP or gRPC."""
    if len(body.nodes) > state.settings.max_nodes:
        raise InputError("nodes", f"{len(body.nodes)} nodes is over this service's limit of {state.settings.max_nodes}")
    with state.plan_lock:
        planned = state.planner.plan(body, config)
    content = _PLAN.dump_json(_PLAN.validate_python(planned.response))
    with state.metrics.store_save_plan.time():
        state.store.save_plan({**planned.plan_row, "response": EncodedJSON(content.decode())}, planned.decision_rows)
    return planned, content


@router.post("/v1/schedule", response_model=PlanResponse, response_model_exclude_none=False, dependencies=[JSONBody])
async def schedule(body: ScheduleRequest, state: State, background: BackgroundTasks) -> Any:
    """Plan the workflow on the nodes' free capacity with the chosen scheduler.

    The default is the runtime config's `default_scheduler`: `drl`, the learned planner, unless changed.
    The learned planner falls back to HEFT when it is missing, fails, misses its deadline
    (`decision_deadline_ms`: it makes its whole plan in one decision) or its breaker is open; the
    response then says `fallback: true` and why.
    """
    config = state.config
    # Planning and the store write are CPU and I/O bound: one trip to the threadpool (the event loop
    # keeps answering health checks and the extender meanwhile), where a sync route with a sync
    # dependency and a checked response made three.
    planned, content = await run_in_threadpool(plan_and_save, state, body, config)
    for task in after_plan(state, planned, config):
        background.add_task(task)
    return Response(content, media_type="application/json")


def after_plan(state: ServiceState, planned: Planned, config: RuntimeConfig) -> list[Callable[[], None]]:
    """What runs after the answer is sent: the shadow's plan, and the canary's other arm."""
    tasks: list[Callable[[], None]] = []
    if config.shadow:
        tasks.append(partial(_shadow, state, planned, config.shadow))
    if planned.route is not None:  # a canary runs: the other arm plans the same problem, for the comparison
        tasks.append(partial(state.canary.record, planned, config))
    return tasks

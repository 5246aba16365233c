"""What really ran and what the service learns from it: GET /v1/gap (plans against reality, the calibration
factors in use), the canary's report and manual rollback, and the online fine-tunes' records."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from starlette.concurrency import run_in_threadpool

from dagsched.service.gap import gap_report
from dagsched.service.reality import read_runs
from dagsched.service.state import Authorized, State

router = APIRouter(tags=["reality"])


@router.get("/v1/gap")
async def gap(
    state: State,
    since: Annotated[str, Query(max_length=16, description="window of plans read: 30m, 24h, 7d")] = "7d",
    env: Annotated[
        str | None, Query(max_length=64, description="environment label (default: this service's; `*`: every one)")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=100_000, description="newest executed runs read at most")] = 2000,
) -> dict[str, Any]:
    """Per task name, workflow, node and node class the ratio of actual to declared runtime (median, p10, p90,
    count), transfer delays seen against planned, failure and overrun rates, makespan planned against achieved
    (with the runs as scatter points), the faults left out of the log, and the calibration factors this replica
    plans with (`calibration`) beside those the runs in the window give (`window_calibration`)."""
    from dagsched.console import parse_duration

    window_s = parse_duration(since, "since")
    environment = state.settings.environment if env is None else (None if env == "*" else env)
    config = state.config
    now = time.time()

    def compute() -> dict[str, Any]:
        log = read_runs(state.store, now - window_s, environment, limit, config.calibration.outlier_bound)
        report = gap_report(log, state.planner.factors(config))
        report["window_calibration"] = log.factors(config.calibration, now).to_json()
        return report

    return await run_in_threadpool(compute)


@router.get("/v1/canary/report")
async def canary_report(state: State) -> dict[str, Any]:
    """The live canary (candidate, stage, stages) with its current stage's figures per arm: plans, fallbacks,
    executed workflows, mean plan and achieved makespan, achieved over the default's plan makespan (mean, 95 %
    interval); the paired plan comparison where the shadow has both (candidate wins, ties, default wins, mean
    ratio, 95 % interval); the verdict so far; and every step of the live (or the last) canary."""
    return await run_in_threadpool(state.canary.report, state.config)


@router.post("/v1/canary/rollback", dependencies=[Authorized], responses={409: {"description": "no canary runs"}})
def canary_rollback(state: State) -> dict[str, Any]:
    """End the live canary now, on every replica (the default keeps serving); the step is stored."""
    config = state.config
    if config.canary is None:
        raise HTTPException(409, "canary: no canary runs")
    row = state.canary.step(config, "rollback", 0.0, "rolled back by an operator", {})
    if row is None:
        raise HTTPException(409, "canary: another replica took a step of this canary first; read the report")
    return {"rolled_back": config.canary.candidate, "step": row}


@router.get("/v1/finetune/runs")
def finetune_runs(
    state: State, limit: Annotated[int, Query(ge=1, le=500, description="newest runs")] = 50
) -> dict[str, Any]:
    """The online fine-tunes (on the interval `online_ft_interval`, on a load-skew trip, or asked for), newest
    first, each with its trigger, verdict (shipped, kept, too_few, failed), mean new/old makespan on the held-out
    logged problems, the version it shipped, and its report; and whether online fine-tuning is on."""
    runs = state.store.runtime.finetune_runs(limit)
    return {"interval_s": state.config.online_ft_interval, "window_s": state.config.online_ft_window, "runs": runs}


@router.post(
    "/v1/finetune/runs",
    dependencies=[Authorized],
    responses={409: {"description": "online fine-tuning is off, or a fine-tune is running"}},
)
def finetune_now(state: State) -> dict[str, Any]:
    """Run an online fine-tune now, on this replica (seconds to minutes), without waiting for its interval: its
    record. 409 when online fine-tuning is off (no `online_ft_interval`) or another fine-tune runs."""
    if state.config.online_ft_interval is None:
        raise HTTPException(409, "online_ft_interval: online fine-tuning is off; set it in the runtime config")
    row = state.online.run_once("request")
    if row is None:
        raise HTTPException(409, "finetune: another fine-tune is running (on this or another replica)")
    return row

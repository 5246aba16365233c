"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from dagsched.service.state import State

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "the store does not answer", "model": dict}})
def readyz(state: State) -> Any:
    """Ready when the store answers; reports whether the learned policy is loaded (HEFT serves if not)."""
    checks: dict[str, Any] = {"model": state.models.current.version if state.models.current else None}
    problem = state.ping_store()
    checks["store"] = problem or "ok"
    if problem is not None:
        return JSONResponse({"status": "not ready", **checks}, status_code=503)
    if state.models.current is None:
        checks["fallback"] = state.models.error
    return {"status": "ready", **checks}


@router.get(
    "/v1/metrics",
    response_class=Response,
    responses={200: {"description": "Prometheus text exposition", "content": {CONTENT_TYPE_LATEST: {}}}},
)
def metrics(state: State) -> Response:
    """Prometheus text exposition."""
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

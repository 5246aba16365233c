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
    readiness = state.readiness()
    return readiness if readiness["status"] == "ready" else JSONResponse(readiness, status_code=503)


@router.get(
    "/v1/metrics",
    response_class=Response,
    responses={200: {"description": "Prometheus text exposition", "content": {CONTENT_TYPE_LATEST: {}}}},
)
def metrics(state: State) -> Response:
    """Prometheus text exposition."""
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

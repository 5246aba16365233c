"""Kubernetes scheduler extender verbs: POST /v1/k8s/filter and /v1/k8s/prioritize (never a 500)."""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect

from dagsched.service import k8s
from dagsched.service.state import State

router = APIRouter(tags=["kubernetes"])
log = logging.getLogger("dagsched.service")


async def _args(request: Request) -> Any:
    try:
        raw = await request.body()
    except ClientDisconnect:  # the caller left mid-body (a stopped scheduler): nothing to answer, nothing broke
        log.info("extender %s: the caller disconnected before its request body arrived", request.url.path)
        raise k8s.ExtenderInputError("body: the caller disconnected before it was sent") from None
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise k8s.ExtenderInputError(f"body: malformed JSON: {err}") from None


@router.post("/v1/k8s/filter")
async def k8s_filter(request: Request, state: State) -> JSONResponse:
    """ExtenderArgs -> ExtenderFilterResult; any fault goes in `error`."""
    try:
        with state.metrics.k8s_call("filter"):
            result = k8s.filter_nodes(await _args(request), state.config.compiled_rules)
    except Exception as err:  # noqa: BLE001  (an extender must never break scheduling)
        if not isinstance(err, k8s.ExtenderInputError):
            log.exception("extender filter failed")
        result = k8s.filter_result(error=str(err))
    return JSONResponse(result)


@router.post("/v1/k8s/prioritize")
async def k8s_prioritize(request: Request, state: State) -> JSONResponse:
    """ExtenderArgs -> HostPriorityList (scores 0..10); any fault: scores 0 and an X-Dagsched-Error header."""
    args: Any = None
    try:
        with state.metrics.k8s_call("prioritize"):
            args = await _args(request)
            result = k8s.prioritize_pod(args, state.config.compiled_rules, state.store.plans)
        return JSONResponse(result)
    except Exception as err:  # noqa: BLE001
        if not isinstance(err, k8s.ExtenderInputError):
            log.exception("extender prioritize failed")
        names: list[str] = []
        if isinstance(args, dict):
            items = (args.get("nodes") or {}).get("items") if isinstance(args.get("nodes"), dict) else None
            if isinstance(items, list):
                names = [str(((n or {}).get("metadata") or {}).get("name", "")) for n in items if isinstance(n, dict)]
            elif isinstance(args.get("nodenames"), list):
                names = [str(n) for n in args["nodenames"]]
        header = str(err).encode("ascii", "replace").decode()[:500]
        return JSONResponse([{"host": n, "score": 0} for n in names], headers={"X-Dagsched-Error": header})

"""PUT /v1/model/weights, POST /v1/model/rollback, GET /v1/model: the serving policy."""

from __future__ import annotations

import email.policy
from email.parser import BytesParser
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from dagsched.model.errors import InputError
from dagsched.service.schemas import ModelInfo
from dagsched.service.state import Authorized, ServiceState, State

router = APIRouter(tags=["model"])


def _info(state: ServiceState) -> dict[str, Any]:
    c, p = state.models.current, state.models.previous
    return {
        "loaded": c is not None,
        "version": c.version if c else None,
        "sha256": c.sha256 if c else None,
        "loaded_at": c.loaded_at if c else None,
        "source": c.source if c else None,
        "previous": p.version if p else None,
        "architecture": c.meta.get("architecture") if c else None,
        "error": state.models.error,
    }


@router.get("/v1/model", response_model=ModelInfo)
def get_model(state: State) -> dict[str, Any]:
    """The serving policy: version, sha256, when it was loaded, and the one a rollback would restore."""
    return _info(state)


_UPLOAD_SCHEMA = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["weights", "metadata"],
                    "properties": {
                        "weights": {"type": "string", "format": "binary", "description": "the .safetensors file"},
                        "metadata": {"type": "string", "format": "binary", "description": "the .json metadata"},
                    },
                }
            }
        },
    }
}


_NESTED = "a part is itself multipart; the form's parts are two files, `weights` and `metadata`"


def parse_multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    """Parts of a multipart/form-data body by name; a nested multipart part is refused, however deep."""
    if not content_type.lower().startswith("multipart/form-data") or "boundary=" not in content_type:
        raise InputError("body", "expected multipart/form-data with a `weights` file and a `metadata` file")
    try:
        message = BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body
        )
    except RecursionError:
        raise InputError("body", _NESTED) from None
    if not message.is_multipart():
        raise InputError("body", "malformed multipart/form-data body")
    parts: dict[str, bytes] = {}
    for part in message.iter_parts():
        if part.is_multipart():
            raise InputError("body", _NESTED)
        name = part.get_param("name", header="content-disposition")
        if name:
            parts[str(name)] = part.get_payload(decode=True) or b""
    return parts


@router.put("/v1/model/weights", response_model=ModelInfo, dependencies=[Authorized], openapi_extra=_UPLOAD_SCHEMA)
async def put_weights(request: Request, state: State) -> dict[str, Any]:
    """Upload a policy (multipart: `weights` = .safetensors, `metadata` = its .json): validated against the
    architecture and by a smoke inference, then swapped in atomically.

    A rejected upload (422 naming `weights` or `metadata`) leaves the serving model as it was.
    """
    try:
        parts = parse_multipart(request.headers.get("content-type", ""), await request.body())
        for name in ("weights", "metadata"):
            if name not in parts:
                raise InputError(name, f"missing: send the policy's {name} as the multipart part `{name}`")
        await run_in_threadpool(state.ship_model, parts["weights"], parts["metadata"], "upload")
    except InputError:
        state.metrics.model_swaps.labels(outcome="rejected").inc()
        raise
    return _info(state)


@router.post(
    "/v1/model/rollback",
    response_model=ModelInfo,
    dependencies=[Authorized],
    responses={409: {"description": "there is no previous model to roll back to"}},
)
def rollback(state: State) -> dict[str, Any]:
    """Serve the previous policy again (this replica's previous one; every replica then serves it)."""
    with state.changing:
        try:
            loaded = state.models.rollback()
        except LookupError as err:
            raise HTTPException(409, str(err)) from None
        state.publish("rollback")  # every replica serves the model rolled back to
    state.adopt(loaded, "rollback", "rollback")
    return _info(state)

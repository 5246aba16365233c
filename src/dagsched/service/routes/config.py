"""PUT /v1/config and GET /v1/config: the runtime config, applied without a restart."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body

from dagsched.model.errors import InputError
from dagsched.service.config import RuntimeConfig, config_from_dict
from dagsched.service.state import Authorized, JSONBody, State

router = APIRouter(tags=["config"])


@router.get("/v1/config", response_model=RuntimeConfig)
def get_config(state: State) -> dict[str, Any]:
    """The live runtime config."""
    return state.config.model_dump()


_CONFIG_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RuntimeConfig"}}},
    }
}
"""The body is validated by `config_from_dict` (a refusal is counted); the spec says its shape, RuntimeConfig's."""


@router.put("/v1/config", response_model=RuntimeConfig, dependencies=[Authorized, JSONBody], openapi_extra=_CONFIG_BODY)
def put_config(state: State, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
    """Replace the runtime config as a whole, on every replica; a bad field or rule (named in the 422) leaves the
    old one live."""
    try:
        config = config_from_dict(body)
    except InputError:
        state.metrics.config_reloads.labels(outcome="rejected").inc()
        raise
    state.apply_config(config)  # every replica applies it within its sync interval
    state.canary.note(state.config)  # a canary started or set by hand is a step of it
    return state.config.model_dump()  # a canary it started has its id now

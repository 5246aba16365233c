"""One error shape for every 4xx: `{"detail": "<field>: <fault>", "errors": [{"field", "msg"}]}`."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from dagsched.model.errors import InputError, field_path

log = logging.getLogger("dagsched.service")


def _body(errors: list[dict[str, str]], status: int) -> JSONResponse:
    detail = "; ".join(f"{e['field']}: {e['msg']}" if e["field"] else e["msg"] for e in errors)
    return JSONResponse({"detail": detail, "errors": errors}, status_code=status)


def install(app: FastAPI) -> None:
    @app.exception_handler(InputError)
    async def _input_error(_: Request, err: InputError) -> JSONResponse:
        return _body([{"field": err.field, "msg": err.fault}], 422)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, err: RequestValidationError) -> JSONResponse:
        errors = []
        status = 422
        for e in err.errors():
            loc = tuple(e.get("loc", ()))
            if loc and loc[0] == "body":
                loc = loc[1:]
            msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
            inner = (e.get("ctx") or {}).get("error")
            if isinstance(inner, InputError):
                loc, msg = (*loc, *inner.field.split(".")), inner.fault
            if e.get("type") == "json_invalid":
                status = 400
                msg = f"malformed JSON: {(e.get('ctx') or {}).get('error', msg)}"
                loc = ("body",)
            elif e.get("type") == "extra_forbidden":
                msg = "unknown field"
            errors.append({"field": field_path(loc) or "body", "msg": msg})
        return _body(errors, status)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, err: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"detail": err.detail}, status_code=err.status_code, headers=err.headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, err: Exception) -> JSONResponse:
        log.exception("unexpected error on %s", request.url.path)
        return JSONResponse({"detail": f"internal error: {type(err).__name__}: {err}"}, status_code=500)

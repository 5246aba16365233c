"""One error shape for every 4xx: `{"detail": "<field>: <fault>", "errors": [{"field", "msg"}]}`."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from dagsched.model.errors import InputError, field_path
from dagsched.service.refusals import Refused

log = logging.getLogger("dagsched.service")


def _body(errors: list[dict[str, str]], status: int) -> JSONResponse:
    detail = "; ".join(f"{e['field']}: {e['msg']}" if e["field"] else e["msg"] for e in errors)
    return JSONResponse({"detail": detail, "errors": errors}, status_code=status)


def install(app: FastAPI) -> None:
    @app.exception_handler(InputError)
    async def _input_error(_: Request, err: InputError) -> JSONResponse:
        return _body([{"field": err.field or "body", "msg": err.fault}], 422)  # an empty key names no field

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
                msg = f"malformed JSON{_where(err.body, loc)}: {(e.get('ctx') or {}).get('error', msg)}"
                loc = ("body",)
            elif e.get("type") == "extra_forbidden":
                msg = "unknown field"
            errors.append({"field": field_path(loc) or "body", "msg": msg})
        return _body(errors, status)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, err: StarletteHTTPException) -> JSONResponse:
        headers = dict(err.headers or {})
        detail = err.detail
        if err.status_code == 400 and detail == "There was an error parsing the body":  # FastAPI's own words
            detail = f"body: does not parse as {request.headers.get('content-type') or 'JSON'}"
        elif err.status_code == 404 and detail == "Not Found":  # no route matched at all
            detail = f"path: nothing at {request.url.path}"
        elif err.status_code == 405:  # one route per method: Allow must list every method of the path, not one route's
            allowed = _allowed_methods(request.app, request.url.path)
            headers["Allow"] = ", ".join(allowed)
            detail = f"method: {request.method} is not allowed on {request.url.path}; allowed: {', '.join(allowed)}"
        return JSONResponse({"detail": detail}, status_code=err.status_code, headers=headers)

    @app.exception_handler(Refused)
    async def _refused(_: Request, err: Refused) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else None
        return JSONResponse({"detail": str(err)}, status_code=err.status, headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, err: Exception) -> JSONResponse:
        log.exception("unexpected error on %s", request.url.path)
        return JSONResponse({"detail": f"internal error: {type(err).__name__}: {err}"}, status_code=500)


def _where(doc: Any, loc: tuple[Any, ...]) -> str:
    """' at line L, column C' of character offset loc[0] in the JSON text `doc` (both 1-based, as `json` counts)."""
    if not (loc and isinstance(loc[0], int) and isinstance(doc, str | bytes)):
        return ""
    text = doc.decode("utf-8", "replace") if isinstance(doc, bytes) else doc
    pos = loc[0]
    line, column = text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)
    return f" at line {line}, column {column}"


def _allowed_methods(app: FastAPI, path: str) -> list[str]:
    """The methods the spec documents for the path template that `path` matches."""
    for template, ops in app.openapi().get("paths", {}).items():
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), path):
            return sorted(m.upper() for m in ops)
    return []


ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "required": ["detail"],
    "properties": {
        "detail": {"type": "string", "description": "`<field>: <fault>` (several joined by `; `)"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["field", "msg"],
                "properties": {"field": {"type": "string"}, "msg": {"type": "string"}},
            },
        },
    },
}
_ERROR_REF = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
_WHY = {
    "400": "malformed JSON, or a NUL character in the path or query",
    "401": "missing or wrong bearer token",
    "403": "mutating routes are disabled: no token configured on the server",
    "404": "no such plan (or file)",
    "413": "request body over the limit",
    "415": "the body is not application/json",
    "422": "a field's value is refused; `errors` names each field and fault",
}


def document_errors(app: FastAPI, authorized: set[tuple[str, str]]) -> None:
    """The spec's error answers in the one `Error` shape, on each operation that can give them."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        spec = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        schemas = spec.setdefault("components", {}).setdefault("schemas", {})
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        schemas["Error"] = ERROR_SCHEMA
        for path, ops in spec.get("paths", {}).items():
            for method, op in ops.items():
                for media in op.get("requestBody", {}).get("content", {}).values():
                    if "$ref" in media.get("schema", {}):  # a documented body is that model, nothing beside it
                        media["schema"] = {"$ref": media["schema"]["$ref"]}
                codes = []
                has_body = "requestBody" in op
                if op.get("parameters") or has_body:
                    codes += ["400", "422"]
                if has_body:
                    codes += ["413", "415"]
                if any(p.get("in") == "path" for p in op.get("parameters", [])):
                    codes.append("404")
                if (path, method.upper()) in authorized:
                    codes += ["401", "403"]
                responses = op.setdefault("responses", {})
                for code in codes:
                    responses[code] = {"description": _WHY[code], "content": _ERROR_REF}
                for code, answer in responses.items():
                    if code.startswith("4") or code.startswith("5"):
                        answer["content"] = _ERROR_REF
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]

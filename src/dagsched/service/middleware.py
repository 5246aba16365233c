"""ASGI middleware: request size and nesting limits (counted on the bytes received, before any parser), and request
metrics.
"""

from __future__ import annotations

import numpy as np
from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UPLOAD_PATH = "/v1/model/weights"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})  # others count as "other"

MAX_JSON_DEPTH = 64
"""Arrays and objects a JSON body may nest (the API's deepest nests 6; Python's parser fails at about 1,000)."""
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"[]{}')))
_STEP = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")  # an opening bracket as int8 +1, a closing one as -1


def _too_large(limit: int) -> HTTPException:
    return HTTPException(413, f"body: request body is over the limit of {limit} bytes")


def json_depth(raw: bytes) -> int:
    """How deep arrays and objects nest in a JSON text (brackets inside strings aside); any bytes will do.

    An escaped backslash, then an escaped quote, can end no string: both go, then every byte but quotes and
    brackets; what lies between the quotes left is inside strings. Bytes methods and one cumulative sum: a third
    of the time a regular expression over the body took."""
    kept = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    outside = b"".join(kept.split(b'"')[::2])
    steps = np.frombuffer(outside.translate(_STEP), dtype=np.int8)
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def _is_json(scope: Scope) -> bool:
    ctype = next((v for k, v in scope.get("headers") or () if k == b"content-type"), b"").split(b";")[0].strip()
    return ctype == b"application/json" or ctype.endswith(b"+json")


class LimitsAndMetrics:
    """Refuse bodies over the limit with 413; count every response by route template and status."""

    def __init__(self, app: ASGIApp, max_body: int, max_upload: int) -> None:
        self.app = app
        self.max_body = max_body
        self.max_upload = max_upload

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        nul_in = "path" if "\x00" in scope["path"] else "query" if b"%00" in scope.get("query_string", b"") else None
        limit = self.max_upload if scope["path"] == UPLOAD_PATH else self.max_body
        status = {"code": 500, "started": False}
        declared = next((v for k, v in scope.get("headers") or () if k == b"content-length"), None)

        received = 0
        json_body: list[bytes] | None = [] if _is_json(scope) and scope["path"] != UPLOAD_PATH else None

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                received += len(chunk)
                if received > limit:
                    raise _too_large(limit)
                if json_body is not None:  # the whole body is checked before the app parses it
                    json_body.append(chunk)
                    if not message.get("more_body", False):
                        depth = json_depth(b"".join(json_body))
                        if depth > MAX_JSON_DEPTH:
                            raise HTTPException(
                                400, f"body: JSON nested {depth} levels deep; at most {MAX_JSON_DEPTH} are accepted"
                            )
            return message

        async def tracking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                status["started"] = True
            await send(message)

        try:
            if nul_in is not None:  # no id has a NUL, and PostgreSQL text cannot hold one
                raise HTTPException(400, f"{nul_in}: contains a NUL character")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                raise _too_large(limit)  # refused before the body is read
            await self.app(scope, limited_receive, tracking_send)
        except HTTPException as err:  # raised above, or by limited_receive outside any handler
            if err.status_code not in (400, 413) or status["started"]:
                raise
            await JSONResponse({"detail": str(err.detail)}, err.status_code)(scope, receive, tracking_send)
        self._count(scope, status["code"])

    def _count(self, scope: Scope, code: int) -> None:
        route = scope.get("route")
        method = scope.get("method", "")
        # any token is a valid HTTP method: a bounded label set keeps the series (and memory) bounded
        method = method if method in _METHODS else "other"
        metrics = scope["app"].state.service.metrics  # the app's state is built in its lifespan, after the middleware
        metrics.count_request(getattr(route, "path", None) or "unmatched", method, code)

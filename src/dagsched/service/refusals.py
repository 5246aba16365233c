"""What a use case refuses besides bad input (`InputError`, a 422 or INVALID_ARGUMENT naming the field): a record
that is not there, a request at odds with what is stored. Each transport maps them to its own codes."""

from __future__ import annotations

from typing import ClassVar

from pydantic import SecretStr


class Refused(Exception):
    """A refusal whose message names the field and the fault; `status` is its HTTP status."""

    status: ClassVar[int] = 400


class NotFound(Refused):
    """No such record (HTTP 404, gRPC NOT_FOUND)."""

    status = 404


class Conflict(Refused):
    """The request does not follow what is stored, e.g. an event out of order (HTTP 409, gRPC FAILED_PRECONDITION)."""

    status = 409


class Unauthenticated(Refused):
    """No bearer token, or a wrong one (HTTP 401, gRPC UNAUTHENTICATED)."""

    status = 401


class Forbidden(Refused):
    """The call is disabled on this server (HTTP 403, gRPC PERMISSION_DENIED)."""

    status = 403


def check_bearer(configured: SecretStr | None, header: str, where: str) -> None:
    """A mutating call's bearer `header` against the server's token; `where` says where the caller puts it."""
    import hmac

    if configured is None:
        raise Forbidden("mutating requests are disabled: set DAGSCHED_API_TOKEN on the server")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise Unauthenticated(f"missing bearer token ({where}: Bearer <token>)")
    if not hmac.compare_digest(given.strip().encode(), configured.get_secret_value().encode()):
        raise Unauthenticated("wrong bearer token")

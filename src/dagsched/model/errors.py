"""One error type for bad input, whose message names the field and the fault."""

from __future__ import annotations

from typing import Any

import pydantic


class InputError(ValueError):
    """Input that dagsched refuses: `field` says where, `fault` says what is wrong."""

    def __init__(self, field: str, fault: str) -> None:
        self.field = field
        self.fault = fault
        super().__init__(f"{field}: {fault}" if field else fault)


def field_path(loc: tuple[Any, ...]) -> str:
    """A pydantic location as the field path users read: `tasks[3].runtime`."""
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts)


def from_pydantic(err: pydantic.ValidationError, prefix: str = "") -> InputError:
    """Turn pydantic's report into one InputError naming every faulty field."""
    faults: list[tuple[str, str]] = []
    for e in err.errors():
        field = field_path(tuple(e["loc"]))
        if prefix:
            field = f"{prefix}.{field}" if field else prefix
        msg = str(e["msg"]).removeprefix("Value error, ")
        inner = (e.get("ctx") or {}).get("error")
        if isinstance(inner, InputError):
            field = ".".join(p for p in (field, inner.field) if p).replace(".[", "[")
            msg = inner.fault
        if e["type"] == "extra_forbidden":
            msg = "unknown field"
        faults.append((field, msg))
    if len(faults) == 1:
        return InputError(*faults[0])
    joined = "; ".join(f"{f}: {m}" if f else m for f, m in faults)
    return InputError(faults[0][0], joined.removeprefix(f"{faults[0][0]}: "))


def parse(model: type[pydantic.BaseModel], data: Any, prefix: str = "") -> Any:
    """Validate `data` into `model`, raising InputError (never half-loaded objects)."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as err:
        raise from_pydantic(err, prefix) from None

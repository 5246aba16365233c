"""Shared by the readers: checks on raw JSON values, and building a Workflow whose errors name the source field.

The model's validators speak of `tasks[i].runtime` and `edges[k]`; a user wrote
`workflow.execution.tasks[7].runtimeInSeconds` or `tasks[2].dependencies[0]`.
`build_workflow` translates one into the other, so every message points into the
file the user actually has open.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from dagsched.model.entities import Workflow, find_cycle
from dagsched.model.errors import InputError, parse

FieldMap = Callable[[int, str], str]
"""(position in the model's list, rest of the field such as '.runtime') -> field in the source document."""

TASK_FIELD = re.compile(r"\btasks\[(\d+)\]((?:\.[A-Za-z_]\w*)*)")
EDGE_FIELD = re.compile(r"\bedges\[(\d+)\]((?:\.[A-Za-z_]\w*)*)")


def expect_dict(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(field, f"expected an object, got {_kind(value)}")
    return value


def expect_list(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(field, f"expected a list, got {_kind(value)}")
    return value


def expect_str(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(field, f"expected a non-empty string, got {_kind(value)}")
    return value


def expect_number(value: Any, field: str) -> float:
    """A JSON number (bools refused); range and finiteness are left to the model, which names the fault."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(field, f"expected a number, got {_kind(value)}")
    return float(value)


def require(obj: dict[str, Any], key: str, field: str) -> Any:
    if key not in obj:
        raise InputError(f"{field}.{key}" if field else key, "required field is missing")
    return obj[key]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"string {value!r}" if len(value) <= 40 else "a long string"
    if isinstance(value, bool | int | float):
        return (
            f"{type(value).__name__} {value!r}" if not isinstance(value, float) or math.isfinite(value) else "NaN/inf"
        )
    return type(value).__name__


def build_workflow(data: dict[str, Any], task_field: FieldMap, edge_field: FieldMap, tasks_field: str) -> Workflow:
    """Validate a Workflow dict; on failure re-raise with fields of the source document.

    `task_field` / `edge_field` say where `data['tasks'][i]` / `data['edges'][k]` were declared;
    `tasks_field` names the task list itself.
    """
    try:
        return parse(Workflow, data)  # type: ignore[no-any-return]
    except InputError as err:
        if err.field == "edges" and err.fault.startswith("cycle"):
            k = _closing_edge(data)
            raise InputError(edge_field(k, "") if k is not None else tasks_field, err.fault) from None

        def rename(text: str) -> str:
            text = TASK_FIELD.sub(lambda m: task_field(int(m.group(1)), m.group(2)), text)
            text = EDGE_FIELD.sub(lambda m: edge_field(int(m.group(1)), m.group(2)), text)
            return tasks_field if text == "tasks" else text

        raise InputError(rename(err.field), rename(err.fault)) from None


def _closing_edge(data: dict[str, Any]) -> int | None:
    """Position of the edge that closes the reported cycle (the model's own search, rerun on the error path)."""
    succ: dict[str, list[str]] = {}
    where: dict[tuple[str, str], int] = {}
    for k, edge in enumerate(data["edges"]):
        succ.setdefault(edge["src"], []).append(edge["dst"])
        where.setdefault((edge["src"], edge["dst"]), k)
    cycle = find_cycle([t["id"] for t in data["tasks"]], succ)
    return where[(cycle[-2], cycle[-1])] if cycle else None

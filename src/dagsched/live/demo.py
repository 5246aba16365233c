"""Small Python steps for a workflow of functions (`examples/python-steps.yaml`): each takes its parents' outputs,
in the order the task lists its dependencies, and returns its own."""

from __future__ import annotations


def numbers() -> list[int]:
    """1 to 100."""
    return list(range(1, 101))


def squares(xs: list[int]) -> list[int]:
    return [x * x for x in xs]


def evens(xs: list[int]) -> list[int]:
    return [x for x in xs if x % 2 == 0]


def total(*parts: list[int]) -> int:
    """The sum of every list it is handed."""
    return sum(sum(p) for p in parts)


def fail(*parts: object) -> None:
    """Always raises (a step that fails)."""
    raise RuntimeError("this step always fails")

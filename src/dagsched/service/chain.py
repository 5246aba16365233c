"""What ran in a plan chain, folded from its events: the one reading of the event log that the re-plan on an event
and the gap report (`reality.rebuild`) both use, and the one overrun rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

OVERRUN_RATIO = 2.0
"""A task past this many times its predicted time has overrun: `task_overran` migrates it; the gap report counts it."""


def overran(elapsed_s: float, predicted_s: float) -> bool:
    """Whether `elapsed_s` is past the overrun rule for a task predicted to take `predicted_s`."""
    return elapsed_s > OVERRUN_RATIO * predicted_s


@dataclass
class WhatRan:
    """A chain's tasks and nodes after its events."""

    running: dict[str, tuple[str, float]] = field(default_factory=dict)
    """task -> (node, start) of the attempt running now"""
    finished: dict[str, tuple[str, float, float]] = field(default_factory=dict)
    """task -> (node, start, finish) of the attempt that finished"""
    down: set[str] = field(default_factory=set)
    avoid: dict[str, str] = field(default_factory=dict)
    """task -> the node it was migrated off (an overrun past the rule)"""
    started: int = 0
    failed: int = 0  # attempts that ended without finishing: the task failed, or its node went down under it
    overran: int = 0
    unstarted_finishes: list[tuple[str, float]] = field(default_factory=list)
    """(task, at) of each `task_finished` with no start before it (a fault of the log)"""


def fold(events: Iterable[Mapping[str, Any]], planned: Mapping[str, Mapping[str, Any]]) -> WhatRan:
    """Fold a chain's `events` in time order; an event naming no node happened where the task was planned or ran."""
    ran = WhatRan()
    for e in events:
        kind, task, node, at = e["kind"], e["task"], e["node"], float(e["at"])
        if kind == "task_started":  # (a start after a finish: it runs again, its earlier finish superseded)
            ran.started += 1
            ran.finished.pop(task, None)
            ran.running[task] = (node or planned.get(task, {}).get("node", ""), at)
        elif kind == "task_finished":
            if task not in ran.running:
                ran.unstarted_finishes.append((task, at))
                continue
            where, start = ran.running.pop(task)
            ran.finished[task] = (node or where, start, at)
        elif kind == "task_failed":
            ran.failed += int(ran.running.pop(task, None) is not None)
        elif kind == "task_overran":
            ran.overran += 1
            if (e.get("payload") or {}).get("migrate"):
                was = ran.running.pop(task, None)
                ran.avoid[task] = node or (was[0] if was else planned.get(task, {}).get("node", ""))
        elif kind == "node_down":
            ran.down.add(node)
            for t, (nd, _) in list(ran.running.items()):
                if nd == node:
                    ran.running.pop(t)
                    ran.failed += 1
        elif kind == "node_up":
            ran.down.discard(node)
    return ran

"""Seeded Poisson arrivals: workflows submitted over time instead of all at once."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dagsched.generate.topologies import FAMILIES, generate_workflow
from dagsched.model.entities import Workflow
from dagsched.model.errors import InputError

_MIN_GAP_S = 1e-6
"""An exponential draw of exactly 0 would tie two arrivals; this keeps submit times strictly increasing."""


def poisson_arrivals(workflows: list[Workflow], rate_per_hour: float, seed: int, start: float = 0.0) -> list[Workflow]:
    """Copies of `workflows`, in order, with Poisson submit times and unique names.

    The first arrives at `start` (seconds), so a run does not open idle; each
    later one follows after an exponential gap of mean 3600 / `rate_per_hour`
    seconds. A repeated name gets the suffix "-<position>".
    """
    if not (math.isfinite(rate_per_hour) and rate_per_hour > 0):
        raise InputError("rate_per_hour", f"must be a positive number of workflows per hour, got {rate_per_hour!r}")
    if not (math.isfinite(start) and start >= 0):
        raise InputError("start", f"must be a finite number of seconds >= 0, got {start!r}")
    rng = np.random.default_rng(seed)
    gap_s = np.maximum(rng.exponential(3600.0 / rate_per_hour, size=max(len(workflows) - 1, 0)), _MIN_GAP_S)
    submit_s = start + np.concatenate([[0.0], np.cumsum(gap_s)])
    taken: set[str] = set()
    out: list[Workflow] = []
    for i, (wf, t_s) in enumerate(zip(workflows, submit_s, strict=False)):
        name = wf.name
        while name in taken:
            name = f"{wf.name}-{i}" if name == wf.name else f"{name}-{i}"
        taken.add(name)
        out.append(wf.model_copy(update={"submit_time": float(t_s), "name": name}))
    return out


def workflow_stream(
    families: Sequence[str] = FAMILIES,
    n_workflows: int = 10,
    size_range: tuple[int, int] = (10, 100),
    rate_per_hour: float = 6.0,
    seed: int = 0,
    *,
    ccr: float = 0.5,
    start: float = 0.0,
) -> list[Workflow]:
    """`n_workflows` generated workflows arriving as a Poisson stream; reproducible from `seed`.

    Each draws its family uniformly from `families` and its size uniformly
    from `size_range` (inclusive), with its own seed taken from `seed`.
    """
    if not families:
        raise InputError("families", "needs at least one family")
    if isinstance(n_workflows, bool) or not isinstance(n_workflows, int) or n_workflows < 0:
        raise InputError("n_workflows", f"must be a non-negative integer, got {n_workflows!r}")
    lo, hi = size_range
    if not (2 <= lo <= hi):
        raise InputError("size_range", f"needs 2 <= low <= high, got {size_range!r}")
    rng = np.random.default_rng(seed)
    workflows = []
    for i in range(n_workflows):
        family = families[int(rng.integers(len(families)))]
        n_tasks = int(rng.integers(lo, hi + 1))
        wf_seed = int(rng.integers(2**32))
        workflows.append(generate_workflow(family, n_tasks, wf_seed, ccr=ccr, name=f"{family}-{n_tasks}-w{i:03d}"))
    return poisson_arrivals(workflows, rate_per_hour, int(rng.integers(2**32)), start=start)

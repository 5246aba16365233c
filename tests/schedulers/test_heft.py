"""HEFT on the textbook example of its paper."""

from __future__ import annotations

import numpy as np
import pytest

from dagsched.model import CompiledProblem
from dagsched.model.ranks import upward_rank
from dagsched.schedulers import simulate
from dagsched.sim.config import SimConfig

CLASSIC = SimConfig(classic=True)


def test_upward_ranks_match_the_paper(heft_example: CompiledProblem) -> None:
    """rank_u(t) = w̄(t) + max over children (c̄ + rank_u): the values printed in the HEFT paper (Table 1)."""
    expected = [108, 77, 80, 80, 69, 63.333, 42.667, 35.667, 44.333, 14.667]
    assert upward_rank(heft_example) == pytest.approx(expected, abs=1e-3)


def test_heft_makespan_is_80(heft_example: CompiledProblem) -> None:
    """HEFT schedules the example in 80 time units (the paper's Fig. 3 (a)), with a valid trace."""
    result = simulate(heft_example, "heft", CLASSIC)
    assert result.valid, result.violations
    assert result.metrics.makespan == pytest.approx(80.0)


def test_heft_places_tasks_as_in_the_paper(heft_example: CompiledProblem) -> None:
    """The paper's schedule: n1, n3, n5, n7 on P3; n2, n8 on P1; n4, n6, n9, n10 on P2."""
    trace = simulate(heft_example, "heft", CLASSIC).trace
    node = {heft_example.task_ids[a.task]: heft_example.node_ids[a.node] for a in trace.attempts}
    assert node == {
        "T1": "P3", "T3": "P3", "T5": "P3", "T7": "P3",
        "T2": "P1", "T8": "P1",
        "T4": "P2", "T6": "P2", "T9": "P2", "T10": "P2",
    }  # fmt: skip
    start = {heft_example.task_ids[a.task]: a.start for a in trace.attempts}
    assert start["T10"] == 73.0 and np.isclose(start["T2"], 27.0)

"""CPOP on the textbook example of the HEFT paper, and its critical path."""

from __future__ import annotations

import pytest

from dagsched.model import CompiledProblem, Problem, compile_problem
from dagsched.model.ranks import downward_rank, upward_rank
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.cpop import CPOP
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator

CLASSIC = SimConfig(classic=True)


def test_priorities_and_critical_path(heft_example: CompiledProblem) -> None:
    """|CP| = rank_u + rank_d of the entry task = 108; the critical path is n1 -> n2 -> n9 -> n10."""
    priority = upward_rank(heft_example) + downward_rank(heft_example)
    assert priority[0] == pytest.approx(108.0)
    cpop = make_scheduler("cpop")
    assert isinstance(cpop, CPOP)
    sim = Simulator(heft_example, CLASSIC)
    cpop.reset(heft_example, sim)
    assert [heft_example.task_ids[t] for t in cpop.critical_path[0]] == ["T1", "T2", "T9", "T10"]


def test_cpop_makespan_is_86(heft_example: CompiledProblem) -> None:
    """CPOP schedules the example in 86 time units (the paper's Fig. 3 (b)), with a valid trace."""
    result = simulate(heft_example, "cpop", CLASSIC)
    assert result.valid, result.violations
    assert result.metrics.makespan == pytest.approx(86.0)


def test_critical_path_runs_on_the_critical_path_processor(heft_example: CompiledProblem) -> None:
    """The CP processor minimises the CP's total time: P2 (16 + 19 + 12 + 7 = 54 against 66 and 63)."""
    trace = simulate(heft_example, "cpop", CLASSIC).trace
    node = {heft_example.task_ids[a.task]: heft_example.node_ids[a.node] for a in trace.attempts}
    assert [node[t] for t in ("T1", "T2", "T9", "T10")] == ["P2"] * 4
    end = {heft_example.task_ids[a.task]: a.end for a in trace.attempts}
    assert (end["T1"], end["T2"], end["T9"], end["T10"]) == (16.0, 35.0, 77.0, 86.0)


def test_replanning_counts_started_parents_as_placed(heft_example: CompiledProblem) -> None:
    """Re-planning without n1 (already running): its children are ready at once, taken by priority.

    Priorities rank_u + rank_d: n2 108, n3 105, n7 105 (n3 first: topological position), n4 102,
    n5 93, then n9 108 once its last parent n5 is placed.
    """
    from dagsched.schedulers.static import ready_first

    priority = upward_rank(heft_example) + downward_rank(heft_example)
    order = list(ready_first(heft_example, list(range(1, 10)), priority))
    assert [heft_example.task_ids[t] for t in order[:6]] == ["T2", "T3", "T7", "T4", "T5", "T9"]
    assert sorted(order) == list(range(1, 10))
    seen: set[int] = set()
    for t in order:
        assert all(int(p) in seen or p == 0 for p in heft_example.preds(t))
        seen.add(t)


def test_second_workflow_is_planned_on_arrival(heft_problem: Problem) -> None:
    """A workflow arriving mid-run is re-planned with the unstarted rest; both finish on a valid trace."""
    base = heft_problem
    late = base.workflows[0].model_copy(update={"name": "late", "submit_time": 20.0})
    cp = compile_problem(base.model_copy(update={"workflows": [base.workflows[0], late]}))
    result = simulate(cp, "cpop", CLASSIC)
    assert result.valid, result.violations
    assert len([a for a in result.trace.attempts if a.outcome == "done"]) == 20
    assert result.metrics.workflow_makespans[0] >= 86.0 - 1e-9

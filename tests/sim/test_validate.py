"""The independent schedule validator: hand-written traces that pass, the same traces broken by hand
(each must fail naming the rule and the task), and random greedy list schedules."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dagsched.model import Cluster, CompiledProblem, Edge, Node, Problem, Task, Workflow, compile_problem
from dagsched.sim.trace import Attempt, Outage, Outcome, Slowdown, Trace
from dagsched.sim.validate import TraceInvalid, ValidationReport, validate_trace

# --- building problems and traces by hand ----------------------------------------------------


def problem(
    tasks: list[Task],
    edges: list[Edge] | None = None,
    nodes: list[Node] | None = None,
    latency: float = 0.0,
    submit: float = 0.0,
) -> CompiledProblem:
    """One workflow 'wf' on the given nodes (default: one node 'n0' with 4 cpu, 16 GiB, speed 1)."""
    nodes = nodes or [Node(id="n0", cpu=4, mem=16)]
    wf = Workflow(name="wf", tasks=tasks, edges=edges or [], submit_time=submit)
    return compile_problem(Problem(workflows=[wf], cluster=Cluster(nodes=nodes, latency=latency)))


def att(
    cp: CompiledProblem,
    task: str,
    node: str,
    start: float,
    end: float,
    outcome: Outcome = "done",
    nominal: float | None = None,
) -> Attempt:
    """An attempt by names; `nominal` defaults to the predicted time of the task on that node."""
    t = cp.task_ids.index(task)
    n = cp.node_ids.index(node)
    return Attempt(t, n, start, end, outcome, float(cp.exec_s[t, n]) if nominal is None else nominal)


def trace(attempts: list[Attempt], classic: bool = False, noise_cv: float = 0.0, **kw: Any) -> Trace:
    return Trace(scheduler="hand", seed=0, classic=classic, noise_cv=noise_cv, attempts=attempts, **kw)


def only_violation(report: ValidationReport, rule: str, task: str) -> str:
    """Assert the report fails with exactly one violation, of `rule`, naming `task`; return it."""
    assert not report.ok
    assert len(report.violations) == 1, report.violations
    msg = report.violations[0]
    assert msg.startswith(f"[{rule}]"), msg
    assert f"task '{task}'" in msg, msg
    return msg


def diamond() -> CompiledProblem:
    """a -> b, a -> c (200 B), b -> d (100 B), c -> d, plus e alone; n1 is twice as fast, 100 B/s, latency 0.5 s."""
    tasks = [
        Task(id="a", runtime=10, cpu=2),
        Task(id="b", runtime=4, cpu=2),
        Task(id="c", runtime=6, cpu=2),
        Task(id="d", runtime=2, cpu=1),
        Task(id="e", runtime=12, cpu=2),
    ]
    edges = [Edge(src="a", dst="b"), Edge(src="a", dst="c", data=200), Edge(src="b", dst="d", data=100)]
    edges.append(Edge(src="c", dst="d"))
    nodes = [
        Node(id="n0", cpu=4, mem=16, bandwidth=100),
        Node(id="n1", cpu=4, mem=16, gpu=1, speed=2, bandwidth=100),
    ]
    return problem(tasks, edges, nodes, latency=0.5)


def diamond_attempts(cp: CompiledProblem) -> dict[str, Attempt]:
    """A correct schedule of `diamond`, worked out by hand.

    a [0,10) and e [0,12) share n0 (2 + 2 cpu = 4); b follows a on n0 at 10 (same node: no transfer);
    c on n1 waits 200/100 + 0.5 = 2.5 s for a's data and runs 6/2 = 3 s: [12.5, 15.5);
    d on n1 waits for b's data until 14 + 100/100 + 0.5 = 15.5 and runs 2/2 = 1 s.
    """
    return {
        "a": att(cp, "a", "n0", 0, 10),
        "e": att(cp, "e", "n0", 0, 12),
        "b": att(cp, "b", "n0", 10, 14),
        "c": att(cp, "c", "n1", 12.5, 15.5),
        "d": att(cp, "d", "n1", 15.5, 16.5),
    }


def check(cp: CompiledProblem, attempts: dict[str, Attempt], **kw: Any) -> ValidationReport:
    return validate_trace(cp, trace(list(attempts.values()), **kw))


# --- a correct trace ---------------------------------------------------------------------------


def test_correct_trace_passes() -> None:
    """A hand-checked schedule obeying every rule has no violations (and does not raise)."""
    cp = diamond()
    report = check(cp, diamond_attempts(cp))
    assert report.ok
    assert report.violations == []
    report.raise_if_invalid()


# --- precedence and data arrival -------------------------------------------------------------------


def test_child_starting_before_parent_ends_fails() -> None:
    """Precedence: no attempt starts before its parent's done attempt ends."""
    cp = diamond()
    attempts = diamond_attempts(cp)
    attempts["b"] = att(cp, "b", "n1", 9, 11)  # a ends at 10
    msg = only_violation(check(cp, attempts), "precedence", "b")
    assert "task 'a'" in msg and "9" in msg


def test_transfer_delay_ignored_fails() -> None:
    """Data arrival: a child on another node waits data/bandwidth + latency after its parent ends."""
    cp = diamond()
    attempts = diamond_attempts(cp)
    attempts["c"] = att(cp, "c", "n1", 10, 13)  # should wait until 12.5
    msg = only_violation(check(cp, attempts), "data-arrival", "c")
    assert "12.5" in msg and "node 'n1'" in msg


def test_latency_alone_counts_for_data_free_edges_across_nodes() -> None:
    """Data arrival: an edge without data still costs the latency between two nodes."""
    cp = diamond()
    attempts = diamond_attempts(cp)
    attempts["b"] = att(cp, "b", "n1", 10, 12)  # a -> b carries no data, but latency is 0.5 s
    attempts["d"] = att(cp, "d", "n1", 15.5, 16.5)
    only_violation(check(cp, attempts), "data-arrival", "b")
    attempts["b"] = att(cp, "b", "n1", 10.5, 12.5)
    assert check(cp, attempts).ok


def test_same_node_needs_no_transfer() -> None:
    """Data arrival: on the same node a child may start the instant its parent ends, whatever the data."""
    cp = problem([Task(id="a", runtime=10), Task(id="c", runtime=6)], [Edge(src="a", dst="c", data=1e12)])
    report = validate_trace(cp, trace([att(cp, "a", "n0", 0, 10), att(cp, "c", "n0", 10, 16)]))
    assert report.ok, report.violations


def test_start_before_submission_fails() -> None:
    """Submission: no attempt starts before its workflow is submitted."""
    cp = problem([Task(id="a", runtime=10)], submit=100)
    assert validate_trace(cp, trace([att(cp, "a", "n0", 100, 110)])).ok
    msg = only_violation(validate_trace(cp, trace([att(cp, "a", "n0", 50, 60)])), "submission", "a")
    assert "100" in msg


# --- capacity --------------------------------------------------------------------------------------


def test_cpu_overload_fails_and_back_to_back_passes() -> None:
    """Capacity: summed cpu of running attempts fits the node; [start, end) intervals touching do not overlap."""
    cp = problem([Task(id="x", runtime=5, cpu=3), Task(id="y", runtime=5, cpu=3)])
    assert validate_trace(cp, trace([att(cp, "x", "n0", 0, 5), att(cp, "y", "n0", 5, 10)])).ok
    report = validate_trace(cp, trace([att(cp, "x", "n0", 0, 5), att(cp, "y", "n0", 4, 9)]))
    msg = only_violation(report, "capacity", "y")
    assert "cpu 6 > 4" in msg and "node 'n0'" in msg and "'x'" in msg


def test_gpu_overload_fails() -> None:
    """Capacity: two one-GPU tasks cannot share a one-GPU node, though cpu and memory fit."""
    nodes = [Node(id="g", cpu=8, mem=64, gpu=1)]
    cp = problem([Task(id="t1", runtime=5, gpu=1, mem=8), Task(id="t2", runtime=5, gpu=1, mem=8)], nodes=nodes)
    msg = only_violation(
        validate_trace(cp, trace([att(cp, "t1", "g", 0, 5), att(cp, "t2", "g", 2, 7)])), "capacity", "t2"
    )
    assert "gpu 2 > 1" in msg and "cpu" not in msg.split("overloads")[1].split("(")[0]


def test_classic_mode_runs_one_task_at_a_time() -> None:
    """Exclusive: in classic mode a node runs one attempt at a time, even when requests would fit."""
    cp = problem([Task(id="x", runtime=5), Task(id="y", runtime=5)])
    both = [att(cp, "x", "n0", 0, 5), att(cp, "y", "n0", 1, 6)]
    assert validate_trace(cp, trace(both)).ok  # 1 + 1 cpu fit in 4 outside classic mode
    msg = only_violation(validate_trace(cp, trace(both, classic=True)), "exclusive", "y")
    assert "'x'" in msg


# --- each task exactly once ------------------------------------------------------------------------


def test_task_run_twice_fails() -> None:
    """Exactly once: a task has one done attempt, not two."""
    cp = problem([Task(id="a", runtime=10)])
    report = validate_trace(cp, trace([att(cp, "a", "n0", 0, 10), att(cp, "a", "n0", 10, 20)]))
    msg = only_violation(report, "exactly-once", "a")
    assert "2 times" in msg


def test_attempts_of_one_task_overlap_fails() -> None:
    """Attempts: two attempts of the same task never run at the same time."""
    nodes = [Node(id="n0", cpu=4, mem=16), Node(id="n1", cpu=4, mem=16)]
    cp = problem([Task(id="a", runtime=10)], nodes=nodes)
    attempts = [att(cp, "a", "n0", 0, 6, "overrun", nominal=10), att(cp, "a", "n1", 5, 15)]
    only_violation(validate_trace(cp, trace(attempts)), "attempts", "a")
    attempts[1] = att(cp, "a", "n1", 6, 16)
    assert validate_trace(cp, trace(attempts)).ok  # an overrun stopped at 6, migrated to n1


def test_attempt_after_completion_fails() -> None:
    """Attempts: nothing of a task runs after its done attempt."""
    cp = problem([Task(id="a", runtime=10)], nodes=[Node(id="n0", cpu=4, mem=16)])
    attempts = [att(cp, "a", "n0", 0, 10), att(cp, "a", "n0", 12, 14, "overrun", nominal=10)]
    msg = only_violation(validate_trace(cp, trace(attempts)), "attempts", "a")
    assert "after the task completed" in msg


def test_out_of_range_indices_are_reported() -> None:
    """Attempts: task and node indices lie in the problem's range."""
    cp = problem([Task(id="a", runtime=10)])
    report = validate_trace(cp, trace([att(cp, "a", "n0", 0, 10), Attempt(0, 7, 0, 10, "failed", 10)]))
    assert [v for v in report.violations if "node index 7" in v and v.startswith("[attempts]")]
    report = validate_trace(cp, trace([att(cp, "a", "n0", 0, 10), Attempt(3, 0, 0, 10, "done", 10)]))
    assert report.violations == ["[attempts] attempts[1]: task index 3 out of range (problem has 1 tasks)"]


# --- failures, outages, boot -----------------------------------------------------------------------


def two_nodes(boot: float = 0.0) -> CompiledProblem:
    nodes = [Node(id="n0", cpu=4, mem=16, boot_delay=boot), Node(id="n1", cpu=4, mem=16, boot_delay=boot)]
    return problem([Task(id="a", runtime=10), Task(id="b", runtime=3)], [Edge(src="a", dst="b")], nodes)


def test_failed_attempt_rerun_after_outage_passes() -> None:
    """Outage and failure: an attempt cut by its node's failure ends failed at that instant and reruns."""
    cp = two_nodes()
    attempts = [att(cp, "a", "n0", 0, 5, "failed"), att(cp, "a", "n1", 5, 15), att(cp, "b", "n1", 15, 18)]
    assert validate_trace(cp, trace(attempts, outages=[Outage(0, 5, 30)])).ok


def test_task_lost_after_node_failure_fails() -> None:
    """Lost: a task that failed with its node and was never rerun is a violation naming it."""
    cp = problem([Task(id="a", runtime=10)], nodes=[Node(id="n0", cpu=4, mem=16)])
    report = validate_trace(cp, trace([att(cp, "a", "n0", 0, 5, "failed")], outages=[Outage(0, 5, 30)]))
    msg = only_violation(report, "lost", "a")
    assert "failed on node 'n0'" in msg


def test_child_of_a_lost_task_breaks_precedence() -> None:
    """Lost and precedence: a child cannot run when its parent never completed."""
    cp = two_nodes()
    attempts = [att(cp, "a", "n0", 0, 5, "failed"), att(cp, "b", "n1", 5, 8)]
    report = validate_trace(cp, trace(attempts, outages=[Outage(0, 5, 30)]))
    assert sorted(v.split("]")[0] + "]" for v in report.violations) == ["[lost]", "[precedence]"]
    assert any("task 'b'" in v and "never completed" in v for v in report.violations)


def test_attempt_running_through_an_outage_fails() -> None:
    """Outage: an attempt running when its node fails must end there; one that carries on is wrong."""
    cp = two_nodes()
    attempts = [att(cp, "a", "n0", 0, 10), att(cp, "b", "n0", 10, 13)]
    report = validate_trace(cp, trace(attempts, outages=[Outage(0, 5, 8)]))
    assert any(v.startswith("[outage]") and "task 'a'" in v and "5" in v for v in report.violations)


def test_attempt_starting_while_node_down_fails() -> None:
    """Outage: no attempt starts on a node while it is down."""
    cp = two_nodes()
    attempts = [att(cp, "a", "n1", 0, 10), att(cp, "b", "n0", 12, 15)]
    msg = only_violation(validate_trace(cp, trace(attempts, outages=[Outage(0, 11, 20)])), "outage", "b")
    assert "is down" in msg


def test_failed_attempt_not_at_an_outage_fails() -> None:
    """Failure: a failed attempt must end exactly when an outage of its node starts (no invented failures)."""
    cp = two_nodes()
    attempts = [att(cp, "a", "n0", 0, 5, "failed"), att(cp, "a", "n1", 5, 15), att(cp, "b", "n1", 15, 18)]
    msg = only_violation(validate_trace(cp, trace(attempts)), "failure", "a")
    assert "no outage of node 'n0' starts at 5" in msg
    only_violation(validate_trace(cp, trace(attempts, outages=[Outage(0, 6, 9)])), "failure", "a")


def test_start_during_boot_delay_fails() -> None:
    """Boot: no attempt starts before its node has booted (boot_delay after time 0)."""
    cp = two_nodes(boot=30)
    attempts = [att(cp, "a", "n0", 30, 40), att(cp, "b", "n0", 40, 43)]
    assert validate_trace(cp, trace(attempts)).ok
    attempts[0] = att(cp, "a", "n0", 10, 20)
    msg = only_violation(validate_trace(cp, trace(attempts)), "boot", "a")
    assert "booted at 30" in msg


def test_start_while_rebooting_after_repair_fails() -> None:
    """Boot: after an outage ends the node reboots for boot_delay before it can start anything."""
    cp = two_nodes(boot=3)
    first = att(cp, "a", "n0", 3, 5, "failed")
    ok = [first, att(cp, "a", "n0", 23, 33), att(cp, "b", "n0", 33, 36)]
    assert validate_trace(cp, trace(ok, outages=[Outage(0, 5, 20)])).ok
    early = [first, att(cp, "a", "n0", 21, 31), att(cp, "b", "n0", 31, 34)]
    msg = only_violation(validate_trace(cp, trace(early, outages=[Outage(0, 5, 20)])), "boot", "a")
    assert "up again at 23" in msg


# --- durations, speed, stragglers, noise -----------------------------------------------------------


def fast_and_slow() -> CompiledProblem:
    nodes = [Node(id="slow", cpu=4, mem=16, speed=0.5), Node(id="fast", cpu=4, mem=16, speed=2)]
    return problem([Task(id="a", runtime=10)], nodes=nodes)


def test_duration_too_short_for_node_speed_fails() -> None:
    """Duration: a done attempt lasts its nominal time (runtime / speed x noise): 20 s at speed 0.5."""
    cp = fast_and_slow()
    assert validate_trace(cp, trace([att(cp, "a", "slow", 0, 20)])).ok
    msg = only_violation(validate_trace(cp, trace([att(cp, "a", "slow", 0, 10)])), "duration", "a")
    assert "node 'slow'" in msg and "20" in msg


def test_nominal_ignoring_node_speed_fails_noise_rule() -> None:
    """Noise: without noise the nominal time is exactly the predicted exec time on that node."""
    cp = fast_and_slow()
    msg = only_violation(validate_trace(cp, trace([att(cp, "a", "fast", 0, 10, nominal=10)])), "noise", "a")
    assert "5" in msg


def test_noise_within_bounds() -> None:
    """Noise: with noise, nominal / exec_s lies within the given bounds (and is unchecked without bounds)."""
    cp = fast_and_slow()
    noisy = trace([att(cp, "a", "fast", 0, 7.5, nominal=7.5)], noise_cv=0.3)  # factor 1.5
    assert validate_trace(cp, noisy).ok
    assert validate_trace(cp, noisy, noise_bounds=(0.5, 2.0)).ok
    msg = only_violation(validate_trace(cp, noisy, noise_bounds=(0.8, 1.25)), "noise", "a")
    assert "1.5" in msg
    classic = trace([att(cp, "a", "fast", 0, 7.5, nominal=7.5)], classic=True, noise_cv=0.3)
    only_violation(validate_trace(cp, classic), "noise", "a")


def test_zero_runtime_task_with_zero_nominal_passes() -> None:
    """Noise and duration: a task predicted to take 0 s may run for 0 s."""
    cp = problem([Task(id="a", runtime=0), Task(id="b", runtime=1)], [Edge(src="a", dst="b")])
    assert validate_trace(cp, trace([att(cp, "a", "n0", 0, 0), att(cp, "b", "n0", 0, 1)])).ok


def test_straggler_slowdown_accounted_passes_and_ignored_fails() -> None:
    """Duration: during a slowdown of factor f a wall second does 1/f s of work.

    Runtime 10 from 0 with factor 2 over [2, 6): 2 s + 4/2 s + 6 s of work, so it ends at 12, not 10.
    """
    cp = problem([Task(id="a", runtime=10)])
    slow = [Slowdown(0, 2, 6, 2.0)]
    assert validate_trace(cp, trace([att(cp, "a", "n0", 0, 12)], slowdowns=slow)).ok
    msg = only_violation(validate_trace(cp, trace([att(cp, "a", "n0", 0, 10)], slowdowns=slow)), "duration", "a")
    assert "slowdowns" in msg
    other_node = [Slowdown(0, 2, 6, 2.0)]
    cp2 = problem([Task(id="a", runtime=10)], nodes=[Node(id="n0", cpu=4, mem=16), Node(id="n1", cpu=4, mem=16)])
    assert validate_trace(cp2, trace([att(cp2, "a", "n1", 0, 10)], slowdowns=other_node)).ok


def test_overlapping_slowdowns_compound() -> None:
    """Duration: overlapping slowdowns multiply: factors 2 and 3 over [0, 6) do 1 s of work."""
    cp = problem([Task(id="a", runtime=5)])
    slow = [Slowdown(0, 0, 6, 2.0), Slowdown(0, 0, 6, 3.0)]
    assert validate_trace(cp, trace([att(cp, "a", "n0", 0, 10)], slowdowns=slow)).ok


def test_unfinished_attempt_cannot_do_more_work_than_needed() -> None:
    """Duration: a failed or overrun attempt did at most its nominal work (else it would have finished)."""
    nodes = [Node(id="n0", cpu=4, mem=16), Node(id="n1", cpu=4, mem=16)]
    cp = problem([Task(id="a", runtime=10)], nodes=nodes)
    attempts = [att(cp, "a", "n0", 0, 12, "overrun"), att(cp, "a", "n1", 12, 22)]
    msg = only_violation(validate_trace(cp, trace(attempts)), "duration", "a")
    assert "did not finish" in msg


# --- tolerance, names, report ----------------------------------------------------------------------


def test_large_times_use_relative_tolerance() -> None:
    """Tolerance: times near 1e6 s with rounding pass, a real 0.1 ms shortfall in data arrival does not."""
    nodes = [Node(id="n0", cpu=4, mem=16, bandwidth=3), Node(id="n1", cpu=4, mem=16, bandwidth=3)]
    cp = problem([Task(id="a", runtime=0.1), Task(id="b", runtime=0.3)], [Edge(src="a", dst="b", data=1)], nodes)
    t0 = 1e6 + 0.1
    a_end = t0 + 0.1
    arrival = a_end + 1 / 3  # 1 byte at 3 B/s
    ok = [att(cp, "a", "n0", t0, a_end), att(cp, "b", "n1", arrival, arrival + 0.3)]
    assert validate_trace(cp, trace(ok)).ok
    for shortfall in (1e-3, 1e-4):
        late = [ok[0], att(cp, "b", "n1", arrival - shortfall, arrival - shortfall + 0.3)]
        only_violation(validate_trace(cp, trace(late)), "data-arrival", "b")


def test_several_workflows_name_tasks_with_their_workflow() -> None:
    """Messages: with several workflows a task is named 'workflow/task'; each workflow has its own submission."""
    w1 = Workflow(name="w1", tasks=[Task(id="a", runtime=1)])
    w2 = Workflow(name="w2", tasks=[Task(id="a", runtime=1)], submit_time=50)
    cp = compile_problem(Problem(workflows=[w1, w2], cluster=Cluster(nodes=[Node(id="n0", cpu=4, mem=16)])))
    ok = [Attempt(0, 0, 0, 1, "done", 1.0), Attempt(1, 0, 50, 51, "done", 1.0)]
    assert validate_trace(cp, trace(ok)).ok
    bad = [Attempt(0, 0, 0, 1, "done", 1.0), Attempt(1, 0, 1, 2, "done", 1.0)]
    only_violation(validate_trace(cp, trace(bad)), "submission", "w2/a")


def test_raise_if_invalid_lists_first_violations() -> None:
    """Report: raise_if_invalid raises TraceInvalid (an AssertionError) listing the first 10 violations."""
    cp = problem([Task(id=f"t{i}", runtime=1) for i in range(15)])
    report = validate_trace(cp, trace([]))
    assert not report.ok and len(report.violations) == 15
    with pytest.raises(TraceInvalid, match=r"15 rule\(s\)[\s\S]*task 't9' never ran[\s\S]*and 5 more") as info:
        report.raise_if_invalid()
    assert isinstance(info.value, AssertionError)
    assert "t10'" not in str(info.value)


# --- property: greedy list schedules pass, shifted ones fail ---------------------------------------


@st.composite
def greedy_schedules(draw: st.DrawFn) -> tuple[CompiledProblem, Trace, list[tuple[int, float]]]:
    """A random DAG and cluster, scheduled in classic mode by a greedy list scheduler written here.

    Tasks go in index order (edges only run from lower to higher index, so this is topological),
    each to a drawn node at the earliest time that node is free, its data has arrived, its workflow
    is submitted and the node has booted. Returns the problem, the trace and, for each task with a
    parent, the largest shift earlier that surely breaks a rule (inf when its start was bound by
    data, submission or boot; below the previous attempt's length when the node was the bound).
    """
    n_tasks = draw(st.integers(1, 12))
    n_nodes = draw(st.integers(1, 4))
    offset = draw(st.sampled_from([0.0, 1e6 + 0.123]))
    runtimes = [draw(st.floats(4, 100)) for _ in range(n_tasks)]
    edges: list[Edge] = []
    for j in range(1, n_tasks):
        parents = draw(st.sets(st.integers(0, j - 1), max_size=3))
        edges += [Edge(src=f"t{i}", dst=f"t{j}", data=draw(st.floats(0, 1e4))) for i in sorted(parents)]
    nodes = [
        Node(
            id=f"n{k}",
            cpu=4,
            mem=16,
            speed=draw(st.floats(0.5, 2)),
            bandwidth=draw(st.floats(10, 1e4)),
            boot_delay=draw(st.sampled_from([0.0, 5.0])),
        )
        for k in range(n_nodes)
    ]
    cp = problem(
        [Task(id=f"t{i}", runtime=r) for i, r in enumerate(runtimes)],
        edges,
        nodes,
        latency=draw(st.sampled_from([0.0, 0.25])),
        submit=offset,
    )
    node_free = cp.boot_delay_s.copy()
    node_last: list[Attempt | None] = [None] * n_nodes
    end_of: dict[int, tuple[int, float]] = {}
    attempts: list[Attempt] = []
    max_shift: list[tuple[int, float]] = []
    for t in range(n_tasks):
        n = draw(st.integers(0, n_nodes - 1))
        ready = max(offset, float(cp.boot_delay_s[n]))
        for k in range(cp.pred_ptr[t], cp.pred_ptr[t + 1]):
            p_node, p_end = end_of[int(cp.pred_idx[k])]
            ready = max(ready, p_end + cp.comm_s(float(cp.pred_data[k]), p_node, n))
        start = max(ready, float(node_free[n]))
        dur = float(cp.exec_s[t, n])
        attempt = Attempt(t, n, start, start + dur, "done", dur)
        if cp.pred_ptr[t + 1] > cp.pred_ptr[t]:
            prev = node_last[n]
            if ready >= node_free[n] or prev is None:
                max_shift.append((len(attempts), float("inf")))
            else:
                max_shift.append((len(attempts), prev.end - prev.start))
        attempts.append(attempt)
        node_free[n] = attempt.end
        node_last[n] = attempt
        end_of[t] = (n, attempt.end)
    return cp, trace(attempts, classic=True), max_shift


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(greedy_schedules())
def test_greedy_list_schedules_pass(case: tuple[CompiledProblem, Trace, list[tuple[int, float]]]) -> None:
    """Property: every greedy list schedule (earliest time the node is free and data has arrived) is valid."""
    cp, tr, _ = case
    report = validate_trace(cp, tr)
    assert report.ok, report.violations


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(greedy_schedules(), st.data())
def test_shifting_a_child_earlier_fails(
    case: tuple[CompiledProblem, Trace, list[tuple[int, float]]], data: st.DataObject
) -> None:
    """Property: moving any done attempt that has a parent earlier by >= 1 s (same duration) breaks a rule.

    Where the node, not the data, bound its start, the shift stays below the previous attempt's length,
    so the moved attempt must overlap it (a larger one could land in an idle gap and be valid).
    """
    cp, tr, max_shift = case
    assume(max_shift)
    i, limit = data.draw(st.sampled_from(max_shift))
    delta = data.draw(st.floats(1.0, min(limit - 1e-3, 1e5)))
    a = tr.attempts[i]
    tr.attempts[i] = Attempt(a.task, a.node, a.start - delta, a.end - delta, a.outcome, a.nominal_s)
    report = validate_trace(cp, tr)
    assert not report.ok
    name = f"task '{cp.task_name(a.task)}'"
    assert any(name in v for v in report.violations), report.violations

"""The decision point hands on the simulator's read calls as they are: every forwarded name is a documented
DecisionPoint method, a run's decision points carry the state's own bound calls and views, and the bound call and
the base class's method give the same answers at every decision of a run."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.streams import generate_stream
from dagsched.model import Problem, compile_problem
from dagsched.model.compiled import task_work
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import DONE, FORWARDED, Decision, DecisionPoint, StaleDecisionPoint
from dagsched.sim.engine import Simulator
from dagsched.sim.state import StateViews


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, list):  # Timelines: each node's planned use
        return [(x.times, x.used, x.available_from) for x in a] == [(y.times, y.used, y.available_from) for y in b]
    return np.array_equal(np.asarray(a), np.asarray(b))


def test_forwarded_calls_are_the_methods_they_stand_for() -> None:
    assert all(callable(getattr(DecisionPoint, name, None)) for name in FORWARDED)
    cp = compile_problem(
        Problem(workflows=[generate_workflow("layered", 30, seed=1, ccr=1.0)], cluster=cluster_preset("hetero-16"))
    )
    sim = Simulator(cp, SimConfig(noise_cv=0.2), 3)
    checked = 0
    while (dp := sim.next_decision()) is not None:
        tasks = dp.ready
        t, nd = int(tasks[0]), int(np.argmax(dp.legal[0])) if dp.any_legal else 0
        req = dp.requests(tasks)
        calls = {
            "request": (t,),
            "requests": (tasks,),
            "data_ready_all_s": (t,),
            "data_ready_s": (t, nd),
            "room_times": (req,),
            "fits_now": (t, nd),
            "can_start": (t, nd),
            "ever_fits": (tasks,),
            "fitting": (tasks, dp.free),
            "startable": (tasks,),
            "node_timelines": (),
        }
        if dp.running:
            calls["predicted_end_s"] = (dp.running[0],)
        assert set(calls) <= set(FORWARDED) and len(FORWARDED) == 12
        assert type(DecisionPoint(sim)) is type(dp) is not DecisionPoint  # the run's subclass, made once
        for name, args in calls.items():
            assert getattr(dp, name).__self__ is sim  # the simulator's own bound call
            assert _same(getattr(dp, name)(*args), getattr(DecisionPoint, name)(dp, *args)), name
        for name in ("status", "node_of", "start_s", "finish_s", "free", "cap", "node_up", "node_available_s"):
            view = getattr(dp, name)  # the state's array, as a view that cannot be written
            assert np.shares_memory(view, getattr(sim, name)) and not view.flags.writeable, name
        checked += 1
        sim.apply(Decision(dp.pairs()[:1]))  # one start per decision: many decision points
    assert checked > 5


def test_the_decision_point_declares_exactly_the_states_views() -> None:
    """DecisionPoint's annotations type the views a run's subclass gets from `StateViews`: the two lists agree."""
    declared = [n for n in DecisionPoint.__annotations__ if n not in ("cp", "config", "classic") and n[0] != "_"]
    assert declared == [f.name for f in fields(StateViews)]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), load=st.floats(0.5, 1.5), read_every=st.integers(1, 7))
def test_ready_is_the_sorted_ready_set_however_often_it_is_read(seed: int, load: float, read_every: int) -> None:
    """`ready` (kept up to date from what changed since it was last read, in place) is the ascending ready set at
    every decision point where it is read, whether read at every decision or only now and then, through
    arrivals, failures, repairs and migrations; it cannot be written."""
    cp = compile_problem(generate_stream(cluster_preset("small-3"), 6, load, "bursty", seed=seed).problem())
    # failures often enough to matter, but rare against the longest task, so that every task gets through
    longest = float(cp.exec_s.max())
    config = SimConfig(noise_cv=0.4, mtbf_s=10 * longest, mttr_s=longest, overrun_factor=1.5)
    sim = Simulator(cp, config, seed)
    rng = np.random.default_rng(seed)
    k = 0
    while (dp := sim.next_decision()) is not None:
        k += 1
        if k % read_every == 0:
            assert dp.ready.tolist() == sorted(sim.ready)
            assert not dp.ready.flags.writeable
        # decide from the simulator's own state, so that the decision point's ready set is read only when asked
        ready = sorted(sim.ready)
        pairs = [(t, nd) for t in ready for nd in range(cp.n_nodes) if sim.can_start(t, nd)]
        picks = [pairs[int(rng.integers(len(pairs)))]] if pairs else []
        later = [a for t in ready for a in sim.data_ready_all_s(t).tolist() if a > sim.now]
        sim.apply(Decision(picks, None if picks or not later else min(later)))  # inputs on their way: wake
    assert sim.done


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), load=st.floats(0.5, 1.5))
def test_work_left_is_each_workflows_work_not_done(seed: int, load: float) -> None:
    """`work_left` is, at every decision point of a stream, each workflow's work summed over its tasks not done
    (running ones whole, waiting and not yet submitted ones too), whatever failures undid; nothing else."""
    cp = compile_problem(generate_stream(cluster_preset("small-3"), 6, load, "bursty", seed=seed).problem())
    longest = float(cp.exec_s.max())
    sim = Simulator(cp, SimConfig(noise_cv=0.4, mtbf_s=10 * longest, mttr_s=longest), seed)
    work = task_work(cp)
    rng = np.random.default_rng(seed)
    seen_partial = False
    while (dp := sim.next_decision()) is not None:
        left = dp.work_left(work)
        for w in range(cp.n_workflows):
            tasks = [t for t in range(cp.n_tasks) if int(cp.task_wf[t]) == w and int(dp.status[t]) != DONE]
            assert left[w] == pytest.approx(sum(float(work[t]) for t in tasks), rel=1e-12, abs=1e-9)
        seen_partial |= bool(0 < left.min() < left.max())
        pairs = dp.pairs()
        sim.apply(Decision([pairs[int(rng.integers(len(pairs)))]] if pairs else [], None if pairs else dp.wake_s))
    assert sim.done
    assert np.all(sim.decision_point().work_left(work) == 0.0)
    assert seen_partial


def test_a_decision_point_read_after_the_simulator_moved_on_raises() -> None:
    """What a decision point computes on first use describes its instant: read after a start, it would describe
    another, so it raises; what was read before the start stays readable."""
    cp = compile_problem(
        Problem(workflows=[generate_workflow("layered", 30, seed=1, ccr=1.0)], cluster=cluster_preset("hetero-16"))
    )
    sim = Simulator(cp, SimConfig(), 3)
    unread = sim.next_decision()
    assert unread is not None
    read = sim.decision_point()  # the same instant
    ready = read.ready.copy()
    t, nd = read.pairs()[0]
    sim.apply(Decision([(t, nd)]))
    assert np.array_equal(read.ready, ready) and read.legal.any()  # read before: kept
    for name in ("ready", "legal", "arrival_s", "wake_s"):
        with pytest.raises(StaleDecisionPoint, match="moved on"):
            getattr(unread, name)  # never read before: refused
    assert t not in sim.decision_point().ready.tolist()

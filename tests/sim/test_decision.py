"""The decision point hands on the simulator's read calls as they are: every forwarded name is a documented
DecisionPoint method, and the bound call and the method give the same answers at every decision of a run."""

from __future__ import annotations

from typing import Any

import numpy as np

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import Decision, DecisionPoint
from dagsched.sim.engine import _FORWARDED, Simulator


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, list):  # Timelines: each node's planned use
        return [(x.times, x.used, x.available_from) for x in a] == [(y.times, y.used, y.available_from) for y in b]
    return np.array_equal(np.asarray(a), np.asarray(b))


def test_forwarded_calls_are_the_methods_they_stand_for() -> None:
    assert all(callable(getattr(DecisionPoint, name, None)) for name in _FORWARDED)
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
        assert set(calls) <= set(_FORWARDED) and len(_FORWARDED) == 12
        for name, args in calls.items():
            assert dp.__dict__[name].__self__ is sim  # the simulator's own bound call
            assert _same(dp.__dict__[name](*args), getattr(DecisionPoint, name)(dp, *args)), name
        checked += 1
        sim.apply(Decision(dp.pairs()[:1]))  # one start per decision: many decision points
    assert checked > 5

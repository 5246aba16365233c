"""The run's state is copied by one mechanism: every field declares what a fork does with it, nothing else can be
set, and a fork owns what it may change while the parent goes on untouched. The hidden randomness is drawn per
node and per kind, the same whatever order it is asked in, and a fork has none."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.generate import cluster_preset
from dagsched.generate.streams import generate_stream
from dagsched.model import CompiledProblem, compile_problem
from dagsched.schedulers import make_scheduler
from dagsched.sim.config import SimConfig
from dagsched.sim.disruptions import Disruptions
from dagsched.sim.engine import Simulator
from dagsched.sim.state import SimState, _fork_rules, copied, fresh, shared


def _stream(seed: int, n_wf: int = 4) -> CompiledProblem:
    return compile_problem(generate_stream(cluster_preset("small-3"), n_wf, 0.9, "poisson", seed=seed).problem())


def test_every_field_has_a_rule_and_construction_sets_them_all() -> None:
    sim = Simulator(_stream(1), SimConfig(noise_cv=0.2), 1)
    names = [f.name for f in fields(Simulator)]
    assert [name for name, _ in _fork_rules(Simulator)] == names
    for name in names:
        getattr(sim, name)  # set by the constructor (a slot never set raises AttributeError)
    assert not hasattr(sim, "__dict__")


def test_an_undeclared_attribute_cannot_be_set() -> None:
    """Slots: state kept outside the declared fields (which a fork would not copy) fails where it is set."""
    sim = Simulator(_stream(1), SimConfig(), 1)
    with pytest.raises(AttributeError):
        sim.scratch = 1  # type: ignore[attr-defined]


def test_a_field_without_a_rule_fails_at_once() -> None:
    """A field declared without saying what a fork does with it fails the first construction."""

    @dataclass(slots=True, eq=False, repr=False, init=False)
    class Careless(SimState):
        extra: int = 0  # no rule

    with pytest.raises(KeyError):
        Careless(_stream(1))

    @dataclass(slots=True, eq=False, repr=False, init=False)
    class Careful(SimState):
        counter: int = fresh(lambda: 7)
        shared_list: list[int] = shared()
        own_list: list[int] = copied()

    state = Careful(_stream(1))
    assert state.counter == 7
    state.shared_list, state.own_list, state.counter = [1], [2], 8
    f = state.fork()
    assert f.counter == 7 and f.shared_list is state.shared_list
    assert f.own_list == [2] and f.own_list is not state.own_list


def _snapshot(sim: Simulator) -> dict[str, object]:
    return {
        "arrays": [a.copy() for a in (sim.status, sim.node_of, sim.start_s, sim.finish_s, sim.free, sim.attempts)],
        "rows": [r[:] for r in sim._free_rows],
        "ready": set(sim.ready),
        "on": [set(s) for s in sim.running_on],
        "running": {t: (r.node, r.start, r.work_left, r.version) for t, r in sim.running.items()},
        "heap": list(sim._heap),
        "now": sim.now,
        "attempts": len(sim.trace.attempts),
    }


def _same(a: dict[str, object], b: dict[str, object]) -> bool:
    arrays_a, arrays_b = a["arrays"], b["arrays"]
    assert isinstance(arrays_a, list) and isinstance(arrays_b, list)
    if not all(np.array_equal(x, y, equal_nan=True) for x, y in zip(arrays_a, arrays_b, strict=True)):
        return False
    return all(a[k] == b[k] for k in a if k != "arrays")


@settings(deadline=None, max_examples=15)
@given(seed=st.integers(0, 10_000), fork_at=st.integers(1, 40))
def test_a_fork_owns_what_it_changes(seed: int, fork_at: int) -> None:
    """A fork run to the end leaves its parent's state exactly as it was; it starts from equal copies of the state
    arrays (not the same objects), shares the compiled problem, and has no hidden randomness."""
    cp = _stream(seed)
    sim = Simulator(cp, SimConfig(noise_cv=0.3, mtbf_s=5_000.0, straggler_rate_per_h=2.0), seed)
    sched = make_scheduler("fcfs")
    sched.reset(cp, sim.decision_point(), seed)
    decided = 0
    while decided < fork_at or not sim.node_up.all():  # a down node stays down in a fork: its repair is hidden
        dp = sim.next_decision()
        if dp is None:
            return
        sim.apply(sched.decide(dp))
        decided += 1
    before = _snapshot(sim)
    fork = sim.fork()
    for name in ("status", "node_of", "start_s", "finish_s", "free", "node_up", "submitted"):
        mine, theirs = getattr(fork, name), getattr(sim, name)
        assert mine is not theirs and np.array_equal(mine, theirs, equal_nan=True), name
    assert fork.cp is sim.cp and fork.ready == sim.ready and fork.ready is not sim.ready
    assert fork.disruptions.sigma2 == 0.0 and fork.disruptions.mtbf_s is None
    assert fork.trace.attempts == [] and fork.trace.noise_cv == 0.0
    forked = make_scheduler("fcfs")
    forked.reset(cp, fork.decision_point(), seed)
    fork.apply(forked.decide(fork.decision_point()))
    fork.run(forked)
    assert fork.done
    assert _same(_snapshot(sim), before)


def test_disruptions_do_not_depend_on_the_order_they_are_asked_in() -> None:
    """Node 2's failures are the same whether node 0 was asked first or not (one stream per node and kind)."""
    config = SimConfig(noise_cv=0.2, mtbf_s=100.0, straggler_rate_per_h=3.0)
    a, b = Disruptions.draw(5, config, 10, 4), Disruptions.draw(5, config, 10, 4)
    a.next_failure_s(0, 0.0)
    a.next_straggler_s(2, 0.0)
    assert a.next_failure_s(2, 0.0) == b.next_failure_s(2, 0.0)
    assert a.first_noise == b.first_noise and len(a.first_noise) == 10
    assert a.first_noise != Disruptions.draw(6, config, 10, 4).first_noise


def test_no_disruptions_in_classic_mode_or_a_fork() -> None:
    classic = Disruptions.draw(5, SimConfig(classic=True), 10, 4)
    assert classic.sigma2 == 0.0 and classic.first_noise == [1.0] * 10
    for d in (classic, Disruptions.none()):
        assert d.next_failure_s(0, 0.0) is None and d.next_straggler_s(0, 0.0) is None
    assert Disruptions.draw(5, SimConfig(mtbf_s=100.0, mttr_s=None), 10, 4).repair_s(0, 1.0) is None

"""The engine's traces, bit for bit, against fingerprints recorded before its speed-ups.

Each case runs one scheduler on one problem in one mode and hashes the whole trace (every attempt, outage,
slowdown and transfer, floats by `repr`, and the number of decisions). A change that only makes the engine
faster leaves every hash as recorded; a change of semantics must say so by re-recording them:

    DAGSCHED_RECORD_FINGERPRINTS=1 .venv/bin/python -m pytest tests/sim/test_trace_fingerprints.py

The cases cover classic and cloud mode, noise, failures and repairs, stragglers, overrun migrations, boot
delays, network contention, streams of many workflows and the search planners' forks.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.streams import generate_stream
from dagsched.model import CompiledProblem, Problem, compile_problem
from dagsched.schedulers import make_scheduler
from dagsched.schedulers.base import Scheduler
from dagsched.schedulers.mcts import MCTSUCT, MCTSConfig
from dagsched.sim.config import MODES, SimConfig
from dagsched.sim.engine import Simulator
from dagsched.sim.trace import Trace

RECORD = Path(__file__).parent / "data" / "trace_fingerprints.json"

CONFIGS: dict[str, SimConfig] = {
    "classic": MODES["classic"],
    "cloud": MODES["cloud"],
    # a day's failures and a straggler episode an hour squeezed into minutes, and the overrun guard
    "harsh": SimConfig(noise_cv=0.5, mtbf_s=400.0, mttr_s=60.0, straggler_rate_per_h=20.0, overrun_factor=1.5),
    "contention": SimConfig(noise_cv=0.2, network_contention=True),
}


@cache
def problem(name: str) -> CompiledProblem:
    if name == "layered-120":
        wf = generate_workflow("layered", 120, seed=3, ccr=2.0)
        return compile_problem(Problem(workflows=[wf], cluster=cluster_preset("hetero-16")))
    if name == "stream-12":
        return compile_problem(generate_stream(cluster_preset("hetero-16"), 12, 0.9, "bursty", seed=5).problem())
    raise KeyError(name)


SCHEDULERS: dict[str, Callable[[], Scheduler]] = {
    "heft": lambda: make_scheduler("heft"),
    "fair": lambda: make_scheduler("fair"),
    "kube_default": lambda: make_scheduler("kube_default"),
    "min_min": lambda: make_scheduler("min_min"),
    "mcts_uct": lambda: MCTSUCT(MCTSConfig(sims=4)),
}

CASES = [
    (p, mode, s)
    for p in ("layered-120", "stream-12")
    for mode in CONFIGS
    for s in SCHEDULERS
    if not (s == "mcts_uct" and (p == "stream-12" or mode != "cloud"))  # forks on one problem are enough
]


def fingerprint(trace: Trace, decisions: int) -> str:
    """sha256 of the trace's records, floats written by repr (exact)."""
    h = hashlib.sha256()
    h.update(f"{decisions}|{trace.classic}|{trace.noise_cv}|{trace.boot_delay}|{trace.contention}\n".encode())
    for group in (trace.attempts, trace.outages, trace.slowdowns, trace.transfers):
        for rec in group:
            h.update(repr(rec).encode())
        h.update(b"\n")
    return h.hexdigest()


def run_case(p: str, mode: str, s: str) -> str:
    cp = problem(p)
    sim = Simulator(cp, CONFIGS[mode], seed=7)
    sched = SCHEDULERS[s]()
    sched.reset(cp, sim.decision_point(), 7)
    trace = sim.run(sched)
    return fingerprint(trace, sim.n_decisions)


def _recorded() -> dict[str, str]:
    return json.loads(RECORD.read_text()) if RECORD.exists() else {}


@pytest.mark.parametrize(("p", "mode", "s"), CASES, ids=["/".join(c) for c in CASES])
def test_trace_is_as_recorded(p: str, mode: str, s: str) -> None:
    key = f"{p}/{mode}/{s}"
    got = run_case(p, mode, s)
    if os.environ.get("DAGSCHED_RECORD_FINGERPRINTS"):
        recorded = _recorded()
        recorded[key] = got
        RECORD.parent.mkdir(exist_ok=True)
        RECORD.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")
        return
    assert key in _recorded(), f"no fingerprint recorded for {key}"
    assert got == _recorded()[key], f"{key}: the trace differs from the one recorded"


def test_fingerprint_sees_a_one_ulp_change() -> None:
    """The hash is exact: moving one attempt's end by one ulp changes it."""
    import math

    cp = problem("layered-120")
    sim = Simulator(cp, CONFIGS["cloud"], seed=7)
    sched = make_scheduler("heft")
    sched.reset(cp, sim.decision_point(), 7)
    trace = sim.run(sched)
    before = fingerprint(trace, sim.n_decisions)
    a = trace.attempts[5]
    trace.attempts[5] = a._replace(end=math.nextafter(a.end, math.inf))
    assert fingerprint(trace, sim.n_decisions) != before

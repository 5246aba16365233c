"""dagsched's timings agree with SimGrid's on the same placements: to floating point in classic mode, in
cloud mode without contention, and in cloud mode with dagsched's network contention against SimGrid's shared
up-links and down-links; dagsched's free network against SimGrid's shared links: never earlier.

SimGrid runs in its own process (`dagsched.sim.simgrid_replay`), one per batch; it comes from Debian's
python3-simgrid (deploy/ci-tools.sh installs it). docs/simulator.md has the figures per family.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dagsched.generate import FAMILIES, cluster_preset, generate_workflow
from dagsched.generate.traces import real_traces
from dagsched.io import read_workflow
from dagsched.model import Cluster, Problem, Workflow, compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers import make_scheduler, simulate
from dagsched.sim.config import SimConfig
from dagsched.sim.crosscheck import cross_check
from dagsched.sim.simgrid_replay import simgrid_unavailable_reason
from dagsched.sim.trace import Trace

_REASON = simgrid_unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")

CLASSIC = SimConfig(classic=True)
CLOUD = SimConfig(noise_cv=0.2)
TOLERANCE = 1e-9


def _cluster(preset: str, latency_s: float) -> Cluster:
    return cluster_preset(preset).model_copy(update={"latency": latency_s})


def _generated() -> list[tuple[str, CompiledProblem]]:
    """4 families x 3 sizes x 2 clusters (one with a 2 ms latency): 24 problems."""
    out = []
    for family in FAMILIES:
        for n in (10, 30, 60):
            for preset, latency in (("small-3", 0.0), ("hetero-16", 0.002)):
                wf = generate_workflow(family, n, seed=n)
                cp = compile_problem(Problem(workflows=[wf], cluster=_cluster(preset, latency)))
                out.append((f"{family}-{n}-{preset}", cp))
    return out


def _stream() -> CompiledProblem:
    """Three workflows arriving at 0, 50 and 400 s share one cluster."""
    wfs = [
        Workflow(**{**generate_workflow(f, 20, seed=i).model_dump(), "name": f"w{i}", "submit_time": at})
        for i, (f, at) in enumerate((("layered", 0.0), ("random", 50.0), ("etl_star", 400.0)))
    ]
    return compile_problem(Problem(workflows=wfs, cluster=_cluster("hetero-16", 0.001)))


def _runs(problems: list[tuple[str, CompiledProblem]], config: SimConfig) -> list[tuple[CompiledProblem, Trace]]:
    schedulers = ("heft", "fcfs", "min_min")
    return [
        (cp, simulate(cp, make_scheduler(schedulers[i % 3]), config, seed=1).trace)
        for i, (_, cp) in enumerate(problems)
    ]


@pytest.fixture(scope="module")
def problems(wfinstances: Path) -> list[tuple[str, CompiledProblem]]:
    out = _generated() + [("stream", _stream())]
    for entry in [e for e in real_traces(wfinstances) if e.n_tasks <= 120][:3]:
        wf = read_workflow(wfinstances / entry.file)
        out.append((entry.file, compile_problem(Problem(workflows=[wf], cluster=_cluster("hetero-16", 0.001)))))
    return out


def test_classic_mode_matches_simgrid_to_floating_point(problems: list[tuple[str, CompiledProblem]]) -> None:
    """Classic mode, 28 problems (24 generated, a stream of 3 workflows, 3 real traces): every start and
    finish within 1e-9 relative of SimGrid's."""
    assert len(problems) >= 20
    comparisons = cross_check(_runs(problems, CLASSIC), CLASSIC, seed=1)
    worst = {name: (c.max_rel_finish, c.max_rel_start) for (name, _), c in zip(problems, comparisons, strict=True)}
    assert max(max(v) for v in worst.values()) <= TOLERANCE, worst


def test_cloud_mode_without_contention_matches_simgrid(problems: list[tuple[str, CompiledProblem]]) -> None:
    """Cloud mode (several tasks per node, hidden noise): SimGrid's multi-core hosts and dedicated links agree
    to 1e-9 as long as the tasks on a node never outnumber its cores (integer core requests)."""
    chosen = [p for p in problems if not p[0].endswith(".json.gz")]
    comparisons = cross_check(_runs(chosen, CLOUD), CLOUD, seed=1)
    assert max(c.max_rel_finish for c in comparisons) <= TOLERANCE


def test_shared_links_only_delay(problems: list[tuple[str, CompiledProblem]]) -> None:
    """Under SimGrid's max-min shared links (dagsched without contention), no task finishes earlier than in
    dagsched, and data-heavy problems finish measurably later."""
    chosen = [p for p in problems if "-60-" in p[0]]
    comparisons = cross_check(_runs(chosen, CLOUD), CLOUD, seed=1, contention=True)
    for c in comparisons:
        assert c.makespan_simgrid_s >= c.makespan_dagsched_s * (1 - TOLERANCE)
    assert max(c.makespan_rel for c in comparisons) > 0.01


CONTENDED = SimConfig(noise_cv=0.2, network_contention=True)


def test_network_contention_matches_simgrids_shared_links(problems: list[tuple[str, CompiledProblem]]) -> None:
    """With `network_contention`, 28 problems (24 generated with and without latency, the stream, 3 real traces)
    placed by HEFT, FCFS and min-min under contention: every start and finish within 1e-9 relative of SimGrid's
    on its shared up-link and down-link per node (CM02, weight-S 0: plain max-min, as every route has the same
    latency), with transfers starting when their child is placed in both; and contention did matter."""
    runs = _runs(problems, CONTENDED)
    comparisons = cross_check(runs, CONTENDED, seed=1)
    worst = {name: (c.max_rel_finish, c.max_rel_start) for (name, _), c in zip(problems, comparisons, strict=True)}
    assert len(worst) >= 10
    assert max(max(v) for v in worst.values()) <= TOLERANCE, worst
    free = cross_check(_runs(problems, CLOUD), CLOUD, seed=1)
    slower = [c.makespan_dagsched_s / f.makespan_dagsched_s for c, f in zip(comparisons, free, strict=True)]
    assert max(slower) > 1.2
    assert sum(len(tr.transfers) for _, tr in runs) > 100

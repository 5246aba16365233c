"""Network contention (`SimConfig.network_contention`): transfers share each node's up-link and down-link max-min
fair, start when their child is placed, and never beat the free network; the validator recomputes the sharing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.generate import FAMILIES, cluster_preset, generate_workflow
from dagsched.model import Cluster, Edge, Node, Problem, Task, Workflow, compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.base import Scheduler
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Decision, Simulator
from dagsched.sim.network import max_min_rates
from dagsched.sim.trace import Trace
from dagsched.sim.validate import validate_trace

CONTENDED = SimConfig(network_contention=True)
MB = 1e6


class Pin(Scheduler):
    """Place each ready task on a fixed node as soon as it fits (under contention its inputs are then fetched)."""

    name = "pin"

    def __init__(self, where: dict[int, int]) -> None:
        super().__init__()
        self.where = where

    def decide(self, dp) -> Decision:  # type: ignore[no-untyped-def]
        free = dp.free.copy()
        out, wake = [], float("inf")
        for t in dp.ready_tasks():
            nd = self.where[t]
            if dp.can_start(t, nd, free):
                free[nd] -= dp.request(t)
                out.append((t, nd))
            elif dp.data_ready_s(t, nd) > dp.now:  # the free network: wait for the inputs
                wake = min(wake, dp.data_ready_s(t, nd))
        return Decision(out, wake if wake < float("inf") else None)


def _problem(tasks: list[Task], edges: list[Edge], n_nodes: int, latency: float = 0.0, links=()) -> CompiledProblem:  # type: ignore[no-untyped-def]
    nodes = [Node(id=f"n{i}", cpu=4, mem=16, bandwidth=MB) for i in range(n_nodes)]
    wf = Workflow(name="w", tasks=tasks, edges=edges)
    return compile_problem(Problem(workflows=[wf], cluster=Cluster(nodes=nodes, latency=latency, links=list(links))))


def _index(cp: CompiledProblem, name: str) -> int:
    return next(t for t in range(cp.n_tasks) if cp.task_name(t) == name)


def _run(cp: CompiledProblem, where: dict[str, int], config: SimConfig = CONTENDED) -> tuple[dict[str, float], Trace]:
    sim = Simulator(cp, config, 0)
    pin = Pin({_index(cp, name): nd for name, nd in where.items()})
    pin.reset(cp, sim.decision_point())
    trace = sim.run(pin)
    validate_trace(cp, trace).raise_if_invalid()
    return {cp.task_name(a.task): a.start for a in trace.attempts}, trace


def _fan(latency: float = 0.0) -> CompiledProblem:
    """p (1 s) sends 2 MB to c1 and to c2; q (2 s), on the same node, sends 1 MB to c3; all nodes 1 MB/s."""
    tasks = [Task(id=i, runtime=r) for i, r in (("p", 1.0), ("q", 2.0), ("c1", 1.0), ("c2", 1.0), ("c3", 1.0))]
    edges = [
        Edge(src="p", dst="c1", data=2 * MB),
        Edge(src="p", dst="c2", data=2 * MB),
        Edge(src="q", dst="c3", data=MB),
    ]
    return _problem(tasks, edges, 4, latency)


def test_two_transfers_from_one_sender_take_twice_as_long_and_a_third_reshares() -> None:
    """p's two 2 MB transfers share its node's 1 MB/s up-link (0.5 MB/s each); at 2 s q's 1 MB transfer joins:
    a third each until c3's arrives at 5 s, then c1's and c2's last 0.5 MB at 0.5 MB/s: 6 s. Free network: 3 s."""
    cp = _fan()
    where = {"p": 0, "q": 0, "c1": 1, "c2": 2, "c3": 3}
    free, _ = _run(cp, where, SimConfig())
    assert (free["c1"], free["c2"], free["c3"]) == (3.0, 3.0, 3.0)
    start, trace = _run(cp, where)
    assert start["c3"] == pytest.approx(5.0, rel=1e-12)
    assert start["c1"] == pytest.approx(6.0, rel=1e-12) and start["c2"] == pytest.approx(6.0, rel=1e-12)
    assert len(trace.transfers) == 3 and all(x.arrived for x in trace.transfers)


def test_latency_comes_first_and_once() -> None:
    """With 0.5 s latency each transfer waits 0.5 s, then shares: p's two 2 MB transfers move bytes from 1.5 s at
    0.5 MB/s (until q's joins at 2.5 s: a third each; c3's 1 MB arrives at 5.5 s), c1 and c2 at 6.5 s."""
    start, _ = _run(_fan(0.5), {"p": 0, "q": 0, "c1": 1, "c2": 2, "c3": 3})
    assert start["c3"] == pytest.approx(5.5, rel=1e-12)
    assert start["c1"] == pytest.approx(6.5, rel=1e-12)


def test_one_receiver_shares_its_down_link() -> None:
    """Two senders on different nodes to one child: its node's down-link is split, each 1 MB takes 2 s."""
    tasks = [Task(id="a", runtime=1.0), Task(id="b", runtime=1.0), Task(id="c", runtime=1.0)]
    edges = [Edge(src="a", dst="c", data=MB), Edge(src="b", dst="c", data=MB)]
    start, _ = _run(_problem(tasks, edges, 3), {"a": 0, "b": 1, "c": 2})
    assert start["c"] == pytest.approx(3.0, rel=1e-12)


def test_same_node_edges_cost_nothing_and_own_links_are_used() -> None:
    """A child on its parent's node starts at once; a pair with its own link (4 MB/s) uses it alone."""
    tasks = [Task(id="a", runtime=1.0), Task(id="b", runtime=1.0), Task(id="c", runtime=1.0)]
    edges = [Edge(src="a", dst="b", data=8 * MB), Edge(src="a", dst="c", data=8 * MB)]
    cp = _problem(tasks, edges, 2, links=[{"a": "n0", "b": "n1", "bandwidth": 4 * MB}])
    start, _ = _run(cp, {"a": 0, "b": 0, "c": 1})
    assert start["b"] == 1.0
    assert start["c"] == pytest.approx(3.0, rel=1e-12)


def test_max_min_rates_progressive_filling() -> None:
    """Links of 10 and 4: flows {0}, {0, 1}, {1}: the 4-link is split 2/2, the first flow takes the 10-link's 8."""
    assert max_min_rates([(0,), (0, 1), (1,)], [10.0, 4.0]) == [8.0, 2.0, 2.0]


def test_validator_recomputes_the_sharing() -> None:
    """Moving one recorded transfer's end breaks [network]; the untouched trace passes."""
    cp = _fan()
    _, trace = _run(cp, {"p": 0, "q": 0, "c1": 1, "c2": 2, "c3": 3})
    x = trace.transfers[0]
    bent = dataclasses.replace(trace, transfers=[dataclasses.replace(x, end=x.end - 0.5), *trace.transfers[1:]])
    assert any(v.startswith("[network]") for v in validate_trace(cp, bent).violations)
    lost = dataclasses.replace(trace, transfers=trace.transfers[1:])
    assert any(v.startswith("[data-arrival]") for v in validate_trace(cp, lost).violations)


def test_classic_mode_refuses_contention() -> None:
    with pytest.raises(ValueError):
        SimConfig(classic=True, network_contention=True)


def _free_bound_holds(cp: CompiledProblem, trace: Trace) -> bool:
    """Every attempt starts no earlier than each cross-node parent's end + latency + data / bandwidth."""
    done = {a.task: a for a in trace.attempts if a.outcome == "done"}
    for a in trace.attempts:
        for k in range(int(cp.pred_ptr[a.task]), int(cp.pred_ptr[a.task + 1])):
            parent = done[int(cp.pred_idx[k])]
            bound = parent.end + (
                0.0 if parent.node == a.node else cp.comm_s(float(cp.pred_data[k]), parent.node, a.node)
            )
            if a.start < bound - 1e-9 * max(1.0, bound):
                return False
    return True


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    family=st.sampled_from(FAMILIES),
    n=st.integers(5, 30),
    seed=st.integers(0, 1000),
    scheduler=st.sampled_from(["heft", "fcfs", "min_min", "random", "sjf"]),
    preset=st.sampled_from(["small-3", "hetero-16"]),
    latency=st.sampled_from([0.0, 0.01]),
    failures=st.booleans(),
)
def test_contention_never_beats_the_free_network_and_every_trace_is_valid(
    family: str, n: int, seed: int, scheduler: str, preset: str, latency: float, failures: bool
) -> None:
    """Any family, size, scheduler and cluster, with noise and (sometimes) node failures: every arrival is at
    least the free network's, and the validator (with its own max-min recomputation) accepts the trace."""
    wf = generate_workflow(family, n, seed=seed)
    cluster = cluster_preset(preset).model_copy(update={"latency": latency})
    cp = compile_problem(Problem(workflows=[wf], cluster=cluster))
    config = SimConfig(noise_cv=0.2, network_contention=True, mtbf_s=2000.0 if failures else None, mttr_s=100.0)
    trace = simulate(cp, make_scheduler(scheduler), config, seed=seed).trace
    validate_trace(cp, trace).raise_if_invalid()
    assert _free_bound_holds(cp, trace)
    assert all(x.end >= x.start for x in trace.transfers)


def test_contention_only_delays_makespans() -> None:
    """Same placement, same noise: the contended makespan is never shorter, and data-heavy etl_star is longer."""
    from dagsched.sim.crosscheck import placement_of, replay_in_dagsched

    wf = generate_workflow("etl_star", 60, seed=1)
    cp = compile_problem(Problem(workflows=[wf], cluster=cluster_preset("hetero-16")))
    free = simulate(cp, make_scheduler("heft"), SimConfig(noise_cv=0.2), seed=1).trace
    placement = placement_of(cp, free)
    contended = replay_in_dagsched(cp, placement, SimConfig(noise_cv=0.2, network_contention=True), seed=1)
    replayed = replay_in_dagsched(cp, placement, SimConfig(noise_cv=0.2), seed=1)
    finish_free = np.array([a.end for a in sorted(replayed.attempts, key=lambda a: a.task)])
    finish_cont = np.array([a.end for a in sorted(contended.attempts, key=lambda a: a.task)])
    assert np.all(finish_cont >= finish_free * (1 - 1e-12))
    assert finish_cont.max() > 1.5 * finish_free.max()


def test_forks_carry_the_transfers_in_flight() -> None:
    """A fork taken while inputs are on their way rolls forward to the same arrivals (no noise here)."""
    cp = _fan()
    where = {"p": 0, "q": 0, "c1": 1, "c2": 2, "c3": 3}
    sim = Simulator(cp, CONTENDED, 0)
    pin = Pin({_index(cp, name): nd for name, nd in where.items()})
    pin.reset(cp, sim.decision_point())
    while (dp := sim.next_decision()) is not None:
        sim.apply(pin.decide(dp))
        if sim.now >= 2.0 and sim._inputs_left:
            break
    fork = sim.fork()
    fork_pin = Pin(pin.where)
    trace = fork.run(fork_pin)
    starts = {cp.task_name(a.task): a.start for a in trace.attempts}
    assert starts["c3"] == pytest.approx(5.0) and starts["c1"] == pytest.approx(6.0)


def test_cli_simulate_contention(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`dagsched simulate --contention` runs the contended network (a valid trace, makespan no shorter on etl_star);
    with --classic it is refused with the field named."""
    import json

    from typer.testing import CliRunner

    from dagsched.cli import app
    from dagsched.io import write_workflow

    path = tmp_path / "etl.yaml"
    write_workflow(generate_workflow("etl_star", 30, seed=1), path)
    runner = CliRunner()
    base = ["simulate", "-w", str(path), "-c", "hetero-16", "--cloud", "--json"]
    free = runner.invoke(app, base)
    contended = runner.invoke(app, [*base, "--contention"])
    assert free.exit_code == 0 and contended.exit_code == 0, contended.output
    free_out, cont_out = json.loads(free.stdout), json.loads(contended.stdout)
    assert cont_out["valid"] is True
    assert cont_out["makespan"] > free_out["makespan"]
    refused = runner.invoke(app, ["simulate", "-w", str(path), "-c", "hetero-16", "--classic", "--contention"])
    assert refused.exit_code == 2 and "network_contention" in refused.output

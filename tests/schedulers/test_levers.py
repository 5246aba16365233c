"""The stream levers as hand rules, each on a tiny case worked out by hand: heSRPT's shares, `srpt_cap`'s cap as a
priority, `fair_cap`'s hard cap, `srpt_admit`'s admission hold and `srpt_local`'s node tie-break (alone and under
`fair_cap`). Cloud mode without noise, so the times are exact; every trace validates."""

from __future__ import annotations

import numpy as np
import pytest

from dagsched.model import Cluster, Node, Problem, Task, Workflow, compile_problem
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.base import Scheduler
from dagsched.schedulers.fair_cap import CAP_FACTOR, WeightedFairCap
from dagsched.schedulers.fair_cap_gpu_first import FairCapGPUFirst, cores_per_gpu
from dagsched.schedulers.fair_cap_local import FairCapLocal
from dagsched.schedulers.levers import capped_order, hesrpt_shares
from dagsched.schedulers.srpt_admit import SATURATED, SRPTAdmit
from dagsched.schedulers.srpt_cap import SPEEDUP_P, SRPTCap
from dagsched.sim.config import SimConfig

from .conftest import RoomCase, nodes_of


def _placed(workflows: list[Workflow], cpu: int, scheduler: Scheduler | str) -> dict[str, tuple[float, float]]:
    cp = compile_problem(Problem(workflows=workflows, cluster=Cluster(nodes=[Node(id="n", cpu=cpu, mem=8)])))
    result = simulate(cp, scheduler, SimConfig())
    assert result.valid, result.violations
    return {cp.task_name(a.task): (a.start, a.end) for a in result.trace.attempts}


def _at_zero(placed: dict[str, tuple[float, float]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, (start, _) in placed.items():
        if start == 0.0:
            out[name.split("/")[0]] = out.get(name.split("/")[0], 0) + 1
    return out


def _independent(name: str, n: int, runtime_s: float = 10.0, submit_s: float = 0.0) -> Workflow:
    tasks = [Task(id=f"{name.lower()}{i}", runtime=runtime_s) for i in range(n)]
    return Workflow(name=name, tasks=tasks, submit_time=submit_s)


def test_hesrpt_shares() -> None:
    """p = 0.5 (b = 2): two jobs 3/4 and 1/4; four 7/16, 5/16, 3/16, 1/16 (shortest first); p = 0 shares equally;
    p near 1 gives almost all to the shortest; shares sum to 1; p outside [0, 1) is refused."""
    assert hesrpt_shares(2, 0.5).tolist() == [0.75, 0.25]
    assert hesrpt_shares(4, 0.5).tolist() == [7 / 16, 5 / 16, 3 / 16, 1 / 16]
    assert hesrpt_shares(5, 0.0) == pytest.approx(np.full(5, 0.2))
    assert hesrpt_shares(3, 0.99)[0] > 0.99
    assert hesrpt_shares(1, SPEEDUP_P).tolist() == [1.0] and len(hesrpt_shares(0, 0.5)) == 0
    for m in (2, 7, 30):
        assert hesrpt_shares(m, 0.7).sum() == pytest.approx(1.0)
        assert np.all(np.diff(hesrpt_shares(m, 0.7)) <= 0)
    with pytest.raises(ValueError, match="p must"):
        hesrpt_shares(3, 1.0)


def test_capped_order_defers_or_drops() -> None:
    """Tasks at their cap go after the others (a priority) or not at all (strict)."""
    assert list(capped_order([1, 2, 3, 4], lambda t: t % 2 == 1)) == [2, 4, 1, 3]
    assert list(capped_order([1, 2, 3, 4], lambda t: t % 2 == 1, strict=True)) == [2, 4]


def test_srpt_cap_shares_the_cluster_between_the_shortest_workflows() -> None:
    """One 4-cpu node; B (4 tasks of 10 s, work 40) and A (5 tasks, work 50) at 0. srpt_hold gives B all four cores.
    srpt_cap (p = 0.5): B's share is 3/4, A's 1/4; B takes 3 cores and is at its cap, A takes one (it holds nothing)
    and is at its cap, B's fourth task is put off behind A's and the room is gone: B 3, A 1. With p = 0 the shares
    are 1/2 each: B 2, A 2. One workflow alone is never capped."""
    wfs = [_independent("A", 5), _independent("B", 4)]
    assert _at_zero(_placed(wfs, 4, "srpt_hold")) == {"B": 4}
    assert _at_zero(_placed(wfs, 4, "srpt_cap")) == {"B": 3, "A": 1}
    assert _at_zero(_placed(wfs, 4, SRPTCap(p=0.0))) == {"B": 2, "A": 2}
    assert sum(s == 0.0 for s, _ in _placed([_independent("A", 5)], 4, "srpt_cap").values()) == 4
    with pytest.raises(ValueError, match="p must"):
        SRPTCap(p=1.5)


def test_srpt_cap_is_work_conserving() -> None:
    """One 8-cpu node, B (4 tasks) and A (2 tasks): both at their caps leave room, which the put-off tasks take:
    all six start at 0."""
    placed = _placed([_independent("A", 2), _independent("B", 4)], 8, "srpt_cap")
    assert _at_zero(placed) == {"A": 2, "B": 4}


def test_srpt_cap_hard_leaves_the_room_free() -> None:
    """As above with the cap a hard limit: A takes its two (under 6 cores), B its two (2 cores), and four cores stay
    free at 0; B's last two start when A's end, at 10."""
    placed = _placed([_independent("A", 2), _independent("B", 4)], 8, SRPTCap(hard=True))
    assert _at_zero(placed) == {"A": 2, "B": 2}
    assert sorted(start for start, _ in placed.values()) == [0.0, 0.0, 0.0, 0.0, 10.0, 10.0]


def test_fair_cap_is_a_hard_limit() -> None:
    """One 4-cpu node; A (8 tasks of 10 s, work 80), B (2 tasks, work 20) at 0. Weights 1/80^2 and 1/20^2: fair
    shares 1/17 and 16/17. fair fills the cluster: A 1, B 2, then A again (B has no more): A 2, B 2. fair_cap (cap
    2 x 1/17 of the cluster): A holds 1/4 after its first task and is at its cap, so the fourth core stays free at 0:
    A 1, B 2. With a cap factor of 20 (20/17 > 1) nothing is capped: as fair."""
    wfs = [_independent("A", 8), _independent("B", 2)]
    assert CAP_FACTOR >= 1.0
    assert _at_zero(_placed(wfs, 4, "fair")) == {"A": 2, "B": 2}
    assert _at_zero(_placed(wfs, 4, WeightedFairCap(2.0))) == {"A": 1, "B": 2}
    assert _at_zero(_placed(wfs, 4, WeightedFairCap(20.0))) == {"A": 2, "B": 2}
    with pytest.raises(ValueError, match="cap_factor"):
        WeightedFairCap(0.0)


def _admission_case() -> list[Workflow]:
    """S at 0: s1 (1 cpu, 10 s) and s2 (2 cpus, 2 s), work 14; L at 1: l1 (1 cpu, 20 s), work 20."""
    s = Workflow(name="S", tasks=[Task(id="s1", runtime=10.0, cpu=1), Task(id="s2", runtime=2.0, cpu=2)])
    return [s, Workflow(name="L", tasks=[Task(id="l1", runtime=20.0, cpu=1)], submit_time=1.0)]


def test_srpt_admit_holds_a_new_workflow_while_shorter_work_waits() -> None:
    """One 2-cpu node. At 0 s1 starts; s2 needs both cores and waits. At 1 L arrives with half the cores busy.
    srpt_hold starts l1 at once (1-21), and s2 waits for both cores until 21 (S done at 23). srpt_admit with
    saturation at 0.5: the cluster is saturated and S (14 left) is shorter than L (20) and has s2 waiting, so l1 is
    held: s2 runs 10-12 and l1 12-32. At the default saturation (0.85) half-busy is not saturated: as srpt_hold."""
    hold = _placed(_admission_case(), 2, "srpt_hold")
    assert hold == {"S/s1": (0.0, 10.0), "L/l1": (1.0, 21.0), "S/s2": (21.0, 23.0)}
    admit = _placed(_admission_case(), 2, SRPTAdmit(saturated=0.5))
    assert admit == {"S/s1": (0.0, 10.0), "S/s2": (10.0, 12.0), "L/l1": (12.0, 32.0)}
    assert SATURATED > 0.5 and _placed(_admission_case(), 2, "srpt_admit") == hold
    with pytest.raises(ValueError, match="saturated"):
        SRPTAdmit(saturated=1.5)


def test_srpt_admit_lets_a_shorter_new_workflow_in() -> None:
    """As above, but L is one 4 s task (work 4 < S's 14): it is admitted at once even when saturated (1-5)."""
    wfs = _admission_case()
    wfs[1] = Workflow(name="L", tasks=[Task(id="l1", runtime=4.0, cpu=1)], submit_time=1.0)
    assert _placed(wfs, 2, SRPTAdmit(saturated=0.5))["L/l1"] == (1.0, 5.0)


def test_srpt_local_keeps_the_room_beside_a_tasks_inputs(room_beside_the_data: RoomCase) -> None:
    """Two 2-cpu nodes of one speed. At 0 p and f both go to n0 (first fit). At 10 p ends: c can start on n0 only
    (its 100 GB reach n1 at 90), and s1 arrives, shorter, so served first. srpt_hold puts s1 on n0 (equal finishes to
    the lowest index) and c waits for s1's end; srpt_local sees that c wants n0's last core and puts s1 on n1."""
    hold = room_beside_the_data("srpt_hold")
    assert hold["S/s1"] == ("n0", 10.0) and hold["P/c"] == ("n0", 15.0)
    local = room_beside_the_data("srpt_local")
    assert local["S/s1"] == ("n1", 10.0) and local["P/c"] == ("n0", 10.0)
    assert local["P/p"] == hold["P/p"] == ("n0", 0.0) and local["F/f"] == hold["F/f"] == ("n0", 0.0)


def test_fair_cap_local_keeps_the_room_beside_a_tasks_inputs(room_beside_the_data: RoomCase) -> None:
    """The room case with S listed first. At 10 both workflows hold nothing: fair_cap serves the one listed first, s1,
    puts it on n0, and c waits for its end; fair_cap_local serves c first (P has waited 10 s, S none), keeps n0's last
    core for it, as srpt_local does, and puts s1 on n1."""
    capped = room_beside_the_data("fair_cap", s_first=True)
    assert capped["S/s1"] == ("n0", 10.0) and capped["P/c"] == ("n0", 15.0)
    local = room_beside_the_data("fair_cap_local", s_first=True)
    assert local["S/s1"] == ("n1", 10.0) and local["P/c"] == ("n0", 10.0)


def test_srpt_local_fills_the_first_node_where_no_data_waits() -> None:
    """Without inputs anywhere it packs as srpt_hold does (first fit: the three tasks on n0), and it never takes a
    later finish: a node twice as fast gets all three though the slow one is emptier."""
    same = [Node(id="n0", cpu=4, mem=8), Node(id="n1", cpu=4, mem=8)]
    wfs = [_independent("A", 3)]
    assert (
        nodes_of(wfs, same, "srpt_local")
        == nodes_of(wfs, same, "srpt_hold")
        == {f"a{i}": ("n0", 0.0) for i in range(3)}
    )
    mixed = [Node(id="slow", cpu=4, mem=8), Node(id="fast", cpu=4, mem=8, speed=2.0)]
    assert nodes_of(wfs, mixed, "srpt_local") == {f"a{i}": ("fast", 0.0) for i in range(3)}


def test_fair_cap_local_serves_a_large_workflow_once_it_has_waited() -> None:
    """Highest response ratio among the workflows holding nothing: A (100 s) has waited 50 s when B (10 s) arrives at
    60, and 100 / 50 < 10 / 0: A goes first. By work left alone B would pass it, and every later small one too."""
    one_core = [Node(id="n0", cpu=1, mem=8)]
    wfs = [
        _independent("H", 1, runtime_s=60.0),
        _independent("A", 1, runtime_s=100.0, submit_s=10.0),
        _independent("B", 1, runtime_s=10.0, submit_s=60.0),
    ]
    placed = nodes_of(wfs, one_core, "fair_cap_local")
    assert placed == {"H/h0": ("n0", 0.0), "A/a0": ("n0", 60.0), "B/b0": ("n0", 160.0)}
    by_size = FairCapLocal()
    by_size.ties = "work_left"
    assert nodes_of(wfs, one_core, by_size) == {"H/h0": ("n0", 0.0), "B/b0": ("n0", 60.0), "A/a0": ("n0", 70.0)}
    by_size.ties = "size"
    with pytest.raises(ValueError, match="ties must be one of position, work_left, response_ratio, got 'size'"):
        nodes_of(wfs, one_core, by_size)


def test_fair_cap_local_is_fair_cap_where_no_data_waits() -> None:
    """Without inputs anywhere, on nodes of one speed, fair_cap_local places every task where fair_cap does: the
    node rule only breaks ties that data makes."""
    same = [Node(id="n0", cpu=2, mem=8), Node(id="n1", cpu=2, mem=8)]
    wfs = [_independent("A", 5), _independent("B", 3, runtime_s=4.0, submit_s=2.0)]
    assert nodes_of(wfs, same, "fair_cap_local") == nodes_of(wfs, same, "fair_cap")


def test_fair_cap_local_serves_the_smaller_of_the_workflows_holding_nothing() -> None:
    """Two workflows arrive together on one core, the longer listed first. Both hold nothing, so fair's key (share x
    work left squared) is 0 for each: fair and fair_cap serve the earlier listed, A (B waits 100 s);
    fair_cap_local serves the one with less work left per second waited, B (the two have waited alike), and A starts
    at 10."""
    one_core = [Node(id="n0", cpu=1, mem=8)]
    wfs = [_independent("A", 1, runtime_s=100.0), _independent("B", 1, runtime_s=10.0)]
    for by_position in ("fair", "fair_cap"):
        assert nodes_of(wfs, one_core, by_position) == {"A/a0": ("n0", 0.0), "B/b0": ("n0", 100.0)}
    assert nodes_of(wfs, one_core, "fair_cap_local") == {"B/b0": ("n0", 0.0), "A/a0": ("n0", 10.0)}


def _gpu_queue() -> list[Workflow]:
    """H's GPU task holds the one GPU until 10. At 1 arrive A, one GPU task of 50 s and one core, and B, one GPU task of
    20 s and a four-core task of 100 s: B is the larger in core-seconds (420 against 50) and the smaller in
    GPU-seconds (20 against 50)."""
    h = Workflow(name="H", tasks=[Task(id="h", runtime=10.0, gpu=1)])
    a = Workflow(name="A", tasks=[Task(id="a", runtime=50.0, gpu=1)], submit_time=1.0)
    b = Workflow(
        name="B", tasks=[Task(id="bg", runtime=20.0, gpu=1), Task(id="bc", runtime=100.0, cpu=4)], submit_time=1.0
    )
    return [h, a, b]


def test_fair_cap_gpu_first_serves_the_gpu_queue_by_gpu_work_left() -> None:
    """When the GPU frees at 10, fair_cap_local serves A, which holds nothing (fair's key 0), while B's four-core task
    runs beside; fair_cap_gpu_first serves the GPU tasks first by their workflow's GPU work left: B's 20 s, then A's.
    With GPU tasks first and the size in cores alone (`gpu_in_size` off) the order is the same: it reads GPU work."""
    nodes = [Node(id="g", cpu=4, mem=8, gpu=1), Node(id="c", cpu=4, mem=8)]
    wfs = _gpu_queue()
    assert nodes_of(wfs, nodes, "fair_cap_local") == {
        "H/h": ("g", 0.0),
        "B/bc": ("c", 1.0),
        "A/a": ("g", 10.0),
        "B/bg": ("g", 60.0),
    }
    gpu_first = nodes_of(wfs, nodes, "fair_cap_gpu_first")
    assert gpu_first == {"H/h": ("g", 0.0), "B/bc": ("c", 1.0), "B/bg": ("g", 10.0), "A/a": ("g", 30.0)}
    first_only = FairCapGPUFirst()
    first_only.gpu_in_size = False
    assert nodes_of(wfs, nodes, first_only) == gpu_first


@pytest.mark.parametrize("mix", ["default", "stages"])
def test_fair_cap_gpu_first_is_fair_cap_local_without_gpus(mix: str) -> None:
    """On a cluster without GPUs no task needs one and a workflow's size is its core-seconds: every attempt of a
    stream in the shared mode (noise, failures, stragglers) is fair_cap_local's."""
    from dagsched.generate import cluster_preset
    from dagsched.generate.streams import generate_stream
    from dagsched.sim.config import mode_settings

    stream = generate_stream(cluster_preset("homog-8"), 20, 0.9, "bursty", seed=5, mix=mix)
    cp = compile_problem(stream.problem())
    config = SimConfig(**mode_settings("shared"))
    local, gpu_first = (
        simulate(cp, name, config, seed=5).trace.attempts for name in ("fair_cap_local", "fair_cap_gpu_first")
    )
    assert gpu_first == local


def test_cores_per_gpu() -> None:
    """hetero-16: its speed-weighted cores over its 8 GPUs at speed 1.2 (two g5.12xlarge); 0 without GPUs."""
    from dagsched.generate import cluster_preset

    hetero = compile_problem(Problem(workflows=[_independent("A", 1)], cluster=cluster_preset("hetero-16")))
    expected = float(hetero.cap[:, 0] @ hetero.speed) / (8 * 1.2)
    assert cores_per_gpu(hetero) == pytest.approx(expected)
    homog = compile_problem(Problem(workflows=[_independent("A", 1)], cluster=cluster_preset("homog-8")))
    assert cores_per_gpu(homog) == 0.0


@pytest.mark.parametrize("name", ["fair_cap_local", "fair_cap_gpu_first"])
def test_a_stream_with_gpu_work_runs_to_a_valid_trace(name: str) -> None:
    """Twelve workflows of the default mix (ML pipelines with GPU training among them) at load 0.9 on hetero-16 in the
    shared mode: every task runs to completion and the trace validates."""
    from dagsched.generate import cluster_preset
    from dagsched.generate.streams import generate_stream
    from dagsched.sim.config import mode_settings

    stream = generate_stream(cluster_preset("hetero-16"), 12, 0.9, "poisson", seed=7, mix="default")
    cp = compile_problem(stream.problem())
    assert (cp.req[:, 2] > 0).any()
    result = simulate(cp, name, SimConfig(**mode_settings("shared")), seed=7)
    assert result.valid, result.violations[:3]
    assert {a.task for a in result.trace.attempts if a.outcome == "done"} == set(range(cp.n_tasks))


LEVER_RULES = ["srpt_cap", "srpt_admit", "fair_cap", "srpt_local", "fair_cap_local", "fair_cap_gpu_first"]


@pytest.mark.parametrize("name", LEVER_RULES)
def test_registered(name: str) -> None:
    """Each is found by name in the one registry."""
    assert make_scheduler(name).name == name


@pytest.mark.parametrize("name", LEVER_RULES)
def test_a_stream_of_analytics_jobs_runs_to_a_valid_trace(name: str) -> None:
    """Eight stages jobs at load 0.9 on homog-8 in the shared mode (noise, failures, stragglers): every task runs to
    completion and the trace validates."""
    from dagsched.generate import cluster_preset
    from dagsched.generate.streams import generate_stream
    from dagsched.sim.config import mode_settings

    stream = generate_stream(cluster_preset("homog-8"), 8, 0.9, "bursty", seed=3, mix="stages")
    cp = compile_problem(stream.problem())
    result = simulate(cp, name, SimConfig(**mode_settings("shared")), seed=3)
    assert result.valid, result.violations[:3]
    done = {a.task for a in result.trace.attempts if a.outcome == "done"}
    assert len(done) == cp.n_tasks

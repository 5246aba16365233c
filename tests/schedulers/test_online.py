"""The online baselines of a shared cluster, each on a tiny case worked out by hand.

FIFO by workflow, SJF-CP, weighted fair sharing, Tetris, SRPT with holds for a faster busy node, and HEFT
planning an arrival around what the cluster committed (heft_keep) against re-planning everything (heft). Cloud
mode without noise, so the times are exact; every trace validates.
"""

from __future__ import annotations

import numpy as np
import pytest

from dagsched.model import Cluster, Edge, Node, Problem, Task, Workflow, compile_problem
from dagsched.model.graph import fastest_exec_s
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.fair import WeightedFair
from dagsched.schedulers.progress import remaining_critical_path_s, tail_path_s
from dagsched.schedulers.srpt_hold import could_wait, node_worth_waiting_for
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator


def _run(workflows, nodes, scheduler):
    cp = compile_problem(Problem(workflows=workflows, cluster=Cluster(nodes=nodes)))
    result = simulate(cp, scheduler, SimConfig())
    assert result.valid, result.violations
    placed = {cp.task_name(a.task): (cp.node_ids[a.node], a.start, a.end) for a in result.trace.attempts}
    return cp, placed


def _one_cpu(node_id: str = "n", speed: float = 1.0) -> Node:
    return Node(id=node_id, cpu=1, mem=4, speed=speed)


def test_fifo_serves_the_workflow_submitted_first() -> None:
    """`late` is listed first but arrives at 1; `early` (two 3 s tasks) at 0 on one 1-cpu node. FIFO: e1 0-3,
    e2 3-6 (earlier workflow), l 6-7. fcfs goes by list position and runs l at 3."""
    wfs = [
        Workflow(name="late", tasks=[Task(id="l", runtime=1)], submit_time=1.0),
        Workflow(name="early", tasks=[Task(id="e1", runtime=3), Task(id="e2", runtime=3)]),
    ]
    _, fifo = _run(wfs, [_one_cpu()], "fifo")
    assert fifo == {"early/e1": ("n", 0.0, 3.0), "early/e2": ("n", 3.0, 6.0), "late/l": ("n", 6.0, 7.0)}
    _, fcfs = _run(wfs, [_one_cpu()], "fcfs")
    assert fcfs["late/l"] == ("n", 3.0, 4.0)


def test_fifo_places_on_the_node_that_finishes_first() -> None:
    """One 4 s task, a slow and a fast (speed 2) node both free: the fast one, 0-2."""
    _, placed = _run(
        [Workflow(name="w", tasks=[Task(id="t", runtime=4)])], [_one_cpu("slow"), _one_cpu("fast", 2)], "fifo"
    )
    assert placed == {"t": ("fast", 0.0, 2.0)}


def test_sjf_cp_runs_the_shortest_remaining_critical_path_first() -> None:
    """A is a chain a1 (5 s) -> a2 (5 s), B one 3 s task, both at 0, one node: B's path (3) is shorter than A's
    (10), so b 0-3, a1 3-8, a2 8-13; FIFO would run a1 first and keep A going (b last, 10-13)."""
    wfs = [
        Workflow(
            name="A",
            tasks=[Task(id="a1", runtime=5), Task(id="a2", runtime=5)],
            edges=[Edge(src="a1", dst="a2")],
        ),
        Workflow(name="B", tasks=[Task(id="b", runtime=3)]),
    ]
    _, sjf = _run(wfs, [_one_cpu()], "sjf_cp")
    assert sjf == {"B/b": ("n", 0.0, 3.0), "A/a1": ("n", 3.0, 8.0), "A/a2": ("n", 8.0, 13.0)}
    _, fifo = _run(wfs, [_one_cpu()], "fifo")
    assert fifo["B/b"] == ("n", 10.0, 13.0)


def test_remaining_critical_path_counts_a_running_task_by_its_time_left() -> None:
    """Chain x (4 s) -> y (4 s) with x started at 0: at t = 1 the remaining path is 3 + 4 = 7."""
    wf = Workflow(name="A", tasks=[Task(id="x", runtime=4), Task(id="y", runtime=4)], edges=[Edge(src="x", dst="y")])
    cp = compile_problem(Problem(workflows=[wf], cluster=Cluster(nodes=[_one_cpu()])))
    sim = Simulator(cp, SimConfig())
    sim.step()
    sim.start(0, 0)
    sim.now = 1.0
    left = remaining_critical_path_s(sim, tail_path_s(cp), fastest_exec_s(cp))
    assert left == {0: pytest.approx(7.0)}


def _fair_case() -> list[Workflow]:
    """A: 8 independent 10 s tasks (remaining work 80); B: 2 (work 20); both at 0; one 3-cpu node."""
    return [
        Workflow(name="A", tasks=[Task(id=f"a{i}", runtime=10) for i in range(8)]),
        Workflow(name="B", tasks=[Task(id=f"b{i}", runtime=10) for i in range(2)]),
    ]


class _PlainFair(WeightedFair):
    name = "fair_plain_test"
    alpha = 0.0


def test_weighted_fair_shares_by_remaining_work() -> None:
    """alpha = -2 weights A by 1/80^2 and B by 1/20^2: A (tie, lower index) gets a core, then B twice (its share
    over weight, 1/3 x 400, stays below A's 1/3 x 6400): A 1, B 2 at time 0. Plain fair sharing (alpha = 0)
    alternates A, B, A: A 2, B 1."""
    nodes = [Node(id="n", cpu=3, mem=8)]
    cp = compile_problem(Problem(workflows=_fair_case(), cluster=Cluster(nodes=nodes)))
    assert WeightedFair.alpha == -2.0
    for scheduler, want in ((make_scheduler("fair"), {"A": 1, "B": 2}), (_PlainFair(), {"A": 2, "B": 1})):
        result = simulate(cp, scheduler, SimConfig())
        assert result.valid
        at_zero = [cp.wf_names[int(cp.task_wf[a.task])] for a in result.trace.attempts if a.start == 0.0]
        assert {w: at_zero.count(w) for w in ("A", "B")} == want


def test_tetris_packs_by_alignment() -> None:
    """m (1 cpu, 12 GiB) and c (3 cpu, 1 GiB) on big-mem (4 cpu, 16 GiB) and small-mem (4 cpu, 4 GiB). Alignment
    of m on big-mem: 1/4 x 1 + 12/16 x 1 = 1.0 (it does not fit small-mem); of c on small-mem: 3/4 + 1/4 = 1.0, on
    big-mem 3/4 + 1/16. m goes first (tie, lower index) to big-mem; c then scores 3/4 x 3/4 + 1/16 x 4/16 there
    and still 1.0 on small-mem: small-mem. First fit (fcfs) puts both on big-mem."""
    wf = Workflow(name="w", tasks=[Task(id="m", runtime=5, cpu=1, mem=12), Task(id="c", runtime=5, cpu=3, mem=1)])
    nodes = [Node(id="big-mem", cpu=4, mem=16), Node(id="small-mem", cpu=4, mem=4)]
    _, tetris = _run([wf], nodes, "tetris")
    assert tetris == {"m": ("big-mem", 0.0, 5.0), "c": ("small-mem", 0.0, 5.0)}
    _, fcfs = _run([wf], nodes, "fcfs")
    assert fcfs["c"][0] == "big-mem"


def test_tetris_prefers_the_workflow_with_less_work_left() -> None:
    """Equal alignment (1-cpu tasks, one 1-cpu node): the workflow with 5 s of work left goes before the one with
    10 s, though it is listed second."""
    wfs = [
        Workflow(name="big", tasks=[Task(id="x", runtime=10)]),
        Workflow(name="small", tasks=[Task(id="y", runtime=5)]),
    ]
    _, placed = _run(wfs, [_one_cpu()], "tetris")
    assert placed == {"small/y": ("n", 0.0, 5.0), "big/x": ("n", 5.0, 15.0)}


def test_srpt_hold_waits_for_a_clearly_faster_busy_node() -> None:
    """Two 8 s tasks of one workflow on a fast node (speed 4) and a slow one, one task at a time each. a (first by
    index) takes fast (ends at 2). b: the slow node would end it at 8, the fast one at 2 + 2 = 4, earlier by half
    its run time there: held (margin 0.2 < 0.5), it starts on fast at 2. With margin 0.49 it is held too, with
    0.51 or None (never hold) it starts on slow at 0."""
    from dagsched.schedulers.srpt_hold import HOLD_MARGIN, SRPTHold

    wf = Workflow(name="w", tasks=[Task(id="a", runtime=8.0), Task(id="b", runtime=8.0)])
    nodes = [_one_cpu("fast", 4.0), _one_cpu("slow")]
    assert HOLD_MARGIN == 0.2
    for scheduler in ("srpt_hold", SRPTHold(0.49)):
        _, placed = _run([wf], nodes, scheduler)
        assert placed == {"a": ("fast", 0.0, 2.0), "b": ("fast", 2.0, 4.0)}
    for scheduler in (SRPTHold(0.51), SRPTHold(None)):
        _, placed = _run([wf], nodes, scheduler)
        assert placed == {"a": ("fast", 0.0, 2.0), "b": ("slow", 0.0, 8.0)}
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match="margin"):
            SRPTHold(bad)


def test_srpt_hold_wakes_itself_when_the_node_it_waits_for_is_up() -> None:
    """Nothing runs and the fast node boots until 3: the task is held for it (ends at 3 + 2 = 5 < 8 x 0.8 on the
    slow node), and the decision asks to be woken at 3, so the run goes on (without the wake it would stall)."""
    wf = Workflow(name="w", tasks=[Task(id="a", runtime=8.0)])
    nodes = [Node(id="fast", cpu=1, mem=4, speed=4.0, boot_delay=3.0), _one_cpu("slow")]
    _, placed = _run([wf], nodes, "srpt_hold")
    assert placed == {"a": ("fast", 3.0, 5.0)}


def test_srpt_hold_serves_the_workflow_with_less_work_left_and_the_tasks_behind_a_held_one() -> None:
    """Workflows big (x, 40 s) and small (y, 8 s; z, 4 s), one fast node (speed 4) and one slow one. small has less
    work left: y (its longer tail) takes fast, ending at 2. z: slow would end it at 4, fast (free at 2) at 3, which
    is under 4 x 0.8: held. x, served behind it: slow would end it at 40, fast at 2 + 10 = 12 < 32: held too, and
    the slow node stays idle. At 2 z (less work left) takes fast, ending at 3; x then waits for it again and
    starts there at 3, ending at 13 (27 s before the slow node would have)."""
    wfs = [
        Workflow(name="big", tasks=[Task(id="x", runtime=40.0)]),
        Workflow(name="small", tasks=[Task(id="y", runtime=8.0), Task(id="z", runtime=4.0)]),
    ]
    _, placed = _run(wfs, [_one_cpu("fast", 4.0), _one_cpu("slow")], "srpt_hold")
    assert placed == {
        "small/y": ("fast", 0.0, 2.0),
        "small/z": ("fast", 2.0, 3.0),
        "big/x": ("fast", 3.0, 13.0),
    }


def test_heft_keep_plans_an_arrival_around_the_committed_plan() -> None:
    """W1 (at 0): q (10 s) and p (1 s), one node: HEFT runs q 0-10 then plans p at 10-11. W2 (at 1): r (5 s).
    heft re-plans the unstarted p with r by rank (r 5 before p 1): r 10-15, p 15-16. heft_keep keeps p at
    10-11 and plans r after it: 11-16."""
    wfs = [
        Workflow(name="W1", tasks=[Task(id="q", runtime=10), Task(id="p", runtime=1)]),
        Workflow(name="W2", tasks=[Task(id="r", runtime=5)], submit_time=1.0),
    ]
    _, heft = _run(wfs, [_one_cpu()], "heft")
    assert heft == {"W1/q": ("n", 0.0, 10.0), "W2/r": ("n", 10.0, 15.0), "W1/p": ("n", 15.0, 16.0)}
    _, keep = _run(wfs, [_one_cpu()], "heft_keep")
    assert keep == {"W1/q": ("n", 0.0, 10.0), "W1/p": ("n", 10.0, 11.0), "W2/r": ("n", 11.0, 16.0)}


@pytest.mark.parametrize("name", ["heft", "cpop", "peft"])
def test_keep_variants_equal_their_planner_on_one_workflow(name: str) -> None:
    """With a single workflow there is one arrival, so re-planning and keeping are the same plan."""
    from dagsched.generate import cluster_preset, generate_workflow

    wf = generate_workflow("layered", 40, 3)
    cp = compile_problem(Problem(workflows=[wf], cluster=cluster_preset("hetero-16")))
    base = simulate(cp, name, SimConfig(noise_cv=0.2), seed=2)
    keep = simulate(cp, f"{name}_keep", SimConfig(noise_cv=0.2), seed=2)
    assert base.valid and keep.trace.attempts == base.trace.attempts


@pytest.mark.parametrize("name", ["heft_keep", "cpop_keep", "peft_keep"])
def test_keep_variants_plan_an_arrival_made_while_the_only_node_was_down(name: str) -> None:
    """A workflow that arrives while the only node is down cannot be placed; when the node comes back it must be
    (found by Hypothesis: the keep variants forgot which nodes were up when they planned an arrival, so the
    repair went unnoticed and the run stalled). Seed 247 downs the node before t=3 and repairs it at 3.83."""
    wfs = [
        Workflow(name="w0", tasks=[Task(id="t0", runtime=0)]),
        Workflow(
            name="w1",
            tasks=[Task(id="t1", runtime=0), Task(id="t2", runtime=0), Task(id="t3", runtime=0)],
            edges=[Edge(src="t1", dst="t2")],
            submit_time=3.0,
        ),
    ]
    cp = compile_problem(Problem(workflows=wfs, cluster=Cluster(nodes=[_one_cpu()])))
    config = SimConfig(mtbf_s=30.0, mttr_s=1.0)
    result = simulate(cp, name, config, seed=247)
    assert result.valid, result.violations
    outages = result.trace.outages
    assert outages and outages[0].start < 3.0 < outages[0].end  # the case: down when w1 arrives
    late = [a for a in result.trace.attempts if cp.task_wf[a.task] == 1]
    assert len(late) == 3 and min(a.start for a in late) >= outages[0].end


def test_the_hold_skips_the_earliest_starts_only_where_no_node_could_be_worth_waiting_for() -> None:
    """`could_wait` reads run times alone: on equal speeds, or with the fastest node startable, no; with a node
    twice as fast busy, yes (at margin 0.2). Wherever it says no, `node_worth_waiting_for` finds no node whatever the
    busy nodes' earliest starts (from now on), over 2,000 random cases, some at the bound to the last digit."""
    now = 100.0
    assert not could_wait([4.0, 4.0, 4.0], [0], now, 0.2)
    assert not could_wait([2.0, 4.0, 3.0], [0, 2], now, 0.2)
    assert could_wait([2.0, 4.0, 3.0], [1, 2], now, 0.2)
    assert not could_wait([2.0, 4.0, 3.0], [0, 1, 2], now, 0.2)  # every node can start it now
    rng = np.random.default_rng(0)
    ruled_out = 0
    for _ in range(2000):
        exec_s = rng.choice([1.0, 1.5, 2.0, 2.5, 3.0], size=6) * rng.choice([1.0, 0.1, 7.0])
        startable = rng.random(6) < 0.5
        startable[rng.integers(6)] = True
        margin = float(rng.choice([0.0, 0.2, 0.5, 1 / 3]))
        start_s = now + rng.choice([0.0, 1e-12, 0.5, 3.0], size=6)
        if not could_wait(exec_s.tolist(), np.flatnonzero(startable).tolist(), now, margin):
            ruled_out += 1
            assert node_worth_waiting_for(start_s, exec_s, startable, now, margin) is None
    assert 200 < ruled_out < 1800

"""The learned dispatch index: srpt_hold written as its network is srpt_hold; order, hold and node heads act as set;
the cap and admission heads start at the hand rules' values and switch off.

Cloud mode without noise on tiny hand-made cases (exact times), and small streams in the `shared` mode compared
attempt for attempt with srpt_hold and srpt_admit.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dagsched.generate import cluster_preset
from dagsched.generate.streams import generate_stream
from dagsched.model import Cluster, Node, Problem, Task, Workflow, compile_problem
from dagsched.model.errors import InputError
from dagsched.policy.stream_index import (
    FEATURES,
    LEVER_PARAMS,
    N_WORKFLOW_FEATURES,
    NODE_FEATURES,
    SHIPPED,
    SHIPPED_LEVERS,
    IndexNet,
    StreamContext,
    lever_heads,
)
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.drl_stream import DRLStream
from dagsched.schedulers.fair_cap import CAP_FACTOR
from dagsched.schedulers.srpt_admit import SATURATED, SRPTAdmit
from dagsched.schedulers.srpt_hold import SRPTHold
from dagsched.schedulers.srpt_local import SRPTLocal
from dagsched.sim.config import SimConfig, mode_settings
from dagsched.sim.engine import Simulator

from .conftest import RoomCase


def srpt_as_net(margin: float = 0.2) -> IndexNet:
    """srpt_hold's key as scores: least work left first by a wide margin, then the longer tail."""
    net = IndexNet.initial(margin=margin)
    net.params["w_lin"][FEATURES.index("log_work_left")] = -1e4
    net.params["w_lin"][FEATURES.index("log_tail")] = 1.0
    return net


def _attempts(cp, scheduler, config, seed=3):
    result = simulate(cp, scheduler, config, seed=seed)
    assert result.valid, result.violations
    return [(a.task, a.node, round(a.start, 6), round(a.end, 6)) for a in result.trace.attempts]


@pytest.mark.parametrize("arrival", ["poisson", "bursty"])
def test_srpt_hold_written_as_the_network_runs_srpt_holds_schedule(arrival: str) -> None:
    """Scores ordering like srpt_hold's key, its margin and the earliest-finish node, cap and admission off: the same
    attempts, holds, wakes and failures included, on a 12-workflow stream at load 0.9 in the shared mode; with the
    hold off, the same as srpt_hold that never holds."""
    stream = generate_stream(cluster_preset("hetero-16"), 12, 0.9, arrival, seed=7)
    cp = compile_problem(stream.problem())
    config = SimConfig(**mode_settings("shared"))
    net = srpt_as_net()
    assert _attempts(cp, DRLStream(net, cap=False, admit=False), config) == _attempts(cp, SRPTHold(), config)
    no_hold = DRLStream(net, hold=False, cap=False, admit=False)
    assert _attempts(cp, no_hold, config) == _attempts(cp, SRPTHold(None), config)


def _homog8_stream():
    return compile_problem(generate_stream(cluster_preset("homog-8"), 12, 0.9, "poisson", seed=7).problem())


def test_the_admission_head_starts_as_srpt_admit() -> None:
    """srpt_hold's order with the cap off and the admission head at its initial parameters: srpt_admit's attempts,
    on a homog-8 stream where srpt_admit's holds change the schedule (it differs from srpt_hold's); a threshold
    above any busy share never holds: srpt_hold's again."""
    cp, config = _homog8_stream(), SimConfig(**mode_settings("shared"))
    admit = _attempts(cp, SRPTAdmit(), config)
    assert admit != _attempts(cp, SRPTHold(), config)
    assert _attempts(cp, DRLStream(srpt_as_net(), cap=False), config) == admit
    never = srpt_as_net()
    never.params["b_sat"][0] = 1.5
    assert _attempts(cp, DRLStream(never, cap=False), config) == _attempts(cp, SRPTHold(), config)


class _CapChecked(DRLStream):
    """drl_stream that records, for each task it places, its workflow's dominant share before and its cap."""

    def assigned(self, t: int, nd: int) -> None:
        w = int(self.cp.task_wf[t])
        self.placed.append((float(np.max(self.held[w] / self.total)), float(self.cap_share[w])))
        super().assigned(t, nd)

    def reset(self, cp, dp, seed=0) -> None:
        super().reset(cp, dp, seed)
        self.placed: list[tuple[float, float]] = []


def test_the_cap_head_starts_as_fair_caps_cap_and_is_a_hard_limit() -> None:
    """At its initial parameters the cap head gives every workflow fair_cap's factor; run with the admission off, no
    task is placed for a workflow already at its cap, the cap binds (the schedule differs from the uncapped one),
    and a factor too large to bind gives the uncapped schedule; the trace validates (`_attempts`)."""
    net = srpt_as_net()
    u = np.random.default_rng(0).normal(size=(5, N_WORKFLOW_FEATURES))
    assert net.cap_factors(u).tolist() == [CAP_FACTOR] * 5
    cp, config = _homog8_stream(), SimConfig(**mode_settings("shared"))
    capped = _CapChecked(net, admit=False)
    with_cap = _attempts(cp, capped, config)
    assert capped.placed and all(share < cap for share, cap in capped.placed)
    assert any(cap < 1.0 for _, cap in capped.placed)
    uncapped = _attempts(cp, DRLStream(net, cap=False, admit=False), config)
    assert with_cap != uncapped
    loose = srpt_as_net()
    loose.params["b_cap"][0] = 50.0
    assert _attempts(cp, DRLStream(loose, admit=False), config) == uncapped


def test_drl_stream_levers_is_drl_stream_at_the_lever_weights_placing_as_srpt_local() -> None:
    """The registered `drl_stream_levers` loads the weights with both lever heads and runs both levers, and places
    by `srpt_local`'s rule, not the node head: on a homog-8 stream where the cap binds its attempts are neither
    `DRLStream`'s at those weights (the node head's choices) nor `drl_stream`'s at its default weights (no lever
    heads); on the case worked by hand in `test_levers` it keeps the room beside c's inputs as `srpt_local` does."""
    levers = make_scheduler("drl_stream_levers")
    assert isinstance(levers, DRLStream) and isinstance(levers, SRPTLocal) and levers.cap and levers.admit
    assert not make_scheduler("drl_stream").cap and SHIPPED_LEVERS != SHIPPED
    cp, config = _homog8_stream(), SimConfig(**mode_settings("shared"))
    attempts = _attempts(cp, levers, config)
    assert attempts != _attempts(cp, DRLStream(SHIPPED_LEVERS), config)
    assert attempts != _attempts(cp, make_scheduler("drl_stream"), config)
    assert attempts == _attempts(cp, make_scheduler("drl_stream_levers"), config)  # reproducible


def test_drl_stream_levers_keeps_the_room_beside_a_tasks_inputs(room_beside_the_data: RoomCase) -> None:
    """`test_levers`' case: at 10 c can start only on n0 (its inputs there) and s1 arrives; whichever the index
    serves first, c starts on n0 at once."""
    placed = room_beside_the_data("drl_stream_levers")
    assert placed["P/c"] == ("n0", 10.0) and placed["S/s1"][0] == "n1"


def test_the_lever_heads_start_at_the_hand_rules_values() -> None:
    """The lever heads' initial values are fair_cap's factor and srpt_admit's threshold at ratio 1."""
    sat, ratio = IndexNet.initial().admission(np.ones((2, N_WORKFLOW_FEATURES)))
    assert sat.tolist() == [SATURATED] * 2 and ratio.tolist() == [1.0, 1.0]
    assert lever_heads()["b_cap"][0] == pytest.approx(np.log(CAP_FACTOR))


def _one_cpu(node_id: str, speed: float, gpu: int = 0) -> Node:
    return Node(id=node_id, cpu=1, mem=4, gpu=gpu, speed=speed)


def test_the_margin_head_sets_the_hold() -> None:
    """Two 8 s tasks, a fast node (speed 2.5) and a slow one: a takes fast (ends at 3.2); b would end on fast at
    6.4 instead of 8 on slow, earlier by 20 % of its run time there: held for fast under a learned margin of 0.1,
    started on slow at 0 under 0.3, and under 0.1 made 0.3 by the head's weight on a feature (the task's run time)."""
    wf = Workflow(name="w", tasks=[Task(id="a", runtime=8.0), Task(id="b", runtime=8.0)])
    cp = compile_problem(Problem(workflows=[wf], cluster=Cluster(nodes=[_one_cpu("fast", 2.5), _one_cpu("slow", 1.0)])))
    assert _attempts(cp, DRLStream(srpt_as_net(margin=0.1)), SimConfig())[1][1:] == (0, 3.2, 6.4)
    assert _attempts(cp, DRLStream(srpt_as_net(margin=0.3)), SimConfig())[1][1:] == (1, 0.0, 8.0)
    moved = srpt_as_net(margin=0.1)
    x_exec = float(np.log1p(8.0 / 2.5 / 600.0))  # log_best_exec of both tasks
    shift = (np.log(0.3 / 0.2) - np.log(0.1 / 0.4)) / x_exec  # the logit from 0.1 to 0.3 of MAX_MARGIN 0.5
    moved.params["w_hold"][FEATURES.index("log_best_exec")] = shift
    assert moved.margins(np.eye(len(FEATURES))[[FEATURES.index("log_best_exec")]] * x_exec)[0] == pytest.approx(0.3)
    assert _attempts(cp, DRLStream(moved), SimConfig())[1][1:] == (1, 0.0, 8.0)


def test_the_node_head_chooses_among_the_earliest_finish_candidates() -> None:
    """One task, four free nodes of speeds 4, 3, 2, 1: the earliest finish at init (speed 4); a weight that favours a
    later finish picks the slowest of the three candidates (speed 2), never the fourth; a weight against taking a
    GPU node's room for a CPU task moves it off the fast GPU node."""
    wf = Workflow(name="w", tasks=[Task(id="a", runtime=12.0)])
    nodes = [_one_cpu("n4", 4.0, gpu=1), _one_cpu("n3", 3.0), _one_cpu("n2", 2.0), _one_cpu("n1", 1.0)]
    cp = compile_problem(Problem(workflows=[wf], cluster=Cluster(nodes=nodes)))
    net = srpt_as_net()
    assert _attempts(cp, DRLStream(net), SimConfig())[0][1] == 0
    later = srpt_as_net()
    later.params["w_node"][NODE_FEATURES.index("finish_gap")] = 10.0
    assert _attempts(cp, DRLStream(later), SimConfig())[0][1] == 2
    assert _attempts(cp, DRLStream(later, candidates=4), SimConfig())[0][1] == 3
    no_gpu = srpt_as_net()
    no_gpu.params["w_node"][NODE_FEATURES.index("spare_gpu")] = -10.0
    assert _attempts(cp, DRLStream(no_gpu), SimConfig())[0][1] == 1
    with pytest.raises(ValueError, match="candidates"):
        DRLStream(net, candidates=0)


def test_features_read_only_the_past_and_the_ready_set() -> None:
    """At time 0 of a stream the measured load counts only the workflows submitted by then; every feature is
    finite; the rows follow the ready tasks given."""
    stream = generate_stream(cluster_preset("hetero-16"), 20, 0.85, "poisson", seed=2)
    cp = compile_problem(stream.problem())
    ctx = StreamContext(cp)
    sim = Simulator(cp, SimConfig(**mode_settings("shared")), 0)
    dp = sim.next_decision(float("inf"))
    assert dp is not None and dp.now == 0.0
    ready = np.asarray(dp.ready_tasks(), dtype=np.int64)
    x = ctx.features(dp, ready, dp.work_left(ctx.work))
    assert x.shape == (len(ready), len(FEATURES)) and np.isfinite(x).all()
    first = int(np.argmin(cp.wf_submit_s))
    capacity = (cp.cap * cp.speed[:, None]).sum(axis=0)
    own = (cp.req[cp.task_wf == first] * cp.runtime_s[cp.task_wf == first, None]).sum(axis=0)
    assert x[0, FEATURES.index("measured_load")] == pytest.approx(float((own / capacity).max() / 600.0))
    assert ctx.measured_load(-1.0) == 0.0


class _FeaturesChecked(DRLStream):
    """drl_stream that computes each decision's rows again with the ready tasks in a shuffled order."""

    def order(self, ready):
        tasks = np.asarray(ready, dtype=np.int64)
        x = self.ctx.features(self.view, tasks, self.left, self.ctx.groups(tasks, ascending=True))
        shuffled = self.rng.permutation(len(tasks))
        self.checked.append(
            (
                len(np.unique(self.cp.task_wf[tasks])),
                x[shuffled],
                self.ctx.features(self.view, tasks[shuffled], self.left),
            )
        )
        yield from super().order(ready)

    def reset(self, cp, dp, seed=0) -> None:
        super().reset(cp, dp, seed)
        self.rng = np.random.default_rng(0)
        self.checked: list[tuple[int, np.ndarray, np.ndarray]] = []


def test_rows_are_the_same_in_any_order_of_the_ready_tasks() -> None:
    """The rows of the ready tasks grouped by workflow as runs of the ascending task index (what drl_stream passes)
    are the rows computed from the same tasks in a shuffled order (grouped by a sort), bit for bit, at every
    decision of a 12-workflow stream, many of them with several workflows ready."""
    cp = compile_problem(generate_stream(cluster_preset("hetero-16"), 12, 0.9, "bursty", seed=7).problem())
    checked = _FeaturesChecked(srpt_as_net())
    _attempts(cp, checked, SimConfig(**mode_settings("shared")))
    assert sum(n >= 3 for n, _, _ in checked.checked) > 50
    for _, x, again in checked.checked:
        assert np.array_equal(x, again)


def test_weights_round_trip_with_what_they_trained_on(tmp_path) -> None:
    """Saved and loaded: the same parameters and the metadata given; weights without the lever heads run with both
    levers off; weights of other features are refused with an error naming the weights, and so is a file that is not
    safetensors."""
    net = srpt_as_net()
    path = tmp_path / "w.safetensors"
    net.save(path, trained_on="streams of hetero-16", generations=3)
    back = IndexNet.load(path)
    assert all(np.array_equal(back.params[k], v) for k, v in net.params.items())
    assert back.meta["trained_on"] == "streams of hetero-16" and back.meta["generations"] == "3"
    assert np.array_equal(back.with_flat(back.flat()).flat(), net.flat())
    net.meta["features"] = '["other"]'
    from safetensors.numpy import save_file

    save_file(net.params, str(tmp_path / "other.safetensors"), {"version": "1", "features": '["other"]'})
    with pytest.raises(InputError, match="weights"):
        IndexNet.load(tmp_path / "other.safetensors")
    old = {k: v for k, v in srpt_as_net().params.items() if k not in LEVER_PARAMS}
    save_file(old, str(tmp_path / "old.safetensors"), {"version": "1", "features": json.dumps(FEATURES)})
    loaded = IndexNet.load(tmp_path / "old.safetensors")  # weights trained before the lever heads: levers off
    assert not loaded.has_levers and net.has_levers
    assert not DRLStream(loaded).cap and not DRLStream(loaded).admit and DRLStream(net).cap
    (tmp_path / "bad.safetensors").write_bytes(b"not a tensor file")
    with pytest.raises(InputError, match="weights"):
        IndexNet.load(tmp_path / "bad.safetensors")

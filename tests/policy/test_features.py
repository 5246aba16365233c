"""Observation features: estimates agree with the simulator's planning view, values stay normalised."""

from __future__ import annotations

import time

import numpy as np
import pytest

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.policy.features import (
    FEATURE_CLIP,
    NODE_FEATURES,
    PAIR_FEATURES,
    TASK_FEATURES,
    FeatureBuilder,
)
from dagsched.rl.env import SchedulingEnv
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator


@pytest.mark.parametrize("sim", [{}, {"classic": True}, {"noise_cv": 0.5, "straggler_rate_per_h": 6.0}])
def test_estimated_start_matches_node_timelines(sim, small):
    """est_start_s of every candidate on every node equals the earliest start the simulator's own
    node_timelines() give (inputs arrived, node booted, room freed by running tasks at their predicted ends)."""
    env = SchedulingEnv(small, cluster="hetero-16", n_tasks=(12, 16), sim=sim)
    checked = 0
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        terminated = truncated = False
        while not (terminated or truncated):
            s, ob = env.sim, env.observation
            lines = s.node_timelines()
            for i, t in enumerate(ob.candidates.tolist()):
                arrival = s.data_ready_all_s(t)
                for nd, line in enumerate(lines):
                    req = s.request(t)
                    fits = all(r <= c + 1e-9 for r, c in zip(req, line.cap, strict=True))
                    if not fits or not np.isfinite(line.available_from):
                        assert ob.est_start_s[i, nd] == np.inf
                        continue
                    want = line.earliest_start(max(float(arrival[nd]), s.now), float(env.cp.exec_s[t, nd]), req)
                    assert ob.est_start_s[i, nd] == pytest.approx(want, rel=1e-9, abs=1e-9)
                    checked += 1
            obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert checked > 500


def test_legal_pairs_start_now_and_transfer_share(small):
    """A legal pair's estimated start is now; a child's transfer share is 0 on the node holding all its inputs."""
    env = SchedulingEnv(small, families=("layered",), cluster="small-3", n_tasks=(12, 16))
    obs, _ = env.reset(seed=4)
    share_col = PAIR_FEATURES.index("transfer_share")
    seen_child = False
    for _ in range(40):
        ob, s = env.observation, env.sim
        assert np.all(ob.est_start_s[ob.legal] == pytest.approx(s.now))
        for i, t in enumerate(ob.candidates.tolist()):
            parents = env.cp.preds(t)
            places = {int(s.node_of[p]) for p in parents}
            if len(places) == 1 and env.cp.pred_data[env.cp.pred_ptr[t] : env.cp.pred_ptr[t + 1]].sum() > 0:
                seen_child = True
                (nd,) = places
                assert ob.pair_x[i, nd, share_col] == 0.0
                others = [n for n in range(env.cp.n_nodes) if n != nd]
                assert np.all(ob.pair_x[i, others, share_col] == 1.0)
        obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        if terminated or truncated:
            break
    assert seen_child


def _first_observation(family, n_tasks, preset):
    cp = compile_problem(Problem(workflows=[generate_workflow(family, n_tasks, 1)], cluster=cluster_preset(preset)))
    sim = Simulator(cp, SimConfig(), 0)
    sim.step()
    builder = FeatureBuilder(cp, classic=False, max_candidates=16)
    return cp, builder, sim


@pytest.mark.parametrize("family", ["layered", "etl_star"])
def test_features_comparable_from_10_to_1000_tasks(family):
    """Static task features lie in [0, 1] whatever the size (ranks and runtimes over the problem's time scale)."""
    for n in (10, 1000):
        _, builder, sim = _first_observation(family, n, "hetero-16")
        x = builder.build(sim.decision_point()).task_x
        for name in ("runtime", "rank_u", "rank_d", "remaining_cp", "cpu", "mem", "gpu"):
            col = x[:, TASK_FEATURES.index(name)]
            assert col.min() >= 0.0 and col.max() <= 1.0 + 1e-6, (n, name, col.max())
        assert x[:, TASK_FEATURES.index("rank_u")].max() > 0.5


def test_observation_of_1000_tasks_on_100_nodes():
    """Shapes, finiteness and ranges of a 1,000-task x 100-node observation; prints its build time."""
    cp, builder, sim = _first_observation("layered", 1000, "large-100")
    # run a few hundred tasks so nodes are busy and many tasks are ready
    for _ in range(300):
        dp = sim.decision_point()
        if dp.any_legal:
            i, nd = np.argwhere(dp.legal)[0]
            sim.start(int(dp.ready[i]), int(nd))
        else:
            sim.step()
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        ob = builder.build(sim.decision_point())
        times.append(time.perf_counter() - t0)
    print(
        f"\nobservation 1000 tasks x 100 nodes: median {np.median(times) * 1e3:.2f} ms, max {max(times) * 1e3:.2f} ms"
    )
    assert ob.task_x.shape == (1000, len(TASK_FEATURES))
    assert ob.node_x.shape == (100, len(NODE_FEATURES))
    assert ob.pair_x.shape == (len(ob.candidates), 100, len(PAIR_FEATURES))
    for arr in (ob.task_x, ob.node_x, ob.pair_x, ob.global_x):
        assert np.all(np.isfinite(arr)) and np.all(np.abs(arr) <= FEATURE_CLIP)
    assert len(sim.running) > 50


def test_history_keeps_the_last_snapshots(small):
    """With history_len=H, node_history holds cpu utilisation at the last H decision instants, newest last."""
    env = SchedulingEnv(small, history_len=3, cluster="small-3", n_tasks=(12, 16))
    obs, _ = env.reset(seed=2)
    util_col = NODE_FEATURES.index("utilisation")
    instants = []
    terminated = truncated = False
    while not (terminated or truncated):
        hist = obs["node_history"]
        m = env.cp.n_nodes
        assert np.allclose(hist[:m, -1], obs["node_features"][:m, util_col])
        if not instants or instants[-1][0] != env.sim.now:
            instants.append((env.sim.now, obs["node_features"][:m, util_col].copy()))
        else:
            instants[-1] = (env.sim.now, obs["node_features"][:m, util_col].copy())
        if len(instants) >= 3:
            assert np.allclose(hist[:m, 0], instants[-3][1])
        obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert len(instants) >= 3

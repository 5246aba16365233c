"""Training: the imitation loop learns (beats random on a fixed problem), its pure pieces, and one RLlib PPO step."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem
from dagsched.policy.files import load_policy
from dagsched.policy.gnn import SchedulingPolicy
from dagsched.rl.env import SchedulingEnv
from dagsched.rl.imitation import (
    bc_loss,
    collate,
    fit,
    greedy_makespan,
    play_episode,
    returns_to_go,
    to_padded,
)

torch.set_num_threads(1)


def fixed_problem() -> Problem:
    wf = generate_workflow("layered", 14, 3)
    return Problem(name="fixed", workflows=[wf], cluster=cluster_preset("small-3"))


def test_returns_to_go_sums_the_future() -> None:
    """Return-to-go at step i is the sum of rewards from i on (gamma 1), discounted otherwise."""
    assert returns_to_go([1.0, 2.0, 3.0]).tolist() == [6.0, 5.0, 3.0]
    assert returns_to_go([1.0, 1.0], gamma=0.5).tolist() == [1.5, 1.0]


def test_bc_loss_ignores_masked_actions() -> None:
    """A masked logit (-1e9) takes no probability: the loss equals the loss over legal actions only."""
    logits = torch.tensor([[0.0, 1.0, -1e9]])
    legal_only = bc_loss(logits[:, :2], torch.tensor([1]))
    assert float(bc_loss(logits, torch.tensor([1]))) == pytest.approx(float(legal_only))


def test_collate_matches_forward_single() -> None:
    """Padding a batch of observations of different sizes gives the same legal logits as the unpadded path."""
    env = SchedulingEnv(n_tasks=(6, 20), max_tasks=64, cluster=None, random_nodes=(2, 6))
    policy = SchedulingPolicy(hidden=16)
    observations = []
    for seed in range(3):
        env.reset(seed=seed)
        assert env.observation is not None
        observations.append(env.observation)
    batch, layout = collate(observations)
    K, M = layout[0]
    with torch.no_grad():
        logits, _ = policy(batch)
        for b, obs in enumerate(observations):
            single, _ = policy.forward_single(obs)
            legal = np.flatnonzero(obs.action_mask())
            padded = [to_padded(int(a), obs, K, M) for a in legal]
            assert torch.allclose(logits[b, padded], single[legal], atol=1e-5)


def test_imitation_beats_random_on_a_fixed_problem() -> None:
    """A few DAgger rounds of HEFT imitation: the greedy policy's makespan < random legal play's mean."""
    t0 = time.perf_counter()
    torch.manual_seed(0)
    env = SchedulingEnv(problem=fixed_problem(), max_tasks=32, max_nodes=4, sim={"classic": True})
    rng = np.random.default_rng(0)
    policy = SchedulingPolicy(hidden=32)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    buffer = []
    for r in range(6):
        for e in range(4):
            samples, _ = play_episode(env, policy if r else None, max(0.2, 1 - r / 5), rng, 100 * r + e)
            buffer.extend(samples)
        stats = fit(policy, optimizer, buffer, epochs=3, batch_size=32, rng=rng)
    random_mean = np.mean([greedy_makespan(env, None, s) for s in range(10)])
    trained = greedy_makespan(env, policy, 0)
    assert stats["accuracy"] > 0.6
    assert trained < random_mean, (trained, random_mean)
    assert time.perf_counter() - t0 < 60


def test_rllib_ppo_iteration_gives_loadable_weights(tmp_path) -> None:
    """One PPO iteration on RLlib (local Ray, 0 remote runners) runs and its weights load into SchedulingPolicy."""
    pytest.importorskip("ray.rllib")
    from dagsched.rl.train import TrainConfig, train

    cfg = TrainConfig(
        name="tiny",
        out_dir=str(tmp_path),
        seed=1,
        stages=((6, 12),),
        families=("layered", "random"),
        recipes=(),
        imitation_rounds=1,
        episodes_per_round=2,
        eval_problems=1,
        eval_tasks=10,
        rl_iterations=1,
        rl_stages=1,
        rl_batch=128,
        rl_minibatch=64,
        rl_epochs=1,
        envs_per_runner=2,
        hidden=16,
        progress=False,
    )
    record = train(cfg)
    state = [h for h in record["history"] if h["phase"] == "ppo"]
    assert len(state) == 1 and np.isfinite(state[0]["eval_ratio"])
    policy = load_policy(tmp_path / "tiny" / "checkpoint" / "policy")
    assert policy.config.hidden == 16
    assert (tmp_path / "tiny" / "tb").is_dir()
    loaded = load_policy(record["weights"])
    assert loaded.config == policy.config


def test_rl_fine_tunes_the_action_space_the_policy_decodes(tmp_path) -> None:
    """RL samples what the policy decodes on one workflow: pairs, or `rank_node` (`auto` decodes it there); the
    decodes without a per-step distribution are refused. A run from a saved `rank_node` policy fine-tunes that
    policy (its own width, not the config's) in the `rank_node` environment, with the reward weights given."""
    pytest.importorskip("ray.rllib")
    from dagsched.policy.files import save_policy
    from dagsched.policy.gnn import PolicyConfig
    from dagsched.rl.train import TrainConfig, rl_action_space, train

    for action, env_action in (("pair", "pair"), ("auto", "rank_node"), ("rank_node", "rank_node")):
        assert rl_action_space(PolicyConfig(action_space=action)) == env_action
    for action in ("task_eft", "rank_top2"):
        with pytest.raises(ValueError, match=action):
            rl_action_space(PolicyConfig(action_space=action))

    torch.manual_seed(0)
    save_policy(SchedulingPolicy(PolicyConfig(hidden=8, action_space="rank_node")), tmp_path / "start")
    cfg = TrainConfig(
        name="rank",
        out_dir=str(tmp_path),
        seed=2,
        stages=((6, 12),),
        families=("layered",),
        recipes=(),
        imitation_rounds=0,
        eval_problems=1,
        eval_tasks=10,
        rl_iterations=1,
        rl_stages=1,
        rl_batch=96,
        rl_minibatch=48,
        rl_epochs=1,
        envs_per_runner=1,
        rl_cluster="random",
        rl_reward={"makespan": 1.0, "cost": 0.0},
        init_policy=str(tmp_path / "start"),
        progress=False,
    )
    record = train(cfg)
    assert [h["phase"] for h in record["history"]] == ["ppo"]
    tuned = load_policy(record["weights"])
    assert (tuned.config.hidden, tuned.config.action_space) == (8, "rank_node")
    assert record["config"]["rl_reward"] == {"makespan": 1.0, "cost": 0.0}
    assert record["algorithm"].startswith(f"from {tmp_path / 'start'}, then PPO")


def test_train_command_passes_its_options_to_the_config(monkeypatch, tmp_path) -> None:
    """`dagsched train` builds the TrainConfig from its flags (the imitation --lr included) and reports the run."""
    from typer.testing import CliRunner

    import dagsched.rl.train as train_module
    from dagsched.cli import app

    seen = {}

    def fake_train(cfg, command):
        seen["cfg"] = cfg
        return {"weights": str(tmp_path / "p.safetensors"), "wall_time_s": 1.0, "validation_makespan_over_heft": 1.25}

    monkeypatch.setattr(train_module, "train", fake_train)
    argv = ["train", "--name", "t", "--out-dir", str(tmp_path), "--lr", "2e-4", "--stages", "10-30,40-100"]
    argv += ["--seed", "5", "--teacher", "rollout"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    cfg = seen["cfg"]
    assert (cfg.lr, cfg.seed, cfg.name, cfg.teacher) == (2e-4, 5, "t", "rollout")
    bad = CliRunner().invoke(app, ["train", "--teacher", "oracle"])
    assert bad.exit_code == 2 and "--teacher" in bad.output
    for ccr in ("ten", "5-1", "0-3"):
        bad = CliRunner().invoke(app, ["train", "--ccr", ccr])
        assert bad.exit_code == 2 and "--ccr" in bad.output
    for flag, value in (
        ("--rl-cluster", "huge-9"),
        ("--rl-reward", "makespan=fast"),
        ("--rl-reward", "speed=1"),
        ("--init-policy", str(tmp_path / "missing")),
    ):
        bad = CliRunner().invoke(app, ["train", flag, value])
        assert bad.exit_code == 2 and flag in bad.output, bad.output
    rl = ["--rl-cluster", "random", "--rl-reward", "makespan=1,cost=0", "--init-policy", str(tmp_path / "p")]
    (tmp_path / "p.safetensors").write_bytes(b"")
    ok = CliRunner().invoke(app, [*argv, *rl])
    assert ok.exit_code == 0, ok.output
    assert (seen["cfg"].rl_cluster, seen["cfg"].rl_reward) == ("random", {"makespan": 1.0, "cost": 0.0})
    assert seen["cfg"].init_policy == str(tmp_path / "p")
    ok = CliRunner().invoke(app, [*argv[:-2], "--teacher", "expert", "--ccr", "0.1-10", "--heterogeneity", "0.9"])
    assert ok.exit_code == 0, ok.output
    assert (seen["cfg"].teacher, seen["cfg"].ccr_range, seen["cfg"].heterogeneity) == ("expert", (0.1, 10.0), 0.9)
    assert [tuple(s) for s in cfg.stages] == [(10, 30), (40, 100)]
    assert "validation makespan / HEFT 1.250" in result.output


def test_the_rollout_teacher_labels_the_best_bases_move() -> None:
    """At every state of an episode the rollout teacher's label is a legal action: the move of the best base
    heuristic (shortest completion from here) among those the action space can express (a base that would
    wait where waiting is not offered is passed over)."""
    from dagsched.rl.imitation import RolloutTeacher, expressible
    from dagsched.schedulers.rollout import BASES, complete_from_here

    env = SchedulingEnv(problem=fixed_problem(), max_tasks=32, max_nodes=4, sim={"classic": True})
    rng = np.random.default_rng(1)
    samples, info = play_episode(env, None, 1.0, rng, 3, teacher_kind="rollout")
    assert samples and "makespan" in info
    env.reset(seed=3)
    teacher = RolloutTeacher(env)
    K, M = env.config.max_candidates, env.config.max_nodes
    for _ in range(8):
        obs = env.observation
        assert obs is not None and env.sim is not None
        label = teacher.action(env)
        assert obs.action_mask()[label]
        if label < len(obs.candidates) * obs.n_nodes:
            task, node = int(obs.candidates[label // obs.n_nodes]), label % obs.n_nodes
            dp = env.sim.decision_point()
            runs = sorted((complete_from_here(dp, b) for b in BASES), key=lambda r: r[0])
            chosen = next(r for r in runs if expressible(r[1].assignments, obs))
            assert (task, node) in chosen[1].assignments
        _, _, done, truncated, _ = env.step(np.int64(to_padded(label, obs, K, M)))
        if done or truncated:
            break
    # the rollout teacher's own episode is no longer than HEFT's on this problem
    heft_samples, heft_info = play_episode(env, None, 1.0, rng, 3)
    assert info["makespan"] <= heft_info["makespan"] + 1e-6


def test_the_expert_teacher_rolls_out_the_learner_as_one_more_base() -> None:
    """Expert iteration's teacher: the learner (a frozen policy) is rolled out beside the heuristics; the label
    is the move of the shortest completion among all of them, ties to the heuristics, and its counts say
    which base gave each label."""
    from dagsched.rl.imitation import RolloutTeacher, expressible, make_teacher
    from dagsched.schedulers.drl import DRLScheduler
    from dagsched.schedulers.rollout import BASES, complete_from_here

    torch.manual_seed(0)
    learner = SchedulingPolicy(hidden=16).eval()
    env = SchedulingEnv(problem=fixed_problem(), max_tasks=32, max_nodes=4, sim={"classic": True})
    env.reset(seed=3)
    teacher = make_teacher("expert", env, learner)
    assert isinstance(teacher, RolloutTeacher) and len(teacher.bases) == len(BASES) + 1
    K, M = env.config.max_candidates, env.config.max_nodes
    steps = 0
    for _ in range(6):
        obs = env.observation
        assert obs is not None and env.sim is not None
        dp = env.sim.decision_point()
        runs = [complete_from_here(dp, b) for b in BASES]
        runs.append(complete_from_here(dp, DRLScheduler(policy=learner, max_candidates=K)))
        label = teacher.action(env)
        steps += 1
        best = min(r[0] for r in runs if expressible(r[1].assignments, obs))
        if label < len(obs.candidates) * obs.n_nodes:
            pair = (int(obs.candidates[label // obs.n_nodes]), label % obs.n_nodes)
            assert any(r[0] == best and pair in r[1].assignments for r in runs)
        _, _, done, truncated, _ = env.step(np.int64(to_padded(label, obs, K, M)))
        if done or truncated:
            break
    assert sum(teacher.wins.values()) == steps
    assert set(teacher.wins) <= {*BASES, "drl_step"}
    with pytest.raises(ValueError, match="teacher"):
        make_teacher("oracle", env)


def test_training_curves_are_drawn_from_the_saved_history(tmp_path) -> None:
    """The PNG of a policy's curves is drawn from the history in its JSON: the panels the history has, and a
    clear error for a JSON without one."""
    import json

    from dagsched.rl.curves import plot_training

    history = [
        {"phase": "imitation", "step": i, "eval_ratio": 1.1 - 0.01 * i, "accuracy": 0.5 + 0.02 * i} for i in range(5)
    ]
    meta = tmp_path / "p.json"
    meta.write_text(json.dumps({"training": {"history": history, "algorithm": "test"}}))
    out = tmp_path / "curves.png"
    assert plot_training(meta, out) == ["eval_ratio", "accuracy"]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    meta.write_text(json.dumps({"architecture": {}}))
    with pytest.raises(ValueError, match="no training history"):
        plot_training(meta, out)


def test_the_node_rollout_teacher_picks_the_best_tried_node_of_the_top_task() -> None:
    """rank_node labels: the first startable candidate's node (or wait); of the nodes tried (the earliest
    finishes and PEFT's node) the label's forced completion is the shortest, recomputed here on forks."""
    from dagsched.rl.imitation import NodeRolloutTeacher, make_teacher
    from dagsched.schedulers.rollout import complete_from_here

    problem = Problem(
        name="ccr", workflows=[generate_workflow("layered", 16, 2, ccr=5.0)], cluster=cluster_preset("hetero-16")
    )
    env = SchedulingEnv(problem=problem, max_tasks=32, max_nodes=16, sim={"classic": True})
    env.reset(seed=1)
    teacher = make_teacher("node_rollout", env)
    assert isinstance(teacher, NodeRolloutTeacher)
    K, M = env.config.max_candidates, env.config.max_nodes
    for _ in range(10):
        obs = env.observation
        assert obs is not None and env.sim is not None
        k, m = len(obs.candidates), obs.n_nodes
        label = teacher.action(env)
        assert obs.action_mask()[label]
        rows = np.flatnonzero(obs.legal.any(axis=1))
        if len(rows) and label < k * m:
            row = int(rows[0])
            assert label // m == row
            tried = teacher.nodes_to_try(obs, row)
            assert int(np.argmin(np.where(obs.legal[row], obs.est_finish_s[row], np.inf))) in tried
            dp = env.sim.decision_point()

            def forced(node: int, dp=dp, task=int(obs.candidates[row])) -> float:
                fork = dp.fork()
                fork.start(task, node)
                return min(complete_from_here(fork.decision_point(), b)[0] for b in teacher.bases)

            spans = {node: forced(node) for node in tried}
            assert label % m in tried and spans[label % m] <= min(spans.values()) + 1e-9
        _, _, done, truncated, _ = env.step(np.int64(to_padded(label, obs, K, M)))
        if done or truncated:
            break
    assert sum(teacher.wins.values()) >= 1


def test_rank_node_training_masks_all_but_the_top_task_and_the_learner_acts_there() -> None:
    """A rank_node policy's loss is a softmax over the top startable task's legal nodes and wait only, and its
    learner acts in that space; the teacher fixes the policy's action space, and RL fine-tuning refuses it."""
    from dagsched.rl.imitation import learner_action, top_row_mask
    from dagsched.rl.train import TrainConfig

    env = SchedulingEnv(problem=fixed_problem(), max_tasks=32, max_nodes=4, sim={"classic": True})
    env.reset(seed=3)
    obs = env.observation
    assert obs is not None
    batch, layout = collate([obs])
    K, M = layout[0]
    mask = top_row_mask([obs], batch["action_mask"], K, M)[0].numpy()
    row = int(np.flatnonzero(obs.legal.any(axis=1))[0])
    assert mask[row * M : row * M + obs.n_nodes].tolist() == obs.legal[row].tolist()
    assert mask[: row * M].sum() == 0 and mask[(row + 1) * M : -1].sum() == 0
    assert bool(mask[-1]) == bool(obs.wait_legal)
    policy = SchedulingPolicy(hidden=16, action_space="rank_node").eval()
    a = learner_action(policy, obs)
    assert a == obs.n_nodes * len(obs.candidates) or a // obs.n_nodes == row
    assert TrainConfig(teacher="node_rollout").policy_config().action_space == "rank_node"
    assert TrainConfig(teacher="expert").policy_config().action_space == "pair"
    with pytest.raises(ValueError, match="action_space"):
        SchedulingPolicy(hidden=16, action_space="node_only")

"""The GNN policy: masked logits, batching, the fast path and the inference path agree, safetensors files
round-trip and refuse mismatches, and an untrained policy drives a whole valid episode."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.policy.features import FEATURE_VERSION, FeatureBuilder
from dagsched.policy.files import PolicyFileError, load_policy, save_policy
from dagsched.policy.gnn import MASK_LOGIT, SchedulingPolicy, choose
from dagsched.policy.inference import DENSE_MAX_TASKS, PolicyInference
from dagsched.rl.env import SchedulingEnv
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator
from dagsched.sim.validate import validate_trace

VARIANTS = {
    "gat": ({}, {}),
    "gcn-lstm": ({"conv": "gcn", "history_len": 4}, {"history_len": 4}),
    "gat-mlp-history": ({"history_len": 2, "history_encoder": "mlp", "layers": 1}, {"history_len": 2}),
}


def _batch(observations):
    return {k: torch.from_numpy(np.stack([o[k] for o in observations])) for k in observations[0]}


def _collect(env, seeds, steps=3):
    """Padded and unpadded observations from a few states of a few episodes."""
    padded, exact = [], []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        for _ in range(steps):
            padded.append(obs)
            exact.append(env.observation)
            obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
            if terminated or truncated:
                break
    return padded, exact


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_batched_forward_equals_per_observation_and_fast_path(variant, small):
    """Logits and values of a padded batch equal those of each observation alone, and of the unpadded
    fast path on the same state (mapped to the padded layout); illegal actions get MASK_LOGIT."""
    torch.manual_seed(0)
    arch, env_kw = VARIANTS[variant]
    policy = SchedulingPolicy(**arch).eval()
    env = SchedulingEnv(small, cluster=None, random_nodes=(2, 9), **env_kw)
    padded, exact = _collect(env, seeds=[0, 1, 2])
    K, M = env.config.max_candidates, env.config.max_nodes
    with torch.no_grad():
        logits, values = policy(_batch(padded))
        for i, (obs, ob) in enumerate(zip(padded, exact, strict=True)):
            one_logits, one_value = policy(_batch([obs]))
            torch.testing.assert_close(logits[i], one_logits[0], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(values[i], one_value[0], rtol=1e-5, atol=1e-5)
            mask = torch.from_numpy(obs["action_mask"]).bool()
            assert torch.all(logits[i][~mask] == MASK_LOGIT)
            assert torch.all(logits[i][mask] > MASK_LOGIT / 2)
            fast, fast_value = policy.forward_single(ob)
            k, m = len(ob.candidates), ob.n_nodes
            pairs = logits[i, :-1].reshape(K, M)[:k, :m].reshape(-1)
            torch.testing.assert_close(pairs, fast[:-1], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(logits[i, -1], fast[-1], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(values[i], fast_value, rtol=1e-5, atol=1e-5)


def test_saved_and_loaded_policy_gives_identical_logits(tmp_path, small):
    """save_policy writes <path>.safetensors and <path>.json; load_policy rebuilds a policy whose logits
    are bit-identical; the JSON records the architecture, feature version and sha256."""
    torch.manual_seed(1)
    policy = SchedulingPolicy(conv="gcn", history_len=3, hidden=32).eval()
    weights, meta = save_policy(policy, tmp_path / "model")
    assert weights.name == "model.safetensors" and meta.name == "model.json"
    info = json.loads(meta.read_text())
    assert info["feature_version"] == FEATURE_VERSION
    assert info["architecture"]["hidden"] == 32 and info["architecture"]["conv"] == "gcn"
    assert len(info["sha256"]) == 64
    loaded = load_policy(tmp_path / "model.safetensors")
    env = SchedulingEnv(small, history_len=3)
    padded, exact = _collect(env, seeds=[3])
    with torch.no_grad():
        assert torch.equal(policy(_batch(padded))[0], loaded(_batch(padded))[0])
        assert torch.equal(policy.forward_single(exact[0])[0], loaded.forward_single(exact[0])[0])


def _edit(meta_path, change):
    info = json.loads(meta_path.read_text())
    change(info)
    meta_path.write_text(json.dumps(info))


def test_load_refuses_mismatches_with_a_message(tmp_path):
    """Loading refuses another feature version, other feature sizes, changed weights and an architecture that
    does not match the tensors, each with a message naming what differs."""
    policy = SchedulingPolicy(hidden=16, heads=1)
    _, meta = save_policy(policy, tmp_path / "p")
    good = meta.read_text()

    _edit(meta, lambda i: i.update(feature_version=FEATURE_VERSION + 1))
    with pytest.raises(
        PolicyFileError, match=f"feature version {FEATURE_VERSION + 1}.*feature version {FEATURE_VERSION}"
    ):
        load_policy(tmp_path / "p")

    meta.write_text(good)
    _edit(meta, lambda i: i["feature_sizes"].update(task=99))
    with pytest.raises(PolicyFileError, match="task: file 99, code 21"):
        load_policy(tmp_path / "p")

    meta.write_text(good)
    _edit(meta, lambda i: i["architecture"].update(hidden=32))
    with pytest.raises(PolicyFileError, match=r"task_in\.0\.weight: file \[16, 21\], architecture \[32, 21\]"):
        load_policy(tmp_path / "p")

    meta.write_text(good)
    save_policy(SchedulingPolicy(hidden=16, heads=1), tmp_path / "other")
    (tmp_path / "p.safetensors").write_bytes((tmp_path / "other.safetensors").read_bytes())
    with pytest.raises(PolicyFileError, match="sha256"):
        load_policy(tmp_path / "p")

    with pytest.raises(PolicyFileError, match="missing"):
        load_policy(tmp_path / "nothing")


def test_untrained_greedy_rollout_completes_and_validates(small):
    """A freshly initialised policy acting greedily through the environment finishes the episode, and
    the fast-path chooser drives the same kind of episode; both traces pass the validator."""
    torch.manual_seed(2)
    policy = SchedulingPolicy().eval()
    env = SchedulingEnv(small, cluster="hetero-16", n_workflows=2, n_tasks=(8, 16), sim={"noise_cv": 0.3})
    for seed in (0, 1):
        obs, _ = env.reset(seed=seed)
        terminated = truncated = False
        steps = 0
        while not (terminated or truncated):
            with torch.no_grad():
                logits, _ = policy(_batch([obs]))
            action = int(torch.argmax(logits[0]))
            assert obs["action_mask"][action]
            if seed == 1:  # the unpadded chooser must pick the same pair
                assert choose(policy, env.observation) == env.decode_action(action)
            obs, _, terminated, truncated, info = env.step(action)
            steps += 1
        assert terminated, info
        assert validate_trace(env.cp, env.sim.trace).ok
        assert info["makespan"] > 0 and steps >= env.cp.n_tasks


def _decision_states(problem_args, history_len=0, seed=0, max_states=60):
    """(builder, reference observation, decision inputs) at successive decision states of one random-legal episode.

    Two builders follow the same simulator (one builds observations, one decision inputs), so both keep their
    own history; states come from the whole episode, i.e. also after many decisions were made.
    """
    family, n_tasks, cluster, config = problem_args
    cp = compile_problem(
        Problem(workflows=[generate_workflow(family, n_tasks, seed + 1)], cluster=cluster_preset(cluster))
    )
    sim = Simulator(cp, config, seed)
    ref = FeatureBuilder(cp, sim.classic, 16, history_len)
    fast = FeatureBuilder(cp, sim.classic, 16, history_len)
    rng = np.random.default_rng(seed)
    states = []
    while not sim.done and len(states) < max_states and sim.step():
        dp = sim.decision_point()
        if not dp.any_legal:
            continue
        states.append((ref.build(dp), fast.decision(dp)))
        i, nd = np.argwhere(dp.legal)[rng.integers(dp.legal.sum())]
        sim.start(int(dp.ready[i]), int(nd))
    return fast, states


PROBLEMS = {
    "dense-cloud": ("layered", 24, "hetero-16", SimConfig(noise_cv=0.3)),
    "dense-classic": ("etl_star", 40, "small-3", SimConfig(classic=True)),
    "sparse-cloud": ("random", 150, "large-100", SimConfig(straggler_rate_per_h=6.0, noise_cv=0.2)),
}


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_inference_path_equals_forward_single(variant, problem):
    """PolicyInference (numpy, fused dense or CSR message passing, legal pairs only) gives forward_single's
    masked logits within 1e-5 and the same greedy action, at every state of an episode (mid-episode too),
    for GAT and GCN policies with and without node history, on dense (<= DENSE_MAX_TASKS) and sparse DAGs."""
    torch.manual_seed(4)
    arch, env_kw = VARIANTS[variant]
    policy = SchedulingPolicy(**arch).eval()
    builder, states = _decision_states(PROBLEMS[problem], env_kw.get("history_len", 0))
    assert (builder.cp.n_tasks <= DENSE_MAX_TASKS) == problem.startswith("dense")
    inference = PolicyInference(policy, builder)
    assert len(states) >= 20
    for ob, d in states:
        with torch.inference_mode():
            ref = policy.forward_single(ob)[0]
        fast = torch.from_numpy(inference.logits(d))
        torch.testing.assert_close(fast, ref, rtol=1e-5, atol=1e-5)
        assert int(torch.argmax(fast)) == int(torch.argmax(ref))
        assert torch.all(fast[~torch.from_numpy(ob.action_mask())] == MASK_LOGIT)


def test_fused_message_passing_equals_pyg_layers():
    """One fused round of the inference path equals PyG's GATConv / GCNConv along and against the edges
    (self-loops added as _embed_tasks does), concatenated, within 1e-5: dense and CSR forms, duplicate edges too,
    and scores large enough that the softmax must be shifted by its maximum."""
    from torch_geometric.utils import add_self_loops

    from dagsched.policy.inference import _EXP_SAFE, _Graph, _weights

    rng = np.random.default_rng(0)
    for conv in ("gat", "gcn"):
        torch.manual_seed(5)
        policy = SchedulingPolicy(conv=conv, hidden=32).eval()
        w = _weights(policy)
        for n in (30, DENSE_MAX_TASKS + 50):
            src = rng.integers(0, n - 1, size=3 * n)
            dst = src + 1 + rng.integers(0, n - 1 - src)  # a DAG: edges go to higher indices
            edge_index = np.stack([src, dst]).astype(np.int64)
            edge_index = np.concatenate([edge_index, edge_index[:, :3]], axis=1)  # three doubled edges
            graph = _Graph(edge_index, n, w.heads, w.gat, w.slope)
            assert graph.dense == (n <= DENSE_MAX_TASKS)
            loops, _ = add_self_loops(torch.from_numpy(edge_index), num_nodes=n)
            for scale in (1.0, 10.0):  # scores over _EXP_SAFE take the max-shifted softmax
                h = torch.randn(n, 32) * scale
                with torch.inference_mode():
                    want = torch.cat([policy.along[0](h, loops), policy.against[0](h, loops.flip(0))], dim=-1)
                got = graph(w.rounds[0], h.numpy())
                torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-5, atol=1e-5 * scale)
                if conv == "gat":
                    f = 2 * w.heads
                    scores = np.abs(h.numpy() @ w.rounds[0].w[:, -2 * f :])
                    assert (scores[:, :f].max() + scores[:, f:].max() > _EXP_SAFE) == (scale > 1.0)


def test_inference_reads_the_weights_as_they_are_when_made():
    """The numpy copy of the weights is made again after an in-place change of the policy's parameters."""
    torch.manual_seed(6)
    policy = SchedulingPolicy(hidden=16, heads=1).eval()
    builder, states = _decision_states(PROBLEMS["dense-cloud"], max_states=1)
    ob, d = states[0]
    before = PolicyInference(policy, builder).logits(d)
    with torch.no_grad():
        policy.pair_out[2].bias.add_(1.0)
        ref = policy.forward_single(ob)[0].numpy()
    after = PolicyInference(policy, builder).logits(d)
    legal = ob.legal.reshape(-1)
    assert np.allclose(after[:-1][legal], before[:-1][legal] + 1.0, atol=1e-5)
    assert np.allclose(after, ref, rtol=1e-5, atol=1e-5)

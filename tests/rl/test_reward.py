"""Reward: per-step terms sum to the episode objective computed from the trace; weights and baselines."""

from __future__ import annotations

import numpy as np
import pytest

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.rl.env import SchedulingEnv
from dagsched.rl.reward import TERMS, RewardWeights, compute_baseline, load_std_integral_s, objective_terms
from dagsched.schedulers import simulate
from dagsched.sim.config import SimConfig
from dagsched.sim.metrics import lower_bound_s


def _tight_deadline_problem() -> Problem:
    """Three workflows, two of which must miss their deadlines (1 s after submission)."""
    wfs = [
        generate_workflow("layered", 10, 1, name="late-a").model_copy(update={"deadline": 1.0}),
        generate_workflow("etl_star", 8, 2, name="ok").model_copy(update={"submit_time": 30.0}),
        generate_workflow("random", 9, 3, name="late-b").model_copy(update={"deadline": 1.0, "submit_time": 60.0}),
    ]
    return Problem(name="deadlines", workflows=wfs, cluster=cluster_preset("small-3"))


CASES = {
    "cloud": {},
    "classic": {"sim": {"classic": True}},
    "noise-failures": {"sim": {"noise_cv": 0.4, "mtbf_s": 1500.0, "mttr_s": 200.0, "overrun_factor": 1.5}},
    "stream-billing": {
        "n_workflows": 3,
        "cluster": None,
        "random_nodes": (2, 6),
        "sim": {"billing_granularity_s": 60.0, "billing_minimum_s": 120.0, "straggler_rate_per_h": 3.0},
    },
    "deadlines-lower-bound": {"problem": _tight_deadline_problem(), "baseline": "lower_bound"},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_step_terms_sum_to_the_episode_objective(case, small, play):
    """On random episodes each term's per-step rewards sum to minus that term of the objective computed from
    the trace (compute_metrics and the trace's load integral) to 1e-6, and the rewards to -Σ weight x term."""
    env = SchedulingEnv(small, **CASES[case])
    for seed in range(3):
        _, rewards, info, terminated = play(env, seed)
        assert terminated
        objective = objective_terms(env.cp, env.sim.trace, env.config.sim, env.baseline)
        for name in TERMS:
            assert env.tracker.totals[name] == pytest.approx(-objective[name], abs=1e-6), name
            assert info["objective"][name] == pytest.approx(objective[name], abs=1e-6), name
        weights = env.config.reward
        assert sum(rewards) == pytest.approx(-sum(getattr(weights, n) * objective[n] for n in TERMS), abs=1e-6)
        assert objective["makespan"] == pytest.approx(info["makespan"] / env.baseline.makespan_s)
    if case == "deadlines-lower-bound":
        assert objective["sla"] == pytest.approx(2 / 3)


def test_load_integral_from_the_trace():
    """The load term's integral: two 1-cpu nodes, one busy for 10 s while the other idles, gives std 0.5 x 10 s."""
    from dagsched.model import Cluster, Node, Task, Workflow
    from dagsched.sim.trace import Attempt, Trace

    problem = Problem(
        workflows=[Workflow(name="w", tasks=[Task(id="a", runtime=10.0), Task(id="b", runtime=4.0)])],
        cluster=Cluster(nodes=[Node(id="x", cpu=1, mem=1), Node(id="y", cpu=1, mem=1)]),
    )
    cp = compile_problem(problem)
    trace = Trace("t", 0, False, 0.0, attempts=[Attempt(0, 0, 0.0, 10.0, "done", 10.0)])
    assert load_std_integral_s(cp, trace) == pytest.approx(5.0)
    trace.attempts.append(Attempt(1, 1, 0.0, 4.0, "done", 4.0))  # both busy for 4 s: no spread then
    assert load_std_integral_s(cp, trace) == pytest.approx(3.0)


def test_weights_come_from_config(small, play):
    """With weight 1 on makespan and 0 elsewhere the episode return is exactly -makespan / baseline."""
    weights = {"makespan": 1.0, "cost": 0.0, "sla": 0.0, "fragmentation": 0.0, "load": 0.0}
    env = SchedulingEnv(small, reward=weights)
    _, rewards, info, _ = play(env, 5)
    assert sum(rewards) == pytest.approx(-info["makespan"] / info["baseline"]["makespan_s"], rel=1e-9)
    assert RewardWeights().model_dump() == {
        "makespan": 0.4,
        "cost": 0.3,
        "sla": 0.2,
        "fragmentation": 0.1,
        "load": 0.05,
        "completion": 0.0,
    }


@pytest.mark.parametrize("baseline", ["heft", "lower_bound"])
def test_completion_reward_is_the_mean_completion_time(small, play, baseline):
    """With weight 1 on completion alone, a stream episode's return is minus the mean over workflows of (the end
    of its last task - its submission), read off the trace's attempts, over the baseline's mean completion: HEFT's
    on predicted runtimes, or the mean critical path on the fastest hosts; on one workflow submitted at 0 the
    completion is the makespan."""
    weights = {"makespan": 0.0, "cost": 0.0, "sla": 0.0, "fragmentation": 0.0, "load": 0.0, "completion": 1.0}
    env = SchedulingEnv(small, n_workflows=4, arrival_rate_per_h=60.0, reward=weights, baseline=baseline)
    for seed in range(2):
        _, rewards, info, terminated = play(env, seed)
        assert terminated
        cp = env.cp
        end = np.full(cp.n_workflows, -np.inf)
        for a in env.sim.trace.attempts:
            if a.outcome == "done":
                end[cp.task_wf[a.task]] = max(end[cp.task_wf[a.task]], a.end)
        mean_completion = float((end - cp.wf_submit_s).mean())
        assert cp.n_workflows == 4 and len(set(cp.wf_submit_s.tolist())) > 1  # a stream: arrivals spread out
        assert sum(rewards) == pytest.approx(-mean_completion / env.baseline.completion_s, rel=1e-9)
        if baseline == "heft":
            heft = simulate(cp, "heft", SimConfig(classic=env.config.sim.classic), seed=0)
            heft_end = np.zeros(cp.n_workflows)
            for a in heft.trace.attempts:
                heft_end[cp.task_wf[a.task]] = max(heft_end[cp.task_wf[a.task]], a.end)
            assert env.baseline.completion_s == pytest.approx(float((heft_end - cp.wf_submit_s).mean()))
    one = SchedulingEnv(small, reward=weights)
    _, rewards, info, _ = play(one, 3)
    assert sum(rewards) == pytest.approx(-info["makespan"] / one.baseline.completion_s, rel=1e-9)


def test_baselines():
    """The HEFT baseline is HEFT's makespan and cost on predicted runtimes (noise and failures off);
    the lower-bound baseline is lower_bound_s."""
    cp = compile_problem(Problem(workflows=[generate_workflow("layered", 20, 4)], cluster=cluster_preset("hetero-16")))
    noisy = SimConfig(noise_cv=0.5, mtbf_s=100.0)
    heft = simulate(cp, "heft", SimConfig(), seed=0).metrics
    b = compute_baseline(cp, noisy, "heft")
    assert (b.kind, b.makespan_s, b.cost) == ("heft", heft.makespan, heft.cost)
    lb = compute_baseline(cp, noisy, "lower_bound")
    assert lb.makespan_s == lower_bound_s(cp, False) and 0 < lb.cost < heft.cost
    classic = compute_baseline(cp, SimConfig(classic=True), "heft")
    assert classic.makespan_s == simulate(cp, "heft", SimConfig(classic=True)).metrics.makespan
    assert np.isfinite(classic.cost)

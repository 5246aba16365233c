"""Decision latency of the learned scheduler (`drl`): the reference path against the inference path.

One decision is one pick of the policy inside `DRLScheduler.decide`: the ready state, the features,
the network, the choice and the start on the fork; all of decide's time is counted (the closing
check that finds nothing more to start is added to the last pick of its call).
- reference: `FeatureBuilder.build` + `SchedulingPolicy.forward_single` (PyG), `DRLScheduler(fast=False)`;
- numpy: `FeatureBuilder.decision` + `PolicyInference.logits` in numpy (static parts once per plan,
  legal pairs only), `DRLScheduler(compiled=False)`;
- compiled: the same path with the numba kernels of `dagsched.policy.kernels` (features to the bit, the network
  on DAGs up to 96 tasks), `DRLScheduler()` (the default).
Both run in one process, on the same problems and seeds, one torch thread, interleaved per problem;
the plans they make are compared (they must be the same). Also the plans/s of a whole plan of the
20-task workflow (reset, simulation, validation: what the service runs per request, less HTTP).
Prints figures; asserts nothing about wall-clock time (the machine is shared: read the ratios).
Policy: the shipped model (`drl.DEFAULT_MODEL`, hidden 32, 2 GAT layers); `--random-hidden 64` adds an
untrained wider one.

Run: .venv/bin/python benchmarks/bench_inference.py [--picks 300] [--families layered,etl_star,random]
     [--plans 100] [--random-hidden 64]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.policy import DEFAULT_MODEL
from dagsched.policy.features import TASK_DYNAMIC, DecisionInputs, FeatureBuilder
from dagsched.policy.files import load_cached_policy
from dagsched.policy.gnn import SchedulingPolicy
from dagsched.policy.inference import PolicyInference
from dagsched.schedulers import simulate
from dagsched.schedulers.drl import DRLScheduler
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator


def _now() -> npt.NDArray[np.float64]:
    return np.array([time.perf_counter(), time.thread_time()])


def _timed_picks(
    sched: DRLScheduler, cp: CompiledProblem, max_picks: int, inference: Any = None
) -> tuple[list[npt.NDArray[np.float64]], list[tuple[int, int]]]:
    """Per-pick latency (s; wall clock and this thread's cpu time) of `sched` driving a simulation of `cp`
    until `max_picks` picks, and its assignments. `inference(policy, builder)`, if given, replaces the
    scheduler's PolicyInference (the sketches below)."""
    sim = Simulator(cp, SimConfig(), 0)
    sched.reset(cp, sim.decision_point(), 0)
    if inference is not None:
        sched.inference = inference(sched.policy, sched.builder)
    sim.trace.scheduler = sched.name
    marks: list[npt.NDArray[np.float64]] = []  # entry of each feature call of the current decide (one per pick)
    picked: list[bool] = []  # whether a pick followed that entry
    builder: Any = sched.builder
    features = builder.decision if sched.inference is not None else builder.build
    pick = sched._pick

    def timed_features(view: Any) -> Any:
        marks.append(_now())
        picked.append(False)
        return features(view)

    def timed_pick(obs: Any) -> int:
        picked[-1] = True
        return pick(obs)

    lat: list[npt.NDArray[np.float64]] = []
    plan: list[tuple[int, int]] = []
    decide = sched.decide

    def timed_decide(view: Any) -> Any:
        marks.clear()
        picked.clear()
        start = _now()
        decision = decide(view)
        if not marks:  # nothing could start: the decision point only asked to be woken
            return decision
        marks[0] = start  # the first pick also pays the decision point's legality
        bounds = [*marks[1:], _now()]
        spans = [b - a for a, b, p in zip(marks, bounds, picked, strict=True) if p]
        if spans:
            spans[-1] += sum(b - a for a, b, p in zip(marks, bounds, picked, strict=True) if not p)
        lat.extend(spans)
        plan.extend(decision.assignments)
        return decision

    if sched.inference is not None:
        builder.decision = timed_features
    else:
        builder.build = timed_features
    sched._pick = timed_pick  # type: ignore[method-assign]
    sched.decide = timed_decide  # type: ignore[method-assign]
    while not sim.done and len(lat) < max_picks:
        dp = sim.next_decision()
        if dp is None:
            break
        sim.apply(sched.decide(dp))
    return lat, plan


def _pct(xs: list[npt.NDArray[np.float64]], clock: int = 0) -> tuple[float, float]:
    """p50 and p99 in ms of the wall clock (0) or cpu time (1)."""
    a = np.asarray(xs)[:, clock] * 1e3
    return float(np.percentile(a, 50)), float(np.percentile(a, 99))


PATHS = {"reference": {"fast": False}, "numpy": {"compiled": False}, "compiled": {}}
"""The three paths, as DRLScheduler arguments."""


def compare(label: str, cp: CompiledProblem, policy: Any, picks: int, rounds: int) -> None:
    lat: dict[str, list[npt.NDArray[np.float64]]] = {name: [] for name in PATHS}
    plans: dict[str, list[tuple[int, int]]] = {}
    for _ in range(rounds):  # interleaved, so the paths see the same load on a shared machine
        for name, kw in PATHS.items():
            picked, plans[name] = _timed_picks(DRLScheduler(policy=policy, **kw), cp, picks)
            lat[name] += picked
    same = len({tuple(p) for p in plans.values()}) == 1
    print(f"{label} | {len(lat['reference']) // rounds} picks x {rounds} | same plan on all paths: {same}")
    for clock, clock_name in ((0, "wall"), (1, "cpu ")):
        cells = [f"{name} p50 {p50:6.3f} p99 {p99:6.3f}" for name in PATHS for p50, p99 in [_pct(lat[name], clock)]]
        (n50, n99), (c50, c99) = _pct(lat["numpy"], clock), _pct(lat["compiled"], clock)
        print(
            f"    {clock_name} ms  "
            + "  | ".join(cells)
            + f"  | numpy/compiled x{n50 / c50:4.1f} p50 x{n99 / c99:4.1f} p99"
        )


class StaticEncoderSketch(PolicyInference):
    """What a static-encoder architecture would cost per decision (NOT the shipped model: random weights).

    Sketch: the DAG encoder (task MLP + message passing) runs once per plan on the static columns only;
    per decision a candidate's dynamic columns enter through one linear layer on the k candidates, then
    the same node encoder, summary and legal-pair scorer as now. Timing only; it would need retraining.
    """

    def __init__(self, policy: SchedulingPolicy, builder: FeatureBuilder) -> None:
        super().__init__(policy, builder)
        self.h_static: Any = None
        self.dyn_w = np.random.default_rng(0).standard_normal((len(TASK_DYNAMIC), policy.config.hidden))
        self.dyn_w = self.dyn_w.astype(np.float32)

    def embed_tasks(self, d: DecisionInputs) -> Any:
        if self.h_static is None:  # once per plan (the dynamic columns at the first decision stand in)
            self.h_static = super().embed_tasks(d)
        h = self.h_static.copy()  # what the candidates' own dynamic part adds, per decision
        c = d.candidates
        h[c] += np.maximum(d.task_dyn[c] @ self.dyn_w, 0.0)
        return h


def sketches(families: list[str], picks: int) -> None:
    """Per-decision latency of possible architectures, random weights, on the inference path (timing only)."""
    torch.manual_seed(0)
    arms: list[tuple[str, Any, Any]] = [
        ("shipped: GAT h32, 2 rounds", load_cached_policy(), None),
        ("GCN h32, 2 rounds (random)", SchedulingPolicy(conv="gcn", hidden=32).eval(), None),
        ("static encoder + scorer (random)", SchedulingPolicy(hidden=32).eval(), StaticEncoderSketch),
    ]
    problems = [("layered", 20, "hetero-16")] + [(f, 1000, "large-100") for f in families]
    for family, n, cluster in problems:
        cp = _problem(family, n, cluster)
        cells = []
        for label, policy, make in arms:
            lat, _ = _timed_picks(DRLScheduler(policy=policy), cp, picks, make)
            (p50, p99), (c50, c99) = _pct(lat, 0), _pct(lat, 1)
            cells.append(f"{label}: wall p50 {p50:5.2f} p99 {p99:5.2f}, cpu p50 {c50:5.2f} p99 {c99:5.2f}")
        print(f"{family} {n} tasks, {cp.n_nodes} nodes (ms)")
        for cell in cells:
            print("    " + cell)


def plans_per_s(cp: CompiledProblem, policy: Any, plans: int) -> None:
    """Whole plans (reset, simulation, validation) per second, as the service runs them, the paths interleaved."""
    secs: dict[str, list[npt.NDArray[np.float64]]] = {name: [] for name in PATHS}
    for _ in range(plans):
        for name, kw in PATHS.items():
            t0 = _now()
            simulate(cp, DRLScheduler(policy=policy, **kw), SimConfig(), 0, validate=True)
            secs[name].append(_now() - t0)
    print(f"whole plan, {cp.n_tasks} tasks on {cp.n_nodes} nodes (simulate + validate), median of {plans}")
    for clock, clock_name in ((0, "wall"), (1, "cpu ")):
        med = {name: float(np.median(np.asarray(secs[name])[:, clock])) for name in PATHS}
        cells = [f"{name} {1 / s:5.0f} plans/s ({s * 1e3:6.2f} ms)" for name, s in med.items()]
        print(f"    {clock_name}  " + " | ".join(cells) + f" | numpy/compiled x{med['numpy'] / med['compiled']:4.1f}")


def _problem(family: str, n: int, cluster: str, seed: int = 1) -> CompiledProblem:
    return compile_problem(Problem(workflows=[generate_workflow(family, n, seed)], cluster=cluster_preset(cluster)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--picks", type=int, default=300, help="picks per 1,000-task problem (from the start)")
    parser.add_argument("--families", default="layered,etl_star,random")
    parser.add_argument("--small-rounds", type=int, default=20, help="whole 20-task episodes per path")
    parser.add_argument("--plans", type=int, default=100, help="whole 20-task plans per path for plans/s")
    parser.add_argument("--random-hidden", type=int, default=0, help="also an untrained policy of this width")
    parser.add_argument("--sketches", action="store_true", help="also the per-decision cost of other architectures")
    args = parser.parse_args()
    torch.set_num_threads(1)
    policies: list[tuple[str, Any]] = [(DEFAULT_MODEL, load_cached_policy())]
    if args.random_hidden:
        torch.manual_seed(0)
        policies.append((f"random h{args.random_hidden}", SchedulingPolicy(hidden=args.random_hidden).eval()))
    small = _problem("layered", 20, "hetero-16")
    # one-off set-up costs (torch's first forward, first CSR product) stay out of the figures
    for _, policy in policies:
        _timed_picks(DRLScheduler(policy=policy, fast=False), small, 5)
        _timed_picks(DRLScheduler(policy=policy), _problem("random", 200, "large-100"), 5)
    for name, policy in policies:
        print(f"policy {name}: {policy.config}, torch threads {torch.get_num_threads()}")
        compare(f"layered 20 tasks, {len(small.succ_idx)} edges, 16 nodes", small, policy, 10**9, args.small_rounds)
        for family in args.families.split(","):
            cp = _problem(family, 1000, "large-100")
            compare(f"{family} 1000 tasks, {len(cp.succ_idx)} edges, 100 nodes", cp, policy, args.picks, 1)
        plans_per_s(small, policy, args.plans)
        print()
    if args.sketches:
        print("inference path, per decision, other architectures (random weights: timing only, no trained model)")
        sketches(args.families.split(","), args.picks)


if __name__ == "__main__":
    main()

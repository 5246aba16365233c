"""The learned priority planner (`drl`) on held-out workloads: paired against HEFT, CPOP, PEFT, untrained sampling
and the search planners, with 95 % bootstrap intervals; and its speed.

Problem sets (none trained on; `rl.priority_curriculum.HELD_OUT`), seeds 1..S:

- `literature` (classic mode): the literature's shapes and cost model (`generate.literature`: chains, fork-joins,
  out- and in-trees, layered, random), 10 to 300 tasks on 2 to 16 unrelated machines, CCR 0.1, 0.5, 1, 5, 10,
  heterogeneity beta 0.1 to 1.5; one instance per (shape, CCR, seed);
- `ours` (classic mode): the held-out family etl_star and the held-out recipes (montage, epigenomics,
  1000genome, srasearch) on generated clusters of 2 to 16 nodes (speeds 2 to 10 times apart), CCR 0.1, 1, 10;
- `cloud`: the held-out family and recipes on the presets small-3, homog-8, hetero-16 and large-100 (100 to 1,000
  tasks), cloud mode without runtime noise and with it (noise CV 0.2, simulator seed = the seed).

Schedulers: heft, cpop, peft; `drl` as shipped (its budget of 0.6 s per plan: the classic plans, greedy and K
samples); `drl@1s` (the budget of 1 s, no cap on K); `greedy` (the learned scores decoded once, K = 1, no
classic plans); and at one fixed K without the classic plans, three samplers with the same Gumbel noise:
`learned@K`, `rank_u@K` (untrained: the upward rank at the network's starting prior scale) and `random@K` (a
randomly initialised network of the same architecture, its head at full initial scale); `sampling`, the untrained
planner whole (drl's planner around the upward rank, no network), at drl's budget; `drl@service` and
`sampling@service`, both at the service's budget (0.3 s, at most 64 samples).

Printed per set and group: each scheduler's mean ratio to HEFT and to the best of HEFT/CPOP/PEFT on the same
problem with a 95 % bootstrap interval, the worst ratio and the plan time; paired ratios (A/B) with intervals
and wins/ties/losses. `--curve` runs quality against time per plan beside heft_lookahead, tabu and mcts_uct
on a subset (at equal time: drl with the measured time of each searcher as its budget). `--speed`: the
forward pass's p50/p99, one decode, a whole plan at 1,000 tasks x 100 nodes, beside HEFT's plan.

    .venv/bin/python benchmarks/experiments/learned_planner_held_out.py --sets literature,ours,cloud --seeds 10 --k 64
    .venv/bin/python benchmarks/experiments/learned_planner_held_out.py --sets literature,ours --seeds 5 \
        --first-seed 101 --policy STEM
    .venv/bin/python benchmarks/experiments/learned_planner_held_out.py --sets literature,ours --seeds 10 \
        --schedulers greedy,learned@64,rank_u@64 --policy STEM          # the learned parts alone
    .venv/bin/python benchmarks/experiments/learned_planner_held_out.py --speed
    .venv/bin/python benchmarks/experiments/learned_planner_held_out.py --curve --seeds 10 [--per-seed 4]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dagsched.bench.stats import bootstrap_ci
from dagsched.model import Problem, compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.base import Scheduler
from dagsched.sim.config import MODES, SimConfig

CCRS = (0.1, 0.5, 1.0, 5.0, 10.0)
OURS = ("etl_star", "montage", "epigenomics", "1000genome", "srasearch")
CLASSIC = ("heft", "cpop", "peft")
CLOUD_SKIP = ("drl@1s", "greedy", "random@")
"""Left out of the cloud set (its 1,000-task plans on 100 nodes are the costly part): the 1 s budget, the greedy
plan and the random network (judged in classic mode)."""


def _cloud_skips(name: str) -> bool:
    return any(name.startswith(p) for p in CLOUD_SKIP)


@dataclass
class Case:
    """One held-out problem in one mode."""

    set: str
    group: dict[str, Any]
    cp: CompiledProblem
    config: SimConfig
    seed: int
    runs: dict[str, tuple[float, float]] = field(default_factory=dict)  # scheduler -> (makespan, plan seconds)


def literature_cases(seeds: int, first: int = 1) -> list[Case]:
    from dagsched.generate.literature import SHAPES, literature_problem

    out = []
    for seed in range(first, first + seeds):
        for shape in SHAPES:
            for ccr in CCRS:
                rng = np.random.default_rng([seed, SHAPES.index(shape), CCRS.index(ccr)])
                n = int(round(math.exp(rng.uniform(math.log(10), math.log(300)))))
                m = int(rng.integers(2, 17))
                beta = float(rng.uniform(0.1, 1.5))
                cp = compile_problem(literature_problem(shape, n, m, ccr, beta, int(rng.integers(2**31))))
                group = {"shape": shape, "ccr": ccr, "size": _size_bin(cp.n_tasks), "machines": m}
                out.append(Case("literature", group, cp, MODES["classic"], seed))
    return out


def _held_out_workflow(source: str, n: int, seed: int, ccr: float) -> Any:
    from dagsched.generate import generate_workflow
    from dagsched.generate.recipes import RECIPES, min_tasks, recipe_workflow
    from dagsched.rl.priority_curriculum import BANDWIDTH, with_ccr

    if source in RECIPES:
        return with_ccr(recipe_workflow(source, max(n, min_tasks(source)), seed), ccr, BANDWIDTH)
    return generate_workflow(source, n, seed, ccr=ccr, bandwidth=BANDWIDTH)


def ours_cases(seeds: int, first: int = 1) -> list[Case]:
    from dagsched.rl.priority_curriculum import training_cluster

    out = []
    for seed in range(first, first + seeds):
        for source in OURS:
            for ccr in (0.1, 1.0, 10.0):
                rng = np.random.default_rng([seed, OURS.index(source), int(ccr * 10), 7])
                n = int(round(math.exp(rng.uniform(math.log(10), math.log(300)))))
                m = int(rng.integers(2, 17))
                h = float(math.exp(rng.uniform(math.log(2), math.log(10))))
                wf = _held_out_workflow(source, n, int(rng.integers(2**31)), ccr)
                cp = compile_problem(Problem(workflows=[wf], cluster=training_cluster(m, h, rng, gpu=False)))
                group = {"shape": source, "ccr": ccr, "size": _size_bin(cp.n_tasks), "machines": m}
                out.append(Case("ours", group, cp, MODES["classic"], seed))
    return out


def cloud_cases(seeds: int, first: int = 1, noises: tuple[str, ...] = ("none", "cv0.2")) -> list[Case]:
    from dagsched.generate import cluster_preset

    out = []
    for seed in range(first, first + seeds):
        for cluster in ("small-3", "homog-8", "hetero-16", "large-100"):
            for source in OURS:
                rng = np.random.default_rng([seed, OURS.index(source), len(cluster), 11])
                n = int(rng.choice([100, 200, 500, 1000] if cluster == "large-100" else [50, 100, 200]))
                ccr = float(rng.choice([0.1, 1.0, 5.0]))
                wf = _held_out_workflow(source, n, int(rng.integers(2**31)), ccr)
                cp = compile_problem(Problem(workflows=[wf], cluster=cluster_preset(cluster)))
                group = {"shape": source, "ccr": ccr, "size": _size_bin(cp.n_tasks), "cluster": cluster}
                if "none" in noises:
                    out.append(Case("cloud", dict(group, noise="none"), cp, SimConfig(), seed))
                if "cv0.2" in noises:
                    out.append(Case("cloud", dict(group, noise="cv0.2"), cp, MODES["cloud"], seed))
    return out


def _size_bin(n: int) -> str:
    for hi in (30, 100, 300, 1000):
        if n <= hi:
            return f"<={hi}"
    return ">1000"


def run(case: Case, name: str, make: Callable[[], Scheduler]) -> None:
    result = simulate(case.cp, make(), case.config, case.seed)
    if not result.valid:
        raise RuntimeError(f"{name} on {case.group}: invalid trace: {result.violations[:2]}")
    case.runs[name] = (result.metrics.makespan, float(sum(result.trace.decision_latency_s)))


def makers(policy_path: str | None, k: int) -> dict[str, Callable[[], Scheduler]]:
    import torch

    from dagsched.policy.priority_net import PriorityConfig, PriorityPolicy, load_cached_priority_policy
    from dagsched.schedulers.priority_sampling import PrioritySampling

    policy = load_cached_priority_policy(policy_path)
    torch.manual_seed(0)
    arch = policy.config
    random_net = PriorityPolicy(
        PriorityConfig(hidden=arch.hidden, layers=arch.layers, prior_scale=arch.prior_scale, head_init=1.0)
    )
    random_net.eval()
    scale = arch.prior_scale
    out: dict[str, Callable[[], Scheduler]] = {name: (lambda name=name: make_scheduler(name)) for name in CLASSIC}
    out.update(
        {
            "drl": lambda: PrioritySampling(policy=policy),
            "drl@1s": lambda: PrioritySampling(policy=policy, budget_s=1.0, max_samples=1_000_000),
            "greedy": lambda: PrioritySampling(policy=policy, samples=0, seeds=False),
            f"learned@{k}": lambda: PrioritySampling(policy=policy, samples=k, seeds=False),
            f"rank_u@{k}": lambda: PrioritySampling(scores="rank_u", prior_scale=scale, samples=k, seeds=False),
            f"random@{k}": lambda: PrioritySampling(policy=random_net, samples=k, seeds=False),
            "sampling": lambda: make_scheduler("sampling"),
            "drl@service": lambda: make_scheduler("drl", service=True, policy=policy),
            "sampling@service": lambda: make_scheduler("sampling", service=True),
        }
    )
    return out


def _ci(x: np.ndarray) -> str:
    lo, hi = bootstrap_ci(x)
    return f"{x.mean():.4f} [{lo:.4f}, {hi:.4f}]"


def report(cases: list[Case], names: list[str], pairs: list[tuple[str, str]], by: tuple[str, ...]) -> None:
    def table(sub: list[Case], title: str) -> None:
        print(f"\n{title}: {len(sub)} problems")
        best3 = np.array([min(c.runs[h][0] for h in CLASSIC) for c in sub])
        heft = np.array([c.runs["heft"][0] for c in sub])
        print(
            f"  {'scheduler':14s} {'/ HEFT':28s} {'/ best of 3':28s} {'worst/3':>8s} {'w/t/l vs HEFT':>14s}"
            f" {'plan s':>8s}"
        )
        for n in names:
            ms = np.array([c.runs[n][0] for c in sub])
            secs = np.array([c.runs[n][1] for c in sub])
            r, r3 = ms / heft, ms / best3
            wtl = f"{(r < 1 - 1e-9).sum()}/{(abs(r - 1) <= 1e-9).sum()}/{(r > 1 + 1e-9).sum()}"
            print(f"  {n:14s} {_ci(r):28s} {_ci(r3):28s} {r3.max():8.4f} {wtl:>14s} {np.median(secs):8.4f}")
        for a, b in pairs:
            r = np.array([c.runs[a][0] / c.runs[b][0] for c in sub])
            wtl = f"{(r < 1 - 1e-9).sum()}/{(abs(r - 1) <= 1e-9).sum()}/{(r > 1 + 1e-9).sum()}"
            print(f"  paired {a}/{b}: {_ci(r)}  wins/ties/losses {wtl}")

    table(cases, "all")
    for key in by:
        for value in sorted({str(c.group[key]) for c in cases}, key=lambda v: (len(v), v)):
            sub = [c for c in cases if str(c.group[key]) == value]
            if len(sub) >= 5:
                table(sub, f"{key} = {value}")


def lower_bound_share(cases: list[Case]) -> None:
    """Cloud mode: where HEFT is >= 5 % above the makespan lower bound, drl's ratio to HEFT there."""
    from dagsched.sim.objective import lower_bound_baseline

    hard = [c for c in cases if c.runs["heft"][0] >= 1.05 * lower_bound_baseline(c.cp, c.config).makespan_s]
    print(f"\nHEFT >= 5 % above the lower bound: {len(hard)} of {len(cases)}")
    for name in ("drl", "drl@1s"):
        if hard and name in hard[0].runs:
            r = np.array([c.runs[name][0] / c.runs["heft"][0] for c in hard])
            print(f"  {name}/heft there: {_ci(r)}, worst {r.max():.4f}")


def speed(policy_path: str | None) -> None:
    import torch

    from dagsched.generate import cluster_preset, generate_workflow
    from dagsched.policy.priority_features import task_features
    from dagsched.policy.priority_net import load_cached_priority_policy
    from dagsched.schedulers.priority_sampling import PrioritySampling
    from dagsched.schedulers.static import PlanState, decode_inputs
    from dagsched.sim import listsched
    from dagsched.sim.engine import Simulator

    torch.set_num_threads(1)
    policy = load_cached_priority_policy(policy_path)
    cp = compile_problem(
        Problem(workflows=[generate_workflow("layered", 1000, seed=1, ccr=1.0)], cluster=cluster_preset("large-100"))
    )
    for mode in ("classic", "cloud"):
        config = MODES["classic"] if mode == "classic" else SimConfig()
        inputs = task_features(cp, mode == "classic")
        forward, feats = [], []
        for _ in range(100):
            t0 = time.perf_counter()
            inputs = task_features(cp, mode == "classic")
            t1 = time.perf_counter()
            policy.scores(inputs)
            feats.append(t1 - t0)
            forward.append(time.perf_counter() - t1)
        sim = Simulator(cp, config)
        sim.step()
        dp = sim.decision_point()
        dec = decode_inputs(dp, list(range(cp.n_tasks)), dp.node_timelines(), PlanState(dp))
        decode = []
        for _ in range(30):
            t0 = time.perf_counter()
            listsched.decode(dec, inputs.rank_u)
            decode.append(time.perf_counter() - t0)
        heft_python, heft_compiled, plan, run_python, run_compiled = [], [], [], [], []
        for _ in range(3):
            h = make_scheduler("heft")
            h.compiled = False  # type: ignore[attr-defined]
            t0 = time.perf_counter()
            r = simulate(cp, h, config)
            run_python.append(time.perf_counter() - t0)
            heft_python.append(r.trace.decision_latency_s[0])
            t0 = time.perf_counter()
            r = simulate(cp, "heft", config)
            run_compiled.append(time.perf_counter() - t0)
            heft_compiled.append(r.trace.decision_latency_s[0])
            s = PrioritySampling(policy=policy)
            t0 = time.perf_counter()
            sim = Simulator(cp, config)
            s.reset(cp, sim.decision_point(), 1)
            prep = time.perf_counter() - t0
            r = simulate(cp, s, config, 1)
            plan.append(prep + r.trace.decision_latency_s[0])
        p = np.percentile
        print(
            f"{mode}, 1,000 tasks x 100 nodes: features p50 {p(feats, 50) * 1e3:.1f} ms p99 {p(feats, 99) * 1e3:.1f};"
            f" forward p50 {p(forward, 50) * 1e3:.1f} ms p99 {p(forward, 99) * 1e3:.1f} ms; features + forward p99 "
            f"{p(np.add(feats, forward), 99) * 1e3:.1f} ms; one decode median {np.median(decode) * 1e3:.2f} ms; HEFT's "
            f"plan (first decision) Python {np.median(heft_python) * 1e3:.0f} ms, compiled "
            f"{np.median(heft_compiled) * 1e3:.1f} ms ({np.median(heft_python) / np.median(decode):.0f} x one decode); "
            f"HEFT's whole run (simulate) Python {np.median(run_python):.3f} s, compiled "
            f"{np.median(run_compiled):.3f} s "
            f"({np.median(run_python) / np.median(decode):.0f} x one decode);"
            f" drl's whole plan (features, forward, {s.n_samples(cp.n_tasks) if s.plans == 0 else 'K'} samples and "
            f"the classic plans) median {np.median(plan):.3f} s"
        )


def curve(seeds: int, first: int, policy_path: str | None, per_seed: int = 4) -> None:
    """Quality against time per plan on `per_seed` x `seeds` held-out problems of 20 to 100 tasks (literature and
    ours, classic)."""
    from dagsched.policy.priority_net import load_cached_priority_policy
    from dagsched.schedulers.mcts import MCTSUCT, MCTSConfig
    from dagsched.schedulers.priority_sampling import PrioritySampling

    policy = load_cached_priority_policy(policy_path)
    cases = [c for c in literature_cases(seeds, first) + ours_cases(seeds, first) if 20 <= c.cp.n_tasks <= 100]
    rng = np.random.default_rng(0)
    cases = [cases[i] for i in sorted(rng.choice(len(cases), size=min(len(cases), per_seed * seeds), replace=False))]
    searchers: dict[str, Callable[[], Scheduler]] = {
        "heft_lookahead": lambda: make_scheduler("heft_lookahead"),
        "tabu": lambda: make_scheduler("tabu"),
        "mcts_uct": lambda: MCTSUCT(MCTSConfig(sims=16)),
    }
    t0 = time.time()
    for i, c in enumerate(cases):
        run(c, "heft", lambda: make_scheduler("heft"))
        for name, make in searchers.items():
            run(c, name, make)
            spent = c.runs[name][1]
            run(
                c, f"drl={name}", lambda spent=spent: PrioritySampling(policy=policy, budget_s=spent, max_samples=10**6)
            )
            run(
                c,
                f"rank_u={name}",
                lambda spent=spent: PrioritySampling(scores="rank_u", budget_s=spent, max_samples=10**6),
            )
        for k in (0, 4, 16, 64, 256, 1024):
            run(c, f"drl K={k}", lambda k=k: PrioritySampling(policy=policy, samples=k))
            run(c, f"rank_u K={k}", lambda k=k: PrioritySampling(scores="rank_u", samples=k))
        # the cross-entropy rounds' share: the same K drawn in one round
        run(c, "drl K=256, 1 round", lambda: PrioritySampling(policy=policy, samples=256, rounds=1))
        run(c, "rank_u K=256, 1 round", lambda: PrioritySampling(scores="rank_u", samples=256, rounds=1))
        print(f"curve: {i + 1}/{len(cases)} problems ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    heft = np.array([c.runs["heft"][0] for c in cases])
    print(f"\nquality against time per plan: {len(cases)} held-out problems of 20 to 100 tasks (classic)")
    for name in [n for n in cases[0].runs if n != "heft"]:
        r = np.array([c.runs[name][0] for c in cases]) / heft
        secs = np.array([c.runs[name][1] for c in cases])
        print(f"  {name:24s} / HEFT {_ci(r):28s} median plan time {np.median(secs):8.4f} s")
    for a, b in (("drl K=256", "drl K=256, 1 round"), ("drl K=256", "rank_u K=256"), ("drl K=1024", "rank_u K=1024")):
        r = np.array([c.runs[a][0] / c.runs[b][0] for c in cases])
        print(f"  paired {a}/{b}: {_ci(r)}")
    for name in searchers:
        r = np.array([c.runs[f"drl={name}"][0] / c.runs[name][0] for c in cases])
        wtl = f"{(r < 1 - 1e-9).sum()}/{(abs(r - 1) <= 1e-9).sum()}/{(r > 1 + 1e-9).sum()}"
        print(f"  paired drl/{name} at {name}'s time per plan: {_ci(r)}  wins/ties/losses {wtl}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="literature,ours,cloud")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=1, help="seeds FIRST..FIRST+SEEDS-1 (model selection: 101)")
    ap.add_argument("--k", type=int, default=64, help="K of the same-K ablation")
    ap.add_argument("--policy", default=None, help="priority policy stem (default: the shipped one)")
    ap.add_argument("--noise", default="none,cv0.2", help="cloud set: runtime noise none, cv0.2 or both")
    ap.add_argument("--speed", action="store_true")
    ap.add_argument("--curve", action="store_true")
    ap.add_argument("--per-seed", type=int, default=4, help="--curve: problems per seed")
    ap.add_argument(
        "--schedulers",
        default="",
        help="comma-separated subset to run (heft, cpop and peft always run; default: all; e.g. greedy,learned@64,"
        "rank_u@64)",
    )
    args = ap.parse_args()
    if args.speed:
        speed(args.policy)
        return
    if args.curve:
        curve(args.seeds, args.first_seed, args.policy, args.per_seed)
        return
    make = makers(args.policy, args.k)
    if args.schedulers:
        wanted = set(CLASSIC) | set(args.schedulers.split(","))
        unknown = sorted(wanted - set(make))
        if unknown:
            ap.error(f"--schedulers: unknown {', '.join(unknown)} (known: {', '.join(make)})")
        make = {n: m for n, m in make.items() if n in wanted}
    names = list(make)
    k = args.k
    pairs = [
        (a, b)
        for a, b in (
            (f"learned@{k}", f"rank_u@{k}"),
            (f"learned@{k}", f"random@{k}"),
            ("greedy", "heft"),
            ("drl", "heft"),
            ("drl", "sampling"),
            ("drl@service", "sampling@service"),
        )
        if a in make and b in make
    ]
    if "cloud" in args.sets:
        cloud_pairs = [p for p in pairs if not any(_cloud_skips(n) for n in p)]
    noises = tuple(args.noise.split(","))
    builders: dict[str, Callable[[int, int], list[Case]]] = {
        "literature": literature_cases,
        "ours": ours_cases,
        "cloud": lambda seeds, first: cloud_cases(seeds, first, noises),
    }
    for s in args.sets.split(","):
        cases = builders[s](args.seeds, args.first_seed)
        t0 = time.time()
        shown = [n for n in names if s != "cloud" or not _cloud_skips(n)]
        for i, c in enumerate(cases):
            for name in shown:
                run(c, name, make[name])
            print(f"{s}: {i + 1}/{len(cases)} problems ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
        last = args.first_seed + args.seeds - 1
        print(f"\n===== {s}: {len(cases)} problems, seeds {args.first_seed}..{last} ({time.time() - t0:.0f} s)")
        if s == "cloud":
            for noise in noises:
                sub = [c for c in cases if c.group["noise"] == noise]
                print(f"\n----- runtime noise: {noise}")
                report(sub, shown, cloud_pairs, ("cluster", "size", "ccr"))
                if noise == "none":
                    lower_bound_share(sub)
        else:
            report(cases, shown, pairs, ("shape", "size", "ccr"))


if __name__ == "__main__":
    main()

"""The per-decision policy (`drl_step`) and the search planners on held-out single workflows, against the
heuristics, by CCR and action space.

Classic mode by default (exact runtimes: the policy's choices alone decide the makespan; `--mode cloud` for
noisy runtimes and failures, simulator seed 1) on two clusters where
placement matters: `hetero-16`, and random 8-node clusters of heterogeneity 0.9 (speeds spread
about 2 to 10 times), one per seed. Workloads the policy never trained on: the held-out synthetic family
`etl_star` at 30 and 80 tasks and CCR 0.1, 1, 5 and 10, and the held-out WfCommons recipes
(montage, epigenomics, 1000genome) at about 60 tasks. Seeds 1..S.

Per group (CCR, or recipe) it prints each scheduler's mean makespan ratio to HEFT's on the same problem
with a 95 % bootstrap interval, wins/ties/losses against HEFT, and at the end the mean and worst ratio
to the best of the heuristics on each problem. The learned policy runs with each action space of
`dagsched.schedulers.drl.ACTIONS` (one network, decoded three ways; `ACTION/WAITS`, e.g. `rank_node/idle`,
also sets `drl.WAITS`). Prints; asserts nothing.

With `--search SIMS`, also `mcts` (PUCT with the policy's priors) and `mcts_uct` at the same number of
simulations per decision (and the seconds each spent, so the time per decision can be read off); with
`--choose visits,best` both of MCTS's rules for the action played, side by side (`mcts[best]`,
`mcts[visits]`, ...; default `best` alone, MCTS's default). `--widening` adds `mcts_uct[rank]`, UCT widening
in HEFT's rank order instead of at random (with the last rule of `--choose`).

The planners (`--planners`, default heft_lookahead): `heft_lookahead` is HEFT's rollout over the node choice.

`--alt-policy STEM` adds `mcts[alt]`: the guided search with another policy's priors (`untrained`: a freshly
initialised network of the shipped model's architecture, torch seed 0), the ablation that says whether the
learning or the search is why `mcts` wins; and `drl[alt]`, that policy decoded as `rank_node` (to compare a
fine-tuned policy with the shipped one, paired: `--paired "drl[alt]/drl[rank_node]"`).
`--paired A/B,...` prints, per group, the mean of A's makespan over
B's on the same problem with a 95 % bootstrap interval and A's wins/ties/losses against B: a paired comparison,
much tighter than the two schedulers' intervals against HEFT side by side.

Run: .venv/bin/python benchmarks/experiments/per_decision_policy_held_out.py [--seeds 10] [--policy STEM]
     [--actions pair,task_eft,rank_node] [--search 16] [--choose visits,best] [--widening] [--planners heft_lookahead]
     [--alt-policy STEM|untrained] [--paired mcts/mcts_uct,mcts/mcts[alt]]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.clusters import random_cluster
from dagsched.generate.recipes import recipe_workflow
from dagsched.model import Problem, compile_problem
from dagsched.schedulers import simulate
from dagsched.schedulers.base import make_scheduler
from dagsched.schedulers.drl import DRLScheduler
from dagsched.schedulers.heft_lookahead import HEFTLookahead
from dagsched.schedulers.mcts import MCTS, MCTSUCT, MCTSConfig
from dagsched.sim.config import SimConfig, mode_settings

HEURISTICS = ("heft", "peft", "cpop", "min_min")


CCRS = (0.1, 1.0, 5.0, 10.0)
RECIPES = ("montage", "epigenomics", "1000genome")


def _ci(ratios: list[float], rng: np.random.Generator) -> tuple[float, float, float]:
    a = np.asarray(ratios)
    boots = rng.choice(a, size=(2000, len(a))).mean(axis=1)
    return float(a.mean()), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def untrained_policy(folder: Path) -> str:
    """A freshly initialised network of the shipped policy's architecture (torch seed 0), saved under `folder`."""
    import torch

    from dagsched.policy.files import load_cached_policy, save_policy
    from dagsched.policy.gnn import SchedulingPolicy

    torch.manual_seed(0)
    stem = folder / "untrained"
    save_policy(SchedulingPolicy(load_cached_policy().config), stem)
    return str(stem)


def print_paired(
    pairs: list[tuple[str, str]],
    groups: list[str],
    makespans: dict[str, dict[str, list[float]]],
    rng: np.random.Generator,
) -> None:
    """Per group: mean makespan(A) / makespan(B) on the same problems [95% CI], and A's W/T/L against B."""
    print("\n## paired: makespan of A / B on the same problem, mean [95% CI], W/T/L of A against B")
    for group in groups:
        for a, b in pairs:
            ma, mb = np.asarray(makespans[group][a]), np.asarray(makespans[group][b])
            m, lo, hi = _ci(list(ma / mb), rng)
            w, t = int((ma < mb - 1e-6).sum()), int((np.abs(ma - mb) <= 1e-6).sum())
            label = f"{a} / {b}"
            print(f"  {group:<18}{label:<28}{m:.4f} [{lo:.4f}, {hi:.4f}]  {w}/{t}/{len(ma) - w - t}")


def problems(seeds: int) -> list[tuple[str, str, Problem]]:
    """(group, cluster label, problem) of the held-out set."""
    out = []
    for seed in range(1, seeds + 1):
        clusters = {
            "hetero-16": cluster_preset("hetero-16"),
            "random-8": random_cluster(8, 100 + seed, heterogeneity=0.9),
        }
        for label, cluster in clusters.items():
            for ccr in CCRS:
                for n in (30, 80):
                    wf = generate_workflow("etl_star", n, seed=seed, ccr=ccr)
                    out.append((f"etl_star CCR {ccr:g}", label, Problem(workflows=[wf], cluster=cluster)))
            for recipe in RECIPES:
                wf = recipe_workflow(recipe, 60, seed)
                out.append((recipe, label, Problem(workflows=[wf], cluster=cluster)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--policy", default=None, help="policy stem (default: the shipped model)")
    parser.add_argument("--actions", default="pair,task_eft,rank_node")
    parser.add_argument("--groups", default=None, help="only these groups, e.g. 'etl_star CCR 5,etl_star CCR 10'")
    parser.add_argument("--mode", default="classic", help="simulator mode: classic, or cloud (noise, failures)")
    parser.add_argument("--search", type=int, default=0, help="also mcts and mcts_uct at this many sims per decision")
    parser.add_argument(
        "--choose", default="best", help="mcts's rule for the action played: best, visits, or both ('visits,best')"
    )
    parser.add_argument("--widening", action="store_true", help="also mcts_uct widening in rank order")
    parser.add_argument("--plan-work", type=float, default=None, help="mcts's rollout work per plan (default its own)")
    parser.add_argument("--planners", default="heft_lookahead", help="rollout planners ('' for none)")
    parser.add_argument(
        "--alt-policy", default=None, help="adds drl[alt] (rank_node) and mcts[alt] with this policy ('untrained')"
    )
    parser.add_argument("--paired", default="", help="A/B pairs of scheduler names compared problem by problem")
    args = parser.parse_args()
    pairs = [tuple(x.split("/", 1)) for x in args.paired.split(",") if x]
    alt = args.alt_policy
    if alt == "untrained":
        scratch = tempfile.TemporaryDirectory()  # kept to the end: each mcts[alt] loads it
        alt = untrained_policy(Path(scratch.name))
    planners = [p for p in args.planners.split(",") if p]
    classic = SimConfig(**mode_settings(args.mode))
    actions = args.actions.split(",")
    learned = [f"drl[{a}]" for a in actions if a]
    names = [*HEURISTICS, *learned]
    if alt:
        names.append("drl[alt]")
    if args.search:
        rules = args.choose.split(",")
        for rule_name in rules:
            suffix = f"[{rule_name}]" if len(rules) > 1 else ""
            names += [f"mcts_uct{suffix}", f"mcts{suffix}"]
        if args.widening:
            names.append("mcts_uct[rank]")
        if alt:
            names.append("mcts[alt]")
    names += planners
    for pair in pairs:
        if len(pair) != 2 or not set(pair) <= set(names):
            parser.error(f"--paired: {'/'.join(pair)!r} is not A/B of two schedulers this run has ({', '.join(names)})")
    looked: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    ratios: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    to_best: dict[str, list[float]] = defaultdict(list)
    raw: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    wtl: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    secs: dict[str, float] = defaultdict(float)
    decisions: dict[str, int] = defaultdict(int)
    rng = np.random.default_rng(0)
    last_rule = args.choose.split(",")[-1]  # the ablations play by the last of --choose's rules
    todo = problems(args.seeds)
    if args.groups:
        todo = [p for p in todo if p[0] in args.groups.split(",")]
    print(f"{args.mode} mode; {len(todo)} held-out problems (etl_star by CCR, held-out recipes) on hetero-16 and")
    print(f"random 8-node clusters of heterogeneity 0.9; seeds 1..{args.seeds}; policy {args.policy or 'shipped'}\n")
    for group, _, problem in todo:
        cp = compile_problem(problem)
        makespans = {}
        for name in names:
            if name == "drl[alt]":
                sched = DRLScheduler(policy_path=alt, action="rank_node")
            elif name.startswith("drl["):
                action, _, waits = name[4:-1].partition("/")
                kwargs: dict[str, str] = {"policy_path": args.policy} if args.policy else {}
                kwargs["action"] = action
                if waits:
                    kwargs["waits"] = waits
                sched = DRLScheduler(**kwargs)
            elif name == "mcts[alt]":
                sched = MCTS(MCTSConfig(sims=args.search, choose=last_rule), policy_path=alt)
            elif name == "mcts_uct[rank]":
                sched = MCTSUCT(MCTSConfig(sims=args.search, choose=last_rule, widening="rank"))
            elif name.startswith("mcts"):
                choose = name.partition("[")[2].rstrip("]") or args.choose
                config = MCTSConfig(sims=args.search, choose=choose)
                if args.plan_work is not None:
                    config = replace(config, plan_work=args.plan_work)
                guided_search = not name.startswith("mcts_uct")
                sched = MCTS(config, policy_path=args.policy) if guided_search else MCTSUCT(config)
            else:
                sched = make_scheduler(name)
            t0 = time.perf_counter()
            result = simulate(cp, sched, classic, 1)
            secs[name] += time.perf_counter() - t0
            decisions[name] += result.metrics.decisions
            assert result.valid, f"{name} on {group}: invalid trace"
            makespans[name] = result.metrics.makespan
            if isinstance(sched, HEFTLookahead):
                looked[name][0] += sched.looked
                looked[name][1] += sched.choices
        heft = makespans["heft"]
        best = min(makespans[h] for h in HEURISTICS)
        for name in names:
            ms = makespans[name]
            ratios[group][name].append(ms / heft)
            ratios["all"][name].append(ms / heft)
            wtl[group][name][0 if ms < heft - 1e-6 else 1 if ms <= heft + 1e-6 else 2] += 1
            wtl["all"][name][0 if ms < heft - 1e-6 else 1 if ms <= heft + 1e-6 else 2] += 1
            to_best[name].append(ms / best)
            raw[group][name].append(ms)
            raw["all"][name].append(ms)
    for group in [*dict.fromkeys(g for g, _, _ in todo), "all"]:
        n = len(ratios[group]["heft"])
        print(f"## {group} ({n} problems): makespan / HEFT's [95% CI], W/T/L vs HEFT")
        for name in names:
            m, lo, hi = _ci(ratios[group][name], rng)
            print(f"  {name:<17}{m:.4f} [{lo:.4f}, {hi:.4f}]  {'/'.join(map(str, wtl[group][name])):>10}")
    print("\n## ratio to the best of heft, peft, cpop, min_min on each problem: mean [95% CI], worst; time in all and")
    print("## per decision point (a decision may start several tasks)")
    for name in names:
        m, lo, hi = _ci(to_best[name], rng)
        per = secs[name] / max(decisions[name], 1) * 1e3
        worst = max(to_best[name])
        print(f"  {name:<17}{m:.4f} [{lo:.4f}, {hi:.4f}]  worst {worst:.4f}  {secs[name]:8.1f} s  {per:7.2f} ms")
    if pairs:
        print_paired(pairs, [*dict.fromkeys(g for g, _, _ in todo), "all"], raw, rng)  # type: ignore[arg-type]
    if looked:
        print("\n## rollout planners: share of the choices (of two or more nodes) whose plans were completed")
        for name, (done, choices) in looked.items():
            print(f"  {name:<17}{done / max(choices, 1):.3f} of {choices}")


if __name__ == "__main__":
    main()

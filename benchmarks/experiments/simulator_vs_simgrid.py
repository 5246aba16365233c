"""dagsched against SimGrid: the largest difference of any task's finish, per family and mode.

Each problem is run by a scheduler in dagsched, then its placement and per-node order are replayed in
dagsched (`OrderReplay`) and in SimGrid (`dagsched.sim.simgrid_replay`); see docs/simulator.md. Modes:
  classic       one task per node, full mesh of dedicated links (must agree to floating point)
  cloud         several tasks per node, hidden noise CV 0.2, dedicated links in both
  cloud/shared  the same dagsched run, but SimGrid's links shared max-min fair (sender's up-link, receiver's
                down-link): how far dagsched's contention-free network is from SimGrid's default model
  contention    the cloud run's placement replayed with dagsched's `network_contention` and in SimGrid on the
                same shared links (transfers start when their child is placed, in both): must agree
Then, per family, how much contention moves makespans against the free network: on the same placement and
order (the cloud run's, replayed), and with the scheduler run again under contention (it sees the estimates).
Families: the four generated ones at 100 and 500 tasks, and the real WfCommons traces up to --max-tasks.
Run: .venv/bin/python benchmarks/experiments/simulator_vs_simgrid.py [--max-tasks 1000] [--cluster hetero-16]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from dagsched.generate import FAMILIES, cluster_preset, generate_workflow
from dagsched.generate.traces import real_traces, wfinstances_root
from dagsched.io import read_workflow
from dagsched.model import Cluster, Problem, compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers import make_scheduler, simulate
from dagsched.sim.config import SimConfig
from dagsched.sim.crosscheck import Comparison, cross_check
from dagsched.sim.simgrid_replay import simgrid_unavailable_reason

CLOUD = SimConfig(noise_cv=0.2)
CONTENDED = SimConfig(noise_cv=0.2, network_contention=True)
MODES: dict[str, tuple[SimConfig, bool]] = {
    "classic": (SimConfig(classic=True), False),
    "cloud": (CLOUD, False),
    "cloud/shared": (CLOUD, True),
    "contention": (CONTENDED, True),
}


def problems(cluster: Cluster, max_tasks: int) -> list[tuple[str, CompiledProblem]]:
    out = []
    for family in FAMILIES:
        for n in (100, 500):
            wf = generate_workflow(family, n, seed=n)
            out.append((family, compile_problem(Problem(workflows=[wf], cluster=cluster))))
    try:
        entries = real_traces(wfinstances_root())
    except Exception as exc:  # noqa: BLE001 - the real traces are optional here: say so and go on
        print(f"(no real traces: {exc})")
        entries = []
    for entry in entries:
        if entry.n_tasks <= max_tasks:
            wf = read_workflow(wfinstances_root() / entry.file)
            out.append((f"wf:{entry.family}", compile_problem(Problem(workflows=[wf], cluster=cluster))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-tasks", type=int, default=1000, help="largest real trace replayed")
    parser.add_argument("--cluster", default="hetero-16")
    parser.add_argument("--latency", type=float, default=0.001, help="cluster latency, seconds")
    parser.add_argument("--scheduler", default="heft")
    args = parser.parse_args()
    reason = simgrid_unavailable_reason()
    if reason:
        raise SystemExit(reason)
    cluster = cluster_preset(args.cluster).model_copy(update={"latency": args.latency})
    probs = problems(cluster, args.max_tasks)
    print(
        f"{len(probs)} problems on {args.cluster} (latency {args.latency} s), placed by {args.scheduler}; "
        "finish: largest |dagsched - SimGrid| / max(|dagsched|, |SimGrid|) of any task; "
        "makespan x: largest SimGrid / dagsched makespan\n"
    )
    table: dict[str, dict[str, list[Comparison]]] = defaultdict(dict)
    rerun: dict[str, list[float]] = defaultdict(list)  # per family: scheduler's makespan, contended / free
    for mode, (config, shared) in MODES.items():
        t0 = time.perf_counter()
        run_config = CLOUD if mode == "contention" else config  # contention replays the cloud run's placement
        runs = [(cp, simulate(cp, make_scheduler(args.scheduler), run_config, seed=1).trace) for _, cp in probs]
        comparisons = cross_check(runs, config, seed=1, contention=shared)
        by_family: dict[str, list[Comparison]] = defaultdict(list)
        for (family, _), c in zip(probs, comparisons, strict=True):
            by_family[family].append(c)
        for family, cs in by_family.items():
            table[family][mode] = cs
        print(f"  ({mode}: {time.perf_counter() - t0:.1f} s)")
    t0 = time.perf_counter()
    for family, cp in probs:
        free = simulate(cp, make_scheduler(args.scheduler), CLOUD, seed=1).metrics.makespan
        contended = simulate(cp, make_scheduler(args.scheduler), CONTENDED, seed=1).metrics.makespan
        rerun[family].append(contended / free)
    print(f"  ({args.scheduler} re-run under contention: {time.perf_counter() - t0:.1f} s)")
    print()
    header = f"{'family':<18}{'problems':>9}{'tasks':>8}"
    for mode in MODES:
        header += f"{mode + ' finish':>22}{mode + ' makespan x':>24}"
    print(header)
    for family, modes in table.items():
        cs = next(iter(modes.values()))
        row = f"{family:<18}{len(cs):>9}{max(c.n_tasks for c in cs):>8}"
        for mode in MODES:
            row += f"{max(c.max_rel_finish for c in modes[mode]):>22.2e}"
            row += f"{max(c.makespan_simgrid_s / c.makespan_dagsched_s for c in modes[mode]):>24.4f}"
        print(row)
    print(
        f"\ncontention against the free network, makespan ratios (min / median / max over the family's problems):\n"
        f"{'family':<18}{'same placement':>30}{args.scheduler + ' re-run':>30}"
    )
    for family, modes in table.items():
        same = sorted(
            c.makespan_dagsched_s / f.makespan_dagsched_s
            for c, f in zip(modes["contention"], modes["cloud"], strict=True)
        )
        again = sorted(rerun[family])
        print(f"{family:<18}{_spread(same):>30}{_spread(again):>30}")


def _spread(xs: list[float]) -> str:
    return f"{xs[0]:.3f} / {xs[len(xs) // 2]:.3f} / {xs[-1]:.3f}"


if __name__ == "__main__":
    main()

"""A small Ray Tune search of the priority trainer's hyper-parameters, with ASHA early stopping.

Searched: the method (pomo, slim), learning rate, K (samples per problem), entropy bonus and width, on short
runs of `PriorityTrainConfig` (the curriculum up to 300 tasks); each run reports its validation (best of K
samples over HEFT on problems drawn from the training distribution) every `eval_every` iterations, and ASHA
stops the worse half at each rung. One trial at a time on one CPU (the machine is shared). Prints the
table of every trial (docs/policy.md, "What was tried and did not win", sums it up) and writes it as JSON:

    python -m dagsched.rl.priority_tune --trials 14 --iterations 1200 --eval-every 150 --cpu-budget-s 300 \
        --out docs/results/priority-tune.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

SPACE = {
    "method": ["pomo", "slim"],
    "lr": [1e-4, 3e-4, 1e-3],
    "samples": [8, 16, 32],
    "entropy": [0.0, 0.01],
    "hidden": [32, 64],
    "advantage": ["heft", "std"],
}


def _trial(params: dict[str, Any]) -> None:
    from ray import tune

    from dagsched.rl.priority_train import PriorityTrainConfig, train

    base = PriorityTrainConfig(
        seed=params["seed"],
        iterations=params["iterations"],
        stages=(30, 100, 300),
        eval_every=params["eval_every"],
        eval_problems=params["eval_problems"],
        cpu_budget_s=params["cpu_budget_s"],
        out_dir=params["out_dir"],
        name="trial",
    )
    cfg = replace(base, **{k: params[k] for k in SPACE})

    def report(row: dict[str, Any]) -> None:
        tune.report({k: v for k, v in row.items() if isinstance(v, int | float)})

    train(cfg, report=report)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--iterations", type=int, default=240)
    ap.add_argument("--eval-every", type=int, default=30)
    ap.add_argument("--cpu-budget-s", type=float, default=240.0, help="per trial")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval-problems", type=int, default=32)
    ap.add_argument("--out", default="docs/results/priority-tune.json")
    args = ap.parse_args()

    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    space: dict[str, Any] = {k: tune.choice(v) for k, v in SPACE.items()}
    with tempfile.TemporaryDirectory() as runs:
        space.update(
            seed=args.seed,
            iterations=args.iterations,
            eval_every=args.eval_every,
            eval_problems=args.eval_problems,
            cpu_budget_s=args.cpu_budget_s,
            out_dir=runs,
        )
        rungs = max(1, args.iterations // args.eval_every)
        scheduler = ASHAScheduler(max_t=rungs, grace_period=2, reduction_factor=2)
        tuner = tune.Tuner(
            tune.with_resources(_trial, {"cpu": 1}),
            param_space=space,
            tune_config=tune.TuneConfig(
                metric="val_sampled_vs_heft", mode="min", num_samples=args.trials, scheduler=scheduler
            ),
            run_config=tune.RunConfig(storage_path=str(Path(runs).resolve() / "tune"), verbose=0),
        )
        results = tuner.fit()
    rows = []
    for r in results:
        m = r.metrics or {}
        rows.append(
            {
                **{k: r.config[k] for k in SPACE},
                "reports": m.get("training_iteration"),
                "iterations": m.get("iteration"),
                "val_sampled_vs_heft": m.get("val_sampled_vs_heft"),
                "val_sampled_vs_untrained": m.get("val_sampled_vs_untrained"),
                "val_greedy_vs_heft": m.get("val_greedy_vs_heft"),
                "cpu_s": m.get("cpu_s"),
            }
        )
    rows.sort(key=lambda r: (r["val_sampled_vs_heft"] is None, r["val_sampled_vs_heft"] or 0.0))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"space": SPACE, "args": vars(args), "trials": rows}, indent=2) + "\n")
    print(table(rows))


def table(rows: list[dict[str, Any]]) -> str:
    """The trials as a markdown table, one row per trial."""
    out = [
        "| method | advantage | lr | K | entropy | width | validations | iterations | sampled / HEFT "
        "| sampled / untrained | greedy / HEFT | CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
        out.append(
            f"| {r['method']} | {r['advantage']} | {r['lr']:g} | {r['samples']} | {r['entropy']:g} | {r['hidden']} | "
            f"{r['reports']} | {r['iterations']} | {f(r['val_sampled_vs_heft'])} | {f(r['val_sampled_vs_untrained'])} "
            f"| {f(r['val_greedy_vs_heft'])} | {r['cpu_s'] and round(r['cpu_s'])} |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    main()

"""Quality versus search budget, and the gap to the exact optimum on small problems.

`budget_curve` runs mcts_uct and tabu at per-decision budgets from
about 1 ms to 1 s on a mix of synthetic workflows and small real traces, over seeds, and
reports the mean makespan relative to HEFT's with 95 % bootstrap intervals (a PNG and a
Markdown table). Tabu plans once, so its budget is the per-decision budget times the task count.

`exact_gaps` measures each scheduler against the exact optimum of small classic problems
(`dagsched.schedulers.exact`), on the small problems of `dagsched.generate.small`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dagsched.generate.small import small_problems
from dagsched.model.compiled import CompiledProblem
from dagsched.sim.config import MODES, SimConfig

CLASSIC = MODES["classic"]


def exact_gaps(
    problems: Sequence[CompiledProblem], schedulers: Sequence[str | Callable[[], Any]]
) -> dict[str, list[float]]:
    """Per scheduler, its classic-mode makespan over the optimum, minus 1, on each problem."""
    from dagsched.schedulers import make_scheduler, simulate
    from dagsched.schedulers.exact import exact_makespan

    gaps: dict[str, list[float]] = {}
    for cp in problems:
        heft = simulate(cp, "heft", CLASSIC, validate=False).metrics.makespan
        opt = exact_makespan(cp, upper_bound=heft).makespan
        for s in schedulers:
            sched = make_scheduler(s) if isinstance(s, str) else s()
            span = simulate(cp, sched, CLASSIC).metrics.makespan
            gaps.setdefault(sched.name if isinstance(s, str) else getattr(s, "label", sched.name), []).append(
                span / opt - 1.0
            )
    return gaps


# ---- the quality-versus-budget curve ------------------------------------------------------------


def _schedulers_at(ms: float, n_tasks: int) -> dict[str, Any]:
    from dagsched.schedulers.mcts import MCTSUCT, MCTSConfig
    from dagsched.schedulers.tabu import Tabu

    cfg = MCTSConfig(sims=100_000, plan_work=math.inf, decision_ms=ms)
    tabu = Tabu()
    tabu.work, tabu.time_s = math.inf, ms * n_tasks / 1e3
    return {"mcts_uct": MCTSUCT(cfg), "tabu": tabu}


def budget_curve(
    problems: Sequence[tuple[str, CompiledProblem]],
    budgets_ms: Sequence[float],
    seeds: Sequence[int],
    config: SimConfig,
) -> list[dict[str, Any]]:
    """Rows (scheduler, budget_ms, mean of makespan / HEFT's, CI low, CI high, n, mean decision ms)."""
    from dagsched.bench.stats import bootstrap_ci
    from dagsched.schedulers import simulate

    ratios: dict[tuple[str, float], list[float]] = {}
    latency: dict[tuple[str, float], list[float]] = {}
    for _, cp in problems:
        for seed in seeds:
            heft = simulate(cp, "heft", config, seed=seed, validate=False).metrics.makespan
            for ms in budgets_ms:
                for name, sched in _schedulers_at(ms, cp.n_tasks).items():
                    r = simulate(cp, sched, config, seed=seed, validate=False)
                    ratios.setdefault((name, ms), []).append(r.metrics.makespan / heft)
                    latency.setdefault((name, ms), []).append(r.metrics.decision_latency_mean_ms)
    rows = []
    for (name, ms), vals in sorted(ratios.items()):
        lo, hi = bootstrap_ci(vals)
        rows.append(
            {
                "scheduler": name,
                "budget_ms": ms,
                "mean": float(np.mean(vals)),
                "lo": lo,
                "hi": hi,
                "n": len(vals),
                "decision_ms": float(np.mean(latency[(name, ms)])),
            }
        )
    return rows


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| scheduler | budget per decision (ms) | makespan / HEFT | 95 % CI | runs | mean decision latency (ms) |",
        "| --- | ---: | ---: | --- | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['scheduler']} | {r['budget_ms']:g} | {r['mean']:.4f} | [{r['lo']:.4f}, {r['hi']:.4f}] "
            f"| {r['n']} | {r['decision_ms']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def plot_curve(rows: Sequence[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in sorted({r["scheduler"] for r in rows}):
        rs = sorted((r for r in rows if r["scheduler"] == name), key=lambda r: r["budget_ms"])
        x = [r["budget_ms"] for r in rs]
        ax.plot(x, [r["mean"] for r in rs], marker="o", label=name)
        ax.fill_between(x, [r["lo"] for r in rs], [r["hi"] for r in rs], alpha=0.2)
    ax.axhline(1.0, color="grey", linestyle="--", label="HEFT")
    ax.set_xscale("log")
    ax.set_xlabel("budget per decision (ms)")
    ax.set_ylabel("mean makespan / HEFT")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def default_problems(
    n_tasks: int, traces: int, seeds: Sequence[int], cluster: str = "hetero-16"
) -> list[tuple[str, CompiledProblem]]:
    """Synthetic layered, etl_star and random workflows (one per seed) plus the smallest real traces."""
    from dagsched.bench.suites import ProblemSpec
    from dagsched.generate.traces import real_traces, wfinstances_root

    out = [
        (f"syn/{fam}/n{n_tasks}/s{s}", ProblemSpec("synthetic", fam, cluster, n_tasks=n_tasks, gen_seed=s).build())
        for fam in ("layered", "etl_star", "random")
        for s in seeds
    ]
    root = wfinstances_root()
    for e in real_traces(root)[:traces]:
        spec = ProblemSpec("trace", e.family, cluster, n_tasks=e.n_tasks, path=str(root / e.file))
        out.append((f"trace/{e.file}", spec.build()))
    return out


def register(app: Any) -> None:
    """Add `dagsched budget-curve` to a Typer app."""
    import typer

    @app.command("budget-curve")
    def budget_curve_cmd(
        out: Path = typer.Option(Path("budget-curve"), help="folder for budget_curve.png and budget_curve.md"),
        budgets_ms: str = typer.Option("1,10,100,1000", help="per-decision budgets, comma separated"),
        seeds: int = typer.Option(10, help="seeds per problem"),
        n_tasks: int = typer.Option(30, help="tasks of each synthetic workflow"),
        traces: int = typer.Option(2, help="how many of the smallest real traces"),
        mode: str = typer.Option("classic", help="classic or cloud"),
        cluster: str = typer.Option("hetero-16", help="cluster preset or cluster file"),
        exact: int = typer.Option(10, help="small problems for the exact-optimum gap (0: skip)"),
    ) -> None:
        """Quality versus budget of mcts_uct and tabu relative to HEFT, and the gap to the exact optimum."""
        config = MODES[mode]
        out.mkdir(parents=True, exist_ok=True)
        budgets = [float(b) for b in budgets_ms.split(",")]
        seed_list = list(range(1, seeds + 1))
        problems = default_problems(n_tasks, traces, seed_list, cluster)
        # classic mode is exact: the seeds vary the synthetic instances, one run per problem suffices
        rows = budget_curve(problems, budgets, [1] if mode == "classic" else seed_list, config)
        text = "## Quality versus budget\n\n" + markdown_table(rows)
        plot_curve(rows, out / "budget_curve.png")
        if exact:
            text += "\n" + exact_gap_table(exact)
        (out / "budget_curve.md").write_text(text)
        typer.echo(text)


def exact_gap_table(count: int) -> str:
    from dagsched.bench.stats import bootstrap_ci
    from dagsched.schedulers.mcts import MCTSUCT

    makers: list[str | Callable[[], Any]] = ["heft", "tabu", MCTSUCT, "drl"]
    gaps = exact_gaps(small_problems(count), makers)
    lines = [
        "## Gap to the exact optimum (classic, <= 8 tasks, <= 3 nodes)\n",
        "| scheduler | mean gap | 95 % CI | optimal |",
    ]
    lines.append("| --- | ---: | --- | ---: |")
    for name, g in sorted(gaps.items()):
        lo, hi = bootstrap_ci(g)
        optimal = sum(x < 1e-9 for x in g)
        lines.append(f"| {name} | {100 * np.mean(g):.2f} % | [{100 * lo:.2f}, {100 * hi:.2f}] % | {optimal}/{len(g)} |")
    return "\n".join(lines) + "\n"

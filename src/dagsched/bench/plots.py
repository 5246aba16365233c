"""The benchmark's figures (matplotlib, PNG bytes): what the report embeds and writes beside its tables.

Performance profiles of the ratio to the per-instance best, that ratio per family, normalised cost
against the ratio with the Pareto front of the means, SLA hit rates with bootstrap CIs, decision
latency, a Gantt chart of one problem per scheduler (drawn by `sim.export.draw_gantt`, the one Gantt
plotter), and for streams the mean completion time and SLA hit rate against offered load.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dagsched.bench import stats
from dagsched.model.compiled import CompiledProblem
from dagsched.sim.config import MODES, SimConfig
from dagsched.sim.export import draw_gantt

Rebuild = Callable[[str], CompiledProblem]

PLOTS = ("profile", "ratio_by_family", "cost_vs_makespan", "sla", "latency", "gantt")
"""The figures every single-workflow report has, in page order (a figure without data says so instead of vanishing)."""


@dataclass
class Figure:
    key: str
    caption: str
    png: bytes


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    """The figure as a PNG of at most 256 colours: plots of flat colours and text lose nothing visible, and a
    palette makes them about a third of the size, which keeps the committed reports in docs/results small."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    _plt().close(fig)
    return palette_png(buf.getvalue())


def palette_png(png: bytes) -> bytes:
    """A PNG re-encoded with a palette of at most 256 colours (median cut, no dithering)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        quantized = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    quantized.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _no_data(message: str) -> bytes:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return _png(fig)


def _colours(names: Sequence[str]) -> dict[str, Any]:
    cmap = _plt().get_cmap("tab10" if len(names) <= 10 else "tab20")
    return {n: cmap(i % cmap.N) for i, n in enumerate(names)}


def plot_profile(rows: Sequence[Mapping[str, Any]], order: Sequence[str]) -> bytes:
    """Dolan-Moré: the higher and further left a curve, the more often that scheduler is near the best."""
    ratios = [r["ratio_best"] for r in stats.with_ratios(rows) if math.isfinite(r["ratio_best"])]
    if not ratios:
        return _no_data("no completed runs")
    top = max(max(ratios) * 1.02, 1.05)
    taus = np.geomspace(1.0, top, 400) if top > 10 else np.linspace(1.0, top, 400)
    profile = stats.performance_profile(rows, taus)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colours = _colours(order)
    for name in order:
        ax.step(taus, profile[name], where="post", label=name, color=colours[name])
    if top > 10:
        ax.set_xscale("log")
    ax.set_xlim(1.0, top)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("τ (makespan / best makespan on the instance)")
    ax.set_ylabel("fraction of instances within τ")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2, loc="lower right")
    fig.tight_layout()
    return _png(fig)


def plot_ratio_by_family(ok: Sequence[Mapping[str, Any]], order: Sequence[str]) -> bytes:
    families = sorted({str(r.get("family")) for r in ok})
    if not families:
        return _no_data("no completed runs")
    plt = _plt()
    ncols = min(3, len(families))
    nrows = math.ceil(len(families) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 3.6 * nrows), squeeze=False)
    for ax, fam in zip(axes.flat, families, strict=False):
        names = [s for s in order if any(r["scheduler"] == s and str(r.get("family")) == fam for r in ok)]
        data = [[r["ratio_best"] for r in ok if r["scheduler"] == s and str(r.get("family")) == fam] for s in names]
        ax.boxplot(data, showfliers=True, flierprops={"markersize": 2})
        ax.set_xticks(range(1, len(names) + 1), names, rotation=60, fontsize=7, ha="right")
        ax.set_title(fam, fontsize=9)
        ax.set_ylabel("makespan / best", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(families) :]:
        ax.axis("off")
    fig.tight_layout()
    return _png(fig)


def pareto_front(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Names whose (x, y) no other point beats on both (lower is better), in increasing x."""
    front: list[str] = []
    best_y = math.inf
    for name, (_, y) in sorted(points.items(), key=lambda kv: (kv[1][0], kv[1][1])):
        if y < best_y:
            front.append(name)
            best_y = y
    return front


def normalised_cost(ok: Sequence[Mapping[str, Any]]) -> list[float]:
    """Cost / cheapest cost on the same instance; nan where the cheapest run was free (classic mode bills nothing)."""
    cheapest: dict[Any, float] = defaultdict(lambda: math.inf)
    for r in ok:
        cheapest[stats.instance_key(r)] = min(cheapest[stats.instance_key(r)], float(r.get("cost") or 0.0))
    out = []
    for r in ok:
        c, low = float(r.get("cost") or 0.0), cheapest[stats.instance_key(r)]
        out.append(c / low if low > 0 else math.nan)
    return out


def plot_cost_vs_makespan(ok: Sequence[Mapping[str, Any]], order: Sequence[str]) -> bytes:
    cost = normalised_cost(ok)
    if not any(math.isfinite(c) for c in cost):
        return _no_data("no run with a cost (classic mode bills nothing)")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = _colours(order)
    means: dict[str, tuple[float, float]] = {}
    for name in order:
        xy = [(r["ratio_best"], c) for r, c in zip(ok, cost, strict=True) if r["scheduler"] == name]
        xy = [(x, y) for x, y in xy if math.isfinite(x) and math.isfinite(y)]
        if not xy:
            continue
        xs, ys = zip(*xy, strict=True)
        ax.scatter(xs, ys, s=8, alpha=0.25, color=colours[name])
        means[name] = (float(np.mean(xs)), float(np.mean(ys)))
        ax.scatter(*means[name], s=90, color=colours[name], edgecolor="black", zorder=3, label=name)
    front = pareto_front(means)
    if front:
        ax.plot([means[n][0] for n in front], [means[n][1] for n in front], "k--", lw=1, label="Pareto front of means")
    finite = [c for c in cost if math.isfinite(c)]
    if max(finite) > 5:  # a few runs on expensive nodes would squash the means into one line
        ax.set_yscale("log")
    ax.set_xlabel("makespan / best makespan on the instance")
    ax.set_ylabel("cost / cheapest cost on the instance")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return _png(fig)


def plot_sla(summary: Sequence[Mapping[str, Any]]) -> bytes:
    entries = [e for e in summary if e["n"] and math.isfinite(e["sla_hit_rate_mean"])]
    if not entries:
        return _no_data("no completed runs")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4))
    names = [str(e["scheduler"]) for e in entries]
    mean = np.array([e["sla_hit_rate_mean"] for e in entries])
    low = np.array([e["sla_hit_rate_ci_low"] for e in entries])
    high = np.array([e["sla_hit_rate_ci_high"] for e in entries])
    colours = _colours(names)
    ax.bar(names, mean, color=[colours[n] for n in names])
    ax.errorbar(names, mean, yerr=[np.maximum(mean - low, 0), np.maximum(high - mean, 0)], fmt="none", ecolor="black")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("SLA hit rate (mean, 95% bootstrap CI)")
    ax.tick_params(axis="x", rotation=45, labelsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def plot_latency(ok: Sequence[Mapping[str, Any]], order: Sequence[str]) -> bytes:
    names = [s for s in order if any(r["scheduler"] == s for r in ok)]
    if not names:
        return _no_data("no completed runs")

    def avg(name: str, key: str) -> float:
        vals = [float(r[key]) for r in ok if r["scheduler"] == name and r.get(key) is not None]
        return max(float(np.mean(vals)) if vals else 0.0, 1e-4)  # a log axis cannot show 0

    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4))
    x = np.arange(len(names))
    ax.bar(x - 0.2, [avg(n, "decision_latency_mean_ms") for n in names], 0.4, label="mean")
    ax.bar(x + 0.2, [avg(n, "decision_latency_p99_ms") for n in names], 0.4, label="p99")
    ax.set_yscale("log")
    ax.set_xticks(x, names, rotation=45, fontsize=8)
    ax.set_ylabel("decision latency (ms, log scale)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return _png(fig)


def demo_problem() -> CompiledProblem:
    """A fixed 20-task, 4-node layered problem: the Gantt's stand-in when no result can be rebuilt."""
    from dagsched.model import Cluster, Edge, Node, Problem, Task, Workflow, compile_problem

    rng = np.random.default_rng(20)
    layers = [[f"t{5 * k + i}" for i in range(5)] for k in range(4)]
    tasks = [Task(id=t, runtime=float(rng.uniform(5, 30))) for layer in layers for t in layer]
    edges = []
    for upper, lower in zip(layers, layers[1:], strict=False):
        for t in lower:
            for p in rng.choice(upper, size=2, replace=False):
                edges.append(Edge(src=str(p), dst=t, data=float(rng.uniform(1e8, 1e9))))
    nodes = [Node(id=f"n{j}", cpu=1, mem=0, speed=s, bandwidth=1e8) for j, s in enumerate((1.0, 1.5, 0.75, 2.0))]
    wf = Workflow(name="demo-20", tasks=tasks, edges=edges)
    return compile_problem(Problem(name="demo-20", workflows=[wf], cluster=Cluster(nodes=nodes)))


def mode_config(mode: str) -> tuple[SimConfig, str]:
    """The simulator settings of a result's mode (the named modes), and how they were found."""
    if mode in MODES:
        return MODES[mode], f"with the '{mode}' mode's settings"
    return SimConfig(classic=mode == "classic"), f"with default {'classic' if mode == 'classic' else 'cloud'} settings"


def _gantt_instance(ok: Sequence[Mapping[str, Any]], problem_id: str | None) -> Mapping[str, Any] | None:
    """The row whose problem the Gantt shows: the given id, else the smallest problem with >= 5 tasks."""
    if problem_id is not None:
        return next((r for r in ok if r.get("problem_id") == problem_id), None)
    if not ok:
        return None

    def size(r: Mapping[str, Any]) -> tuple[bool, int, str, str, int]:
        n = int(r.get("n_tasks") or 0)
        return (n < 5, n, str(r.get("problem_id")), str(r.get("mode")), int(r.get("seed") or 0))

    return min(ok, key=size)


def plot_gantt(
    ok: Sequence[Mapping[str, Any]], order: Sequence[str], rebuild: Rebuild | None, problem_id: str | None
) -> tuple[bytes, str]:
    """Each scheduler's schedule of one problem, re-simulated, one panel each on a shared time axis."""
    from dagsched.schedulers import make_scheduler, registered_names, simulate

    row = _gantt_instance(ok, problem_id)
    cp: CompiledProblem | None = None
    why = "no rebuild callback was given"
    if row is not None and rebuild is not None:
        try:
            cp = rebuild(str(row["problem_id"]))
        except Exception as err:  # the report still renders; the caption says what went wrong
            why = f"rebuilding '{row['problem_id']}' failed ({type(err).__name__}: {err})"
    elif rebuild is not None:
        why = "no completed run to take a problem from"
    if cp is not None and row is not None:
        seed = int(row.get("seed") or 0)
        config, how = mode_config(str(row.get("mode")))
        caption = (
            f"Gantt chart of problem '{row['problem_id']}' ({cp.n_tasks} tasks, {row.get('mode')} mode, "
            f"seed {seed}), re-simulated {how}"
        )
    else:
        cp, config, seed = demo_problem(), MODES["classic"], 0
        caption = (
            "Gantt chart of a built-in 20-task, 4-node layered problem in classic mode, not one from these "
            f"results: {why}."
        )
    known = set(registered_names())
    names = [s for s in order if s in known] or ["heft"]
    runs = [(n, simulate(cp, make_scheduler(n), config, seed, validate=False)) for n in names]
    plt = _plt()
    # each panel shows the nodes its scheduler used, so a 100-node cluster does not drown the bars
    used = [sorted({a.node for a in r.trace.attempts}) or [0] for _, r in runs]
    heights = [0.22 * len(u) + 0.45 for u in used]
    fig, axes = plt.subplots(
        len(runs), 1, figsize=(10, sum(heights) + 0.8), sharex=True, squeeze=False, height_ratios=heights
    )
    for ax, (name, result), nodes in zip(axes[:, 0], runs, used, strict=True):
        draw_gantt(ax, cp, result.trace, nodes)
        ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8, labelpad=28)
        makespan = f"makespan {result.metrics.makespan:.4g} s"
        ax.text(1.0, 1.0, makespan, transform=ax.transAxes, ha="right", va="bottom", fontsize=7)
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    return _png(fig), caption


CAPTIONS = {
    "profile": "Performance profiles (Dolan–Moré): fraction of instances on which each scheduler's makespan is "
    "within a factor τ of the best; on an instance where it failed or did not run, it never is.",
    "ratio_by_family": "Makespan / per-instance best, per workload family.",
    "cost_vs_makespan": "Cost versus makespan, each normalised by the best on its instance: one small dot per run, "
    "one large dot per scheduler mean, the dashed line joins the Pareto front of the means. Instances on which "
    "the cheapest run cost nothing (classic mode) are left out.",
    "sla": "SLA hit rate per scheduler: mean with 95% bootstrap CI.",
    "latency": "Decision latency per scheduler: mean over runs of each run's mean and 99th percentile (log scale).",
}


def build_figures(
    rows: Sequence[Mapping[str, Any]], rebuild: Rebuild | None = None, gantt_problem_id: str | None = None
) -> list[Figure]:
    """Every plot in PLOTS, as PNG bytes with its caption."""
    summary = stats.summary_table(rows)
    order = [str(e["scheduler"]) for e in summary]
    ok = stats.with_ratios(rows)
    gantt_png, gantt_caption = plot_gantt(ok, order, rebuild, gantt_problem_id)
    pngs = {
        "profile": plot_profile(rows, order),
        "ratio_by_family": plot_ratio_by_family(ok, order),
        "cost_vs_makespan": plot_cost_vs_makespan(ok, order),
        "sla": plot_sla(summary),
        "latency": plot_latency(ok, order),
        "gantt": gantt_png,
    }
    captions = {**CAPTIONS, "gantt": gantt_caption}
    return [Figure(key, captions[key], pngs[key]) for key in PLOTS]


# -- streams on a shared cluster ------------------------------------------------------------------------


def plot_load_curve(
    rows: Sequence[Mapping[str, Any]], key: str = "completion_mean", ylabel: str = "mean completion time (s)"
) -> bytes:
    """Mean over streams of `key` against the offered load, one line per scheduler, one panel per cluster."""
    rows = [r for r in rows if stats.is_stream(r) and stats.is_ok(r) and r.get(key) is not None]
    if not rows:
        return _no_data("no completed stream runs")
    clusters = sorted({str(r["cluster"]) for r in rows})
    order = [str(e["scheduler"]) for e in stats.summary_table(rows)]
    colours = _colours(order)
    plt = _plt()
    fig, axes = plt.subplots(1, len(clusters), figsize=(5.2 * len(clusters), 4.6), squeeze=False)
    for ax, cluster in zip(axes.flat, clusters, strict=True):
        mine = [r for r in rows if r["cluster"] == cluster]
        for i, name in enumerate(order):
            pts = defaultdict(list)
            for r in mine:
                if r["scheduler"] == name:
                    pts[float(r["load"])].append(float(r[key]))
            if pts:
                xs = sorted(pts)
                style = "-" if i < 10 else "--"
                ax.plot(xs, [np.mean(pts[x]) for x in xs], style, marker="o", ms=3, label=name, color=colours[name])
        ax.set_title(cluster, fontsize=10)
        ax.set_xlabel("offered load")
        ax.set_ylabel(ylabel)
        if key.startswith("completion"):
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes.flat[-1].legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    return _png(fig)


STREAM_CAPTIONS = {
    "load_curve": "Mean steady-state completion time against offered load, per scheduler (mean over seeds and arrival "
    "processes; log scale), one panel per cluster.",
    "load_sla": "Steady-state SLA hit rate against offered load, per scheduler, one panel per cluster.",
}


def stream_figures(rows: Sequence[Mapping[str, Any]]) -> list[Figure]:
    """The shared-cluster plots of the stream rows, or nothing without any."""
    rows = [r for r in rows if stats.is_stream(r)]
    if not rows:
        return []
    order = [str(e["scheduler"]) for e in stats.summary_table(rows)]
    return [
        Figure("load_curve", STREAM_CAPTIONS["load_curve"], plot_load_curve(rows)),
        Figure(
            "load_sla", STREAM_CAPTIONS["load_sla"], plot_load_curve(rows, "sla_steady", "SLA hit rate (steady state)")
        ),
        Figure("latency_shared", CAPTIONS["latency"], plot_latency(stats.with_ratios(rows), order)),
    ]

"""The benchmark report: Markdown plus one self-contained HTML page with tables and plots.

    rows = read_rows("results/")                    # results.sqlite written by `dagsched bench`
    write_report(rows, "results/", title="standard suite")

Plots (matplotlib, embedded in the HTML as base64 PNG so the page travels as one file):
Dolan-Moré performance profiles of the makespan ratio to the per-instance best, box plots of
that ratio per family, normalised cost versus makespan with each scheduler's mean and the
Pareto front of the means, SLA hit rates with bootstrap CIs, decision latency, and a Gantt
chart of one small problem per scheduler on a shared time axis.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from dagsched.bench import shared_report, stats
from dagsched.console import fail
from dagsched.model.compiled import CompiledProblem
from dagsched.model.errors import InputError
from dagsched.sim.config import SimConfig

PLOTS = ("profile", "ratio_by_family", "cost_vs_makespan", "sla", "latency", "gantt")
"""The figures every report has, in page order (a figure without data says so instead of vanishing)."""

RESULTS_FILES = ("results.sqlite", "results.parquet")
"""What `read_rows` looks for inside a results folder, in this order."""

Rebuild = Callable[[str], CompiledProblem]


@dataclass
class Figure:
    key: str
    caption: str
    png: bytes


@dataclass
class Report:
    """Where the report went: the Markdown, the HTML and one PNG per plot."""

    markdown: Path
    html: Path
    figures: dict[str, Path] = field(default_factory=dict)


# -- reading results ----------------------------------------------------------------------------------


def _table_name() -> str:
    """The results store's table (its SQLAlchemy table `cells`), else `results`."""
    try:
        from dagsched.bench import store
    except ImportError:
        return "results"
    name = getattr(getattr(store, "cells", None), "name", None)
    return name if isinstance(name, str) and name.isidentifier() else "results"


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Result rows from a results folder (results.sqlite or results.parquet) or from such a file."""
    p = Path(path)
    if not p.exists():
        raise InputError("RESULTS", f"not found: {p}")
    if p.is_dir():
        found = [p / name for name in RESULTS_FILES if (p / name).exists()]
        if not found:
            raise InputError("RESULTS", f"{p} holds no {' or '.join(RESULTS_FILES)}; run `dagsched bench --out {p}`")
        p = found[0]
    if p.suffix == ".parquet":
        import pyarrow.parquet as pq

        return [dict(r) for r in pq.read_table(p).to_pylist()]
    table = _table_name()
    try:
        with sqlite3.connect(f"file:{p}?mode=ro", uri=True) as conn:
            conn.row_factory = sqlite3.Row
            return [dict(r) for r in conn.execute(f"SELECT * FROM {table}")]  # the name is an identifier, checked above
    except sqlite3.DatabaseError as err:
        raise InputError("RESULTS", f"{p} is not a results database with a '{table}' table ({err})") from None


# -- figures ------------------------------------------------------------------------------------------


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    _plt().close(fig)
    return buf.getvalue()


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
    """The simulator settings of a result's mode (the suites' built-in modes), and how they were found."""
    try:
        from dagsched.bench.suites import BUILTIN_MODES as modes
    except ImportError:
        modes = {}
    if mode in modes:
        return modes[mode].config(), f"with the benchmark's '{mode}' settings"
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
    from dagsched.schedulers import make_scheduler, registered_names
    from dagsched.sim.run import simulate

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
        cp, config, seed = demo_problem(), SimConfig(classic=True), 0
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
    horizon = max((r.metrics.makespan for _, r in runs), default=1.0) or 1.0
    cmap = plt.get_cmap("tab20")
    for ax, (name, result), nodes in zip(axes[:, 0], runs, used, strict=True):
        row_of = {nd: i for i, nd in enumerate(nodes)}
        for a in result.trace.attempts:
            y = row_of[a.node]
            ax.barh(y, a.end - a.start, left=a.start, height=0.8, color=cmap(a.task % 20), lw=0.3, ec="k")
            if a.end - a.start > 0.04 * horizon and cp.n_tasks <= 60:
                ax.text((a.start + a.end) / 2, y, cp.task_ids[a.task][:8], ha="center", va="center", fontsize=5)
        ax.set_yticks(range(len(nodes)), [cp.node_ids[nd] for nd in nodes], fontsize=5)
        ax.invert_yaxis()
        ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8, labelpad=28)
        makespan = f"makespan {result.metrics.makespan:.4g} s"
        ax.text(1.0, 1.0, makespan, transform=ax.transAxes, ha="right", va="bottom", fontsize=7)
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    return _png(fig), caption


# -- tables and pages ---------------------------------------------------------------------------------


def _html_table(headers: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    if not headers:
        return "<p><em>(no results)</em></p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in cells)
    return f'<table class="results"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _excluded_summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for r in stats.excluded_rows(rows):
        counts[(str(r.get("scheduler")), str(r["reason"])[:160])] += 1
    return [{"scheduler": s, "reason": why, "rows": n} for (s, why), n in sorted(counts.items())]


def _sections(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """(heading, explanation, headers, cells) for every table of the report, shared by Markdown and HTML."""
    summary = stats.summary_table(rows)
    order = [str(e["scheduler"]) for e in summary]
    by_mode = stats.group_stats(rows, ("scheduler", "mode"))
    by_mode.sort(key=lambda e: (str(e["mode"]), order.index(str(e["scheduler"]))))
    family_table = stats.family_ratio_table(rows)
    out = [
        (
            "Summary",
            "One row per scheduler, best first by mean makespan ratio to the per-instance best (an instance is "
            "one problem on one cluster in one mode with one seed; the best is the lowest makespan among the "
            f"schedulers run on it). SLR is makespan / lower bound. W/T/L: instances won, tied (within "
            f"{stats.TIE_REL:g} relative) and lost against {stats.BASELINE}; p: two-sided Wilcoxon signed-rank "
            f"test of the paired log makespans against {stats.BASELINE}. Brackets: 95% percentile bootstrap "
            "intervals of the mean. Rows with an error or an invalid trace are excluded and counted.",
            *stats.table_cells(summary),
        ),
        (
            "Mean ratio to the best, per family",
            "Mean of makespan / best makespan on the instance, per workload family.",
            *stats.table_cells(family_table),
        ),
        (
            "By mode",
            "The summary split by simulation mode (classic textbook model, cloud).",
            *stats.table_cells(by_mode),
        ),
    ]
    excluded = _excluded_summary(rows)
    if excluded:
        out.append(("Excluded rows", "Runs that errored or produced an invalid trace.", *stats.table_cells(excluded)))
    return out


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


def _overview(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    ok = [r for r in rows if stats.is_ok(r)]

    def distinct(key: str) -> str:
        return ", ".join(sorted({str(r.get(key)) for r in rows})) or "none"

    table = stats.instance_table(rows)
    lines = [
        f"{len(rows)} runs, {len(ok)} counted, {len(rows) - len(ok)} excluded (error or invalid trace)",
        f"{len(table)} instances (problem x cluster x mode x seed)",
        f"suites: {distinct('suite')}",
        f"schedulers: {distinct('scheduler')}",
        f"families: {distinct('family')}",
        f"modes: {distinct('mode')}",
    ]
    return lines + _partial_coverage(table)


def _partial_coverage(table: Mapping[stats.InstanceKey, Mapping[str, float]]) -> list[str]:
    """A line naming the schedulers counted on fewer instances than the run has, so no mean is read as like for like."""
    covered = Counter(s for per in table.values() for s in per)
    partial = sorted((s, n) for s, n in covered.items() if n < len(table))
    if not partial:
        return []
    names = ", ".join(f"{s} {n}" for s, n in partial)
    return [
        f"counted on fewer instances than the {len(table)} (not run there, or failed): {names}; their means cover "
        f"their own instances only, while W/T/L and p pair them with {stats.BASELINE} instance by instance"
    ]


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table.results { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
table.results th, table.results td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; }
table.results th { background: #f0f0f0; }
table.results td:first-child, table.results th:first-child { text-align: left; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; } figcaption { font-size: 0.9em; color: #555; }
"""


def write_report(
    rows: Iterable[Mapping[str, Any]],
    out_dir: str | Path,
    *,
    title: str = "dagsched benchmark",
    rebuild: Rebuild | None = None,
    gantt_problem_id: str | None = None,
) -> Report:
    """Write report.md, report.html (self-contained) and figures/*.png into `out_dir`.

    `rebuild(problem_id)` returns the compiled problem of a result row so that the Gantt
    chart shows a problem of this run; without it a built-in 20-task problem stands in and
    the caption says so.
    """
    rows = [dict(r) for r in rows]
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("--out", f"not a folder: {out}")
    (out / "figures").mkdir(parents=True, exist_ok=True)
    single = [r for r in rows if not stats.is_stream(r)]
    figures = build_figures(single, rebuild, gantt_problem_id) if single or len(single) == len(rows) else []
    figures += [Figure(key, caption, png) for key, caption, png in shared_report.figures(rows)]
    sections = (_sections(single) if single or len(single) == len(rows) else []) + shared_report.sections(rows)
    overview = _overview(rows)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")

    paths: dict[str, Path] = {}
    for fig in figures:
        paths[fig.key] = out / "figures" / f"{fig.key}.png"
        paths[fig.key].write_bytes(fig.png)

    md = [f"# {title}", "", f"Generated {stamp} by `dagsched report`.", ""]
    md += [f"- {line}" for line in overview] + [""]
    for heading, text, headers, cells in sections:
        md += [f"## {heading}", "", text, "", _markdown(headers, cells), ""]
    md += ["## Plots", ""]
    for fig in figures:
        md += [f"![{fig.key}](figures/{fig.key}.png)", "", f"*{fig.caption}*", ""]
    md_path = out / "report.md"
    md_path.write_text("\n".join(md))

    body = [f"<h1>{html.escape(title)}</h1>", f"<p>Generated {stamp} by <code>dagsched report</code>.</p>", "<ul>"]
    body += [f"<li>{html.escape(line)}</li>" for line in overview] + ["</ul>"]
    for heading, text, headers, cells in sections:
        body += [f"<h2>{html.escape(heading)}</h2>", f"<p>{html.escape(text)}</p>", _html_table(headers, cells)]
    body.append("<h2>Plots</h2>")
    for fig in figures:
        data = base64.b64encode(fig.png).decode("ascii")
        body.append(
            f'<figure id="{fig.key}"><img src="data:image/png;base64,{data}" alt="{html.escape(fig.key)}">'
            f"<figcaption>{html.escape(fig.caption)}</figcaption></figure>"
        )
    page = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
    html_path = out / "report.html"
    html_path.write_text(page)
    return Report(md_path, html_path, paths)


README_BEGIN = "<!-- results:begin (written by dagsched report --readme; edits here are overwritten) -->"
README_END = "<!-- results:end -->"
SHARED_README_BEGIN = "<!-- shared-results:begin (written by dagsched report --readme; edits here are overwritten) -->"
SHARED_README_END = "<!-- shared-results:end -->"
"""Streams get their own README section, so the single-workflow table and the shared-cluster one stand side by side."""


def readme_markers(rows: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """The README markers a results set writes between: the shared-cluster pair when its rows are streams."""
    if rows and all(stats.is_stream(r) for r in rows):
        return SHARED_README_BEGIN, SHARED_README_END
    return README_BEGIN, README_END


def readme_section(rows: Sequence[Mapping[str, Any]], command: str, report_link: str | None = None) -> str:
    """The README's results section: overview, the summary and per-family (or per-load) tables, and how to
    reproduce them.

    `report_link` is the full report's path relative to the README, linked for its plots.
    """
    rows = [dict(r) for r in rows]
    streams = bool(rows) and all(stats.is_stream(r) for r in rows)
    found = shared_report.sections(rows) if streams else _sections(rows)
    sections = {heading: (text, headers, cells) for heading, text, headers, cells in found}
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    where = f" The full report with every plot: [{report_link}]({report_link})." if report_link else ""
    md = [f"Generated {stamp} from the results of `{command}`.{where}"]
    md += [""] + [f"- {line}" for line in _overview(rows)] + [""]
    wanted = shared_report.README_SECTIONS if streams else ("Summary", "Mean ratio to the best, per family")
    for heading in wanted:
        text, headers, cells = sections[heading]
        md += [f"**{heading}.** {text}", "", _markdown(headers, cells), ""]
    return "\n".join(md)


def update_readme(path: str | Path, section: str, markers: tuple[str, str] = (README_BEGIN, README_END)) -> None:
    """Replace what lies between the README's results `markers` with `section`; refuse a README without them."""
    path = Path(path)
    text = path.read_text() if path.exists() else ""
    begin_marker, end_marker = markers
    begin, end = text.find(begin_marker), text.find(end_marker)
    if begin < 0 or end < begin:
        raise InputError("--readme", f"{path} has no '{begin_marker}' ... '{end_marker}' markers")
    head, tail = text[: begin + len(begin_marker)], text[end:]
    path.write_text(f"{head}\n{section.rstrip()}\n{tail}")


def _markdown(headers: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    table = [dict(zip(headers, row, strict=True)) for row in cells]
    return stats.format_markdown(table, headers).rstrip("\n")


def register(app: typer.Typer) -> None:
    """Add `dagsched report RESULTS_DIR` to the CLI."""

    @app.command()
    def report(
        results: Annotated[Path, typer.Argument(help="results folder of `dagsched bench` (or its results file)")],
        out: Annotated[Path | None, typer.Option(help="folder for the report (default: the results folder)")] = None,
        title: Annotated[str, typer.Option(help="heading of the report")] = "dagsched benchmark",
        readme: Annotated[
            Path | None, typer.Option(help="also rewrite the results section of this README (between its markers)")
        ] = None,
        command: Annotated[
            str, typer.Option(help="the command that produced the results, quoted in the README section")
        ] = "make bench",
    ) -> None:
        """Write report.md and a self-contained report.html with tables and plots from benchmark results."""
        try:
            rows = read_rows(results)
            target = out or (results if results.is_dir() else results.parent)
            written = write_report(rows, target, title=title, rebuild=suite_rebuild(rows))
            if readme is not None:
                link = Path(os.path.relpath(written.markdown.resolve(), readme.resolve().parent)).as_posix()
                update_readme(readme, readme_section(rows, command, link), readme_markers(rows))
        except InputError as err:
            raise fail(err) from None
        typer.echo(stats.format_markdown(stats.summary_table(rows)))
        typer.echo(f"wrote {written.markdown} and {written.html}")


def suite_rebuild(rows: Iterable[Mapping[str, Any]]) -> Rebuild | None:
    """A rebuild callback through the suites the rows name: the problem spec whose problem_id matches is built.

    Suites are loaded on the first call only (the `standard` suite lists every real trace).
    """
    names = sorted({str(r["suite"]) for r in rows if r.get("suite")})
    try:
        from dagsched.bench.suites import get_suite
    except ImportError:
        return None
    if not names:
        return None

    def rebuild(problem_id: str) -> CompiledProblem:
        for name in names:
            for entry in get_suite(name).entries:
                if entry.spec.problem_id == problem_id:
                    return entry.spec.build()
        raise KeyError(f"no problem '{problem_id}' in suite(s) {', '.join(names)}")

    return rebuild

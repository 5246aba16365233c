"""Statistics of benchmark results: confidence intervals, ratios to the best, wins against HEFT, tests.

Everything works on plain result rows (dicts with the keys the results store writes: suite,
family, problem_id, cluster, mode, scheduler, seed, makespan, cost, sla_hit_rate, utilisation,
lower_bound, slr, ..., valid, error). An *instance* is one problem in one mode with one seed; the
schedulers run on the same instance are compared with each other by its *objective* (`objective`):
the makespan of a single workflow, the steady-state mean completion time of a stream of workflows on
a shared cluster. Rows with an error or an invalid trace are left out of every statistic but
counted (`excluded`), so a scheduler cannot look good by crashing on the hard problems.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Row = Mapping[str, Any]
InstanceKey = tuple[Any, ...]

METRICS = ("makespan", "cost", "sla_hit_rate", "utilisation", "objective")
"""The per-run figures summarised with mean, median and a bootstrap CI."""

STREAM_METRICS = ("completion_mean", "completion_p95", "slowdown_mean", "queue_mean", "sla_steady", "util_cpu")
STREAM_METRICS += ("util_gpu", "throughput_per_h", "fairness")
"""The steady-state figures of stream rows, summarised the same way (absent from single-workflow rows)."""

TIE_REL = 1e-6
"""Two objectives within this relative difference are a tie."""

BASELINE = "heft"
"""The scheduler every other one is tested against."""


def bootstrap_ci(
    values: Iterable[float],
    stat: Callable[[npt.NDArray[np.float64]], Any] = np.mean,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of `stat`; seeded so that a report is reproducible.

    No distributional assumption: makespans are skewed and the per-scheduler samples small.
    An empty sample gives (nan, nan); a single value gives (value, value).
    """
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    if x.size == 1:
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    batch = max(1, 2_000_000 // x.size)  # resamples per chunk: bounded memory for large samples
    parts = []
    for start in range(0, n_resamples, batch):
        samples = x[rng.integers(0, x.size, size=(min(batch, n_resamples - start), x.size))]
        try:  # vectorised when stat takes an axis (np.mean, np.median, ...)
            values = stat(samples, axis=1)  # type: ignore[call-arg]
            parts.append(np.asarray(values, dtype=np.float64))
        except TypeError:
            parts.append(np.array([float(stat(s)) for s in samples]))
    stats = np.concatenate(parts)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return (float(low), float(high))


def is_stream(row: Row) -> bool:
    """A row of a stream run (it has the steady-state completion time)."""
    return row.get("completion_mean") is not None


def objective(row: Row) -> float:
    """What an instance ranks schedulers by (lower is better): a stream's steady-state mean completion time,
    else the makespan."""
    value = row.get("completion_mean") if is_stream(row) else row.get("makespan")
    return math.nan if value is None else float(value)


def is_ok(row: Row) -> bool:
    """A row that counts: no error, a valid trace and a finite objective."""
    if row.get("error"):
        return False
    if not bool(row.get("valid", True)):
        return False
    return math.isfinite(objective(row))


def instance_key(row: Row) -> InstanceKey:
    """(problem, mode, seed), plus suite and cluster so that the same workflow on two clusters stays apart."""
    return (row.get("suite"), row.get("problem_id"), row.get("cluster"), row.get("mode"), row.get("seed"))


def _ratio(value: float, best: float) -> float:
    if best > 0:
        return value / best
    return 1.0 if value <= 0 else math.inf


def instance_table(rows: Iterable[Row]) -> dict[InstanceKey, dict[str, float]]:
    """Objective per instance and scheduler over the rows that count (duplicates averaged)."""
    acc: dict[InstanceKey, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if is_ok(row):
            acc[instance_key(row)][str(row["scheduler"])].append(objective(row))
    return {key: {s: float(np.mean(v)) for s, v in per.items()} for key, per in acc.items()}


def with_ratios(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """The rows that count, each with `ratio_best` (objective / best objective on its instance) and `slr`.

    The best is taken over the schedulers present for that instance, so a ratio of 1 means no
    scheduler in this run did better. `slr` is makespan / lower bound, from the row when given.
    """
    rows = list(rows)
    table = instance_table(rows)
    best = {key: min(per.values()) for key, per in table.items()}
    out: list[dict[str, Any]] = []
    for row in rows:
        if not is_ok(row):
            continue
        r = dict(row)
        r["ratio_best"] = _ratio(objective(r), best[instance_key(row)])
        if r.get("slr") is None:
            lb, makespan = r.get("lower_bound"), r.get("makespan")
            r["slr"] = _ratio(float(makespan), float(lb)) if lb is not None and makespan is not None else math.nan
        out.append(r)
    return out


def win_tie_loss(rows: Iterable[Row], scheduler: str, baseline: str = BASELINE) -> tuple[int, int, int]:
    """Instances where `scheduler` beats, ties (within TIE_REL) or loses to `baseline` on the objective."""
    win = tie = loss = 0
    for per in instance_table(rows).values():
        if scheduler not in per or baseline not in per:
            continue
        a, b = per[scheduler], per[baseline]
        if abs(a - b) <= TIE_REL * max(abs(a), abs(b)):
            tie += 1
        elif a < b:
            win += 1
        else:
            loss += 1
    return win, tie, loss


def paired_objectives(rows: Iterable[Row], scheduler: str, baseline: str = BASELINE) -> tuple[np.ndarray, np.ndarray]:
    """Objectives of `scheduler` and `baseline` on the instances both completed, in the same order."""
    table = instance_table(rows)
    keys = sorted((k for k, per in table.items() if scheduler in per and baseline in per), key=repr)
    return (np.array([table[k][scheduler] for k in keys]), np.array([table[k][baseline] for k in keys]))


def wilcoxon_vs(rows: Iterable[Row], scheduler: str, baseline: str = BASELINE) -> dict[str, float | int | None]:
    """Wilcoxon signed-rank test of paired objectives against `baseline`: p-value and median log ratio.

    The test runs on log(objective / baseline objective) so that every instance weighs by its
    relative difference: on raw differences the large problems would take all the top ranks.
    Differences within TIE_REL are ties and are dropped (Wilcoxon's zero method); when nothing
    differs the p-value is 1.0, and with no pairs at all it is None.
    """
    a, b = paired_objectives(rows, scheduler, baseline)
    out: dict[str, float | int | None] = {"pairs": int(a.size), "p_value": None, "median_log_ratio": None}
    if a.size == 0:
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.log(np.maximum(a, 1e-300) / np.maximum(b, 1e-300))
    d = d[np.isfinite(d)]
    out["median_log_ratio"] = float(np.median(d)) if d.size else 0.0
    d = d[np.abs(d) > TIE_REL]
    if d.size == 0:
        out["p_value"] = 1.0
        return out
    from scipy.stats import wilcoxon

    out["p_value"] = float(wilcoxon(d).pvalue)
    return out


def _describe(prefix: str, values: Sequence[float], seed: int) -> dict[str, float]:
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {
            f"{prefix}_mean": math.nan,
            f"{prefix}_median": math.nan,
            f"{prefix}_ci_low": math.nan,
            f"{prefix}_ci_high": math.nan,
        }
    low, high = bootstrap_ci(x, seed=seed)
    return {
        f"{prefix}_mean": float(x.mean()),
        f"{prefix}_median": float(np.median(x)),
        f"{prefix}_ci_low": low,
        f"{prefix}_ci_high": high,
    }


def group_stats(
    rows: Iterable[Row], by: Sequence[str] = ("scheduler",), baseline: str = BASELINE, seed: int = 0
) -> list[dict[str, Any]]:
    """One dict per group (e.g. scheduler, or scheduler x family): counts, metrics, ratios, wins, test.

    Keys: the `by` fields, n (rows that count), excluded (rows with an error or an invalid trace),
    {makespan,cost,sla_hit_rate,utilisation,<STREAM_METRICS>,ratio_best,slr}_{mean,median,ci_low,ci_high}
    (nan where no row has the figure),
    wins/ties/losses against `baseline` and p_value / median_log_ratio of the Wilcoxon test
    (None where the baseline is absent or the group is the baseline itself).
    """
    rows = list(rows)
    ok = with_ratios(rows)
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    excluded: dict[tuple[Any, ...], int] = defaultdict(int)
    for row in rows:
        key = tuple(row.get(f) for f in by)
        if not is_ok(row):
            excluded[key] += 1
    for r in ok:
        groups[tuple(r.get(f) for f in by)].append(r)
    has_baseline = any(r["scheduler"] == baseline for r in ok)
    out: list[dict[str, Any]] = []
    for key in sorted(set(groups) | set(excluded), key=lambda k: tuple(map(str, k))):
        members = groups.get(key, [])
        entry: dict[str, Any] = dict(zip(by, key, strict=True))
        entry["n"] = len(members)
        entry["excluded"] = excluded.get(key, 0)
        for metric in (*METRICS, *STREAM_METRICS, "ratio_best", "slr"):
            values = [float(r[metric]) for r in members if r.get(metric) is not None]
            entry.update(_describe(metric, values, seed))
        scheduler = entry.get("scheduler")
        if has_baseline and scheduler is not None and scheduler != baseline and members:
            # pair within the group only: the baseline rows of the same family / mode
            keyset = {instance_key(r) for r in members}
            pool = [r for r in ok if instance_key(r) in keyset and r["scheduler"] in (scheduler, baseline)]
            entry["wins"], entry["ties"], entry["losses"] = win_tie_loss(pool, scheduler, baseline)
            test = wilcoxon_vs(pool, scheduler, baseline)
            entry["p_value"] = test["p_value"]
            entry["median_log_ratio"] = test["median_log_ratio"]
        else:
            entry["wins"] = entry["ties"] = entry["losses"] = None
            entry["p_value"] = entry["median_log_ratio"] = None
        out.append(entry)
    return out


def summary_table(rows: Iterable[Row], baseline: str = BASELINE) -> list[dict[str, Any]]:
    """One row per scheduler, best first by mean ratio to the per-instance best (failed-only last)."""
    table = group_stats(rows, ("scheduler",), baseline)
    return sorted(table, key=lambda e: (_nan_last(e["ratio_best_mean"]), str(e["scheduler"])))


def _nan_last(x: float) -> float:
    return math.inf if x is None or not math.isfinite(x) else x


def family_ratio_table(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Mean ratio to the best per scheduler (rows) and family (columns), schedulers in summary order."""
    ok = with_ratios(rows)
    families = sorted({str(r.get("family")) for r in ok})
    acc: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in ok:
        acc[str(r["scheduler"])][str(r.get("family"))].append(float(r["ratio_best"]))
    out = []
    for scheduler, per in acc.items():
        entry: dict[str, Any] = {"scheduler": scheduler}
        for fam in families:
            entry[fam] = float(np.mean(per[fam])) if per.get(fam) else math.nan
        entry["all"] = float(np.mean([v for vs in per.values() for v in vs]))
        out.append(entry)
    return sorted(out, key=lambda e: (_nan_last(e["all"]), e["scheduler"]))


def performance_profile(rows: Iterable[Row], taus: npt.ArrayLike) -> dict[str, npt.NDArray[np.float64]]:
    """Dolan-Moré profile: per scheduler, the fraction of instances with ratio-to-best <= tau.

    The denominator is every instance some scheduler completed; an instance a scheduler failed
    or did not run counts as ratio infinity (never within tau), as Dolan and Moré prescribe. A
    ratio within TIE_REL of tau counts as within, as ties do everywhere else.
    """
    rows = list(rows)
    table = instance_table(rows)
    schedulers = sorted({str(r["scheduler"]) for r in rows})
    taus_arr = np.asarray(taus, dtype=float)
    out: dict[str, npt.NDArray[np.float64]] = {}
    for s in schedulers:
        ratios = np.array(
            [_ratio(per[s], min(per.values())) if s in per else math.inf for per in table.values()], dtype=float
        )
        if ratios.size == 0:
            out[s] = np.zeros_like(taus_arr)
        else:
            out[s] = (ratios[None, :] <= taus_arr[:, None] * (1 + TIE_REL)).mean(axis=1)  # a tie is within
    return out


def excluded_rows(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """The rows left out of the statistics, with the reason (error text or 'invalid trace')."""
    out = []
    for row in rows:
        if is_ok(row):
            continue
        reason = str(row.get("error") or ("invalid trace" if not bool(row.get("valid", True)) else "no objective"))
        out.append({**row, "reason": reason})
    return out


# -- Markdown ---------------------------------------------------------------------------------------


def fmt(value: Any, digits: int = 4) -> str:
    """A cell: floats to `digits` significant digits, None/nan as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        v = float(value)
        if math.isnan(v):
            return "–"
        if math.isinf(v):
            return "∞" if v > 0 else "-∞"
        return f"{v:.{digits}g}"
    return str(value)


def _p(value: Any) -> str:
    if value is None:
        return "–"
    return "<1e-4" if value < 1e-4 else f"{value:.4f}"


def _with_ci(entry: Mapping[str, Any], metric: str) -> str:
    return f"{fmt(entry[f'{metric}_mean'])} [{fmt(entry[f'{metric}_ci_low'])}, {fmt(entry[f'{metric}_ci_high'])}]"


SUMMARY_VIEW: list[tuple[str, Callable[[Mapping[str, Any]], str]]] = [
    ("scheduler", lambda e: str(e["scheduler"])),
    ("n", lambda e: str(e["n"])),
    ("excluded", lambda e: str(e["excluded"])),
    ("ratio to best, mean [95% CI]", lambda e: _with_ci(e, "ratio_best")),
    ("SLR mean", lambda e: fmt(e["slr_mean"])),
    ("makespan mean [95% CI]", lambda e: _with_ci(e, "makespan")),
    ("makespan median", lambda e: fmt(e["makespan_median"])),
    ("cost mean [95% CI]", lambda e: _with_ci(e, "cost")),
    ("SLA hit rate [95% CI]", lambda e: _with_ci(e, "sla_hit_rate")),
    ("utilisation mean", lambda e: fmt(e["utilisation_mean"])),
    ("objective mean", lambda e: fmt(e["objective_mean"])),
    (
        f"W/T/L vs {BASELINE}",
        lambda e: "–" if e["wins"] is None else f"{e['wins']}/{e['ties']}/{e['losses']}",
    ),
    (f"p (Wilcoxon vs {BASELINE})", lambda e: _p(e["p_value"])),
]
"""How a summary_table / group_stats row is shown: header and cell formatter."""


def table_cells(
    table: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None
) -> tuple[list[str], list[list[str]]]:
    """Headers and formatted cells: the compact SUMMARY_VIEW for statistics rows, else the given keys."""
    if not table:
        return ([], [])
    if columns is None and "ratio_best_mean" in table[0]:
        lead = [k for k in table[0] if k not in ("scheduler", "n", "excluded") and not k.startswith(_STAT_PREFIXES)]
        lead = [k for k in lead if k not in ("wins", "ties", "losses", "p_value", "median_log_ratio")]
        view = [(k, (lambda e, k=k: fmt(e[k]))) for k in lead] + SUMMARY_VIEW
        return view_cells(table, view)
    keys = list(columns) if columns is not None else list(table[0])
    return keys, [[fmt(e.get(k)) for k in keys] for e in table]


OPTIONAL_COLUMNS = ("objective mean",)
"""Columns left out of a table when no row has the figure (results stored before it existed)."""


def view_cells(
    table: Sequence[Mapping[str, Any]], view: Sequence[tuple[str, Callable[[Mapping[str, Any]], str]]]
) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of `table` under `view`, without an optional column that is empty in every row."""
    cells = [[f(e) for _, f in view] for e in table]
    keep = [i for i, (h, _) in enumerate(view) if h not in OPTIONAL_COLUMNS or any(row[i] != "–" for row in cells)]
    return [view[i][0] for i in keep], [[row[i] for i in keep] for row in cells]


_STAT_PREFIXES = tuple(f"{m}_" for m in (*METRICS, *STREAM_METRICS, "ratio_best", "slr"))


def format_markdown(table: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A GitHub Markdown table of `table` (summary rows get the compact view with CIs)."""
    headers, cells = table_cells(table, columns)
    if not headers:
        return "_(no results)_\n"

    def line(items: Sequence[str]) -> str:
        return "| " + " | ".join(s.replace("|", "\\|") for s in items) + " |"

    numeric = [all(_looks_numeric(c[i]) for c in cells) for i in range(len(headers))]
    rule = "| " + " | ".join("---:" if num else "---" for num in numeric) + " |"
    return "\n".join([line(headers), rule, *(line(c) for c in cells)]) + "\n"


def _looks_numeric(cell: str) -> bool:
    head = cell.split(" ")[0].lstrip("<-")
    try:
        float(head)
    except ValueError:
        return cell in ("–", "∞")
    return True

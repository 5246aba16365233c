"""`dagsched bench`: run a suite into a results folder and print one table per scheduler.

The main CLI (src/dagsched/cli.py) calls `register(app)`; the command lives here with the harness.
Bad suite names, suite files or scheduler names print one message and exit with status 2.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from dagsched.console import comma_list, console, err_console
from dagsched.console import fail as _fail
from dagsched.model.errors import InputError


def simple_table(rows: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Plain means per scheduler over the rows that count (no error, valid), best mean SLR first.

    Mean SLR (makespan over the lower bound) is the sort key because it is comparable across
    problems of any size, unlike the raw makespan.
    """
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    for r in rows:
        if r.get("error") or not r.get("valid") or r.get("makespan") is None:
            failed[str(r["scheduler"])] += 1
        else:
            groups[str(r["scheduler"])].append(r)

    def mean(xs: list[Mapping[str, Any]], key: str) -> float:
        vals = [float(x[key]) for x in xs if x.get(key) is not None]
        return sum(vals) / len(vals) if vals else math.nan

    entries = []
    for name in set(groups) | set(failed):
        ok = groups.get(name, [])
        stats = {k: mean(ok, k) for k in ("makespan", "slr", "cost", "sla_hit_rate", "utilisation")}
        entries.append((name, len(ok), failed.get(name, 0), stats))
    entries.sort(key=lambda e: (math.inf if math.isnan(e[3]["slr"]) else e[3]["slr"], e[0]))
    headers = ["scheduler", "n", "failed", "makespan mean (s)", "SLR mean", "cost mean", "SLA hit", "utilisation"]
    cells = [
        [
            name,
            str(n),
            str(bad),
            f"{s['makespan']:,.1f}",
            f"{s['slr']:.3f}",
            f"{s['cost']:.3f}",
            f"{s['sla_hit_rate']:.3f}",
            f"{s['utilisation']:.3f}",
        ]
        for name, n, bad, s in entries
    ]
    return headers, cells


def _ci(entry: Mapping[str, Any], metric: str) -> str:
    return f"{entry[metric + '_mean']:.3f} [{entry[metric + '_ci_low']:.3f}, {entry[metric + '_ci_high']:.3f}]"


def stats_table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The stats helper's summary (ratio to the per-instance best with a bootstrap CI), in a terminal's width."""
    from dagsched.bench import stats

    table = stats.summary_table(rows)
    headers = ["scheduler", "n", "failed", "ratio to best [95% CI]", "SLR mean", "makespan mean (s)", "cost mean"]
    headers += ["SLA hit", "W/T/L vs heft"]
    cells = []
    for e in table:
        wtl = "–" if e.get("wins") is None else f"{e['wins']}/{e['ties']}/{e['losses']}"
        cells.append(
            [
                str(e["scheduler"]),
                str(e["n"]),
                str(e["excluded"]),
                _ci(e, "ratio_best") if e["n"] else "–",
                f"{e['slr_mean']:.3f}",
                f"{e['makespan_mean']:,.1f}",
                f"{e['cost_mean']:.3f}",
                f"{e['sla_hit_rate_mean']:.3f}",
                wtl,
            ]
        )
    return headers, cells


def results_table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The stats helper's table when it is there (and speaks the expected keys), else plain means; streams get
    the shared-cluster view (ranked by steady-state mean completion time)."""
    try:
        from dagsched.bench import shared_report, stats

        if rows and all(stats.is_stream(r) for r in rows):
            headers, cells = shared_report.view_cells(stats.summary_table(rows))
            keep = [i for i, h in enumerate(headers) if h not in ("excluded", "util gpu", "fairness")]
            return [headers[i] for i in keep], [[c[i] for i in keep] for c in cells]
        return stats_table(rows)
    except (ImportError, AttributeError, KeyError, TypeError):
        return simple_table(rows)


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    headers, cells = results_table(rows)
    table = Table(title=title)
    for i, h in enumerate(headers):
        table.add_column(h, justify="left" if i == 0 else "right")
    for line in cells:
        table.add_row(*line)
    console.print(table)


def _number_list(text: str | None, option: str, cast: type[int] | type[float]) -> list[Any] | None:
    """`--seeds 1,2,3` (int) or `--loads 0.6,0.85` (float) as numbers; anything else is an InputError naming the
    option."""
    if not text:
        return None
    try:
        return [cast(part) for part in comma_list(text)]
    except ValueError:
        kind = "integers" if cast is int else "numbers"
        raise InputError(option, f"expected comma-separated {kind}, got {text!r}") from None


def register(app: typer.Typer) -> None:
    """Add `dagsched bench` to the given Typer app."""

    @app.command()
    def bench(
        suite: Annotated[str, typer.Option(help="quick, standard, real, or a suite YAML file")] = "quick",
        out: Annotated[Path | None, typer.Option(help="results folder (default results/SUITE)")] = None,
        workers: Annotated[
            int | None, typer.Option(min=0, help="processes (default: all cores; 0 = in this process)")
        ] = None,
        ray: Annotated[bool, typer.Option("--ray", help="run on a local Ray instance")] = False,
        address: Annotated[str | None, typer.Option(help="run on the Ray cluster at this address")] = None,
        schedulers: Annotated[str | None, typer.Option(help="comma-separated names instead of the suite's")] = None,
        limit: Annotated[int | None, typer.Option(min=0, help="run at most N of the missing cells")] = None,
        clusters: Annotated[
            str | None, typer.Option(help="comma-separated cluster labels: run only this slice of the suite")
        ] = None,
        seeds: Annotated[str | None, typer.Option(help="comma-separated seeds: run only this slice")] = None,
        loads: Annotated[
            str | None, typer.Option(help="comma-separated offered loads of a stream suite: run only this slice")
        ] = None,
        chunk_size: Annotated[int | None, typer.Option(min=1, help="cells per task (default: automatic)")] = None,
        retry_errors: Annotated[bool, typer.Option("--retry-errors", help="re-run cells stored as failed")] = False,
        strict: Annotated[bool, typer.Option("--strict", help="exit 1 when any cell failed")] = False,
        progress: Annotated[bool, typer.Option("--progress/--no-progress", help="show a progress bar")] = True,
    ) -> None:
        """Run every (problem, scheduler, seed, mode) cell of a suite; finished cells are skipped."""
        from dagsched.bench.runner import run_suite
        from dagsched.bench.store import load_results
        from dagsched.bench.suite_file import get_suite

        try:
            chosen = get_suite(suite)
            if clusters or seeds or loads:
                chosen = chosen.restricted(
                    comma_list(clusters) or None,
                    _number_list(seeds, "--seeds", int),
                    _number_list(loads, "--loads", float),
                )
            names = comma_list(schedulers) or None
            chosen.scheduler_names(names)
            out_dir = out or Path("results") / chosen.name
            summary = run_suite(
                chosen,
                out_dir,
                workers=workers,
                use_ray=ray,
                address=address,
                chunk_size=chunk_size,
                progress=progress,
                schedulers=names,
                limit=limit,
                retry_errors=retry_errors,
            )
        except InputError as err:
            raise _fail(err) from None
        err_console.print(
            f"{summary.suite}: {summary.total} cells, {summary.skipped} already stored, {summary.ran} run, "
            f"{summary.reused} reused from a seed-free run "
            f"({summary.backend}, {summary.workers} workers, {summary.chunks} chunks) in {summary.wall_s:.1f} s"
            + (f", {summary.cells_per_s:.1f} cells/s" if summary.ran else "")
        )
        rows = load_results(out_dir, suite=chosen.name)
        if names:
            rows = [r for r in rows if r["scheduler"] in names]
        print_table(rows, f"suite {chosen.name}: {len(rows)} cells in {out_dir}")
        bad = [r for r in rows if r.get("error")]
        if bad or summary.lost:
            err_console.print(f"[bold red]{len(bad)} stored cells failed[/], {summary.lost} lost to dead workers:")
            for line in summary.failures[:5] or [f"{r['problem_id']} {r['scheduler']}: {r['error']}" for r in bad[:5]]:
                err_console.print(f"  {line}")
            if strict:
                raise typer.Exit(1)

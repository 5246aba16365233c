"""The benchmark report: Markdown plus one self-contained HTML page with tables and plots.

    rows = read_rows("results/")                    # results.sqlite written by `dagsched bench`
    write_report(rows, "results/", title="standard suite")

The plots are `dagsched.bench.plots`' (embedded in the HTML as base64 PNG so the page travels as
one file); the shared-cluster sections are `dagsched.bench.shared_report`'s.
"""

from __future__ import annotations

import base64
import html
import os
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from dagsched.bench import plots, shared_report, stats
from dagsched.bench.plots import PLOTS, Figure, Rebuild  # noqa: F401  (PLOTS: the report's figure list)
from dagsched.console import fail
from dagsched.model.compiled import CompiledProblem
from dagsched.model.errors import InputError

RESULTS_FILES = ("results.sqlite", "results.parquet")
"""What `read_rows` looks for inside a results folder, in this order."""


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
    figures = plots.build_figures(single, rebuild, gantt_problem_id) if single or len(single) == len(rows) else []
    figures += plots.stream_figures(rows)
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
        from dagsched.bench.suite_file import get_suite
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

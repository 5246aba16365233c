"""The report: Markdown and a self-contained HTML page with every promised plot, from rows or a results file."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from dagsched.bench import plots, report
from dagsched.bench.store import ResultStore
from dagsched.io import read_problem
from dagsched.model import InputError, compile_problem

SCHEDULERS = ("heft", "cpop", "fcfs", "sjf")
DATA = Path(__file__).resolve().parents[1] / "data"


def synthetic_rows() -> list[dict[str, object]]:
    """3 families x 2 modes x 3 problems x 2 seeds x 4 schedulers, plus one errored and one invalid run."""
    rng = np.random.default_rng(0)
    factor = {"heft": 1.0, "cpop": 1.05, "fcfs": 1.3, "sjf": 1.15}
    rows: list[dict[str, object]] = []
    for family in ("layered", "etl_star", "ml_pipeline"):
        for mode in ("classic", "cloud"):
            for p in range(3):
                n_tasks = int(rng.integers(8, 60))
                for seed in (1, 2):
                    lb = float(rng.uniform(50, 500))
                    for s in SCHEDULERS:
                        makespan = lb * factor[s] * float(rng.uniform(1.0, 1.3))
                        rows.append(
                            {
                                "suite": "test",
                                "family": family,
                                "problem_id": f"{family}-{n_tasks}-{p}",
                                "n_tasks": n_tasks,
                                "n_edges": 2 * n_tasks,
                                "n_nodes": 4,
                                "cluster": "hetero-4",
                                "mode": mode,
                                "scheduler": s,
                                "seed": seed,
                                "makespan": makespan,
                                "cost": 0.0 if mode == "classic" else makespan * float(rng.uniform(0.8, 1.2)) / 3600,
                                "sla_hit_rate": float(rng.uniform(0.5, 1.0)),
                                "utilisation": float(rng.uniform(0.2, 0.9)),
                                "fragmentation": 0.5,
                                "load_std": 0.1,
                                "lower_bound": lb,
                                "slr": makespan / lb,
                                "decision_latency_mean_ms": float(rng.uniform(0.01, 2.0)),
                                "decision_latency_p99_ms": float(rng.uniform(2.0, 20.0)),
                                "decisions": n_tasks,
                                "valid": 1,
                                "wall_s": 0.01,
                                "error": None,
                            }
                        )
    # seed 3 is a cell no other row has, so the store keeps both (its key is problem, scheduler, seed, mode)
    rows.append({**rows[0], "scheduler": "fcfs", "seed": 3, "makespan": None, "error": "RuntimeError: boom"})
    rows.append({**rows[1], "seed": 3, "valid": 0})
    return rows


def images(page: str) -> list[str]:
    return re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)


def test_report_renders_every_plot_and_the_tables(tmp_path: Path) -> None:
    """report.md and report.html exist; the HTML embeds one PNG per plot in PLOTS and holds the summary table."""
    written = report.write_report(synthetic_rows(), tmp_path / "out", title="test suite")
    assert written.markdown == tmp_path / "out" / "report.md" and written.markdown.exists()
    page = written.html.read_text()
    pngs = images(page)
    assert len(report.PLOTS) == 6
    assert len(pngs) == len(report.PLOTS)
    assert all(p.startswith("iVBORw0KGgo") for p in pngs)  # base64 of the PNG signature
    assert "<link" not in page and "<script" not in page and 'src="http' not in page  # self-contained
    assert page.count('<table class="results">') == 4  # summary, per family, per mode, excluded
    assert "<h1>test suite</h1>" in page
    assert "<td>heft</td>" in page and "built-in 20-task" in page
    md = written.markdown.read_text()
    assert "| scheduler | n | excluded | ratio to best, mean [95% CI]" in md
    assert "| scheduler | etl_star | layered | ml_pipeline | all |" in md
    assert md.count("![") == len(report.PLOTS)
    assert sorted(p.name for p in (tmp_path / "out" / "figures").iterdir()) == sorted(f"{k}.png" for k in report.PLOTS)
    assert "RuntimeError: boom" in md and "invalid trace" in md


def test_gantt_uses_the_rebuild_callback(tmp_path: Path) -> None:
    """With rebuild(problem_id), the Gantt shows that problem in the row's mode, and the caption names it."""
    cp = compile_problem(read_problem(DATA / "heft_example.json"))
    asked: list[str] = []

    def rebuild(problem_id: str):  # -> CompiledProblem
        asked.append(problem_id)
        return cp

    rows = [r for r in synthetic_rows() if r["mode"] == "classic"]
    page = report.write_report(rows, tmp_path, rebuild=rebuild, gantt_problem_id=str(rows[0]["problem_id"])).html
    text = page.read_text()
    assert asked == [rows[0]["problem_id"]]
    assert f"problem &#x27;{rows[0]['problem_id']}&#x27; (10 tasks, classic mode" in text
    assert len(images(text)) == len(report.PLOTS)


def test_report_of_no_rows_still_has_every_figure(tmp_path: Path) -> None:
    """An empty result set renders (figures say 'no completed runs') rather than failing."""
    page = report.write_report([], tmp_path).html.read_text()
    assert len(images(page)) == len(report.PLOTS)


def test_pareto_front_of_means() -> None:
    """Lower is better on both axes: a point another beats on both is off the front."""
    points = {"a": (1.0, 3.0), "b": (1.2, 1.5), "c": (1.5, 2.0), "d": (2.0, 1.0), "e": (1.2, 1.6)}
    assert plots.pareto_front(points) == ["a", "b", "d"]


def _write_store(rows: list[dict[str, object]], folder: Path) -> None:
    store = ResultStore(folder)
    try:
        assert store.write(rows) == len(rows)
    finally:
        store.close()


def test_read_rows_from_a_results_folder(tmp_path: Path) -> None:
    """RESULTS_DIR/results.sqlite (written by the results store) reads back as the rows written.

    A folder without results, a missing path and a file that is no database are InputErrors naming the fault.
    """
    rows = synthetic_rows()
    _write_store(rows, tmp_path)
    got = report.read_rows(tmp_path)
    assert [{k: r[k] for k in rows[0]} for r in got] == rows
    assert report.read_rows(tmp_path / "results.sqlite") == got
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no results.sqlite"):
        report.read_rows(tmp_path / "empty")
    with pytest.raises(InputError, match="not found"):
        report.read_rows(tmp_path / "missing")
    (tmp_path / "junk.sqlite").write_text("not a database")
    with pytest.raises(InputError, match="not a results database"):
        report.read_rows(tmp_path / "junk.sqlite")


def test_cli_report_writes_the_report_and_exits_2_on_a_bad_folder(tmp_path: Path) -> None:
    """`dagsched report DIR --out OUT` prints the summary table and writes both files; a missing DIR exits 2."""
    app = typer.Typer()
    report.register(app)
    app.command("noop")(lambda: None)  # a second command, so typer keeps the subcommand name
    _write_store(synthetic_rows(), tmp_path)
    result = CliRunner().invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    assert "| heft |" in result.output
    assert (tmp_path / "rep" / "report.html").exists() and (tmp_path / "rep" / "report.md").exists()
    bad = CliRunner().invoke(app, ["report", str(tmp_path / "nope")])
    assert bad.exit_code == 2 and "not found" in bad.output


def test_readme_results_section_is_rewritten_between_its_markers(tmp_path: Path) -> None:
    """`--readme` replaces only the marked section (twice in a row gives one section, the rest of the
    README intact); a README without the markers exits 2 and is left as it was."""
    app = typer.Typer()
    report.register(app)
    app.command("noop")(lambda: None)
    _write_store(synthetic_rows(), tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\n## Results\n\n{report.README_BEGIN}\nold table\n{report.README_END}\n\n## After\n")
    for _ in range(2):
        args = ["report", str(tmp_path), "--out", str(tmp_path / "rep"), "--readme", str(readme)]
        result = CliRunner().invoke(app, [*args, "--command", "dagsched bench --suite test"])
        assert result.exit_code == 0, result.output
    text = readme.read_text()
    assert text.startswith("# title\n\n## Results\n\n") and text.endswith(f"{report.README_END}\n\n## After\n")
    assert "old table" not in text and text.count(report.README_BEGIN) == 1
    section = text[text.index(report.README_BEGIN) : text.index(report.README_END)]
    assert "`dagsched bench --suite test`" in section
    assert "[rep/report.md](rep/report.md)" in section  # the full report, relative to the README
    assert re.search(r"^\| heft \|", section, re.M) and re.search(r"^\| scheduler \| etl_star \|", section, re.M)
    plain = tmp_path / "PLAIN.md"
    plain.write_text("# no markers\n")
    bad = CliRunner().invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "rep"), "--readme", str(plain)])
    assert bad.exit_code == 2 and "markers" in bad.output
    assert plain.read_text() == "# no markers\n"


def test_overview_names_schedulers_counted_on_fewer_instances() -> None:
    """A scheduler left out of some instances (a size cap) is named with its count; full coverage says nothing."""
    rows = synthetic_rows()
    full = report._overview(rows)
    assert not any("fewer instances" in line for line in full)
    total = int(full[1].split()[0])
    dropped = [r for r in rows if r["scheduler"] == "cpop" and r["family"] == "layered"]
    line = [x for x in report._overview([r for r in rows if r not in dropped]) if "fewer instances" in x]
    assert len(line) == 1
    counted = sum(1 for r in dropped if r["valid"])  # the invalid seed-3 cpop row never counted
    assert f"than the {total} " in line[0] and f"cpop {total - counted};" in line[0]
    assert "heft" not in line[0].split(";")[0]

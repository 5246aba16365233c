"""The shared-cluster suites: their grid, a full run of the quick variant, its report and README section,
and results files written before the stream columns existed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dagsched.bench import report, shared_report, stats
from dagsched.bench.runner import run_suite
from dagsched.bench.store import ResultStore, load_results
from dagsched.bench.suite_file import get_suite
from dagsched.bench.suites import (
    SHARED_ARRIVALS,
    SHARED_CLUSTERS,
    SHARED_LOADS,
    SHARED_SKIP,
    STANDARD_SEEDS,
)
from dagsched.model.errors import InputError
from dagsched.schedulers import registered_names


def test_shared_suite_grid() -> None:
    """3 clusters x 4 loads x 2 arrival processes x 10 seeds of the default mix, and the same loads, arrivals and
    seeds of analytics jobs alone on homog-8, in the shared mode, every registered scheduler but the ones it skips
    (and a scheduler registered later joins)."""
    suite = get_suite("shared")
    per_cluster = len(SHARED_LOADS) * len(SHARED_ARRIVALS) * len(STANDARD_SEEDS)
    assert len(suite.entries) == (len(SHARED_CLUSTERS) + 1) * per_cluster
    stages = [e.spec for e in suite.entries if e.spec.mix == "stages"]
    assert len(stages) == per_cluster and {s.cluster_id for s in stages} == {"homog-8"}
    assert {s.family for s in stages} == {"stages-poisson", "stages-bursty"}
    assert {m.name for m in suite.modes} == {"shared"}
    assert suite.modes[0].config().noise_cv == 0.3 and suite.modes[0].config().mtbf_s
    cells = suite.cells()
    names = {c.scheduler for c in cells}
    assert names == set(registered_names()) - set(SHARED_SKIP)
    assert {"fifo", "sjf_cp", "fair", "tetris", "heft", "heft_keep", "kube_default"} <= names
    assert len(cells) == len(suite.entries) * len(names)
    ids = {e.spec.problem_id for e in suite.entries}
    assert len(ids) == len(suite.entries)
    assert "stream/default/bursty/w150/load0.85/s3@hetero-16" in ids
    assert "stream/stages/poisson/w100/load0.85/s3@homog-8" in ids
    quick = get_suite("shared-quick")
    assert {c.scheduler for c in quick.cells()} == set(registered_names())  # the skipped ones run on short streams


def test_a_slice_of_the_suite_keeps_its_cell_ids() -> None:
    """`--clusters`/`--seeds`/`--loads` pick a slice whose cells are the whole suite's (so either resumes the
    other); a cluster, seed or load outside the suite is an InputError naming the option."""
    suite = get_suite("shared")
    part = suite.restricted(["hetero-16"], [1, 2])
    assert len(part.entries) == len(SHARED_LOADS) * len(SHARED_ARRIVALS) * 2
    assert {e.spec.cluster_id for e in part.entries} == {"hetero-16"}
    whole = {(c.spec.problem_id, c.scheduler, c.seed) for c in suite.cells()}
    sliced = {(c.spec.problem_id, c.scheduler, c.seed) for c in part.cells()}
    assert sliced < whole and {seed for _, _, seed in sliced} == {1, 2}
    with pytest.raises(InputError, match="clusters"):
        suite.restricted(["tiny-2"])
    with pytest.raises(InputError, match="seeds"):
        suite.restricted(None, [99])
    high = suite.restricted(["hetero-16"], [1, 2], [0.85])
    assert {e.spec.load for e in high.entries} == {0.85} and len(high.entries) == len(SHARED_ARRIVALS) * 2
    assert {(c.spec.problem_id, c.scheduler, c.seed) for c in high.cells()} < sliced
    with pytest.raises(InputError, match="loads"):
        suite.restricted(None, None, [0.5])
    with pytest.raises(InputError, match="loads"):
        get_suite("quick").restricted(None, None, [0.85])


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shared-quick")
    summary = run_suite("shared-quick", out, workers=0, progress=False)
    assert summary.errors == 0 and summary.ran == summary.total
    return out


def test_every_quick_trace_validates_and_has_its_stream_figures(quick_results: Path) -> None:
    """Every cell of shared-quick is valid, and a stream row carries its steady-state columns with sane values;
    a second run does no work."""
    rows = load_results(quick_results)
    assert len(rows) == len(get_suite("shared-quick").cells())
    for r in rows:
        assert r["valid"] and r["error"] is None, (r["scheduler"], r["error"])
        assert r["completion_p50"] <= r["completion_p95"] <= r["completion_p99"]
        assert r["completion_mean"] > 0 and r["slowdown_mean"] >= 0.99 and r["queue_mean"] >= 0
        assert 0.0 < r["util_cpu"] < 1.0 and 0.0 <= r["sla_steady"] <= 1.0 and 0.0 < r["fairness"] <= 1.0
        assert r["load"] in (0.3, 0.85) and r["arrival"] in SHARED_ARRIVALS
        assert set(json.loads(r["sla_by_class"])) <= {"high", "standard", "batch"}
    again = run_suite("shared-quick", quick_results, workers=0, progress=False)
    assert again.ran == 0 and again.skipped == again.total


def test_quick_report_has_a_section_per_load_and_the_load_curve(quick_results: Path, tmp_path: Path) -> None:
    """The report of stream rows: margins, the ratio-per-load table, one table per load, the load curve plot;
    its README section goes between the shared markers and leaves the single-workflow section alone."""
    rows = load_results(quick_results)
    written = report.write_report(rows, tmp_path / "rep")
    md = written.markdown.read_text()
    for load in (0.3, 0.85):
        assert f"## Shared cluster at offered load {load:g}" in md
    assert "## Shared cluster: margins per load" in md and "best heuristic" in md
    assert set(written.figures) == {"load_curve", "load_sla", "latency_shared"}
    assert "## Summary" not in md  # no single-workflow rows, no single-workflow sections

    readme = tmp_path / "README.md"
    readme.write_text(
        f"# x\n{report.README_BEGIN}\nstandard table\n{report.README_END}\n"
        f"{report.SHARED_README_BEGIN}\nstale shared section\n{report.SHARED_README_END}\n"
    )
    markers = report.readme_markers(rows)
    assert markers == (report.SHARED_README_BEGIN, report.SHARED_README_END)
    report.update_readme(readme, report.readme_section(rows, "make bench-shared"), markers)
    text = readme.read_text()
    assert "standard table" in text and "stale shared section" not in text  # ("old" is in srpt_hold)
    assert "**Shared cluster: completion-time ratio to the best, per load.**" in text


def test_stream_rows_rank_by_completion_time() -> None:
    """A stream row's objective is its mean completion time, not its makespan; W/T/L follows it."""
    base = {"suite": "s", "problem_id": "p", "cluster": "c", "mode": "shared", "seed": 1, "valid": 1, "error": None}
    rows = [
        {**base, "scheduler": "heft", "makespan": 100.0, "completion_mean": 50.0},
        {**base, "scheduler": "fair", "makespan": 120.0, "completion_mean": 40.0},
    ]
    assert stats.objective(rows[0]) == 50.0
    ratios = {r["scheduler"]: r["ratio_best"] for r in stats.with_ratios(rows)}
    assert ratios == {"heft": 1.25, "fair": 1.0}
    assert stats.win_tie_loss(rows, "fair") == (1, 0, 0)
    assert shared_report.paired_ratio(rows, "fair", "heft") == pytest.approx(0.8)


def test_an_old_results_file_gains_the_new_columns(tmp_path: Path) -> None:
    """A results.sqlite from before the stream columns opens, keeps its rows and reads back with the new
    columns empty."""
    db = tmp_path / "results.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE cells (id INTEGER PRIMARY KEY, suite VARCHAR NOT NULL, family VARCHAR NOT NULL, "
            "problem_id VARCHAR NOT NULL, cluster VARCHAR NOT NULL, mode VARCHAR NOT NULL, scheduler VARCHAR NOT NULL, "
            "seed INTEGER NOT NULL, makespan FLOAT, valid BOOLEAN NOT NULL, error TEXT, created_at FLOAT NOT NULL, "
            "CONSTRAINT uq_cell UNIQUE (problem_id, scheduler, seed, mode))"
        )
        conn.execute(
            "INSERT INTO cells (suite, family, problem_id, cluster, mode, scheduler, seed, makespan, valid, error, "
            "created_at) VALUES ('q', 'layered', 'p1', 'c', 'cloud', 'heft', 1, 12.5, 1, NULL, 0)"
        )
    store = ResultStore(tmp_path)
    try:
        rows = store.rows()
        assert len(rows) == 1 and rows[0]["makespan"] == 12.5 and rows[0]["completion_mean"] is None
        assert store.write([{**rows[0], "seed": 2, "completion_mean": 3.0}]) == 1
    finally:
        store.close()
    assert [r["completion_mean"] for r in load_results(tmp_path)] == [None, 3.0]

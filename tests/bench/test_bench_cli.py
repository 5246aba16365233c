"""`dagsched bench`: runs a suite file into --out, prints one row per scheduler, skips stored cells on a
re-run, and exits with status 2 and one message on a bad suite or scheduler name."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from dagsched.bench.cli import register, simple_table
from dagsched.bench.store import load_results

SUITE = """
name: clitiny
workloads:
  - {generator: layered, tasks: [10]}
clusters: [small-3]
modes: [classic]
seeds: 2
schedulers: [heft, fcfs]
"""


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command()
    def other() -> None:  # a second command keeps `bench` a sub-command, as in the real CLI
        pass

    return app


def test_bench_runs_and_prints_a_table(tmp_path: Path) -> None:
    """4 cells (1 family x 2 seeds x 2 schedulers x classic) land in --out; the table names both schedulers."""
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE)
    out = tmp_path / "res"
    runner = CliRunner()
    args = ["bench", "--suite", str(suite), "--out", str(out), "--workers", "0", "--no-progress"]
    result = runner.invoke(_app(), args)
    assert result.exit_code == 0, result.output
    rows = load_results(out)
    assert len(rows) == 4 and {r["suite"] for r in rows} == {"clitiny"}
    assert "heft" in result.output and "fcfs" in result.output
    again = runner.invoke(_app(), args)
    assert again.exit_code == 0
    assert "4 already stored, 0 run" in again.output
    assert len(load_results(out)) == 4


def test_bad_suite_and_scheduler_exit_2(tmp_path: Path) -> None:
    """An unknown suite or scheduler prints one error line naming the choices and exits with status 2."""
    runner = CliRunner()
    bad = runner.invoke(_app(), ["bench", "--suite", "nope", "--out", str(tmp_path)])
    assert bad.exit_code == 2
    assert "neither a built-in suite (quick, standard, real, shared, shared-quick)" in bad.output
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE)
    wrong = runner.invoke(_app(), ["bench", "--suite", str(suite), "--out", str(tmp_path), "--schedulers", "heft,zzz"])
    assert wrong.exit_code == 2
    assert "unknown scheduler(s) zzz" in wrong.output
    for loads, fault in (("high", "expected comma-separated numbers"), ("0.5", "0.5 not in suite shared")):
        sliced = runner.invoke(_app(), ["bench", "--suite", "shared", "--out", str(tmp_path), "--loads", loads])
        assert sliced.exit_code == 2 and "loads: " in sliced.output and fault in sliced.output
    assert not (tmp_path / "results.sqlite").exists()


def test_simple_table_means_sorted_by_slr() -> None:
    """The fallback table: plain means over rows that count, best mean SLR first, failures counted apart."""
    rows: list[dict[str, object]] = [
        {
            "scheduler": "a",
            "makespan": 10.0,
            "slr": 2.0,
            "cost": 1.0,
            "sla_hit_rate": 1.0,
            "utilisation": 0.5,
            "valid": True,
            "error": None,
        },
        {
            "scheduler": "a",
            "makespan": 20.0,
            "slr": 4.0,
            "cost": 3.0,
            "sla_hit_rate": 0.0,
            "utilisation": 0.7,
            "valid": True,
            "error": None,
        },
        {
            "scheduler": "b",
            "makespan": 12.0,
            "slr": 1.5,
            "cost": 2.0,
            "sla_hit_rate": 1.0,
            "utilisation": 0.6,
            "valid": True,
            "error": None,
        },
        {"scheduler": "b", "makespan": None, "valid": False, "error": "RuntimeError: x"},
    ]
    headers, cells = simple_table(rows)
    assert headers[:5] == ["scheduler", "n", "failed", "makespan mean (s)", "SLR mean"]
    assert cells == [
        ["b", "1", "1", "12.0", "1.500", "2.000", "1.000", "0.600"],
        ["a", "2", "0", "15.0", "3.000", "2.000", "0.500", "0.600"],
    ]

"""The `dagsched` command: JSON keys scripts rely on, and exit status 2 with a clear message on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dagsched.cli import app

HEFT_EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "heft_example.json"
runner = CliRunner()


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_info_json_on_the_heft_example():
    """info --json prints tasks, edges, levels, critical_path and total_work of the file."""
    out = _json(runner.invoke(app, ["info", str(HEFT_EXAMPLE), "--json"]))
    assert out["tasks"] == 10 and out["edges"] == 15 and out["levels"] == 4
    assert out["total_work"] == pytest.approx(sum([13, 50 / 3, 43 / 3, 38 / 3, 35 / 3, 38 / 3, 11, 10, 50 / 3, 44 / 3]))
    assert out["critical_path"] > 0


def test_info_json_on_a_real_trace(wfinstances):
    """A real Montage trace reports the task and edge counts of the WfInstances table."""
    path = wfinstances / "montage" / "montage-chameleon-2mass-005d-001.json.gz"
    out = _json(runner.invoke(app, ["info", str(path), "--json"]))
    assert (out["tasks"], out["edges"], out["levels"]) == (58, 114, 8)


def test_simulate_json_heft_is_80_on_the_paper_example():
    """simulate --json on a classic file runs the textbook model: HEFT gives 80, and the trace is valid."""
    out = _json(runner.invoke(app, ["simulate", "-w", str(HEFT_EXAMPLE), "-s", "heft", "--json"]))
    assert out["makespan"] == pytest.approx(80.0)
    assert out["valid"] is True
    for key in ("cost", "sla_hit_rate", "utilisation"):
        assert key in out


def test_simulate_writes_trace_and_gantt(tmp_path):
    """--trace writes every attempt; --gantt writes a PNG."""
    trace, gantt = tmp_path / "t.json", tmp_path / "g.png"
    args = ["simulate", "-w", str(HEFT_EXAMPLE), "-s", "cpop", "--trace", str(trace), "--gantt", str(gantt)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(trace.read_text())
    assert len(doc["attempts"]) == 10 and doc["metrics"]["makespan"] == pytest.approx(86.0)
    assert gantt.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv_path = tmp_path / "t.csv"
    runner.invoke(app, ["simulate", "-w", str(HEFT_EXAMPLE), "--trace", str(csv_path)])
    assert len(csv_path.read_text().strip().splitlines()) == 11


def test_compare_json_same_seeds_for_every_scheduler():
    """compare --json gives one result per scheduler and seed with the keys the benchmark reads."""
    args = ["compare", "-w", str(HEFT_EXAMPLE), "--schedulers", "heft,cpop,fcfs", "--seeds", "2", "--json"]
    out = _json(runner.invoke(app, args))
    rows = out["results"]
    assert [(r["scheduler"], r["seed"]) for r in rows] == [(s, k) for s in ("heft", "cpop", "fcfs") for k in (1, 2)]
    assert {r["makespan"] for r in rows if r["scheduler"] == "heft"} == {80.0}
    assert all(r["valid"] for r in rows)
    assert set(rows[0]) >= {"scheduler", "seed", "makespan", "cost", "sla_hit_rate", "valid"}
    assert all(r["latency_first_ms"] > 0 and r["latency_ms"] > 0 for r in rows)  # the first decision apart


def test_generate_then_info(tmp_path):
    """A generated workflow file has the requested number of tasks."""
    out = tmp_path / "ml.yaml"
    result = runner.invoke(app, ["generate", "workflow", "--family", "ml_pipeline", "--tasks", "40", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert _json(runner.invoke(app, ["info", str(out), "--json"]))["tasks"] == 40
    cluster = tmp_path / "c.yaml"
    assert runner.invoke(app, ["generate", "cluster", "--preset", "hetero-16", "--out", str(cluster)]).exit_code == 0
    sim = _json(runner.invoke(app, ["simulate", "-w", str(out), "-c", str(cluster), "-s", "min_min", "--json"]))
    assert sim["valid"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "-w", "{cyc}", "-c", "homog-8"], "cycle through tasks a -> b -> a"),
        (["simulate", "-w", "{ok}", "-c", "nope"], "--cluster: 'nope' is neither a preset"),
        (["simulate", "-w", "{ok}", "-c", "homog-8", "-s", "magic"], "unknown scheduler 'magic'"),
        (["simulate", "-w", "missing.yaml", "-c", "homog-8"], "file not found"),
        (["simulate", "-w", "{big}", "-c", "homog-8"], "tasks[0].resources.cpu: task 'a' requests cpu=64 but the"),
        (["simulate", "-w", "{long}", "-c", "homog-8"], "tasks[0].runtime: 1e+308 s is beyond what can be simulated"),
        (["info", "{cyc}"], "cycle through tasks a -> b -> a"),
        (
            ["compare", "-w", "{ok}", "-c", "homog-8", "--schedulers", "drl,hfet"],
            "--schedulers: unknown scheduler 'hfet' (did you mean 'heft'?); known: ",
        ),
        (
            ["simulate", "-w", "{ok}", "-c", "homog-8", "-s", "min-min"],
            "unknown scheduler 'min-min' (did you mean 'min_min'?)",
        ),
        (["generate", "workflow", "--family", "spiral", "--tasks", "10", "--out", "x.yaml"], "family"),
    ],
)
def test_bad_input_exits_2_naming_the_fault(tmp_path, args, message):
    """Bad files, names and requests print one message naming the fault and exit with status 2."""
    cyc = tmp_path / "cyc.yaml"
    cyc.write_text(
        "name: c\ntasks:\n  - {id: a, runtime: 1, dependencies: [b]}\n  - {id: b, runtime: 1, dependencies: [a]}\n"
    )
    ok = tmp_path / "ok.yaml"
    ok.write_text("name: ok\ntasks:\n  - {id: a, runtime: 1}\n")
    big = tmp_path / "big.yaml"
    big.write_text("name: big\ntasks:\n  - {id: a, runtime: 1, resources: {cpu: 64}}\n")
    long = tmp_path / "long.yaml"
    long.write_text("name: long\ntasks:\n  - {id: a, runtime: 1e308}\n")
    paths = {"{cyc}": str(cyc), "{ok}": str(ok), "{big}": str(big), "{long}": str(long)}
    result = runner.invoke(app, [paths.get(a, a) for a in args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_budget_curve_writes_a_row_per_searcher(tmp_path):
    """budget-curve's table has a row per searcher at each budget, and its plot is written."""
    out = tmp_path / "curve"
    args = ["budget-curve", "--out", str(out), "--budgets-ms", "1", "--seeds", "1", "--n-tasks", "6"]
    result = runner.invoke(app, [*args, "--traces", "0", "--exact", "0"])
    assert result.exit_code == 0, result.output
    rows = [line.split("|")[1].strip() for line in (out / "budget_curve.md").read_text().splitlines()[4:]]
    assert sorted(rows) == ["mcts_uct", "tabu"]
    assert (out / "budget_curve.png").stat().st_size > 0


def test_the_command_line_starts_without_torch() -> None:
    """Every command's options are built at start-up (the trainers' from their config dataclasses, which live apart
    from the trainers), so `dagsched --help` or `dagsched simulate` do not pay for importing torch or Ray."""
    probe = "import sys, dagsched.cli; print(sorted({'torch', 'ray', 'torch_geometric'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_tables_print_one_number_format_and_count_the_workflows(tmp_path):
    """Makespans of 20,000 s read `20,000` in simulate's and compare's tables (never `2e+04`), as 1,300 does; a run
    of several workflow files is titled by their count, not by every name."""
    from dagsched.console import number

    assert [number(x) for x in (21840.53, 1300.0, 0.4778, 1.0, 0.06395, 119.54, 0.0, 2e-5)] == [
        "21,841", "1,300", "0.4778", "1", "0.06395", "119.5", "0", "0.00002",
    ]  # fmt: skip
    paths = []
    for i in range(3):
        path = tmp_path / f"w{i}.yaml"
        path.write_text(f"name: w{i}\ntasks:\n  - {{id: a, runtime: 20000}}\n")
        paths += ["-w", str(path)]
    env = {"COLUMNS": "200"}
    sim = runner.invoke(app, ["simulate", *paths, "-c", "homog-8", "-s", "fcfs", "--plan"], env=env)
    assert sim.exit_code == 0, sim.output
    assert "fcfs on 3 workflows (seed 1)" in sim.output and "w1.yaml" not in sim.output
    assert "20,000" in sim.output and "e+0" not in sim.output
    comp = runner.invoke(
        app, ["compare", *paths, "-c", "homog-8", "--schedulers", "fcfs", "--seeds", "1", "--together"]
    )
    assert comp.exit_code == 0, comp.output
    assert "3 workflows: 3 tasks on 8 nodes" in comp.output and "w1.yaml" not in comp.output
    assert "20,000" in comp.output and "e+0" not in comp.output


def test_simulate_without_a_scheduler_uses_the_stream_rule_for_a_stream(tmp_path):
    """Without --scheduler, several workflows sharing a cluster are dispatched by the stream rule (HEFT, a one-workflow
    planner, was 3 x the best per stream in the shared table), one workflow or a classic file is planned by HEFT."""
    from dagsched.schedulers import default_scheduler
    from dagsched.schedulers.base import PLAN_SCHEDULER, STREAM_SCHEDULER

    assert default_scheduler(2) == STREAM_SCHEDULER == "fair_cap_gpu_first"
    assert default_scheduler(1) == default_scheduler(2, classic=True) == PLAN_SCHEDULER == "heft"
    paths = []
    for i in range(2):
        path = tmp_path / f"w{i}.yaml"
        path.write_text(
            f"name: w{i}\nsubmit_time: {100 * i}\ntasks:\n  - {{id: a, runtime: 50}}\n"
            "  - {id: b, runtime: 30, dependencies: [a]}\n"
        )
        paths += ["-w", str(path)]
    stream = _json(runner.invoke(app, ["simulate", *paths, "-c", "homog-8", "--json"]))
    assert stream["scheduler"] == "fair_cap_gpu_first" and stream["valid"] and "completion_mean" in stream
    one = _json(runner.invoke(app, ["simulate", *paths[:2], "-c", "homog-8", "--json"]))
    assert one["scheduler"] == "heft" and one["valid"]
    classic = _json(runner.invoke(app, ["simulate", "-w", str(HEFT_EXAMPLE), "--json"]))
    assert classic["scheduler"] == "heft" and classic["makespan"] == pytest.approx(80.0)

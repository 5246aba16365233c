"""`dagsched run` as a user runs it: its own loopback Ray cluster, one JSON line on stdout (nothing of Ray's),
every Ray process gone at the end; bad input refused with exit status 2 before anything starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("ray")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CLI = [sys.executable, "-c", "from dagsched.cli import app; app()"]


def _ray_processes(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout.splitlines()
    return [line for line in found if "pgrep" not in line]


@pytest.fixture
def ray_tmp() -> tuple[dict[str, str], str]:
    """An environment whose Ray keeps its files (and so its processes' arguments) under a fresh short folder."""
    folder = tempfile.mkdtemp(prefix="dsr", dir="/tmp")
    return {**os.environ, "RAY_TMPDIR": folder}, folder


def test_run_prints_one_json_line_and_leaves_no_ray_process(ray_tmp: tuple[dict[str, str], str]) -> None:
    env, folder = ray_tmp
    args = ["run", "-w", str(EXAMPLES / "python-steps.yaml"), "-c", str(EXAMPLES / "two-small-nodes.yaml")]
    done = subprocess.run(
        [*CLI, *args, "-s", "heft", "--ray", "local", "--time-scale", "0.1", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout[:2000]
    out = json.loads(lines[0])
    assert out["valid"] is True
    assert out["attempts"] == 4 and out["failed_attempts"] == 0
    # numbers 1 + squares 2 + total 1, on the node of speed 2, each longer by the probed per-task overhead
    assert out["predicted_makespan_no_overhead"] == pytest.approx(2.0)
    assert out["task_overhead_from"] == "probe" and out["task_overhead_ms"] > 0
    assert out["predicted_makespan"] == pytest.approx(2.0 + 3 * out["task_overhead_ms"] / 1e3 / 0.1)
    assert out["makespan"] > 0 and out["completion_mean"] == out["makespan"]
    assert out["sim_real_gap"] == pytest.approx(out["makespan"] / out["predicted_makespan"] - 1)
    deadline = time.monotonic() + 10
    while _ray_processes(folder) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ray_processes(folder) == []


@pytest.mark.parametrize(
    ("workflow", "cluster", "field"),
    [
        ("bad-run.yaml", "two-small-nodes.yaml", "tasks[0].run.python"),
        ("python-steps.yaml", "hetero-16", "--cluster"),
        ("missing-function.yaml", "two-small-nodes.yaml", "tasks[0].run.python"),
    ],
)
def test_bad_input_is_refused_naming_the_field(tmp_path: Path, workflow: str, cluster: str, field: str) -> None:
    (tmp_path / "bad-run.yaml").write_text("name: w\ntasks:\n  - {id: a, runtime: 1, run: {python: no-colon}}\n")
    (tmp_path / "missing-function.yaml").write_text(
        "name: w\ntasks:\n  - {id: a, runtime: 1, run: {python: 'dagsched.live.demo:nothing_here'}}\n"
    )
    wf = tmp_path / workflow if (tmp_path / workflow).exists() else EXAMPLES / workflow
    cl = str(EXAMPLES / cluster) if cluster.endswith(".yaml") else cluster
    done = subprocess.run([*CLI, "run", "-w", str(wf), "-c", cl, "--ray", "local"], capture_output=True, text=True)
    assert done.returncode == 2
    assert field in done.stderr
    if cluster == "hetero-16":
        assert "at most 8 Ray nodes" in done.stderr.replace("\n", " ")


def _journal_done(url: str) -> list[tuple[str, str]]:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.connect() as db:
            rows = db.execute(sa.text("select run_id, task from live_attempts where outcome = 'done'")).all()
    except sa.exc.OperationalError:
        return []
    finally:
        engine.dispose()
    return [(r[0], r[1]) for r in rows]


def test_sigterm_cancels_the_run_and_resume_runs_only_what_was_left(
    tmp_path: Path, ray_tmp: tuple[dict[str, str], str]
) -> None:
    env, folder = ray_tmp
    lines = ["name: chain", "tasks:"]
    for i in range(8):
        deps = f", dependencies: [t{i - 1}]" if i else ""
        lines.append(f"  - {{id: t{i}, runtime: 2{deps}}}")
    wf = tmp_path / "chain.yaml"
    wf.write_text("\n".join(lines) + "\n")
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    args = [
        "run",
        "-w",
        str(wf),
        "-c",
        str(EXAMPLES / "two-small-nodes.yaml"),
        "-s",
        "heft",
        "--store",
        url,
        "--no-record",
    ]
    run = subprocess.Popen([*CLI, *args, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 180
    while len(_journal_done(url)) < 2 and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.2)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err[-2000:]
    assert "--resume" in err
    deadline = time.monotonic() + 10
    while _ray_processes(folder) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ray_processes(folder) == []
    first = _journal_done(url)
    assert 2 <= len(first) < 8
    run_id = first[0][0]
    resume = [*CLI, "run", "--resume", run_id, "--store", url, "--no-record", "--json"]
    done = subprocess.run(resume, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["valid"] is True and out["run_id"] != run_id
    rows = _journal_done(url)
    assert sorted(task for _, task in rows) == [f"t{i}" for i in range(8)]  # each task done once, over both runs
    assert {task for rid, task in rows if rid == out["run_id"]} == {f"t{i}" for i in range(len(first), 8)}


def test_a_run_with_a_store_is_recorded_and_dagsched_gap_reads_it(
    tmp_path: Path, ray_tmp: tuple[dict[str, str], str]
) -> None:
    """--store alone: the run plans its workflow and posts every start and finish through a local `dagsched
    serve` on that store (stopped at the end); `dagsched gap` then reads one complete real run of 4 tasks."""
    env, _ = ray_tmp
    wf = tmp_path / "diamond.yaml"
    wf.write_text(
        "name: diamond\ntasks:\n  - {id: t0, runtime: 2}\n  - {id: t1, runtime: 2, dependencies: [t0]}\n"
        "  - {id: t2, runtime: 2, dependencies: [t0]}\n  - {id: t3, runtime: 2, dependencies: [t1, t2]}\n"
    )
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    args = ["run", "-w", str(wf), "-c", str(EXAMPLES / "two-small-nodes.yaml"), "--store", url, "--time-scale", "0.5"]
    done = subprocess.run([*CLI, *args, "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["recorded_events"] == 8 and out["refused_events"] == []
    assert list(out["plan_ids"]) == ["diamond"]
    gap = subprocess.run([*CLI, "gap", "--store", url, "--json"], capture_output=True, text=True, timeout=120)
    assert gap.returncode == 0, gap.stderr[-2000:]
    report = json.loads(gap.stdout)
    assert report["runs"] == {"read": 1, "clean": 1, "complete": 1}
    assert report["observations"] == 4
    assert 0.8 < report["ratio"]["median"] < 1.5  # what ran took about what it declared (emulated at its runtime)


RELAY_STEPS = """
import json, pathlib, time

SEEN = pathlib.Path({seen!r})


def shout(text):
    return {{"word": text.strip().upper(), "letters": len(text.strip())}}


def combine(text, shouted):
    with SEEN.open("a") as f:  # what it was handed, one line per call
        f.write(json.dumps([text, shouted]) + "\\n")
    time.sleep(4)
    return shouted["word"] + ":" + text.strip()
"""


def test_a_resumed_run_hands_the_children_of_tasks_done_before_their_outputs(
    tmp_path: Path, ray_tmp: tuple[dict[str, str], str]
) -> None:
    """source (a command) -> shout (a function of its stdout) -> combine (a function of both): SIGTERM while combine
    runs; the resumed run runs combine alone, handed the stdout and the value the first run journalled."""
    env, folder = ray_tmp
    seen = tmp_path / "seen.jsonl"
    (tmp_path / "relay_steps.py").write_text(RELAY_STEPS.format(seen=str(seen)))
    env = {**env, "PYTHONPATH": f"{tmp_path}{os.pathsep}{env.get('PYTHONPATH', '')}"}
    wf = tmp_path / "relay.yaml"
    wf.write_text(
        "name: relay\ntasks:\n"
        "  - {id: source, runtime: 1, run: {command: [echo, alpha]}}\n"
        "  - {id: shout, runtime: 1, dependencies: [source], run: {python: 'relay_steps:shout'}}\n"
        "  - {id: combine, runtime: 4, dependencies: [source, shout], run: {python: 'relay_steps:combine'}}\n"
    )
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    args = ["run", "-w", str(wf), "-c", str(EXAMPLES / "two-small-nodes.yaml"), "--store", url, "--no-record"]
    run = subprocess.Popen([*CLI, *args, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 180
    while not seen.exists() and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.1)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err[-2000:]
    first = _journal_done(url)
    assert sorted(task for _, task in first) == ["shout", "source"]
    handed = ["alpha\n", {"word": "ALPHA", "letters": 5}]
    assert [json.loads(line) for line in seen.read_text().splitlines()] == [handed]
    run_id = first[0][0]
    resume = [*CLI, "run", "--resume", run_id, "--store", url, "--no-record", "--json"]
    done = subprocess.run(resume, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["valid"] is True and out["failed_workflows"] == []
    assert [task for rid, task in _journal_done(url) if rid == out["run_id"]] == ["combine"]
    assert [json.loads(line) for line in seen.read_text().splitlines()] == [handed, handed]
    deadline = time.monotonic() + 10
    while _ray_processes(folder) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ray_processes(folder) == []

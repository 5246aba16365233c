"""`dagsched run` as a user runs it: its own loopback Ray cluster, one JSON line on stdout (nothing of Ray's),
every Ray process gone at the end; bad input refused with exit status 2 before anything starts."""

from __future__ import annotations

import json
import os
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
    assert out["predicted_makespan"] == pytest.approx(2.0)  # numbers 1 + squares 2 + total 1, on the node of speed 2
    assert 0 < out["makespan"] < out["predicted_makespan"]  # the functions take milliseconds, not their predictions
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

"""A real uvicorn process on a free port, called over HTTP: every read route, a plan, a reload by SIGHUP."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from .conftest import nodes, start_server, workflow


def _serve(tmp_path: Path, policy_stem: Path, *extra: str):
    config = tmp_path / "config.yaml"
    config.write_text("decision_deadline_ms: 1500\n")
    store = f"sqlite:///{tmp_path / 's.sqlite'}"
    base, proc = start_server(
        store, policy_stem, tmp_path / "models", "--config", str(config), *extra, ready="/healthz", timeout_s=60
    )
    yield base, proc, config
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def server(tmp_path: Path, policy_stem: Path):
    yield from _serve(tmp_path, policy_stem)


@pytest.fixture
def two_workers(tmp_path: Path, policy_stem: Path):
    yield from _serve(tmp_path, policy_stem, "--workers", "2")


def test_real_server_plans_and_reloads_on_sighup(server) -> None:
    """Over HTTP: healthz, readyz, openapi, a HEFT plan (makespan 10), its stored copy, metrics; SIGHUP re-reads."""
    base, proc, config = server
    with httpx.Client(base_url=base, timeout=30) as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        ready = c.get("/readyz").json()
        assert ready["status"] == "ready" and ready["model"] == "tiny-v1"
        spec = c.get("/openapi.json").json()
        assert {"/v1/schedule", "/v1/k8s/filter", "/v1/model/weights", "/v1/events"} <= set(spec["paths"])
        plan = c.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).json()
        assert plan["makespan"] == pytest.approx(10.0)
        assert c.get(f"/v1/plans/{plan['plan_id']}").json()["assignments"] == plan["assignments"]
        bad = c.post("/v1/schedule", content=b"{", headers={"content-type": "application/json"})
        assert bad.status_code == 400
        assert (
            'dagsched_requests_total{method="POST",route="/v1/schedule",status="200"} 1.0' in c.get("/v1/metrics").text
        )
        config.write_text("decision_deadline_ms: 2500\nshadow: heft\n")
        proc.send_signal(signal.SIGHUP)
        for _ in range(50):
            if c.get("/v1/config").json()["decision_deadline_ms"] == 2500:
                break
            time.sleep(0.1)
        assert c.get("/v1/config").json()["shadow"] == "heft"
        assert c.get("/v1/model").json()["version"] == "tiny-v1"


def test_two_workers_plan_and_all_reload_on_sighup(two_workers) -> None:
    """`serve --workers 2`: plans are served and stored (HEFT makespan 10, readable back); SIGHUP to the parent
    reaches every worker: all answers after it show the new deadline."""
    base, proc, config = two_workers
    with httpx.Client(base_url=base, timeout=30) as c:
        plan = c.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).json()
        assert plan["makespan"] == pytest.approx(10.0)
        assert c.get(f"/v1/plans/{plan['plan_id']}").json()["plan_id"] == plan["plan_id"]
        config.write_text("decision_deadline_ms: 2500\n")
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            # new connections each time, so the kernel spreads them over both workers
            if all(httpx.get(f"{base}/v1/config").json()["decision_deadline_ms"] == 2500 for _ in range(12)):
                break
            time.sleep(0.2)
        assert all(httpx.get(f"{base}/v1/config").json()["decision_deadline_ms"] == 2500 for _ in range(12))

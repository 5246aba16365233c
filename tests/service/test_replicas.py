"""Two `dagsched serve` processes on one store, nothing else shared: plans read across replicas, and model
uploads, rollbacks, config changes and canary steps reach every replica through the store (SQLite file; PostgreSQL
too when DAGSCHED_TEST_PG_URL is set, as .ci/run does)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import AUTH, nodes, save_tiny_policy, start_server, upload_files, workflow

SYNC_S = "0.2"


@pytest.fixture
def replica(tmp_path: Path, policy_stem: Path, shared_store_url: str) -> Iterator[Callable[[str], str]]:
    """start(name) -> base URL of a new replica on the shared store, with its own model folder (no shared disk)."""
    procs: list[subprocess.Popen] = []

    def start(name: str) -> str:
        base, proc = start_server(
            shared_store_url, policy_stem, tmp_path / name / "models", env={"DAGSCHED_SYNC_INTERVAL_S": SYNC_S},
            timeout_s=90,
        )  # fmt: skip
        procs.append(proc)
        return base

    yield start
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _eventually(read: Callable[[], object], want: object, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    got = read()
    while got != want and time.monotonic() < deadline:
        time.sleep(0.1)
        got = read()
    assert got == want


def test_two_replicas_share_plans_models_and_config(replica, tmp_path: Path) -> None:
    a, b = replica("a"), replica("b")
    with httpx.Client(base_url=a, timeout=60) as ca, httpx.Client(base_url=b, timeout=60) as cb:
        # a plan made by one is read from the other, its decisions too
        plan = ca.post(
            "/v1/schedule", json={"workflow": workflow("across"), "nodes": nodes(), "scheduler": "heft"}
        ).json()
        assert cb.get(f"/v1/plans/{plan['plan_id']}").json()["assignments"] == plan["assignments"]
        assert cb.get("/v1/decisions", params={"plan_id": plan["plan_id"]}).json()["count"] == 4

        # a config change on one reaches the other
        config = ca.get("/v1/config").json()
        assert config["decision_deadline_ms"] == 1500 and cb.get("/v1/config").json()["decision_deadline_ms"] == 1500
        r = ca.put("/v1/config", json={**config, "decision_deadline_ms": 2500, "shadow": "cpop"}, headers=AUTH)
        assert r.status_code == 200, r.text
        _eventually(lambda: cb.get("/v1/config").json()["decision_deadline_ms"], 2500)
        assert cb.get("/v1/config").json()["shadow"] == "cpop"

        # shadow comparisons are rows in the store: made on b, reported by a
        shadowed = cb.post("/v1/schedule", json={"workflow": workflow("sh"), "nodes": nodes(), "scheduler": "heft"})
        _eventually(lambda: ca.get("/v1/shadow/report").json()["plans"] >= 1, True)
        assert shadowed.status_code == 200

        # an upload to one serves on both; the other loads it from the store (no shared disk)
        stem = save_tiny_policy(tmp_path / "upload" / "p", seed=3, version="tiny-v3")
        r = ca.put("/v1/model/weights", files=upload_files(stem), headers=AUTH)
        assert r.status_code == 200 and r.json()["version"] == "tiny-v3", r.text
        _eventually(lambda: cb.get("/v1/model").json()["version"], "tiny-v3")
        drl = {"workflow": workflow("learned"), "nodes": nodes(), "scheduler": "drl"}
        assert cb.post("/v1/schedule", json=drl).json()["model_version"] == "tiny-v3"
        assert (tmp_path / "b" / "models").is_dir() and any((tmp_path / "b" / "models").glob("*.safetensors"))

        # a rollback on the other reaches the first
        r = cb.post("/v1/model/rollback", headers=AUTH)
        assert r.status_code == 200 and r.json()["version"] == "tiny-v1", r.text
        _eventually(lambda: ca.get("/v1/model").json()["version"], "tiny-v1")

        # the breaker is per replica (docs/service.md says why): b's stays as it is when a's state changes
        assert ca.get("/v1/stats").json()["breaker"] == cb.get("/v1/stats").json()["breaker"] == {"open": False}

    # a replica started later serves what the store serves: the re-uploaded model and the live config
    with httpx.Client(base_url=a, timeout=60) as ca:
        assert ca.put("/v1/model/weights", files=upload_files(stem), headers=AUTH).json()["version"] == "tiny-v3"
    c = replica("c")
    with httpx.Client(base_url=c, timeout=60) as cc:
        assert cc.get("/v1/model").json()["version"] == "tiny-v3"
        assert cc.get("/v1/config").json()["decision_deadline_ms"] == 2500


class _Split:
    """A client that plans on one replica and reports the events to the other."""

    def __init__(self, planner: httpx.Client, reporter: httpx.Client) -> None:
        self.planner, self.reporter = planner, reporter

    def post(self, url: str, **kw: Any) -> httpx.Response:
        return (self.planner if url == "/v1/schedule" else self.reporter).post(url, **kw)


def test_a_canary_is_promoted_once_and_both_replicas_agree_on_its_stage(replica) -> None:
    """A canary started on one replica; workflows planned on either replica, their events reported to the other;
    each stage is judged and stepped once (the step numbers are unique in the store), and both replicas serve the
    same stage before the next begins, until the candidate is the default on both."""
    from dagsched.traffic.simulated_cluster import Truth, drift_nodes, ml_pipeline, plan_and_run

    from .test_canary import names_in

    a, b = replica("a"), replica("b")
    with httpx.Client(base_url=a, timeout=60) as ca, httpx.Client(base_url=b, timeout=60) as cb:
        config = {**ca.get("/v1/config").json(), "default_scheduler": "round_robin"}
        config["canary"] = {"scheduler": "heft", "fraction": 0.01, "min_workflows": 2}
        assert ca.put("/v1/config", json=config, headers=AUTH).status_code == 200
        _eventually(lambda: cb.get("/v1/config").json()["canary"] is not None, True)
        seed = 0
        for fraction in (0.01, 0.1, 0.5):
            for c in (ca, cb):
                assert c.get("/v1/config").json()["canary"]["fraction"] == fraction
            for arm in ("candidate", "default"):
                for name in names_in(arm, fraction, 2, f"replicas-{fraction}"):
                    split = _Split(*((ca, cb) if seed % 2 == 0 else (cb, ca)))
                    wf = {**ml_pipeline(seed), "name": name}
                    plan, _ = plan_and_run(split, {"workflow": wf, "nodes": drift_nodes()}, Truth(), "test-token")
                    assert plan["arm"] == arm
                    seed += 1
            later = {0.01: 0.1, 0.1: 0.5, 0.5: None}[fraction]
            for c in (ca, cb):
                want = later if later is not None else None
                _eventually(lambda c=c: (c.get("/v1/config").json()["canary"] or {}).get("fraction"), want)
        for c in (ca, cb):
            assert c.get("/v1/config").json()["default_scheduler"] == "heft"
        steps = ca.get("/v1/canary/report").json()["steps"]
        assert steps == cb.get("/v1/canary/report").json()["steps"]
        assert [(s["seq"], s["action"]) for s in steps] == [
            (0, "start"),
            (1, "promote"),
            (2, "promote"),
            (3, "complete"),
        ]

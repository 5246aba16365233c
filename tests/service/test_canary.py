"""Canary release, end to end on one replica: workflows are routed by a hash of their name, every plan is run on a
simulated cluster and its events reported, and the service judges each stage on what ran: a worse candidate is
rolled back, a better one promoted through every stage until it is the default, a candidate that errs or trips its
breaker is rolled back at once; every step is stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dagsched.service.finetune import in_fraction
from dagsched.traffic.simulated_cluster import Truth, drift_nodes, ml_pipeline, plan_and_run

from .conftest import AUTH, TOKEN, save_tiny_policy, upload_files

MIN_WORKFLOWS = 3


def names_in(arm: str, fraction: float, n: int, prefix: str) -> list[str]:
    """`n` workflow names that the canary sends to `arm` at `fraction`."""
    out: list[str] = []
    i = 0
    while len(out) < n:
        name = f"{prefix}-{i}"
        if in_fraction(name, fraction) == (arm == "candidate"):
            out.append(name)
        i += 1
    return out


def run(client: Any, name: str, seed: int) -> dict[str, Any]:
    """Plan a workflow named `name` (no scheduler named: the canary routes it), run it, report its events."""
    wf = {**ml_pipeline(seed), "name": name}
    plan, _ = plan_and_run(client, {"workflow": wf, "nodes": drift_nodes()}, Truth(), TOKEN, seed=seed)
    return plan


def start(client: Any, default: str, canary: dict[str, Any], **extra: Any) -> dict[str, Any]:
    config = {**client.get("/v1/config").json(), "default_scheduler": default, "canary": canary, **extra}
    r = client.put("/v1/config", json=config, headers=AUTH)
    assert r.status_code == 200, r.text
    return r.json()


def stage(client: Any, fraction: float, prefix: str, seed: int) -> list[dict[str, Any]]:
    """Run MIN_WORKFLOWS workflows of each arm at `fraction`; their plans."""
    plans = []
    for arm in ("candidate", "default"):
        for k, name in enumerate(names_in(arm, fraction, MIN_WORKFLOWS, prefix)):
            plans.append(run(client, name, seed + k))
            assert plans[-1]["arm"] == arm
    return plans


@pytest.fixture
def canary_client(client: TestClient) -> Iterator[TestClient]:
    yield client


def test_sticky_hash() -> None:
    """The same name goes the same way; a name in the candidate's arm stays there as the fraction grows; the share
    of names in the arm is about the fraction."""
    names = [f"wf-{i}" for i in range(4000)]
    at = {f: {n for n in names if in_fraction(n, f)} for f in (0.01, 0.1, 0.5, 1.0)}
    assert at[0.01] <= at[0.1] <= at[0.5] <= at[1.0] == set(names)
    assert 0.07 < len(at[0.1]) / len(names) < 0.13 and 0.45 < len(at[0.5]) / len(names) < 0.55


def test_a_worse_candidate_is_rolled_back(canary_client: TestClient) -> None:
    c = canary_client
    applied = start(c, "heft", {"scheduler": "random", "fraction": 0.01, "min_workflows": MIN_WORKFLOWS})
    cid = applied["canary"]["id"]
    assert cid and c.get("/v1/config").json()["canary"]["id"] == cid
    plans = stage(c, 0.01, "worse", 0)
    assert {p["scheduler"] for p in plans if p["arm"] == "candidate"} == {"random"}
    assert {p["scheduler"] for p in plans if p["arm"] == "default"} == {"heft"}
    config = c.get("/v1/config").json()
    assert config["canary"] is None and config["default_scheduler"] == "heft"
    report = c.get("/v1/canary/report").json()
    assert report["canary"] is None
    assert [(s["action"], s["from_fraction"], s["to_fraction"]) for s in report["steps"]] == [
        ("start", 0.0, 0.01),
        ("rollback", 0.01, 0.0),
    ]
    last = report["steps"][-1]
    assert last["reason"].startswith("worse") and last["figures"]["ratio"] > 1.02
    arms = last["figures"]["arms"]
    assert arms["candidate"]["executed"] == arms["default"]["executed"] == MIN_WORKFLOWS
    assert arms["default"]["normalised_mean"] == pytest.approx(1.0)  # HEFT's plans ran as planned (no drift)
    assert last["figures"]["paired"]["plans"] == 2 * MIN_WORKFLOWS  # the shadow planned the other arm every time
    metrics = c.get("/v1/metrics").text
    assert 'dagsched_canary_steps_total{action="rollback"} 1.0' in metrics
    assert 'dagsched_canary_plans_total{arm="candidate",scheduler="random"} 3.0' in metrics
    # after the rollback every workflow goes to the default, its candidate-arm names too
    after = run(c, names_in("candidate", 0.01, 1, "worse")[0], 99)
    assert after["scheduler"] == "heft" and after.get("arm") is None


def test_a_better_candidate_is_promoted_through_every_stage(canary_client: TestClient) -> None:
    c = canary_client
    start(c, "round_robin", {"scheduler": "heft", "fraction": 0.01, "min_workflows": MIN_WORKFLOWS})
    for k, fraction in enumerate((0.01, 0.1, 0.5)):
        assert c.get("/v1/config").json()["canary"]["fraction"] == fraction
        report = c.get("/v1/canary/report").json()
        assert report["stage"]["fraction"] == fraction and report["verdict"]["action"] == "wait"
        stage(c, fraction, f"better{k}", 10 * k)
    config = c.get("/v1/config").json()
    assert config["canary"] is None and config["default_scheduler"] == "heft"
    steps = c.get("/v1/canary/report").json()["steps"]
    assert [(s["seq"], s["action"], s["from_fraction"], s["to_fraction"]) for s in steps] == [
        (0, "start", 0.0, 0.01),
        (1, "promote", 0.01, 0.1),
        (2, "promote", 0.1, 0.5),
        (3, "complete", 0.5, 1.0),
    ]
    for s in steps[1:]:
        assert s["reason"].startswith("no worse") and s["figures"]["ratio"] < 1.0
        assert s["figures"]["paired"]["candidate_wins"] >= 1
    assert run(c, "after-the-release", 5)["scheduler"] == "heft"


def test_a_model_version_that_completes_its_release_becomes_the_serving_policy(
    canary_client: TestClient, tmp_path: Path
) -> None:
    """A policy version kept by an earlier upload (then rolled back) is the candidate; when its release completes,
    the learned planner is the default and that version serves every plan."""
    c = canary_client
    stem = save_tiny_policy(tmp_path / "v2", seed=1, version="tiny-v2")
    assert c.put("/v1/model/weights", files=upload_files(stem), headers=AUTH).status_code == 200
    assert c.post("/v1/model/rollback", headers=AUTH).json()["version"] == "tiny-v1"
    start(c, "round_robin", {"model_version": "tiny-v2", "fraction": 0.01, "min_workflows": MIN_WORKFLOWS})
    for k, fraction in enumerate((0.01, 0.1, 0.5)):
        assert c.get("/v1/model").json()["version"] == "tiny-v1"  # the candidate plans its arm only
        plans = stage(c, fraction, f"model{k}", 10 * k)
        assert {p["model_version"] for p in plans if p["arm"] == "candidate"} == {"tiny-v2"}
    assert c.get("/v1/canary/report").json()["steps"][-1]["action"] == "complete"
    config = c.get("/v1/config").json()
    assert config["canary"] is None and config["default_scheduler"] == "drl"
    assert c.get("/v1/model").json()["version"] == "tiny-v2"
    after = run(c, "after-the-model-release", 5)
    assert after["scheduler"] == "drl" and after["model_version"] == "tiny-v2"


def test_a_candidate_that_errs_is_rolled_back(canary_client: TestClient) -> None:
    """A model version that is not in the store cannot plan: each of its plans falls back to HEFT, and at
    max_errors the canary is rolled back, without waiting for executed workflows."""
    c = canary_client
    start(c, "heft", {"model_version": "never-uploaded", "fraction": 0.5, "max_errors": 2})
    for name in names_in("candidate", 0.5, 2, "errs"):
        plan = c.post("/v1/schedule", json={"workflow": {**ml_pipeline(1), "name": name}, "nodes": drift_nodes()})
        assert plan.status_code == 200 and plan.json()["fallback"] is True
        assert "not in the store" in plan.json()["fallback_reason"]
    assert c.get("/v1/config").json()["canary"] is None
    last = c.get("/v1/canary/report").json()["steps"][-1]
    assert last["action"] == "rollback" and last["reason"].startswith("the candidate erred: 2")


def test_a_candidate_that_trips_its_breaker_is_rolled_back(canary_client: TestClient) -> None:
    """The learned policy as candidate, with a deadline no decision meets and a breaker that opens at the first
    failure: its first plan falls back and opens the breaker; the canary is rolled back."""
    c = canary_client
    start(
        c,
        "heft",
        {"scheduler": "drl", "fraction": 0.5, "max_errors": 5},
        decision_deadline_ms=1e-6,
        breaker={"failures": 1, "cooldown_s": 60},
    )
    name = names_in("candidate", 0.5, 1, "breaker")[0]
    plan = c.post("/v1/schedule", json={"workflow": {**ml_pipeline(2), "name": name}, "nodes": drift_nodes()}).json()
    assert plan["fallback"] and "deadline" in plan["fallback_reason"]
    assert c.get("/v1/config").json()["canary"] is None
    last = c.get("/v1/canary/report").json()["steps"][-1]
    assert last["action"] == "rollback" and "breaker" in last["reason"]


def test_a_stage_set_by_hand_is_a_step_and_the_canary_goes_on_from_it(canary_client: TestClient) -> None:
    """An operator PUTs the live canary (its id kept) at 50 %: a `set` step records it, and the next judgement
    promotes from there."""
    c = canary_client
    config = start(c, "round_robin", {"scheduler": "heft", "fraction": 0.01, "min_workflows": MIN_WORKFLOWS})
    config["canary"]["fraction"] = 0.5
    assert c.put("/v1/config", json=config, headers=AUTH).status_code == 200
    stage(c, 0.5, "by-hand", 0)
    steps = c.get("/v1/canary/report").json()["steps"]
    assert [(s["action"], s["from_fraction"], s["to_fraction"]) for s in steps] == [
        ("start", 0.0, 0.01),
        ("set", 0.01, 0.5),
        ("complete", 0.5, 1.0),
    ]
    assert c.get("/v1/config").json()["default_scheduler"] == "heft"


def test_operator_rollback_and_bad_canary_configs(canary_client: TestClient) -> None:
    c = canary_client
    assert c.post("/v1/canary/rollback", headers=AUTH).status_code == 409
    start(c, "heft", {"scheduler": "peft", "fraction": 0.1})
    assert c.post("/v1/canary/rollback").status_code == 401
    r = c.post("/v1/canary/rollback", headers=AUTH)
    assert r.status_code == 200 and r.json()["rolled_back"] == "peft"
    assert c.get("/v1/config").json()["canary"] is None
    config = c.get("/v1/config").json()
    for canary, field in (
        ({"scheduler": "peft", "model_version": "v2"}, "canary"),
        ({"scheduler": "nope"}, "canary.scheduler"),
        ({"scheduler": "peft", "stages": [0.5, 0.1, 1.0]}, "canary.stages"),
        ({"scheduler": "peft", "stages": [0.1, 0.5]}, "canary.stages"),
        ({"scheduler": "peft", "fraction": 1.5}, "canary.fraction"),
    ):
        r = c.put("/v1/config", json={**config, "canary": canary}, headers=AUTH)
        assert r.status_code == 422 and r.json()["detail"].startswith(field), (canary, r.text)
    assert c.get("/v1/config").json()["canary"] is None

"""The service serves the priority policy (drl-v3's kind) as drl: shipped by default, uploaded and smoke-tested,
planning never longer than HEFT on predictions, explained by its scores; a per-decision policy's file is refused at
start-up (HEFT serves, saying why) as on upload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient

from dagsched.policy.priority_net import PriorityPolicy, save_priority_policy
from dagsched.service.app import create_app

from .conftest import AUTH, nodes, save_tiny_policy, upload_files, workflow


def _priority_stem(tmp_path: Path, version: str, head_init: float = 1.0) -> Path:
    torch.manual_seed(3)
    stem = tmp_path / version
    save_priority_policy(PriorityPolicy(hidden=16, layers=1, head_init=head_init), stem, {"version": version})
    return stem


def test_the_shipped_model_is_the_priority_policy(make_settings) -> None:
    """Started with the default model path, the service serves drl-v3 and drl plans with it; the default plans
    with untrained sampling, the same plan for this workflow."""
    from dagsched.service.settings import DEFAULT_MODEL

    with TestClient(create_app(make_settings(model_path=DEFAULT_MODEL))) as c:
        info = c.get("/v1/model").json()
        assert info["loaded"] is True and info["version"].startswith("drl-v3")
        plan = c.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "drl"}).json()
        assert plan["scheduler"] == "drl" and plan["fallback"] is False
        assert plan["model_version"].startswith("drl-v3")
        default = c.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes()}).json()
        assert default["scheduler"] == "sampling" and default["model_version"] is None
        assert default["makespan"] <= plan["makespan"] + 1e-9
        heft = c.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).json()
        assert plan["makespan"] <= heft["makespan"] + 1e-9


def test_upload_plan_explain_and_refusals(client: TestClient, tmp_path: Path) -> None:
    """A priority policy with a learned part uploads over the tiny one, plans as drl, and its plans are explained by
    the scores; a corrupted file is refused naming the weights, and the uploaded one keeps serving."""
    stem = _priority_stem(tmp_path, "prio-v1")
    r = client.put("/v1/model/weights", files=upload_files(stem), headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json()["version"] == "prio-v1" and r.json()["previous"] == "tiny-v1"
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "drl"}).json()
    assert plan["scheduler"] == "drl" and plan["model_version"] == "prio-v1" and not plan["fallback"]
    out = client.get(f"/v1/plans/{plan['plan_id']}/explain", params={"task": "b"}).json()
    assert out["policy"]["reproduced"] is True and out["policy"]["target"].startswith("the task's score")
    at = out["task"]["attributions"]
    assert at["total"] == pytest.approx(at["output"] - at["baseline_output"], abs=1e-3 * max(1.0, abs(at["output"])))
    assert {r["group"] for r in at["by_feature"]} == {"task", "global"}
    assert all(0 < t["policy"]["probability"] <= 1 for t in out["tasks"])
    bad = bytearray(Path(str(stem) + ".safetensors").read_bytes())
    bad[-8:] = b"\x00" * 8
    r = client.put("/v1/model/weights", files=upload_files(stem, bytes(bad)), headers=AUTH)
    assert r.status_code == 422 and r.json()["detail"].startswith("weights:")
    assert client.get("/v1/model").json()["version"] == "prio-v1"
    meta = json.loads(Path(str(stem) + ".json").read_text())
    assert meta["format"] == "dagsched-priority-policy"


def test_a_per_decision_policy_file_at_start_up_is_refused_and_heft_serves(make_settings, tmp_path: Path) -> None:
    """Started on a file whose metadata names the per-decision format: no model loads, /v1/model and /readyz say
    why (naming the format), and drl plans fall back to HEFT with that reason."""
    stem = _priority_stem(tmp_path, "prio-v1")
    old = tmp_path / "old-v2"
    meta = json.loads(Path(str(stem) + ".json").read_text())
    Path(str(old) + ".json").write_text(json.dumps({**meta, "format": "dagsched-policy", "version": "old-v2"}))
    Path(str(old) + ".safetensors").write_bytes(Path(str(stem) + ".safetensors").read_bytes())
    with TestClient(create_app(make_settings(model_path=old))) as c:
        info = c.get("/v1/model").json()
        assert info["loaded"] is False and "format 'dagsched-policy'" in info["error"], info
        ready = c.get("/readyz").json()
        assert ready["status"] == "ready" and ready["model"] is None and "dagsched-policy" in ready["fallback"]
        plan = c.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "drl"}).json()
        assert plan["fallback"] is True and plan["scheduler"] == "heft" and plan["model_version"] is None
        assert "format 'dagsched-policy'" in plan["fallback_reason"], plan["fallback_reason"]
        r = c.put("/v1/model/weights", files=upload_files(stem), headers=AUTH)  # a priority policy still uploads
        assert r.status_code == 200 and r.json()["version"] == "prio-v1", r.text


def test_a_kept_model_whose_version_ends_like_a_policy_file_loads(tmp_path: Path) -> None:
    """A model kept in the store is written under a name from its version and read back from it: a version ending
    in `.json` or `.safetensors` (the loader takes either file's path for the pair's stem) loads, on a replica that
    syncs it or after a restart, instead of failing as a missing file."""
    from dagsched.service.models import ModelManager, safe_name

    for version in ("tiny.json", "tiny.safetensors"):
        stem = save_tiny_policy(tmp_path / "upload" / "p", seed=3, version=version)
        weights = Path(str(stem) + ".safetensors").read_bytes()
        meta = json.loads(Path(str(stem) + ".json").read_text())
        manager = ModelManager(tmp_path / "models", 10**8)
        loaded = manager.load_kept(tmp_path / "kept" / safe_name(version), weights, meta, "store")
        assert loaded.version == version and loaded.source == "store"

"""PUT /v1/model/weights, POST /v1/model/rollback, GET /v1/model: validated, atomic swaps; no token, no change."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from .conftest import AUTH, nodes, save_tiny_policy, upload_files, workflow


def test_get_model_reports_the_shipped_policy(client: TestClient) -> None:
    """GET /v1/model: version from the metadata, its sha256, when loaded, no previous one yet."""
    info = client.get("/v1/model").json()
    assert info["loaded"] is True and info["version"] == "tiny-v1" and info["previous"] is None
    assert len(info["sha256"]) == 64 and info["architecture"]["hidden"] == 16


def test_upload_swaps_and_rollback_restores(client: TestClient, tmp_path: Path) -> None:
    """A valid upload serves at once (plans carry its version); rollback restores the previous one."""
    stem = save_tiny_policy(tmp_path / "new", seed=1, version="tiny-v2")
    r = client.put("/v1/model/weights", files=upload_files(stem), headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json()["version"] == "tiny-v2" and r.json()["previous"] == "tiny-v1"
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "drl"}).json()
    assert plan["model_version"] == "tiny-v2"
    assert 'dagsched_model_info{sha256="' in client.get("/v1/metrics").text
    r = client.post("/v1/model/rollback", headers=AUTH)
    assert r.status_code == 200 and r.json()["version"] == "tiny-v1" and r.json()["previous"] == "tiny-v2"
    assert client.get("/v1/model").json()["version"] == "tiny-v1"


def test_rejected_uploads_leave_the_old_model_serving(client: TestClient, tmp_path: Path) -> None:
    """Garbage weights, a tampered file (sha256), bad JSON, wrong architecture, features of another version, a
    per-decision policy's file: 422 naming the field and the fault; tiny-v1 still serves."""
    stem = save_tiny_policy(tmp_path / "new", seed=1, version="tiny-v2")
    good_w = Path(str(stem) + ".safetensors").read_bytes()
    meta = json.loads(Path(str(stem) + ".json").read_text())
    wrong_arch = dict(meta, architecture=dict(meta["architecture"], hidden=32))
    cases = [
        (upload_files(stem, weights=b"not a safetensors file at all"), "weights: not a valid safetensors file"),
        (upload_files(stem, weights=good_w[:-8] + b"\0" * 8), "weights"),
        (upload_files(stem, meta=b"{broken"), "metadata: not valid JSON"),
        (upload_files(stem, meta=b"[1, 2]"), "metadata: expected a JSON object"),
        (upload_files(stem, meta=json.dumps(wrong_arch).encode()), "tensors do not match the recorded architecture"),
        (
            upload_files(stem, meta=json.dumps(dict(meta, feature_version=999)).encode()),
            "metadata: policy.json: the policy reads feature version 999",
        ),
        (
            upload_files(stem, meta=json.dumps(dict(meta, format="dagsched-policy", version="old-v2")).encode()),
            "metadata: format 'dagsched-policy': the service runs priority policies only "
            "('dagsched-priority-policy', as `save_priority_policy` writes them); a per-decision policy is refused",
        ),
    ]
    for files, message in cases:
        r = client.put("/v1/model/weights", files=files, headers=AUTH)
        assert r.status_code == 422, r.text
        assert message in r.json()["detail"], (message, r.json())
        assert client.get("/v1/model").json()["version"] == "tiny-v1"
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "drl"}).json()
    assert plan["model_version"] == "tiny-v1" and plan["fallback"] is False
    r = client.put("/v1/model/weights", files={"weights": ("w", good_w)}, headers=AUTH)
    assert r.status_code == 422 and "metadata: missing" in r.json()["detail"]
    assert 'dagsched_model_swaps_total{outcome="rejected"} 8.0' in client.get("/v1/metrics").text


def test_mutating_routes_need_the_token(client: TestClient, tmp_path: Path) -> None:
    """No token or a wrong one: 401 naming the problem, and nothing changes; read routes need none."""
    stem = save_tiny_policy(tmp_path / "new", seed=1, version="tiny-v2")
    for headers, message in (({}, "missing bearer token"), ({"Authorization": "Bearer nope"}, "wrong bearer token")):
        r = client.put("/v1/model/weights", files=upload_files(stem), headers=headers)
        assert r.status_code == 401 and message in r.json()["detail"]
        assert client.post("/v1/model/rollback", headers=headers).status_code == 401
        assert client.put("/v1/config", json={"shadow": "cpop"}, headers=headers).status_code == 401
        assert client.post("/v1/events", json={"plan_id": "x", "kind": "node_up", "node": "n0", "at": 0},
                           headers=headers).status_code == 401  # fmt: skip
    assert client.get("/v1/model").json()["version"] == "tiny-v1"
    assert client.get("/v1/config").json()["shadow"] is None


def test_no_configured_token_disables_mutations(make_settings) -> None:
    """Without DAGSCHED_API_TOKEN the mutating routes answer 403 saying so."""
    from dagsched.service.app import create_app

    with TestClient(create_app(make_settings(api_token=None))) as c:
        r = c.post("/v1/model/rollback", headers=AUTH)
        assert r.status_code == 403 and "DAGSCHED_API_TOKEN" in r.json()["detail"]


def test_rollback_without_previous_is_409(client: TestClient) -> None:
    """Nothing to roll back to: 409 with the reason."""
    r = client.post("/v1/model/rollback", headers=AUTH)
    assert r.status_code == 409 and "no previous model" in r.json()["detail"]


def test_oversized_upload_is_413(make_settings, tmp_path: Path) -> None:
    """An upload over DAGSCHED_MAX_UPLOAD_BYTES is refused before it is read; the model stays."""
    from dagsched.service.app import create_app

    stem = save_tiny_policy(tmp_path / "new", seed=1, version="tiny-v2")
    with TestClient(create_app(make_settings(max_upload_bytes=10_000))) as c:
        r = c.put("/v1/model/weights", files=upload_files(stem), headers=AUTH)
        assert r.status_code == 413 and "limit of 10000 bytes" in r.json()["detail"]
        assert c.get("/v1/model").json()["version"] == "tiny-v1"

"""Priority policy files: safetensors and a JSON, loaded only when everything matches; a file of another format
(the per-decision policies this package once shipped) is refused, naming the format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dagsched.policy.files import PolicyFileError
from dagsched.policy.priority_net import PriorityPolicy, load_priority_policy, save_priority_policy


def test_round_trip_and_refusals(tmp_path: Path) -> None:
    policy = PriorityPolicy(hidden=16, layers=1)
    save_priority_policy(policy, tmp_path / "p", {"version": "x", "held_out_families": ["etl_star"]})
    loaded = load_priority_policy(tmp_path / "p")
    assert loaded.config == policy.config and loaded.meta["held_out_families"] == ["etl_star"]
    meta = json.loads((tmp_path / "p.json").read_text())
    (tmp_path / "p.safetensors").write_bytes((tmp_path / "p.safetensors").read_bytes()[:-1] + b"\x00")
    with pytest.raises(PolicyFileError, match="sha256"):
        load_priority_policy(tmp_path / "p")
    meta["architecture"]["widthh"] = 3
    (tmp_path / "q.json").write_text(json.dumps(meta))
    (tmp_path / "q.safetensors").write_bytes(b"")
    with pytest.raises(PolicyFileError, match="widthh"):
        load_priority_policy(tmp_path / "q")
    (tmp_path / "r.json").write_text(json.dumps({**meta, "format": "dagsched-policy", "format_version": 2}))
    (tmp_path / "r.safetensors").write_bytes(b"")
    with pytest.raises(PolicyFileError, match="format 'dagsched-policy'"):
        load_priority_policy(tmp_path / "r")

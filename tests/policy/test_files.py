"""Per-decision policy files (`dagsched.policy.files`): safetensors plus a JSON of architecture, feature version
and sha256; a loaded policy gives bit-identical logits, and every mismatch is refused with a message naming it."""

from __future__ import annotations

import json

import pytest
import torch

from dagsched.policy.features import FEATURE_VERSION
from dagsched.policy.files import PolicyFileError, load_policy, save_policy
from dagsched.policy.gnn import SchedulingPolicy
from dagsched.rl.env import SchedulingEnv

from .test_gnn import _batch, _collect


def test_saved_and_loaded_policy_gives_identical_logits(tmp_path, small):
    """save_policy writes <path>.safetensors and <path>.json; load_policy rebuilds a policy whose logits
    are bit-identical; the JSON records the architecture, feature version and sha256."""
    torch.manual_seed(1)
    policy = SchedulingPolicy(conv="gcn", history_len=3, hidden=32).eval()
    weights, meta = save_policy(policy, tmp_path / "model")
    assert weights.name == "model.safetensors" and meta.name == "model.json"
    info = json.loads(meta.read_text())
    assert info["feature_version"] == FEATURE_VERSION
    assert info["architecture"]["hidden"] == 32 and info["architecture"]["conv"] == "gcn"
    assert len(info["sha256"]) == 64
    loaded = load_policy(tmp_path / "model.safetensors")
    env = SchedulingEnv(small, history_len=3)
    padded, exact = _collect(env, seeds=[3])
    with torch.no_grad():
        assert torch.equal(policy(_batch(padded))[0], loaded(_batch(padded))[0])
        assert torch.equal(policy.forward_single(exact[0])[0], loaded.forward_single(exact[0])[0])


def _edit(meta_path, change):
    info = json.loads(meta_path.read_text())
    change(info)
    meta_path.write_text(json.dumps(info))


def test_load_refuses_mismatches_with_a_message(tmp_path):
    """Loading refuses another feature version, other feature sizes, changed weights and an architecture that
    does not match the tensors, each with a message naming what differs."""
    policy = SchedulingPolicy(hidden=16, heads=1)
    _, meta = save_policy(policy, tmp_path / "p")
    good = meta.read_text()

    _edit(meta, lambda i: i.update(feature_version=FEATURE_VERSION + 1))
    with pytest.raises(
        PolicyFileError, match=f"feature version {FEATURE_VERSION + 1}.*feature version {FEATURE_VERSION}"
    ):
        load_policy(tmp_path / "p")

    meta.write_text(good)
    _edit(meta, lambda i: i["feature_sizes"].update(task=99))
    with pytest.raises(PolicyFileError, match="task: file 99, code 21"):
        load_policy(tmp_path / "p")

    meta.write_text(good)
    _edit(meta, lambda i: i["architecture"].update(hidden=32))
    with pytest.raises(PolicyFileError, match=r"task_in\.0\.weight: file \[16, 21\], architecture \[32, 21\]"):
        load_policy(tmp_path / "p")

    meta.write_text(good)
    save_policy(SchedulingPolicy(hidden=16, heads=1), tmp_path / "other")
    (tmp_path / "p.safetensors").write_bytes((tmp_path / "other.safetensors").read_bytes())
    with pytest.raises(PolicyFileError, match="sha256"):
        load_policy(tmp_path / "p")

    with pytest.raises(PolicyFileError, match="missing"):
        load_policy(tmp_path / "nothing")

"""Priority policy files: safetensors and a JSON, loaded only when everything matches; a file of another format
(the per-decision policies this package once shipped) is refused, naming the format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.policy.files import PolicyFileError
from dagsched.policy.priority_features import n_features
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


def _reference_forward(policy: PriorityPolicy, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """The forward written with PyG's own SAGEConv calls (what `_sage_max` computes without their dispatch)."""
    h = policy.encoder(x)
    rev = edge_index.flip(0)
    for down, up, mix in zip(policy.down, policy.up, policy.mix, strict=True):
        h = h + torch.relu(mix(torch.cat([down(h, edge_index), up(h, rev)], dim=1)))
    return policy.head(h).squeeze(-1) + policy.prior(x.index_select(1, policy.prior_cols)).squeeze(-1)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.data())
def test_forward_is_pyg_sage_exactly(n: int, data: st.DataObject) -> None:
    """The same floats and the same gradients as PyG's SAGEConv layers, isolated tasks and fan-ins included."""
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n, unique=True))
    edges = [(a, b) for a, b in pairs if a < b]  # a DAG: parents before children
    edge_index = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).t().contiguous()
    torch.manual_seed(data.draw(st.integers(0, 1000)))
    policy = PriorityPolicy(hidden=8, layers=2, head_init=1.0)
    x = torch.randn(n, n_features())
    ours, reference = policy(x, edge_index), _reference_forward(policy, x, edge_index)
    assert torch.equal(ours, reference)
    grads = torch.autograd.grad(ours.square().sum(), list(policy.parameters()))
    expected = torch.autograd.grad(reference.square().sum(), list(policy.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(grads, expected, strict=True))

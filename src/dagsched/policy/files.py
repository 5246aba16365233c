"""Policy files: weights as safetensors beside a JSON of architecture, feature version and sha256; never pickles.

`save_policy` writes both atomically; `load_policy` refuses any mismatch (feature version, sizes or
names, hash, tensor shapes) with a message naming it. `load_cached_policy` is the one cached loader
(the drl scheduler, MCTS's priors and the service read policies through it), and the shipped policy
lives in dagsched/data/models/ (`shipped_model_path`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import nn

from dagsched.policy import POLICY_ENV, shipped_model_path
from dagsched.policy.features import (
    FEATURE_VERSION,
    GLOBAL_FEATURES,
    NODE_FEATURES,
    PAIR_FEATURES,
    TASK_FEATURES,
    feature_sizes,
)
from dagsched.policy.gnn import FILE_FORMAT, FILE_FORMAT_VERSION, PolicyConfig, SchedulingPolicy


class PolicyFileError(ValueError):
    """A saved policy is missing, corrupt, or does not match this code."""


def _paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    p = Path(path)
    if p.suffix in (".safetensors", ".json"):
        p = p.with_suffix("")
    return p.with_name(p.name + ".safetensors"), p.with_name(p.name + ".json")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _feature_names() -> dict[str, list[str]]:
    return {
        "task": list(TASK_FEATURES),
        "node": list(NODE_FEATURES),
        "pair": list(PAIR_FEATURES),
        "global": list(GLOBAL_FEATURES),
    }


def save_policy(policy: SchedulingPolicy, path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write `<path>.safetensors` (weights) and `<path>.json` (architecture, feature version, sha256)."""
    weights_path, meta_path = _paths(path)
    weights_path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in policy.state_dict().items()}
    fd, tmp = tempfile.mkstemp(dir=weights_path.parent, prefix=f".{weights_path.name}.")
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata={"format": FILE_FORMAT})
        digest = _sha256(Path(tmp))
        os.replace(tmp, weights_path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    meta = {
        "format": FILE_FORMAT,
        "format_version": FILE_FORMAT_VERSION,
        "feature_version": FEATURE_VERSION,
        "feature_sizes": feature_sizes(policy.config.history_len),
        "feature_names": _feature_names(),
        "architecture": asdict(policy.config),
        "sha256": digest,
        "tensors": {k: list(v.shape) for k, v in sorted(tensors.items())},
    }
    _atomic_write(meta_path, (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode())
    return weights_path, meta_path


def load_policy(path: str | os.PathLike[str]) -> SchedulingPolicy:
    """Load a saved policy, refusing any mismatch (feature version, sizes, hash, tensor shapes) with a message."""
    weights_path, meta_path = _paths(path)
    for p in (weights_path, meta_path):
        if not p.exists():
            raise PolicyFileError(f"policy file {p} is missing (a policy is a .safetensors and a .json side by side)")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as e:
        raise PolicyFileError(f"{meta_path} is not valid JSON: {e}") from e
    if meta.get("format") != FILE_FORMAT or meta.get("format_version") != FILE_FORMAT_VERSION:
        raise PolicyFileError(
            f"{meta_path}: format {meta.get('format')!r} version {meta.get('format_version')!r}, "
            f"expected {FILE_FORMAT!r} version {FILE_FORMAT_VERSION}"
        )
    if meta.get("feature_version") != FEATURE_VERSION:
        raise PolicyFileError(
            f"{meta_path}: feature version mismatch: the policy was trained on feature version "
            f"{meta.get('feature_version')!r} but this dagsched builds feature version {FEATURE_VERSION}; "
            "retrain it or use the dagsched release it was trained with"
        )
    arch = meta.get("architecture", {})
    known = {f.name for f in fields(PolicyConfig)}
    unknown = sorted(set(arch) - known)
    if unknown:
        raise PolicyFileError(f"{meta_path}: unknown architecture field(s) {', '.join(unknown)}")
    config = PolicyConfig(**arch)
    expected = feature_sizes(config.history_len)
    recorded = meta.get("feature_sizes", {})
    dims = {"task": config.task_dim, "node": config.node_dim, "pair": config.pair_dim, "global": config.global_dim}
    diffs = [
        f"{group}: file {recorded.get(group)}, code {size}"
        for group, size in expected.items()
        if recorded.get(group) != size or (group in dims and dims[group] != size)
    ]
    names = meta.get("feature_names", {})
    diffs += [
        f"{group} feature names differ: file {names.get(group)}, code {want}"
        for group, want in _feature_names().items()
        if names.get(group) != want
    ]
    if diffs:
        raise PolicyFileError(f"{meta_path}: feature sizes or names differ from this code: " + "; ".join(diffs))
    digest = _sha256(weights_path)
    if digest != meta.get("sha256"):
        raise PolicyFileError(
            f"{weights_path}: sha256 {digest} differs from the one recorded in {meta_path.name} "
            f"({meta.get('sha256')}); the weights were changed or corrupted"
        )
    with safe_open(str(weights_path), framework="pt") as f:
        shapes = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118  (safe_open has no __iter__)
    policy = SchedulingPolicy(config)
    want = {k: list(v.shape) for k, v in policy.state_dict().items()}
    problems = [f"missing {k}" for k in sorted(set(want) - set(shapes))]
    problems += [f"unexpected {k}" for k in sorted(set(shapes) - set(want))]
    problems += [
        f"{k}: file {shapes[k]}, architecture {want[k]}"
        for k in sorted(set(want) & set(shapes))
        if shapes[k] != want[k]
    ]
    if problems:
        raise PolicyFileError(f"{weights_path}: tensors do not match the recorded architecture: " + "; ".join(problems))
    policy.load_state_dict(load_file(str(weights_path)))
    policy.eval()
    return policy


def count_parameters(policy: nn.Module) -> int:
    return int(sum(int(np.prod(p.shape)) for p in policy.parameters()))


# ---- the shipped policy and the one cached loader ------------------------------------------------

_CACHE: dict[str, SchedulingPolicy] = {}


class PolicyNotFound(PolicyFileError, FileNotFoundError):
    """No saved policy at the path asked for."""


def load_cached_policy(path: str | os.PathLike[str] | None = None) -> SchedulingPolicy:
    """The policy at `path` (default: $DAGSCHED_DRL_POLICY, else the shipped model), loaded once per process.

    A missing file raises `PolicyNotFound` naming the .safetensors path. Single-observation inference runs on
    one torch thread (two threads on two cores were measured 5 to 20 times slower).
    """
    import torch

    torch.set_num_threads(1)
    if path is None:
        path = os.environ.get(POLICY_ENV) or None
    stem = Path(path) if path is not None else shipped_model_path()
    if stem.suffix in (".safetensors", ".json"):
        stem = stem.with_suffix("")
    key = str(stem.resolve())
    if key not in _CACHE:
        weights = stem.with_name(stem.name + ".safetensors")
        if not weights.exists():
            raise PolicyNotFound(
                f"policy weights not found at {weights}; train one with `dagsched train` or pass the path of a "
                "trained policy (mcts_uct needs none)"
            )
        _CACHE[key] = load_policy(stem)
    return _CACHE[key]

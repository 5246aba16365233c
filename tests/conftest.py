"""Shared fixtures: where the real WfCommons traces live, and the small environment size of the learned-policy tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

# Ray reads this once, at its import: every Ray a test starts resolves its node address to 127.0.0.1 (loopback only),
# whichever test imports Ray first in a worker
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


def wfinstances_path() -> Path:
    """../shared/data/wfinstances beside the repository, or $DAGSCHED_WFINSTANCES."""
    env = os.environ.get("DAGSCHED_WFINSTANCES")
    return Path(env) if env else REPO.parent / "shared" / "data" / "wfinstances"


@pytest.fixture(scope="session")
def wfinstances() -> Path:
    path = wfinstances_path()
    assert (path / "MANIFEST.csv").exists(), f"real traces not found at {path} (set DAGSCHED_WFINSTANCES)"
    return path


SMALL = {"n_tasks": (4, 16), "max_tasks": 64, "max_nodes": 16, "max_candidates": 8}
"""A small padded size of the scheduling environment that keeps each episode to a few milliseconds."""


@pytest.fixture
def small() -> dict[str, Any]:
    return dict(SMALL)

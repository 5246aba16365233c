"""Shared fixtures: where the real WfCommons traces live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def wfinstances_path() -> Path:
    """../shared/data/wfinstances beside the repository, or $DAGSCHED_WFINSTANCES."""
    env = os.environ.get("DAGSCHED_WFINSTANCES")
    return Path(env) if env else REPO.parent / "shared" / "data" / "wfinstances"


@pytest.fixture(scope="session")
def wfinstances() -> Path:
    path = wfinstances_path()
    assert (path / "MANIFEST.csv").exists(), f"real traces not found at {path} (set DAGSCHED_WFINSTANCES)"
    return path

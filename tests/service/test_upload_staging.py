"""An upload killed half-way leaves its staging folder in the model folder; the next start-up removes it, and no
other worker's upload in progress: stale is this host's dead (or recycled) pid, or older than the staleness
bound whoever made it."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient

from dagsched.service.app import create_app
from dagsched.service.models import STAGING_PREFIX, STAGING_STALE_S, ModelManager, _host
from dagsched.service.settings import Settings

from .conftest import AUTH, save_tiny_policy, upload_files


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _staging(model_dir: Path, host: str, pid: int | str, age_s: float = 0.0) -> Path:
    path = model_dir / f"{STAGING_PREFIX}{host}-{pid}-abc123_x"
    path.mkdir(parents=True)
    (path / "policy.safetensors").write_bytes(b"half")
    if age_s:
        then = time.time() - age_s
        os.utime(path, (then, then))
    return path


def test_start_up_removes_what_killed_uploads_left_and_nothing_else(tmp_path: Path) -> None:
    models = tmp_path / "models"
    host = _host()
    dead = _staging(models, host, _dead_pid())
    recycled = _staging(models, host, os.getpid())  # a restarted process that got its old pid back
    live = _staging(models, host, os.getppid())  # another worker, uploading now
    elsewhere = _staging(models, "otherhost", 4242)  # another host's pid says nothing here
    forgotten = _staging(models, "otherhost", 4243, age_s=STAGING_STALE_S + 60)
    legacy = models / f"{STAGING_PREFIX}k2j4l1m_"  # named before the host and pid were part of the name
    legacy.mkdir()
    then = time.time() - STAGING_STALE_S - 60
    os.utime(legacy, (then, then))
    served = models / "tiny-v2.safetensors"
    served.write_bytes(b"kept")

    ModelManager(models, 10_000)

    assert not dead.exists() and not recycled.exists() and not forgotten.exists() and not legacy.exists()
    assert live.exists() and elsewhere.exists() and served.exists()


def test_the_service_cleans_at_start_up_and_a_finished_upload_leaves_no_staging(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = make_settings()
    stale = _staging(settings.model_dir, _host(), _dead_pid())
    stem = save_tiny_policy(tmp_path / "new", seed=2, version="tiny-v2")
    files = upload_files(stem)
    with TestClient(create_app(settings)) as c:
        assert not stale.exists()
        assert c.put("/v1/model/weights", files=files, headers=AUTH).status_code == 200
    assert not list(settings.model_dir.glob(STAGING_PREFIX + "*"))

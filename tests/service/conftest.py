"""Shared fixtures of the service tests: a tiny saved policy, settings on a temporary SQLite file, a client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from dagsched.service.app import create_app
from dagsched.service.settings import Settings

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def save_tiny_policy(stem: Path, seed: int = 0, version: str | None = None) -> Path:
    """A small random priority policy (hidden 16, one layer), saved as <stem>.safetensors + <stem>.json with
    `version` in its metadata."""
    import torch

    from dagsched.policy.priority_net import PriorityConfig, PriorityPolicy, save_priority_policy

    torch.manual_seed(seed)
    save_priority_policy(
        PriorityPolicy(PriorityConfig(hidden=16, layers=1)), stem, {"version": version} if version else None
    )
    return stem


def upload_files(stem: Path, weights: bytes | None = None, meta: bytes | None = None) -> dict[str, Any]:
    """The multipart form of PUT /v1/model/weights for the policy saved at `stem` (either part replaced if given)."""
    w = weights if weights is not None else Path(f"{stem}.safetensors").read_bytes()
    m = meta if meta is not None else Path(f"{stem}.json").read_bytes()
    return {"weights": ("p.safetensors", w, "application/octet-stream"), "metadata": ("p.json", m, "application/json")}


@pytest.fixture(scope="session")
def policy_stem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_policy(tmp_path_factory.mktemp("policy") / "tiny", seed=0, version="tiny-v1")


@pytest.fixture
def make_settings(tmp_path: Path, policy_stem: Path) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "store_url": f"sqlite:///{tmp_path / 'store.sqlite'}",
            "model_path": policy_stem,
            "model_dir": tmp_path / "models",
            "api_token": TOKEN,
            "environment": "test",
        }
        values.update(overrides)
        return Settings(**values)

    return make


@pytest.fixture
def client(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings())) as c:
        yield c


def workflow(name: str = "w") -> dict[str, Any]:
    """a -> (b, c) -> d; c's input is 1 GB. HEFT on `nodes()` puts everything on n2: makespan 10 s."""
    return {
        "name": name,
        "tasks": [
            {"id": "a", "runtime": 10},
            {"id": "b", "runtime": 5, "dependencies": ["a"]},
            {"id": "c", "runtime": 7, "dependencies": [{"task": "a", "data": 1e9}]},
            {"id": "d", "runtime": 3, "dependencies": ["b", "c"]},
        ],
    }


def wfformat_workflow() -> dict[str, Any]:
    """A WfFormat 1.5 instance of two tasks, x (2 s) then y (4 s): 6 s on one node of speed 1."""
    return {
        "name": "wfc",
        "schemaVersion": "1.5",
        "workflow": {
            "specification": {
                "tasks": [{"name": "x", "id": "x", "children": ["y"], "parents": []},
                          {"name": "y", "id": "y", "children": [], "parents": ["x"]}],
                "files": [],
            },
            "execution": {
                "makespanInSeconds": 3,
                "executedAt": "20240101T000000+0000",
                "tasks": [{"id": "x", "runtimeInSeconds": 2}, {"id": "y", "runtimeInSeconds": 4}],
            },
        },
    }  # fmt: skip


def nodes(n: int = 3) -> list[dict[str, Any]]:
    """n0..n{n-1}: 4 cpu, 16 GiB, speed 1 + 0.5 i, price 0.5 + i per hour, all free."""
    return [
        {
            "id": f"n{i}",
            "cpu": 4,
            "mem": 16,
            "speed": 1 + 0.5 * i,
            "price_per_hour": 0.5 + i,
            "free": {"cpu": 4, "mem": 16},
            "labels": {"zone": "a" if i % 2 == 0 else "b"},
        }
        for i in range(n)
    ]


def pg_url() -> str | None:
    return os.environ.get("DAGSCHED_TEST_PG_URL")


def fresh_pg_schema(url: str) -> str:
    """The test server's URL with a new, empty schema first on the search path: this test's store starts empty
    (the serving row is global to a store) without the right to create databases."""
    import sqlalchemy as sa

    from dagsched.service.store import normalise_url

    name = f"replicas_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(normalise_url(url))
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{name}"'))
    engine.dispose()
    fresh = sa.engine.make_url(url).update_query_dict({"options": f"-csearch_path={name}"})
    return fresh.render_as_string(hide_password=False)


def free_port() -> int:
    """A free TCP port on loopback, for a server a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL several server processes share: a SQLite file, and a fresh schema of the test PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.sqlite'}"
    url = pg_url()
    if url is None:
        pytest.skip("DAGSCHED_TEST_PG_URL is not set (deploy/ci-postgres.sh starts a PostgreSQL and prints one)")
    return fresh_pg_schema(url)


def start_server(
    store: str,
    policy_stem: Path,
    model_dir: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    ready: str = "/readyz",
    timeout_s: float = 120.0,
    new_session: bool = False,
) -> tuple[str, subprocess.Popen]:
    """`dagsched serve` on a free loopback port with the test token, `store` and `policy_stem`, its models in
    `model_dir` (+ `extra` flags and `env`), its output in `model_dir`'s parent as serve-<port>.log; returns
    (base URL, process) once `ready` answers 200. `new_session`: its own process group (to kill it with workers)."""
    port = free_port()
    log = model_dir.parent / f"serve-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "dagsched.service.cli", "serve", "--port", str(port), "--store", store,
           "--model", str(policy_stem), "--log-level", "warning", *extra]  # fmt: skip
    full_env = dict(os.environ, DAGSCHED_API_TOKEN=TOKEN, DAGSCHED_MODEL_DIR=str(model_dir), **(env or {}))
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=full_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=new_session)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited at start: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"{base}{ready}", timeout=1).status_code == 200:
                return base, proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"the server did not start within {timeout_s:g} s")

"""Process settings of the service, from the environment (prefix `DAGSCHED_`) or `dagsched serve` flags; what
changes at run time is the runtime config (`service.config`).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from dagsched.policy import PRIORITY_MODEL, shipped_model_path

DEFAULT_MODEL = shipped_model_path(PRIORITY_MODEL)


class Settings(BaseSettings):
    """Settings of one service process."""

    model_config = SettingsConfigDict(env_prefix="DAGSCHED_", extra="ignore")

    api_token: SecretStr | None = Field(None, description="bearer token the mutating routes require; unset: refused")
    store_url: str = Field("sqlite:///dagsched-service.sqlite", description="SQLAlchemy URL of the decision store")
    config_file: Path | None = Field(None, description="runtime config (YAML or JSON), re-read on SIGHUP")
    model_path: Path = Field(DEFAULT_MODEL, description="shipped policy: <path>.safetensors + <path>.json")
    model_dir: Path = Field(Path("dagsched-models"), description="where uploaded policies are kept")
    environment: str = Field("dev", description="label stored with every decision (finetune reads only its own)")
    max_body_bytes: int = Field(2_000_000, gt=0, description="largest request body, except weight uploads")
    max_upload_bytes: int = Field(50_000_000, gt=0, description="largest weights upload")
    max_tasks: int = Field(5_000, gt=0, description="largest workflow /v1/schedule plans")
    max_nodes: int = Field(1_000, gt=0, description="most nodes one request may carry")
    loop_plan_cells: int = Field(
        512, ge=0, description="plans of at most this many task-node pairs are made on the event loop; 0: none"
    )
    sync_interval_s: float = Field(
        1.0, ge=0, description="how often this replica polls the store for a new serving model or config; 0: never"
    )
    grpc_port: int | None = Field(
        None, ge=0, le=65535, description="also serve the gRPC API (dagsched.proto) on this port; None: HTTP only"
    )
    grpc_host: str = Field("127.0.0.1", description="interface the gRPC API listens on")
    report_dir: Path | None = Field(
        None, description="a benchmark report folder (`dagsched report --out`) whose figures the dashboard shows"
    )

"""What a service process holds between requests: store, metrics, models, planner, live config.

Request handling is otherwise stateless (plans, decisions, events and model versions live in
the store), so replicas can run side by side behind a load balancer. Per process: the
serving policy (each replica loads it; uploads go to each replica), the runtime config
(re-read on SIGHUP), the breaker and the skew monitor.
"""

from __future__ import annotations

import hmac
import logging
import threading
from typing import Annotated

from fastapi import Depends, HTTPException, Request

from dagsched.model.errors import InputError
from dagsched.service.config import RuntimeConfig, read_config
from dagsched.service.metrics import ServiceMetrics
from dagsched.service.models import ModelManager
from dagsched.service.planner import Planner
from dagsched.service.settings import Settings
from dagsched.service.store import Store

log = logging.getLogger("dagsched.service")


class ServiceState:
    """Built once in the app's lifespan."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.metrics = ServiceMetrics()
        self.store = Store(settings.store_url)
        self.store.start_checkpoints()
        self.models = ModelManager(settings.model_dir, settings.max_upload_bytes)
        self.config = RuntimeConfig()
        self._config_lock = threading.Lock()
        # One plan at a time per process: planning is CPU-bound Python (threads add no speed under the GIL),
        # and plans interleaved on the threadpool each take longer; a learned policy's decisions then miss
        # their deadline and fall back to HEFT. Run more processes (`serve --workers`) for throughput.
        self.plan_lock = threading.Lock()
        if settings.config_file is not None:
            self.config = read_config(settings.config_file)  # a bad file at start-up stops the start
        self.models.try_load_startup(settings.model_path)
        if self.models.current is not None:
            c = self.models.current
            self.store.add_model_version(c.version, c.sha256, c.source, c.meta, c.loaded_at)
        else:
            log.warning("%s; /v1/schedule falls back to HEFT", self.models.error)
        self.planner = Planner(self.models, self.metrics, settings.environment, settings.max_tasks)
        self.publish_model()

    def set_config(self, config: RuntimeConfig) -> None:
        with self._config_lock:
            self.config = config
        self.metrics.config_reloads.labels(outcome="ok").inc()

    def reload_config(self) -> bool:
        """Re-read `config_file` (SIGHUP); a bad file keeps the live config and is logged."""
        path = self.settings.config_file
        if path is None:
            log.info("SIGHUP: no config file to re-read")
            return False
        try:
            config = read_config(path)
        except InputError as err:
            self.metrics.config_reloads.labels(outcome="rejected").inc()
            log.error("SIGHUP: config %s rejected, the live config stays: %s", path, err)
            return False
        self.set_config(config)
        log.info("SIGHUP: config re-read from %s", path)
        return True

    def ping_store(self) -> str | None:
        """Ping the store, recording the answer (`dagsched_store_up`, `dagsched_store_seconds`): None when it
        answered, else what went wrong."""
        try:
            with self.metrics.store_ping.time():
                self.store.ping()
        except Exception as err:  # noqa: BLE001  (any failure means unreachable; the caller reports it)
            self.metrics.store_up.set(0)
            return f"unreachable: {type(err).__name__}"
        self.metrics.store_up.set(1)
        return None

    def publish_model(self) -> None:
        self.metrics.model_info.clear()
        c = self.models.current
        if c is not None:
            self.metrics.model_info.labels(version=c.version, sha256=c.sha256).set(1)


async def get_state(request: Request) -> ServiceState:
    """The process state (async: FastAPI runs sync dependencies on the threadpool, a thread hop per request)."""
    return request.app.state.service  # type: ignore[no-any-return]


State = Annotated[ServiceState, Depends(get_state)]


async def require_token(request: Request, state: State) -> None:
    """Mutating routes: `Authorization: Bearer <DAGSCHED_API_TOKEN>`; with no token configured they are refused."""
    token = state.settings.api_token
    if token is None:
        raise HTTPException(403, "mutating routes are disabled: set DAGSCHED_API_TOKEN on the server")
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise HTTPException(401, "missing bearer token (Authorization: Bearer <token>)", {"WWW-Authenticate": "Bearer"})
    if not hmac.compare_digest(given.strip().encode(), token.get_secret_value().encode()):
        raise HTTPException(401, "wrong bearer token", {"WWW-Authenticate": "Bearer"})


Authorized = Depends(require_token)

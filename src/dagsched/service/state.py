"""What a service process holds between requests; the policy and the runtime config have their source of truth in
the store, which every replica polls (docs/service.md, "Replicas").
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request

from dagsched.model.errors import InputError
from dagsched.service.calibration import Calibrator
from dagsched.service.canary import CanaryController, with_id
from dagsched.service.config import RuntimeConfig, config_from_stored, read_config, without_retired
from dagsched.service.metrics import ServiceMetrics
from dagsched.service.models import LoadedModel, ModelManager, safe_name
from dagsched.service.online import OnlineFinetuner
from dagsched.service.planner import Planner
from dagsched.service.planning import Planning
from dagsched.service.reality import RunCache
from dagsched.service.refusals import check_bearer
from dagsched.service.replanning import Replanning
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
        plan_lock = threading.Lock()  # one plan at a time per process (see `Planning.lock`)
        if settings.config_file is not None:
            self.config = with_id(read_config(settings.config_file))  # a bad file at start-up stops the start
        self.models.try_load_startup(settings.model_path)
        if self.models.current is not None:
            self.adopt(self.models.current, self.models.current.source)
        else:
            log.warning("%s; /v1/schedule falls back to HEFT", self.models.error)
        self.calibrator = Calibrator(RunCache(self.store, settings.environment).observations)
        self.planner = Planner(
            self.models, self.metrics, settings.environment, settings.max_tasks, calibrator=self.calibrator
        )
        self.canary = CanaryController(
            self.planner, plan_lock, self.store, self.metrics, lambda: self.config, self, settings
        )
        self.planner.router = self.canary.route
        self.planning = Planning(
            self.planner,
            self.store.plans,
            self.metrics,
            settings.max_nodes,
            plan_lock,
            self.canary.record,
            settings.loop_plan_cells,
        )
        self.replanning = Replanning(
            self.store.plans, self.store.events, self.planner, self.metrics, lambda: self.canary.evaluate()
        )
        self.online = OnlineFinetuner(
            self.store, self.metrics, lambda: self.config, lambda: self.models.current, self.ship_model, settings
        )
        self.planner.skew.on_trip = lambda _std: self.online.request("skew")
        self.grpc_port: int | None = None  # where this process also serves gRPC (set when the server starts)
        self.revision = 0  # the `serving` revision this replica has applied
        self.sync_error: str | None = None
        self.changing = threading.RLock()
        """Held by a change made here (swap, then publish) and by `sync`, so a sync never lands between the two."""
        self._startup_publish()
        self.canary.note(self.config)
        self._sync_stop = threading.Event()
        self._sync_thread: threading.Thread | None = None
        if settings.sync_interval_s > 0:
            self._sync_thread = threading.Thread(target=self._poll, name="dagsched-sync", daemon=True)
            self._sync_thread.start()

    def _startup_publish(self) -> None:
        """Publish this replica's model and config file where the store has none of a deploy; then adopt it."""
        c = self.models.current
        weights = Path(str(self.settings.model_path) + ".safetensors")
        if c is not None and weights.exists():  # kept in the store, so that other replicas can load it
            self.store.models.put_blob(c.sha256, c.version, weights.read_bytes(), c.meta)
        live = self.store.runtime.serving_state()
        model = c.sha256 if c is not None and (live is None or live["model_source"] in (None, "startup")) else None
        config = self.config.model_dump(mode="json") if self.settings.config_file is not None else None
        if model is not None or config is not None:
            self.store.runtime.publish(model, "startup", config)
        self.sync()

    def publish(self, model_source: str | None = None, config: bool = False) -> None:
        """Publish a change made here (the model with `model_source`, the config with `config`), then sync."""
        with self.changing:
            c = self.models.current
            sha = c.sha256 if model_source is not None and c is not None else None
            self.store.runtime.publish(sha, model_source, self.config.model_dump(mode="json") if config else None)
            self.sync()

    def sync(self) -> bool:
        """Apply what the store serves, if its revision moved; True when something changed here."""
        with self.changing:
            live = self.store.runtime.serving_state()
            if live is None or live["revision"] == self.revision:
                return False
            changed = False
            sha = live["model_sha256"]
            c = self.models.current
            if sha is not None and (c is None or c.sha256 != sha):
                changed |= self._load_published(sha)
            # the stored document may still carry retired keys: the same config less them is no change
            if live["config"] is not None and without_retired(live["config"]) != self.config.model_dump(mode="json"):
                try:
                    self.set_config(config_from_stored(live["config"]))
                    changed = True
                except InputError as err:  # a config this build cannot read: keep the live one, say so
                    self.sync_error = f"published config rejected: {err}"
                    log.error("sync: %s", self.sync_error)
            self.revision = live["revision"]
            return changed

    def _load_published(self, sha: str) -> bool:
        blob = self.store.models.get_blob(sha)
        if blob is None:
            self.sync_error = f"published model {sha[:12]} is not in the store"
            log.error("sync: %s", self.sync_error)
            return False
        weights, meta = blob
        stem = self.settings.model_dir / safe_name(str(meta.get("version") or sha[:12]))
        try:
            loaded = self.models.load_kept(stem, weights, meta, "store")
        except (InputError, OSError, ValueError) as err:
            self.sync_error = f"published model {sha[:12]} does not load here: {err}"
            log.error("sync: %s", self.sync_error)
            return False
        self.sync_error = None
        self.adopt(loaded, "store", "synced")
        log.info("sync: serving model %s from the store", loaded.version)
        return True

    def _poll(self) -> None:
        while not self._sync_stop.wait(self.settings.sync_interval_s):
            try:
                self.sync()
            except Exception as err:  # noqa: BLE001  (the store may be away for a while: retried next round)
                log.warning("sync failed: %s", err)

    def close(self) -> None:
        self.online.close()
        self._sync_stop.set()
        if self._sync_thread is not None:
            self._sync_thread.join(timeout=10)
        self.store.close()

    def set_config(self, config: RuntimeConfig) -> None:
        """Make `config` the live one here (a canary it starts gets its id)."""
        named = with_id(config)
        self.config = named  # one assignment: a reader sees the old config or the new one, no lock needed
        self.metrics.config_reloads.labels(outcome="ok").inc()
        self.metrics.canary_fraction.set(named.canary.fraction if named.canary is not None else 0.0)

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
        self.apply_config(config)
        self.canary.note(self.config)
        log.info("SIGHUP: config re-read from %s (published to every replica)", path)
        return True

    def apply_config(self, config: RuntimeConfig) -> None:
        """Make `config` the live one here and publish it to every replica (a canary's step)."""
        with self.changing:
            self.set_config(config)
            self.publish(config=True)

    def serve_model(self, stem: Path, source: str) -> None:
        """Serve the policy at `stem` here and publish it to every replica (a canary's completed release)."""
        self.adopt(self.models.load_path(stem, source), source)
        self.publish(model_source=source)

    def ping_store(self) -> str | None:
        """Ping the store, recording the answer: None when it answered, else what went wrong."""
        try:
            with self.metrics.store_ping.time():
                self.store.ping()
        except Exception as err:  # noqa: BLE001  (any failure means unreachable; the caller reports it)
            self.metrics.store_up.set(0)
            return f"unreachable: {type(err).__name__}"
        self.metrics.store_up.set(1)
        return None

    def readiness(self) -> dict[str, Any]:
        """Whether this replica can plan (the store answers) and which model serves, with why none does (HEFT serves):
        what `/readyz` and gRPC `Health` answer."""
        current = self.models.current
        problem = self.ping_store()
        out = {"status": "ready" if problem is None else "not ready", "model": current.version if current else None}
        out["store"] = problem or "ok"
        if problem is None and current is None:
            out["fallback"] = self.models.error
        return out

    def ship_model(self, weights: bytes, metadata: bytes, source: str) -> LoadedModel:
        """Validate, swap in, keep in the store and publish a policy's files; InputError leaves the model as it was."""
        with self.changing:
            loaded = self.models.upload(weights, metadata)
            self.store.models.put_blob(loaded.sha256, loaded.version, weights, loaded.meta)
            self.publish(source)
        self.adopt(loaded, source, "swapped")
        return loaded

    def adopt(self, loaded: LoadedModel, source: str, outcome: str | None = None) -> None:
        """Note the policy served here now: its version in the store's history, the swap counted by `outcome`, and
        the serving model's info exported."""
        self.store.models.add_version(loaded.version, loaded.sha256, source, loaded.meta, loaded.loaded_at)
        if outcome is not None:
            self.metrics.model_swaps.labels(outcome=outcome).inc()
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
    check_bearer(state.settings.api_token, request.headers.get("authorization", ""), "Authorization")


Authorized = Depends(require_token)


async def require_json(request: Request) -> None:
    """Routes with a JSON body: any other content type is 415 naming it (before the body is validated)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise HTTPException(415, f"content-type: expected application/json, got {media or 'none'}")


JSONBody = Depends(require_json)

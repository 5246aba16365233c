"""Online fine-tuning: `dagsched finetune` on the service's own logs, on an interval and on a skew trip, by one
replica at a time (docs/service.md, "Fine-tuning on the logs").
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagsched.model.errors import InputError
from dagsched.rl.finetune import FinetuneConfig, evaluate
from dagsched.service.config import RuntimeConfig
from dagsched.service.metrics import ServiceMetrics
from dagsched.service.models import LoadedModel
from dagsched.service.settings import Settings
from dagsched.service.store import Store

log = logging.getLogger("dagsched.service")

LEASE = "online-finetune"
POLL_S = 1.0
SKEW_GAP_S = 600.0
"""A load-skew trip starts a run only this long after the last one (a skewed cluster trips again and again)."""


@dataclass(eq=False)
class OnlineFinetuner:
    """The online fine-tunes of one replica."""

    store: Store
    metrics: ServiceMetrics
    live_config: Callable[[], RuntimeConfig]
    serving: Callable[[], LoadedModel | None]  # the policy this replica serves now
    ship_model: Callable[[bytes, bytes, str], LoadedModel]  # validates, swaps in and publishes a policy's files
    settings: Settings  # store_url (what a fine-tune reads), environment, model_dir (where it writes)

    def __post_init__(self) -> None:
        self.judge = evaluate  # how old and new are compared on held-out problems (replaceable in tests)
        self.holder = uuid.uuid4().hex
        self.last_run = time.monotonic()
        self._pending: str | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dagsched-online-ft", daemon=True)
        self._thread.start()

    def request(self, trigger: str) -> None:
        """Ask for a run soon (a skew trip only when the last run is older than SKEW_GAP_S)."""
        if trigger == "skew" and time.monotonic() - self.last_run < SKEW_GAP_S:
            return
        if self.live_config().online_ft_interval is not None:
            self._pending = trigger
            self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(POLL_S)
            self._wake.clear()
            if self._stop.is_set():
                return
            interval = self.live_config().online_ft_interval
            if interval is None:
                self._pending = None
                continue
            trigger = self._pending or ("interval" if time.monotonic() - self.last_run >= interval else None)
            if trigger is None:
                continue
            self._pending = None
            try:
                self.run_once(trigger)
            except Exception as err:  # noqa: BLE001  (a failed run is recorded; the service goes on)
                log.exception("online fine-tune failed: %s", err)

    def run_once(self, trigger: str) -> dict[str, Any] | None:
        """One fine-tune now (if this replica gets the lease); its record, or None."""
        from dagsched.service.finetune import run

        config = self.live_config()
        if not self.store.leases.take(LEASE, self.holder, 6 * 3600.0):
            return None
        self.last_run = time.monotonic()
        row: dict[str, Any] = {"trigger": trigger, "environment": self.settings.environment, "started_at": time.time()}
        try:
            outcome = None
            for runtimes in ("executed", "requested"):
                cfg = FinetuneConfig(
                    store=self.settings.store_url,
                    env=self.settings.environment,
                    since=f"{max(1, round(config.online_ft_window))}s",
                    runtimes=runtimes,
                    allow_faults=True,
                    outlier_bound=config.calibration.outlier_bound,
                    out=str(self.settings.model_dir / "finetuned"),
                )
                try:
                    outcome = run(cfg, current=self.serving(), judge=self.judge, ship=self._ship)
                    break
                except InputError as err:
                    if err.field != "--runtimes":  # no plans at all, an unreadable store: no fallback helps
                        raise
            assert outcome is not None
            verdict = "shipped" if outcome.shipped else ("kept" if outcome.results else "too_few")
            if outcome.upload_error is not None:
                verdict = "failed"
            row |= {
                "verdict": verdict,
                "mean_ratio": outcome.mean_ratio if outcome.results else None,
                "version": outcome.version if outcome.shipped else None,
                "reason": outcome.reason,
                "report": {
                    "runtimes": cfg.runtimes,
                    "train": len(outcome.train),
                    "held_out": len(outcome.held_out),
                    "results": [
                        {"plan_id": r.plan_id, "old": r.old_makespan, "new": r.new_makespan} for r in outcome.results
                    ],
                    "reality": {k: v for k, v in outcome.reality.items() if k != "calibration"},
                },
            }
        except InputError as err:
            row |= {"verdict": "too_few", "mean_ratio": None, "version": None, "reason": str(err), "report": {}}
        except Exception as err:  # noqa: BLE001
            row |= {"verdict": "failed", "mean_ratio": None, "version": None, "reason": repr(err), "report": {}}
        finally:
            self.store.leases.release(LEASE, self.holder)
        row["finished_at"] = time.time()
        self.store.runtime.add_finetune_run(row)
        self.metrics.finetune_runs.labels(trigger=trigger, verdict=row["verdict"]).inc()
        log.info("online fine-tune (%s): %s: %s", trigger, row["verdict"], row["reason"])
        return row

    def _ship(self, stem: Path) -> str:
        """A winner is swapped in like an upload and published to every replica."""
        weights = Path(str(stem) + ".safetensors").read_bytes()
        metadata = Path(str(stem) + ".json").read_bytes()
        loaded = self.ship_model(weights, metadata, "finetune")
        return f"this service, now serving {loaded.version}"

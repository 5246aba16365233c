"""The decision store (SQLAlchemy Core, SQLite or PostgreSQL): everything a replica needs to answer about the past,
so replicas share one store and stay stateless.
"""

from __future__ import annotations

import logging
import threading

import sqlalchemy as sa

from dagsched.service.store.engine import EncodedJSON, in_memory, make_engine, normalise_url
from dagsched.service.store.events import Events
from dagsched.service.store.leases import Leases
from dagsched.service.store.models import Models
from dagsched.service.store.plans import Plans
from dagsched.service.store.runtime import Runtime
from dagsched.service.store.schema import create_all

__all__ = ["EncodedJSON", "Store", "make_engine", "normalise_url"]

log = logging.getLogger("dagsched.service")


class Store:
    """The service's tables on one engine; reads and writes through its parts, each call one short transaction."""

    def __init__(self, url: str, create: bool = True) -> None:
        """Open the store at `url`; without `create` it only reads (a reader must not write to a store)."""
        self.url = normalise_url(url)
        self.engine = make_engine(url)
        self._checkpoints: tuple[threading.Thread, threading.Event] | None = None
        if create:
            create_all(self.engine)
        self.plans = Plans(self.engine)
        self.events = Events(self.engine)
        self.models = Models(self.engine)
        self.runtime = Runtime(self.engine)
        self.leases = Leases(self.engine)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints[1].set()
            self._checkpoints[0].join(timeout=10)
            self._checkpoints = None
        self.engine.dispose()

    def start_checkpoints(self, interval_s: float = 0.2) -> None:
        """SQLite file: copy the WAL into the database every `interval_s` (PASSIVE: never blocks writers)."""
        if self.dialect != "sqlite" or in_memory(self.url) or self._checkpoints is not None:
            return
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(interval_s):
                try:
                    with self.engine.connect() as conn:
                        conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
                except Exception as err:  # noqa: BLE001  (a failed checkpoint is retried; the WAL just grows meanwhile)
                    log.warning("store checkpoint failed: %s", err)

        thread = threading.Thread(target=run, name="dagsched-store-checkpoint", daemon=True)
        self._checkpoints = (thread, stop)
        thread.start()

    def ping(self) -> None:
        """Raise if the database cannot be reached (readiness)."""
        with self.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))

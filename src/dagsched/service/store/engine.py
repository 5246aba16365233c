"""The store's engine: a SQLite file by default (WAL), PostgreSQL (psycopg 3) by URL."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

AUTOCHECKPOINT_PAGES = 10_000  # 40 MB of WAL at 4 KiB pages (SQLite's default: 1000)


class EncodedJSON(str):
    """A value already encoded as JSON text: a JSON column stores it as it is (not encoded again)."""


def json_dumps(value: Any) -> str:
    return str(value) if isinstance(value, EncodedJSON) else json.dumps(value)


class Part:
    """One group of the store's tables on the shared engine: every method is one short transaction."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    def _rows(self, q: Any) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def _first(self, q: Any) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(q).mappings().first()
        return dict(row) if row else None

    def _rows_in(self, q: Any, column: Any, values: list[str]) -> list[dict[str, Any]]:
        """`_rows` of `q` where `column` is one of `values`, 500 a statement (its bound parameters are limited)."""
        out: list[dict[str, Any]] = []
        with self.engine.connect() as conn:
            for i in range(0, len(values), 500):
                out += [dict(r) for r in conn.execute(q.where(column.in_(values[i : i + 500]))).mappings()]
        return out

    def _insert(self, table: sa.Table, **values: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(table.insert().values(**values))


def normalise_url(url: str) -> str:
    """`postgres://` and `postgresql://` use psycopg 3; a bare path means a SQLite file."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    if "://" not in url:
        return f"sqlite:///{url}"
    return url


def in_memory(url: str) -> bool:
    """Whether a (normalised) SQLite URL names an in-memory database."""
    return ":memory:" in url or url == "sqlite://"


def make_engine(url: str) -> sa.Engine:
    """An engine; SQLite files get WAL, a busy timeout and `synchronous=NORMAL` on every connection."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        engine = sa.create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 10}, json_serializer=json_dumps
        )

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            if not in_memory(url):
                cur.execute("PRAGMA journal_mode=WAL")
                # The commit that crosses the WAL's checkpoint threshold copies the WAL into the database and
                # fsyncs both inside its request: at SQLite's default (1000 pages) that was 20 ms every ~25
                # plans, a p99 spike. With 10x the threshold it is one commit in ~270, and the service's
                # background checkpoints (`Store.start_checkpoints`) have copied most frames by then.
                cur.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=10000")
            cur.close()

        return engine
    return sa.create_engine(url, pool_pre_ping=True, pool_size=8, max_overflow=8, json_serializer=json_dumps)

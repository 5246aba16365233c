"""The results store: one SQLite row per benchmark cell, at DIR/results.sqlite (SQLAlchemy Core).

The unique key (problem_id, scheduler, seed, mode) plus insert-or-ignore makes a run resumable and
idempotent: an interrupted run loses at most the chunks in flight (each finished chunk is one
transaction), and a re-run skips what is stored and never duplicates a row. Failed cells are
stored too, with `error` set and `valid` false, so they are reported rather than silently retried.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

RESULTS_FILE = "results.sqlite"

metadata = sa.MetaData()

cells = sa.Table(
    "cells",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("suite", sa.String, nullable=False),
    sa.Column("family", sa.String, nullable=False),
    sa.Column("problem_id", sa.String, nullable=False),
    sa.Column("n_tasks", sa.Integer),
    sa.Column("n_edges", sa.Integer),
    sa.Column("n_nodes", sa.Integer),
    sa.Column("cluster", sa.String, nullable=False),
    sa.Column("mode", sa.String, nullable=False),
    sa.Column("scheduler", sa.String, nullable=False),
    sa.Column("seed", sa.Integer, nullable=False),
    sa.Column("makespan", sa.Float),
    sa.Column("cost", sa.Float),
    sa.Column("sla_hit_rate", sa.Float),
    sa.Column("utilisation", sa.Float),
    sa.Column("fragmentation", sa.Float),
    sa.Column("load_std", sa.Float),
    sa.Column("lower_bound", sa.Float),
    sa.Column("slr", sa.Float),
    sa.Column("decision_latency_mean_ms", sa.Float),
    sa.Column("decision_latency_p99_ms", sa.Float),
    sa.Column("decisions", sa.Integer),
    sa.Column("objective", sa.Float),
    # streams on a shared cluster (kind "stream"): steady-state figures, `sim.metrics.stream_metrics`
    sa.Column("load", sa.Float),
    sa.Column("arrival", sa.String),
    sa.Column("workflows", sa.Integer),
    *(
        sa.Column(f"{m}_{q}", sa.Float)
        for m in ("completion", "slowdown", "queue")
        for q in ("mean", "p50", "p95", "p99")
    ),
    sa.Column("throughput_per_h", sa.Float),
    sa.Column("sla_steady", sa.Float),
    sa.Column("sla_by_class", sa.Text),
    sa.Column("util_cpu", sa.Float),
    sa.Column("util_mem", sa.Float),
    sa.Column("util_gpu", sa.Float),
    sa.Column("fairness", sa.Float),
    sa.Column("valid", sa.Boolean, nullable=False),
    sa.Column("wall_s", sa.Float),
    sa.Column("error", sa.Text),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("problem_id", "scheduler", "seed", "mode", name="uq_cell"),
)

KEY = ("problem_id", "scheduler", "seed", "mode")
COLUMNS = tuple(c.name for c in cells.columns if c.name != "id")
"""The fields of a result row, in table order (`id` is internal)."""

Key = tuple[str, str, int, str]


def results_path(out_dir: str | Path) -> Path:
    """Where a results folder keeps its database."""
    return Path(out_dir) / RESULTS_FILE


class ResultStore:
    """The results of one folder; only the driver process writes, workers return rows."""

    def __init__(self, out_dir: str | Path, create: bool = True) -> None:
        self.path = results_path(out_dir)
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif not self.path.exists():
            from dagsched.model.errors import InputError

            raise InputError("results", f"no {RESULTS_FILE} in {out_dir}")
        self.engine = sa.create_engine(f"sqlite:///{self.path}")
        if create:
            metadata.create_all(self.engine)
        self._add_missing_columns()

    def _add_missing_columns(self) -> None:
        """A results file written before a column existed gets it (empty): old runs resume and report as before."""
        with self.engine.begin() as conn:
            have = {c["name"] for c in sa.inspect(conn).get_columns(cells.name)}
            for column in cells.columns:
                if column.name not in have:
                    kind = column.type.compile(dialect=self.engine.dialect)
                    conn.execute(sa.text(f'ALTER TABLE {cells.name} ADD COLUMN "{column.name}" {kind}'))

    def done_keys(self) -> set[Key]:
        """Keys of every stored cell, failed ones included."""
        with self.engine.connect() as conn:
            return {
                (str(p), str(s), int(seed), str(m))
                for p, s, seed, m in conn.execute(sa.select(*(cells.c[k] for k in KEY)))
            }

    def write(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Insert rows in one transaction, ignoring keys already stored; returns how many were new."""
        now = time.time()
        batch = [{c: row.get(c) for c in COLUMNS} | {"created_at": row.get("created_at") or now} for row in rows]
        if not batch:
            return 0
        stmt = sqlite_insert(cells).on_conflict_do_nothing(index_elements=list(KEY))
        with self.engine.begin() as conn:
            result = conn.execute(stmt, batch)
        return max(int(result.rowcount or 0), 0)

    def rows(self, suite: str | None = None, insertion_order: bool = False) -> list[dict[str, Any]]:
        """Every row (of one suite, if given) as plain dicts, sorted by key (or in insertion order).

        Sorted by key, the same cells give the same list however the run was scheduled, interrupted or
        parallelised, so seeded statistics (bootstrap intervals) come out the same too.
        """
        order = [cells.c.id] if insertion_order else [cells.c[k] for k in ("suite", "problem_id", "mode", "scheduler")]
        query = sa.select(*(cells.c[c] for c in COLUMNS)).order_by(*order, cells.c.seed, cells.c.id)
        if suite is not None:
            query = query.where(cells.c.suite == suite)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def delete_errors(self, keys: Iterable[Key] | None = None) -> int:
        """Forget failed cells (all, or those among `keys`) so that the next run retries them."""
        cond = cells.c.error.is_not(None)
        with self.engine.begin() as conn:
            if keys is None:
                return int(conn.execute(sa.delete(cells).where(cond)).rowcount or 0)
            wanted = set(keys)
            failed = conn.execute(sa.select(cells.c.id, *(cells.c[k] for k in KEY)).where(cond)).all()
            ids = [r[0] for r in failed if tuple(r[1:]) in wanted]
            for i in range(0, len(ids), 500):
                conn.execute(sa.delete(cells).where(cells.c.id.in_(ids[i : i + 500])))
            return len(ids)

    def count(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(cells)).scalar_one())

    def close(self) -> None:
        self.engine.dispose()


def load_results(out_dir: str | Path, suite: str | None = None) -> list[dict[str, Any]]:
    """The stored rows of a results folder (or of its results.sqlite path), sorted by key, for statistics."""
    path = Path(out_dir)
    if path.name == RESULTS_FILE:
        path = path.parent
    store = ResultStore(path, create=False)
    try:
        return store.rows(suite)
    finally:
        store.close()

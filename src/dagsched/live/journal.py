"""The run journal: what a real run was asked to do, every attempt it finished and what each finished task
handed its children, in a SQL store, so that `dagsched run --resume RUN_ID` runs only what had not finished and
hands the children of the tasks done before their parents' outputs.

SQLAlchemy Core on any URL (a SQLite file by default, PostgreSQL alike), with tables of its own (`live_runs`,
`live_attempts`, `live_outputs`) in their own `MetaData`: a store the service also uses keeps both side by side.
As in the service's store, tables are made when missing and never altered: a store journalled before
`live_outputs` existed gets it on its next open, and its earlier runs resume with no outputs kept (their done
commands and functions run again where a child still needs what they made).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from dagsched.model.errors import InputError

metadata = sa.MetaData()

runs = sa.Table(
    "live_runs",
    metadata,
    sa.Column("run_id", sa.String(32), primary_key=True),
    sa.Column("created_s", sa.Float, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # running, done, failed, interrupted
    sa.Column("args", sa.Text, nullable=False),  # JSON: what the run was asked (files, cluster, scheduler, ...)
    sa.Column("resumed_from", sa.String(32), nullable=True),
)

attempts = sa.Table(
    "live_attempts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(32), sa.ForeignKey("live_runs.run_id"), nullable=False, index=True),
    sa.Column("workflow", sa.String(256), nullable=False),
    sa.Column("task", sa.String(256), nullable=False),
    sa.Column("node", sa.String(256), nullable=False),
    sa.Column("start_s", sa.Float, nullable=False),
    sa.Column("end_s", sa.Float, nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),
)

outputs = sa.Table(
    "live_outputs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(32), sa.ForeignKey("live_runs.run_id"), nullable=False, index=True),
    sa.Column("workflow", sa.String(256), nullable=False),
    sa.Column("task", sa.String(256), nullable=False),
    sa.Column("encoding", sa.String(8), nullable=False),  # text: a command's stdout; json: a function's value
    sa.Column("body", sa.Text, nullable=False),  # at most 64 KiB (worker.OUTPUT_CAP_BYTES)
)
"""What a finished command or function handed its children (an emulated task's payload is not kept: it is made
again from its size)."""

STATUSES = ("running", "done", "failed", "interrupted")


@dataclass(frozen=True)
class JournalRun:
    """A journalled run: its id, status, arguments, and the (workflow, task) -> node of every task done in it or in
    the runs it resumed."""

    run_id: str
    status: str
    args: dict[str, Any]
    done: dict[tuple[str, str], str]
    outputs: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """(workflow, task) -> (encoding, body) of the done tasks whose output was kept"""


class Journal:
    """Writes and reads run journals on one store URL."""

    def __init__(self, url: str) -> None:
        try:
            self.engine = sa.create_engine(url)
            metadata.create_all(self.engine)
        except (sa.exc.ArgumentError, sa.exc.OperationalError, ImportError) as err:
            raise InputError("--store", f"cannot open the store {url!r}: {err}".splitlines()[0]) from None

    def start(self, args: dict[str, Any], resumed_from: str | None = None) -> str:
        """Record a new run; its id."""
        run_id = uuid.uuid4().hex[:12]
        with self.engine.begin() as db:
            db.execute(
                runs.insert().values(
                    run_id=run_id,
                    created_s=time.time(),
                    status="running",
                    args=json.dumps(args),
                    resumed_from=resumed_from,
                )
            )
        return run_id

    def record(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        """Append finished attempts (`workflow`, `task`, `node`, `start_s`, `end_s`, `outcome`), and the output of
        each that carries one (`output`: `(encoding, body)`)."""
        if not rows:
            return
        columns = ("workflow", "task", "node", "start_s", "end_s", "outcome")
        kept = []
        for r in rows:
            if r.get("output") is not None:
                encoding, body = r["output"]
                where = {"run_id": run_id, "workflow": r["workflow"], "task": r["task"]}
                kept.append(where | {"encoding": encoding, "body": body})
        with self.engine.begin() as db:
            db.execute(attempts.insert(), [{"run_id": run_id, **{c: row[c] for c in columns}} for row in rows])
            if kept:
                db.execute(outputs.insert(), kept)

    def finish(self, run_id: str, status: str) -> None:
        assert status in STATUSES
        with self.engine.begin() as db:
            db.execute(runs.update().where(runs.c.run_id == run_id).values(status=status))

    def load(self, run_id: str) -> JournalRun:
        """A run and what was done in it and in the runs it resumed; an unknown id names the field."""
        with self.engine.connect() as db:
            row = db.execute(sa.select(runs).where(runs.c.run_id == run_id)).mappings().first()
            if row is None:
                raise InputError("--resume", f"no run {run_id!r} in the store")
            chain, done = [row], {}
            while chain[-1]["resumed_from"]:
                earlier = db.execute(sa.select(runs).where(runs.c.run_id == chain[-1]["resumed_from"])).mappings()
                found = earlier.first()
                if found is None:
                    break
                chain.append(found)
            kept: dict[tuple[str, str], tuple[str, str]] = {}
            for r in reversed(chain):
                query = sa.select(attempts).where(attempts.c.run_id == r["run_id"], attempts.c.outcome == "done")
                for a in db.execute(query).mappings():
                    done[(a["workflow"], a["task"])] = a["node"]
                    kept.pop((a["workflow"], a["task"]), None)  # a later finish replaces an earlier output
                for o in db.execute(sa.select(outputs).where(outputs.c.run_id == r["run_id"])).mappings():
                    kept[(o["workflow"], o["task"])] = (o["encoding"], o["body"])
        return JournalRun(row["run_id"], row["status"], json.loads(row["args"]), done, kept)

    def close(self) -> None:
        self.engine.dispose()

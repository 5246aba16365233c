"""The policies replicas loaded: their history (`model_versions`) and their files by sha256 (`model_blobs`)."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import sqlalchemy as sa

from dagsched.service.store.engine import Part
from dagsched.service.store.schema import model_blobs, model_versions


class Models(Part):
    """Reads and writes of `model_versions` and `model_blobs`; every method is one short transaction."""

    def add_version(self, version: str, sha256: str, source: str, meta: dict[str, Any], loaded_at: float) -> None:
        self._insert(model_versions, version=version, sha256=sha256, source=source, meta=meta, loaded_at=loaded_at)

    def history(self, limit: int = 20) -> list[dict[str, Any]]:
        q = sa.select(model_versions).order_by(model_versions.c.id.desc()).limit(limit)
        return self._rows(q)

    def put_blob(self, sha256: str, version: str, weights: bytes, meta: dict[str, Any]) -> None:
        """Keep a policy's files, once per sha256 (a second put of the same policy is a no-op)."""
        if self._first(sa.select(model_blobs.c.sha256).where(model_blobs.c.sha256 == sha256)) is not None:
            return
        with contextlib.suppress(sa.exc.IntegrityError):  # another replica kept the same policy first
            self._insert(
                model_blobs, sha256=sha256, version=version, weights=weights, meta=meta, created_at=time.time()
            )

    def get_blob(self, sha256: str) -> tuple[bytes, dict[str, Any]] | None:
        row = self._first(sa.select(model_blobs.c.weights, model_blobs.c.meta).where(model_blobs.c.sha256 == sha256))
        return (bytes(row["weights"]), dict(row["meta"])) if row else None

    def blob_by_version(self, version: str) -> tuple[str, bytes, dict[str, Any]] | None:
        """The newest kept policy with this version: (sha256, weights, metadata)."""
        q = (
            sa.select(model_blobs.c.sha256, model_blobs.c.weights, model_blobs.c.meta)
            .where(model_blobs.c.version == version)
            .order_by(model_blobs.c.created_at.desc())
            .limit(1)
        )
        row = self._first(q)
        return (str(row["sha256"]), bytes(row["weights"]), dict(row["meta"])) if row else None

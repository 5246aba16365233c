"""Short leases (`leases`): one replica at a time does a shared job (an online fine-tune)."""

from __future__ import annotations

import contextlib
import time

import sqlalchemy as sa

from dagsched.service.store.engine import Part
from dagsched.service.store.schema import leases


class Leases(Part):
    """Take and release named leases; each call is one short transaction."""

    def take(self, name: str, holder: str, seconds: float) -> bool:
        """Hold `name` for `seconds` unless another holder's lease is still running; True when held."""
        now = time.time()
        with contextlib.suppress(sa.exc.IntegrityError), self.engine.begin() as conn:  # another holder inserted first
            done = conn.execute(
                leases.update()
                .where(leases.c.name == name, sa.or_(leases.c.until < now, leases.c.holder == holder))
                .values(holder=holder, until=now + seconds)
            )
            if done.rowcount:
                return True
            if conn.execute(sa.select(leases.c.name).where(leases.c.name == name)).first() is None:
                conn.execute(leases.insert().values(name=name, holder=holder, until=now + seconds))
                return True
        return False

    def release(self, name: str, holder: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(leases.update().where(leases.c.name == name, leases.c.holder == holder).values(until=0.0))

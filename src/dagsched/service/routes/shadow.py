"""GET /v1/shadow/report: how often and by how much the live scheduler beats the shadow one."""

from __future__ import annotations

from typing import Any

import numpy as np
from fastapi import APIRouter

from dagsched.service.state import State

router = APIRouter(tags=["shadow"])


@router.get("/v1/shadow/report")
def shadow_report(state: State) -> dict[str, Any]:
    """Per (live, shadow) pair: plans, live wins / ties / losses on makespan, makespan and cost ratios."""
    rows = state.store.plans.shadow_rows()
    pairs: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        pairs.setdefault((r["live"], r["shadow"]), []).append(r)
    out = []
    for (live, shadow), rs in sorted(pairs.items()):
        ms = np.array([r["live_makespan"] / r["shadow_makespan"] for r in rs if r["shadow_makespan"] > 0])
        cost = np.array([r["live_cost"] / r["shadow_cost"] for r in rs if r["shadow_cost"] > 0])
        diff = np.array([r["live_makespan"] - r["shadow_makespan"] for r in rs])
        out.append(
            {
                "live": live,
                "shadow": shadow,
                "plans": len(rs),
                "live_wins": int((diff < -1e-9).sum()),
                "ties": int((np.abs(diff) <= 1e-9).sum()),
                "shadow_wins": int((diff > 1e-9).sum()),
                "makespan_ratio_mean": float(ms.mean()) if len(ms) else None,
                "makespan_ratio_median": float(np.median(ms)) if len(ms) else None,
                "cost_ratio_mean": float(cost.mean()) if len(cost) else None,
            }
        )
    return {"shadow": state.config.shadow, "pairs": out, "plans": len(rows)}

"""What the dashboard reads besides plans: this process's live numbers, the schedulers, cluster presets and
the benchmark report's figures. All read-only."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

from dagsched.generate.clusters import PRESETS, cluster_preset
from dagsched.schedulers.base import registered_names
from dagsched.service.state import State

router = APIRouter(tags=["dashboard"])

REPORT_FIGURES = (".png", ".svg")


@router.get("/v1/stats")
def stats(state: State) -> dict[str, Any]:
    """This process's plans per second (last minute), plan and decision latency p50/p99 (its last plans),
    fallbacks, breaker, serving model and store health: the dashboard's overview, without a Prometheus server."""
    recent = state.metrics.recent
    store_status = state.ping_store() or "ok"
    stored: int | None = None
    if store_status == "ok":
        try:
            stored = state.store.plans.count()
        except Exception as err:  # noqa: BLE001  (the overview reports the store, it does not fail with it)
            store_status = f"unreachable: {type(err).__name__}"
    current = state.models.current
    return {
        "uptime_s": time.time() - recent.started,
        "environment": state.settings.environment,
        "default_scheduler": state.config.default_scheduler,
        "plans": {"total": recent.plans, "per_s": recent.plans_per_s(), "stored": stored},
        "plan_latency_ms": recent.quantiles_ms(recent.plan_latency_s),
        "decision_latency_ms": recent.quantiles_ms(recent.decision_latency_s),
        "fallbacks": {"total": recent.fallbacks, "rate": recent.fallbacks / recent.plans if recent.plans else 0.0},
        "breaker": {"open": state.planner.breaker.is_open()},
        "model": {"version": current.version if current else None, "error": None if current else state.models.error},
        "store": {"status": store_status, "dialect": state.store.dialect},
        "grpc": {"port": state.grpc_port},
        "canary": state.config.canary.model_dump() if state.config.canary is not None else None,
        "calibration": {
            "enabled": state.config.calibration.enabled,
            "active": state.planner.factors(state.config).active,
        },
    }


@router.get("/v1/schedulers")
def schedulers(state: State) -> dict[str, Any]:
    """Every scheduler /v1/schedule accepts by name, and the default."""
    return {"schedulers": registered_names(), "default": state.config.default_scheduler}


@router.get("/v1/clusters")
def clusters() -> dict[str, Any]:
    """The cluster presets, as the `nodes` of a /v1/schedule request."""
    out = []
    for name, preset in PRESETS.items():
        nodes = [n.model_dump(exclude={"boot_delay", "labels"}) for n in cluster_preset(name).nodes]
        out.append({"name": name, "description": preset.description, "nodes": nodes})
    return {"presets": out}


def _report_dir(state: State) -> Path | None:
    d = state.settings.report_dir
    return d if d is not None and d.is_dir() else None


@router.get("/v1/report")
def report(state: State) -> dict[str, Any]:
    """The figures of the benchmark report folder the service was started with (`--report-dir`), if any."""
    folder = _report_dir(state)
    if folder is None:
        return {"available": False, "title": None, "figures": []}
    names = sorted(
        p.relative_to(folder) for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in REPORT_FIGURES
    )
    md = folder / "report.md"
    lines = md.read_text(encoding="utf-8", errors="replace").lstrip().splitlines() if md.is_file() else []
    figures = [{"name": str(n), "url": f"/v1/report/files/{n.as_posix()}"} for n in names]
    return {"available": True, "title": lines[0].lstrip("# ").strip() if lines else None, "figures": figures}


@router.get("/v1/report/files/{name:path}")
def report_file(name: str, state: State) -> FileResponse:
    """One figure of the report folder (only figures, only inside the folder)."""
    folder = _report_dir(state)
    if folder is None:
        raise HTTPException(404, "report: no report folder is set (dagsched serve --report-dir)")
    path = (folder / name).resolve()
    if not path.is_relative_to(folder.resolve()) or path.suffix.lower() not in REPORT_FIGURES or not path.is_file():
        raise HTTPException(404, f"name: no figure '{name}' in the report folder")
    return FileResponse(path)

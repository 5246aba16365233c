"""Prometheus metrics of one service process, in their own registry (so tests can build many apps)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class RecentActivity:
    """This process's last plans and decisions, for `GET /v1/stats` without a Prometheus server."""

    def __init__(self, plans: int = 10_000, decisions: int = 5_000) -> None:
        self.started = time.time()
        self.plan_times: deque[float] = deque(maxlen=plans)
        self.plan_latency_s: deque[float] = deque(maxlen=plans)
        self.decision_latency_s: deque[float] = deque(maxlen=decisions)
        self.plans = 0
        self.fallbacks = 0

    def note_plan(self, latency_s: float, decision_latency_s: Iterable[float], fallback: bool) -> None:
        self.plans += 1
        self.fallbacks += int(fallback)
        self.plan_times.append(time.time())
        self.plan_latency_s.append(latency_s)
        self.decision_latency_s.extend(decision_latency_s)

    def plans_per_s(self, window_s: float = 60.0) -> float:
        """Plans finished in the last `window_s` (or since start, when younger), per second."""
        now = time.time()
        span = min(window_s, max(now - self.started, 1e-9))
        return sum(1 for t in list(self.plan_times) if t >= now - span) / span

    @staticmethod
    def quantiles_ms(window: deque[float]) -> dict[str, float | int | None]:
        values = np.asarray(list(window), dtype=np.float64)
        if len(values) == 0:
            return {"p50": None, "p99": None, "count": 0}
        p50, p99 = np.quantile(values, [0.5, 0.99])
        return {"p50": 1e3 * float(p50), "p99": 1e3 * float(p99), "count": len(values)}


class ServiceMetrics:
    """Every series the service exports at `GET /v1/metrics`."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        counter, gauge = partial(Counter, registry=r), partial(Gauge, registry=r)
        histogram = partial(Histogram, buckets=_LATENCY_BUCKETS, registry=r)
        self.requests = counter(
            "dagsched_requests", "HTTP requests by route template, method and status", ["route", "method", "status"]
        )
        self.errors = counter("dagsched_request_errors", "responses with status >= 400 by route", ["route"])
        self.plan_latency = histogram("dagsched_plan_latency_seconds", "time to produce one plan", ["scheduler"])
        self.decision_latency = histogram(
            "dagsched_decision_latency_seconds", "time of one scheduler decision inside a plan", ["scheduler"]
        )
        self.inference = histogram("dagsched_model_inference_seconds", "learned policy time per decision")
        self.fallbacks = counter("dagsched_fallbacks", "plans that fell back to HEFT, by reason", ["reason"])
        self.breaker_open = gauge("dagsched_breaker_open", "1 while the learned policy's breaker is open")
        self.model_info = gauge("dagsched_model_info", "the serving policy (value 1)", ["version", "sha256"])
        self.model_swaps = counter("dagsched_model_swaps", "policy swaps by outcome", ["outcome"])
        self.skew_round_robin = counter(
            "dagsched_skew_round_robin_decisions", "placements made round-robin by the load-skew monitor"
        )
        self.shadow_plans = counter("dagsched_shadow_plans", "shadow comparisons by winner", ["winner"])
        self.shadow_makespan_ratio = gauge(
            "dagsched_shadow_makespan_ratio", "live / shadow predicted makespan of the last plan"
        )
        self.shadow_cost_ratio = gauge("dagsched_shadow_cost_ratio", "live / shadow predicted cost of the last plan")
        self.k8s = counter("dagsched_k8s_requests", "extender calls by verb and outcome", ["verb", "outcome"])
        self.config_reloads = counter("dagsched_config_reloads", "config loads by outcome", ["outcome"])
        self.events = counter("dagsched_events", "events received by kind", ["kind"])
        self.store_up = gauge("dagsched_store_up", "1 when the decision store answered its last ping")
        self.store_latency = histogram("dagsched_store_seconds", "time of one store call, by operation", ["op"])
        self.store_save_plan = self.store_latency.labels(op="save_plan")
        self.store_ping = self.store_latency.labels(op="ping")
        self.arm_plans = counter(
            "dagsched_canary_plans", "plans made while a canary runs, by arm and scheduler", ["arm", "scheduler"]
        )
        self.arm_plan_latency = histogram(
            "dagsched_canary_plan_latency_seconds", "time to produce one plan while a canary runs, by arm", ["arm"]
        )
        self.arm_fallbacks = counter(
            "dagsched_canary_fallbacks", "canary plans that fell back to HEFT, by arm", ["arm"]
        )
        self.arm_makespan_ratio = gauge(
            "dagsched_canary_makespan_ratio",
            "achieved makespan per arm over the default's plan makespan, mean over the stage's executed workflows",
            ["arm"],
        )
        self.canary_fraction = gauge("dagsched_canary_fraction", "share of workflows the candidate plans")
        self.canary_steps = counter("dagsched_canary_steps", "canary steps taken here, by action", ["action"])
        self.calibration_active = gauge("dagsched_calibration_active", "1 while calibrated predictions are applied")
        self.calibration_factors = gauge(
            "dagsched_calibration_factors", "factors in use, by kind (task or node)", ["kind"]
        )
        self.finetune_runs = counter(
            "dagsched_online_finetune_runs", "online fine-tunes by trigger and verdict", ["trigger", "verdict"]
        )
        self.grpc_requests = counter(
            "dagsched_grpc_requests", "gRPC calls by method and status code", ["method", "code"]
        )
        self.recent = RecentActivity()
        # labelled series of the hot paths, looked up once (`labels()` costs more than `inc()`)
        self._request_series: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._k8s_series: dict[tuple[str, str], Any] = {}

    def count_request(self, route: str, method: str, status: int) -> None:
        """One response of `route` (its template) with `status`; also an error when status >= 400."""
        key = (route, method, status)
        series = self._request_series.get(key)
        if series is None:
            series = self._request_series[key] = (
                self.requests.labels(route=route, method=method, status=str(status)),
                self.errors.labels(route=route) if status >= 400 else None,
            )
        series[0].inc()
        if series[1] is not None:
            series[1].inc()

    @contextmanager
    def k8s_call(self, verb: str) -> Iterator[None]:
        """One extender call (HTTP or gRPC), counted `error` when the block raises (the error goes on), else `ok`."""
        outcome = "error"
        try:
            yield
            outcome = "ok"
        finally:
            child = self._k8s_series.get((verb, outcome))
            if child is None:
                child = self._k8s_series[(verb, outcome)] = self.k8s.labels(verb=verb, outcome=outcome)
            child.inc()

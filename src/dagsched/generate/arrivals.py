"""Seeded arrival processes: workflows submitted over time instead of all at once.

Three processes give the submit times of a stream (`arrival_times`), each with the same mean
rate so that one target load means the same thing under each:

- ``poisson``: exponential gaps of mean 1/rate;
- ``bursty``: a two-state Markov-modulated Poisson process (MMPP-2), calm and burst, the burst
  state `burst_ratio` times as intense, taking `burst_share` of the time, with on average
  `burst_arrivals` arrivals per burst (Fischer and Meier-Hellstern, "The MMPP cookbook", 1993);
- ``diurnal``: a non-homogeneous Poisson process with rate(t) = rate x (1 + amplitude x
  sin(2 pi t / period_s)), drawn by thinning (Lewis and Shedler, 1979); the period is a
  simulated day by default.

The first arrival is at `start` in every process, so a run never opens idle.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from dagsched.model.entities import Workflow
from dagsched.model.errors import InputError

_MIN_GAP_S = 1e-6
"""An exponential draw of exactly 0 would tie two arrivals; this keeps submit times strictly increasing."""


ARRIVALS = ("poisson", "bursty", "diurnal")
ArrivalProcess = Literal["poisson", "bursty", "diurnal"]

BURST_RATIO = 5.0
"""Default ratio of the burst state's rate to the calm state's (bursty)."""
BURST_SHARE = 0.2
"""Default fraction of the time spent in the burst state (bursty)."""
BURST_ARRIVALS = 25.0
"""Default mean number of arrivals in one burst (bursty): sets how long a burst lasts."""
DIURNAL_AMPLITUDE = 0.6
"""Default relative swing of the diurnal rate: between 0.4 and 1.6 times the mean."""
DAY_S = 86_400.0


def arrival_times(
    process: str,
    n: int,
    rate_per_s: float,
    rng: np.random.Generator,
    *,
    start: float = 0.0,
    burst_ratio: float = BURST_RATIO,
    burst_share: float = BURST_SHARE,
    burst_arrivals: float = BURST_ARRIVALS,
    amplitude: float = DIURNAL_AMPLITUDE,
    period_s: float = DAY_S,
) -> np.ndarray:
    """`n` strictly increasing submit times (seconds) of `process` at mean rate `rate_per_s`, the first at `start`."""
    if process not in ARRIVALS:
        raise InputError("arrival", f"unknown arrival process '{process}'; choose one of {', '.join(ARRIVALS)}")
    if not (math.isfinite(rate_per_s) and rate_per_s > 0):
        raise InputError("rate", f"must be a positive number of arrivals per second, got {rate_per_s!r}")
    if n <= 0:
        return np.zeros(0)
    if process == "poisson":
        gaps = rng.exponential(1.0 / rate_per_s, size=n - 1)
        times = np.concatenate([[0.0], np.cumsum(np.maximum(gaps, _MIN_GAP_S))])
    elif process == "bursty":
        times = _mmpp2(n, rate_per_s, rng, burst_ratio, burst_share, burst_arrivals)
    else:
        times = _diurnal(n, rate_per_s, rng, amplitude, period_s)
    return start + times


def _mmpp2(n: int, rate: float, rng: np.random.Generator, ratio: float, share: float, per_burst: float) -> np.ndarray:
    """MMPP-2 arrival times from 0: calm rate r0, burst rate ratio x r0, mean rate `rate` over the stationary mix."""
    if not (ratio >= 1 and 0 < share < 1 and per_burst > 0):
        raise InputError(
            "bursty",
            f"needs burst_ratio >= 1, 0 < burst_share < 1, burst_arrivals > 0; got {ratio}, {share}, {per_burst}",
        )
    calm_rate = rate / (1.0 - share + share * ratio)
    rates = (calm_rate, calm_rate * ratio)
    burst_len = per_burst / rates[1]
    mean_stay = (burst_len * (1.0 - share) / share, burst_len)
    state = int(rng.random() < share)  # start in the stationary distribution
    clock = 0.0
    left_in_state = rng.exponential(mean_stay[state])
    out = [0.0]
    while len(out) < n:
        gap = rng.exponential(1.0 / rates[state])
        if gap <= left_in_state:  # memoryless: the next arrival of this state comes before it ends
            left_in_state -= gap
            clock += gap
            out.append(max(clock, out[-1] + _MIN_GAP_S))
        else:
            clock += left_in_state
            state = 1 - state
            left_in_state = rng.exponential(mean_stay[state])
    return np.asarray(out)


def _diurnal(n: int, rate: float, rng: np.random.Generator, amplitude: float, period_s: float) -> np.ndarray:
    """Thinning: candidates at the peak rate, each kept with probability rate(t) / peak."""
    if not (0 <= amplitude < 1 and period_s > 0):
        raise InputError("diurnal", f"needs 0 <= amplitude < 1 and period_s > 0; got {amplitude}, {period_s}")
    peak = rate * (1.0 + amplitude)
    out = [0.0]
    clock = 0.0
    while len(out) < n:
        clock += rng.exponential(1.0 / peak)
        if rng.random() * peak <= rate * (1.0 + amplitude * math.sin(2.0 * math.pi * clock / period_s)):
            out.append(max(clock, out[-1] + _MIN_GAP_S))
    return np.asarray(out)


def poisson_arrivals(workflows: list[Workflow], rate_per_hour: float, seed: int, start: float = 0.0) -> list[Workflow]:
    """Copies of `workflows`, in order, with Poisson submit times and unique names.

    The first arrives at `start` (seconds), so a run does not open idle; each
    later one follows after an exponential gap of mean 3600 / `rate_per_hour`
    seconds. A repeated name gets the suffix "-<position>".
    """
    if not (math.isfinite(rate_per_hour) and rate_per_hour > 0):
        raise InputError("rate_per_hour", f"must be a positive number of workflows per hour, got {rate_per_hour!r}")
    if not (math.isfinite(start) and start >= 0):
        raise InputError("start", f"must be a finite number of seconds >= 0, got {start!r}")
    rng = np.random.default_rng(seed)
    gap_s = np.maximum(rng.exponential(3600.0 / rate_per_hour, size=max(len(workflows) - 1, 0)), _MIN_GAP_S)
    submit_s = start + np.concatenate([[0.0], np.cumsum(gap_s)])
    taken: set[str] = set()
    out: list[Workflow] = []
    for i, (wf, t_s) in enumerate(zip(workflows, submit_s, strict=False)):
        name = wf.name
        while name in taken:
            name = f"{wf.name}-{i}" if name == wf.name else f"{name}-{i}"
        taken.add(name)
        out.append(wf.model_copy(update={"submit_time": float(t_s), "name": name}))
    return out

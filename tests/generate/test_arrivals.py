"""Poisson arrivals: strictly increasing submit times, exponential gaps of mean 1/rate, unique names."""

from __future__ import annotations

import numpy as np
import pytest

from dagsched.generate import generate_workflow, poisson_arrivals
from dagsched.model import InputError


def test_submit_times_increase_with_mean_gap_one_over_rate() -> None:
    """4,000 arrivals at 12/h: first at start, strictly increasing, mean gap 300 s within 5%, names unique."""
    wf = generate_workflow("etl_star", 5, 0)
    out = poisson_arrivals([wf] * 4000, rate_per_hour=12.0, seed=3, start=100.0)
    submit_s = np.array([w.submit_time for w in out])
    assert submit_s[0] == 100.0
    gaps = np.diff(submit_s)
    assert gaps.min() > 0
    assert gaps.mean() == pytest.approx(300.0, rel=0.05)
    assert gaps.std() == pytest.approx(300.0, rel=0.1)  # exponential: std equals mean
    assert len({w.name for w in out}) == 4000
    assert out[0].name == wf.name and out[1].name == f"{wf.name}-1"
    assert out[5].tasks == wf.tasks and wf.submit_time == 0.0  # copies; the input is untouched


def test_arrivals_are_reproducible_per_seed() -> None:
    """Same seed, same times; another seed, other times."""
    wfs = [generate_workflow("random", 10, s) for s in range(5)]
    times = [w.submit_time for w in poisson_arrivals(wfs, 6.0, seed=1)]
    assert times == [w.submit_time for w in poisson_arrivals(wfs, 6.0, seed=1)]
    assert times != [w.submit_time for w in poisson_arrivals(wfs, 6.0, seed=2)]


def test_bad_rate_is_refused() -> None:
    """A rate of 0 per hour raises InputError on rate_per_hour."""
    with pytest.raises(InputError) as err:
        poisson_arrivals([], 0.0, seed=0)
    assert err.value.field == "rate_per_hour"
    assert poisson_arrivals([], 1.0, seed=0) == []

"""Runtime distributions: analytic means match the documented values and large samples match them."""

from __future__ import annotations

import numpy as np
import pytest

from dagsched.generate.distributions import NAMES, Gamma, LogNormal, Weibull, by_name
from dagsched.model.errors import InputError


def test_default_parameters_have_the_documented_means() -> None:
    """LogNormal(4.5, 0.8) has mean exp(4.82) ~ 124 s, Gamma(3, 40) 120 s, Weibull(100, 1.2) ~ 94 s."""
    assert LogNormal().mean_s == pytest.approx(np.exp(4.5 + 0.32))
    assert LogNormal().mean_s == pytest.approx(123.97, abs=0.01)
    assert Gamma().mean_s == pytest.approx(120.0)
    assert Weibull().mean_s == pytest.approx(94.07, abs=0.01)


@pytest.mark.parametrize("name", NAMES)
def test_sample_mean_is_near_the_analytic_mean(name: str) -> None:
    """200,000 draws average within 1.5% of the analytic mean, and all are positive."""
    dist = by_name(name)
    draws = dist.sample(np.random.default_rng(7), 200_000)
    assert draws.shape == (200_000,)
    assert draws.min() > 0
    assert draws.mean() == pytest.approx(dist.mean_s, rel=0.015)


def test_same_generator_seed_gives_the_same_draws() -> None:
    """Sampling uses only the generator passed in, so equal seeds give equal arrays."""
    a = Gamma(k=2.0, theta=10.0).sample(np.random.default_rng(3), 50)
    b = Gamma(k=2.0, theta=10.0).sample(np.random.default_rng(3), 50)
    assert np.array_equal(a, b)


def test_by_name_accepts_parameters_and_any_case() -> None:
    """by_name("Weibull", lam=50) is Weibull(lam=50, k=1.2)."""
    assert by_name("Weibull", lam=50.0) == Weibull(lam=50.0, k=1.2)
    assert by_name("lognormal", mu=1.0, sigma=0.5).mean_s == pytest.approx(np.exp(1.125))


def test_unknown_name_and_bad_parameters_are_refused_with_the_field() -> None:
    """An unknown name names runtime_dist and the choices; a non-positive parameter names itself."""
    with pytest.raises(InputError, match="runtime_dist: unknown distribution 'pareto'; choose one of lognormal"):
        by_name("pareto")
    with pytest.raises(InputError) as err:
        Gamma(k=-1.0)
    assert err.value.field == "k"
    with pytest.raises(InputError, match="runtime_dist: bad parameters for 'gamma'"):
        by_name("gamma", sigma=1.0)

"""Runtime distributions for synthetic tasks (seconds at speed 1.0).

Three shapes that fit measured batch and workflow task durations: lognormal
(heavy right tail, the usual fit for scientific tasks), gamma (a sum of phases,
stages of similar size) and Weibull (long-tailed job durations in cluster
traces). Defaults give means of about 124 s, 120 s and 94 s, so the families
are comparable while their spread differs.

Each is a small frozen object with an analytic `mean_s` and `sample(rng, n)`
drawing from a `numpy.random.Generator`, so callers own the seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from dagsched.model.errors import InputError

FloatArray = npt.NDArray[np.float64]


class RuntimeDistribution(Protocol):
    """Anything that draws `n` positive runtimes in seconds from a seeded generator."""

    name: ClassVar[str]

    @property
    def mean_s(self) -> float: ...

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray: ...


def _check_positive(**params: float) -> None:
    for field, value in params.items():
        if not (math.isfinite(value) and value > 0):
            raise InputError(field, f"must be a positive finite number, got {value!r}")


@dataclass(frozen=True)
class LogNormal:
    """exp(N(mu, sigma^2)) seconds: heavy right tail, the usual fit for scientific tasks."""

    name: ClassVar[str] = "lognormal"
    mu: float = 4.5
    """mean of log(runtime_s)"""
    sigma: float = 0.8
    """standard deviation of log(runtime_s)"""

    def __post_init__(self) -> None:
        if not math.isfinite(self.mu):
            raise InputError("mu", f"must be finite, got {self.mu!r}")
        _check_positive(sigma=self.sigma)

    @property
    def mean_s(self) -> float:
        return math.exp(self.mu + self.sigma**2 / 2)

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return rng.lognormal(mean=self.mu, sigma=self.sigma, size=n)


@dataclass(frozen=True)
class Gamma:
    """Gamma(shape k, scale theta) seconds: a sum of k phases, moderate spread."""

    name: ClassVar[str] = "gamma"
    k: float = 3.0
    """shape"""
    theta: float = 40.0
    """scale in seconds"""

    def __post_init__(self) -> None:
        _check_positive(k=self.k, theta=self.theta)

    @property
    def mean_s(self) -> float:
        return self.k * self.theta

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return rng.gamma(shape=self.k, scale=self.theta, size=n)


@dataclass(frozen=True)
class Weibull:
    """Weibull(scale lam, shape k) seconds: k near 1 gives the long tail of batch-job traces."""

    name: ClassVar[str] = "weibull"
    lam: float = 100.0
    """scale in seconds"""
    k: float = 1.2
    """shape"""

    def __post_init__(self) -> None:
        _check_positive(lam=self.lam, k=self.k)

    @property
    def mean_s(self) -> float:
        return self.lam * math.gamma(1.0 + 1.0 / self.k)

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return self.lam * rng.weibull(self.k, size=n)


_BY_NAME: dict[str, type[LogNormal] | type[Gamma] | type[Weibull]] = {
    cls.name: cls for cls in (LogNormal, Gamma, Weibull)
}
NAMES = tuple(_BY_NAME)


def by_name(name: str, **params: float) -> RuntimeDistribution:
    """The distribution called `name` ("lognormal", "gamma", "weibull"), default parameters unless given."""
    cls = _BY_NAME.get(name.lower())
    if cls is None:
        raise InputError("runtime_dist", f"unknown distribution '{name}'; choose one of {', '.join(NAMES)}")
    try:
        return cls(**params)
    except TypeError as err:
        raise InputError("runtime_dist", f"bad parameters for '{name}': {err}") from None
